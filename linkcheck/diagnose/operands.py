"""What each condition operator accepts, checked when a playbook (or a threshold override) loads.

`playbooks validate` must refuse what `diagnose` could not evaluate: `lt` on a text fact, `in: 5`,
`between: 5`, a threshold `$j` whose value is `big`. And a `matches` pattern must not be able to run away:
nested or repeated unbounded quantifiers backtrack exponentially (`^((.*)*)*Z$`) or polynomially
(`.*.*.*Z`), so such patterns are refused here and the evaluator reads at most `MAX_MATCH_INPUT`
characters of a fact.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from linkcheck.diagnose.facts_schema import CLUSTER_FACTS
from linkcheck.facts.model import Function, NcclRun, NodeFacts

try:  # Python 3.11+
    from re import _constants as _sre_c  # type: ignore[attr-defined,unused-ignore]
    from re import _parser as _sre_parse  # type: ignore[attr-defined,unused-ignore]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _sre_c  # type: ignore[no-redef,unused-ignore]
    import sre_parse as _sre_parse  # type: ignore[no-redef,unused-ignore]

if TYPE_CHECKING:
    from linkcheck.diagnose.rule import Condition

MAX_PATTERN_CHARS = 1000
MAX_MATCH_INPUT = 512  # characters of a fact that `matches` reads; longer values make the rule skip
MAX_UNBOUNDED_REPEATS = 2
_UNBOUNDED = 1000  # a repeat allowing this many or more counts as unbounded
_REPEATS = {_sre_c.MAX_REPEAT, _sre_c.MIN_REPEAT} | (
    {_sre_c.POSSESSIVE_REPEAT} if hasattr(_sre_c, "POSSESSIVE_REPEAT") else set())
NUMERIC_OPS = {"lt", "le", "gt", "ge"}
_DERIVED = {"used": "bool", "cabled": "bool", "domain": "text", "ip": "text", "label": "text",
            "cable_pn": "text", "ipv4": "text", "subnet": "text", "key": "text", "nccl_listed": "bool",
            "gid_auto": "bool"}
_PAIR_KINDS = {"gid_indices": "other", "gid_index_count": "number", "gid_pinned": "bool",
               **{f"{kind}_{f}": k for kind in ("identity", "config")
                  for f, k in (("count", "number"), ("diff", "other"))}}
_BASELINE_HCA_KINDS = {"was": "number", "now": "number", "move": "other"}
_LATENCY_KINDS = {"size_bytes": "number", "typical_us": "number", "p99_us": "number", "max_us": "number"}
_ALLREDUCE_KINDS = {"time_us": "number", "size_bytes": "number", "wrong": "number", "uses_socket": "bool"}


class OperandError(ValueError):
    """An operand the operator cannot use; the message says what was expected."""


def _kind_of_annotation(annotation: str) -> str:
    if "[" in annotation:  # a subscripted type (tuple[...], Mapping[...]) holds several values
        return "other"
    if "bool" in annotation:
        return "bool"
    if "int" in annotation or "float" in annotation:
        return "number"
    return "text"


def _field_kinds(cls: type) -> dict[str, str]:
    return {name: _kind_of_annotation(str(annotation)) for name, annotation in cls.__annotations__.items()}


_FUNCTION_KINDS = _field_kinds(Function)
_NODE_KINDS = _field_kinds(NodeFacts)
_NCCL_KINDS = _field_kinds(NcclRun)


def fact_kind(scope: str, fact: str) -> str:
    """number, bool, text or other (a tuple): what the flattened fact holds when known."""
    if scope == "path" and fact[:2] in ("a.", "b."):
        scope, fact = "function", fact[2:]
    if scope == "port" and fact in CLUSTER_FACTS["port"]:
        return CLUSTER_FACTS["port"][fact]
    if scope == "port":
        scope = "function"
    if scope in CLUSTER_FACTS:
        return CLUSTER_FACTS[scope].get(fact, "text")
    if scope == "nccl":
        return _NCCL_KINDS.get(fact, "text")
    if scope in ("pair", "baseline_hca", "latency", "allreduce"):
        kinds = {"pair": _PAIR_KINDS, "baseline_hca": _BASELINE_HCA_KINDS, "latency": _LATENCY_KINDS,
                 "allreduce": _ALLREDUCE_KINDS}[scope]
        return kinds.get(fact, "text")
    if fact in _DERIVED:
        return _DERIVED[fact]
    if fact.startswith(("nccl.", "nccl_source.", "nccl_unset.")):
        return "text"
    kinds = _FUNCTION_KINDS if scope == "function" else _NODE_KINDS
    return kinds.get(fact, "text")


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def resolve(value: Any, thresholds: Mapping[str, Any]) -> Any:
    """`$name` (also inside a list) replaced by the threshold's value."""
    if isinstance(value, str) and value.startswith("$") and value[1:] in thresholds:
        return thresholds[value[1:]]
    if isinstance(value, list):
        return [resolve(v, thresholds) for v in value]
    return value


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def check_operand(op: str, raw: Any, fact: str, scope: str, thresholds: Mapping[str, Any]) -> None:
    """Raise OperandError when `op` cannot be applied to `fact` with this operand (thresholds resolved)."""
    value = resolve(raw, thresholds)
    shown = _show(value) + (f" (from {raw})" if isinstance(raw, str) and raw.startswith("$") else "")
    kind = fact_kind(scope, fact)
    if op in NUMERIC_OPS | {"between", "below_baseline"} and kind != "number":
        raise OperandError(f"'{op}' compares numbers, but fact '{fact}' is {kind}")
    _check_shape(op, value, shown)


def _check_shape(op: str, value: Any, shown: str) -> None:
    if op in NUMERIC_OPS and not is_number(value):
        raise OperandError(f"'{op}' needs a number, got {shown}")
    if op == "between" and not (isinstance(value, list) and len(value) == 2 and all(map(is_number, value))
                                and value[0] <= value[1]):
        raise OperandError(f"'between' needs [low, high] with two numbers, low <= high; got {shown}")
    if op in ("in", "not_in") and not (isinstance(value, list) and all(map(_is_scalar, value))):
        raise OperandError(f"'{op}' needs a list of values, got {shown}")
    if op in ("eq", "ne") and not _is_scalar(value):
        raise OperandError(f"'{op}' needs one value (text, number or true/false), got {shown}")
    if op == "missing" and not isinstance(value, bool):
        raise OperandError(f"'missing' needs true or false, got {shown}")
    if op == "below_baseline":
        _check_baseline(value, shown)
    if op == "matches":
        if not isinstance(value, str):
            raise OperandError(f"'matches' needs a regular expression as text, got {shown}")
        problem = regex_problem(value)
        if problem:
            raise OperandError(f"regular expression for 'matches' refused: {problem}")


def _check_baseline(value: Any, shown: str) -> None:
    if is_number(value):
        return
    if isinstance(value, dict) and set(value) <= {"baseline", "tolerance_pct"} and "baseline" in value \
            and is_number(value["baseline"]) and is_number(value.get("tolerance_pct", 10)) \
            and 0 <= value.get("tolerance_pct", 10) <= 100:
        return
    raise OperandError("'below_baseline' needs a number or {baseline: N, tolerance_pct: 0-100}, got " + shown)


def regex_problem(pattern: str) -> str | None:
    """Why `pattern` is unsafe or invalid, or None. Refused: invalid syntax, back-references, a repeat or an
    alternation inside an unbounded repeat, more than two unbounded repeats, over 1000 characters."""
    if len(pattern) > MAX_PATTERN_CHARS:
        return f"longer than {MAX_PATTERN_CHARS} characters"
    try:
        re.compile(pattern)
        tree = _sre_parse.parse(pattern)
    except (re.error, RecursionError, OverflowError) as exc:
        return f"invalid: {exc}"
    counter = [0]
    problem = _walk(list(tree), False, counter)
    if problem is None and counter[0] > MAX_UNBOUNDED_REPEATS:
        problem = (f"{counter[0]} unbounded repeats (*, +, {{n,}}); more than {MAX_UNBOUNDED_REPEATS} "
                   "can backtrack for minutes on one value")
    return problem


def _children(op: Any, av: Any) -> Iterable[list[Any]]:
    """The sub-patterns of one parsed item, whatever their nesting in its argument."""
    if op is _sre_c.SUBPATTERN:
        return [list(av[-1])]
    if op in (_sre_c.ASSERT, _sre_c.ASSERT_NOT):
        return [list(av[1])]
    if op is _sre_c.GROUPREF_EXISTS:
        return [list(p) for p in av[1:] if p is not None]
    if getattr(_sre_c, "ATOMIC_GROUP", None) is op:
        return [list(av)]
    return []


def _walk(items: list[Any], inside_unbounded: bool, counter: list[int]) -> str | None:
    for op, av in items:
        if op in _REPEATS:
            _, high, sub = av
            unbounded = high >= _UNBOUNDED
            if inside_unbounded and high > 1:
                return "nested quantifier inside an unbounded repeat (such as (a+)* or (.*)*) backtracks exponentially"
            counter[0] += unbounded
            problem = _walk(list(sub), inside_unbounded or unbounded, counter)
        elif op is _sre_c.BRANCH:
            if inside_unbounded:
                return "an alternation (a|b) inside an unbounded repeat can backtrack exponentially"
            problem = next((p for b in av[1] if (p := _walk(list(b), False, counter))), None)
        elif op in (_sre_c.GROUPREF, _sre_c.GROUPREF_IGNORE):
            return "back-references are not allowed"
        else:
            problem = next((p for c in _children(op, av) if (p := _walk(c, inside_unbounded, counter))), None)
        if problem:
            return problem
    return None


def check_conditions(conditions: Iterable[Condition | None], scope: str, thresholds: Mapping[str, Any]) -> None:
    """Every comparison of these conditions accepts its operand with these threshold values."""
    stack = [c for c in conditions if c is not None]
    while stack:
        cond = stack.pop()
        stack.extend(cond.children)
        if cond.fact is not None and cond.op not in ("all", "any", "differs"):
            check_operand(cond.op, cond.value, cond.fact, scope, thresholds)


def _value_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "true/false"
    if is_number(value):
        return "a number"
    names: dict[type, str] = {str: "text", list: "a list", dict: "a mapping"}
    return next((n for t, n in names.items() if isinstance(value, t)), type(value).__name__)


def override_problem(default: Any, new: Any) -> str | None:
    """Why `new` cannot replace a threshold whose built-in value is `default` (a different kind, or a number
    that is not finite: every comparison with NaN is false, so a NaN threshold would pass whatever it met), or
    None."""
    if is_number(new) and not math.isfinite(new):
        return f"must be a finite number, got {_show(new)}"
    if default is None or _value_kind(default) == _value_kind(new):
        return None
    return f"must be {_value_kind(default)} like its default {_show(default)}, got {_show(new)}"

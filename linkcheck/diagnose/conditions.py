"""Evaluate playbook conditions over a subject's flattened facts. Unknown facts never pass silently."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from linkcheck.diagnose.operands import MAX_MATCH_INPUT
from linkcheck.diagnose.rule import Condition


class UnknownFact(Exception):
    """A condition needed a fact whose value is unknown; the rule skips for this subject."""

    def __init__(self, fact: str) -> None:
        super().__init__(fact)
        self.fact = fact


def _resolve(value: Any, thresholds: Mapping[str, Any]) -> Any:
    if isinstance(value, str) and value.startswith("$"):
        return thresholds[value[1:]]
    if isinstance(value, list):
        return [_resolve(v, thresholds) for v in value]
    return value


def _fact(values: dict[str, Any], fact: str) -> Any:
    value = values.get(fact)
    if value is None:
        raise UnknownFact(fact)
    return value


def _num(value: Any) -> float:
    """A number to compare: NaN or an infinity (a rate of `nan`, a text "inf") compares false with everything, so
    a rule would neither fire nor skip; it is refused, and the fact is unknown."""
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"{value!r} is not a finite number")
    return number


def _compare(op: str, actual: Any, expected: Any) -> bool:
    if op == "eq":
        return bool(actual == expected)
    if op == "ne":
        return bool(actual != expected)
    if op in ("lt", "le", "gt", "ge"):
        a, e = _num(actual), _num(expected)
        return {"lt": a < e, "le": a <= e, "gt": a > e, "ge": a >= e}[op]
    if op == "in":
        return actual in expected
    if op == "not_in":
        return actual not in expected
    if op == "matches":
        return re.search(str(expected), _matchable(actual)) is not None
    if op == "between":
        low, high = expected
        return _num(low) <= _num(actual) <= _num(high)
    if op == "below_baseline":
        baseline = expected.get("baseline", 0) if isinstance(expected, dict) else expected
        tolerance = float(expected.get("tolerance_pct", 10)) if isinstance(expected, dict) else 10.0
        return _num(actual) < _num(baseline) * (1 - tolerance / 100)
    raise ValueError(op)


def compare(op: str, actual: Any, expected: Any) -> bool:
    """One comparison of the rule language (`ge`, `le`, `in`, ...), as `when:` conditions and acceptance
    profiles judge it; ValueError for a value the operator cannot take (NaN, an infinity, a text for a number)."""
    return _compare(op, actual, expected)


def _matchable(actual: Any) -> str:
    """The fact as text, refused past MAX_MATCH_INPUT characters: no pattern gets to backtrack over a huge value."""
    text = str(actual)
    if len(text) > MAX_MATCH_INPUT:
        raise ValueError(f"value of {len(text)} characters is longer than the {MAX_MATCH_INPUT} 'matches' reads")
    return text


def _decide(op: str, fact: str, actual: Any, expected: Any) -> bool:
    """`_compare`, with a value that the operator cannot take (a text where a number belongs) made unknown."""
    try:
        return _compare(op, actual, expected)
    except (TypeError, ValueError, OverflowError) as exc:
        raise UnknownFact(f"{fact} ({exc})") from None


def evaluate(cond: Condition, values: dict[str, Any], thresholds: Mapping[str, Any]) -> bool:
    """True when the condition holds; UnknownFact when it cannot be decided."""
    if cond.op == "all":
        return all(evaluate(c, values, thresholds) for c in cond.children)
    if cond.op == "any":
        return any(evaluate(c, values, thresholds) for c in cond.children)
    if cond.op == "missing":
        return (values.get(cond.fact or "") is None) == bool(cond.value)
    if cond.op == "differs":
        first, second = cond.value
        return bool(_fact(values, first) != _fact(values, second))
    fact = cond.fact or ""
    return _decide(cond.op, fact, _fact(values, fact), _resolve(cond.value, thresholds))

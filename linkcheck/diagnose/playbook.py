"""Playbooks: rules as data, loaded by a strict validator that names file and line for every mistake.

A rule either states a condition over facts (a small operator vocabulary, never eval) or names a
Python check from `checks.CHECKS`. Thresholds live in the rule, so users tune them without code.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from msgspec.structs import replace

from linkcheck.diagnose.checks.registry import CHECKS
from linkcheck.diagnose.facts_schema import FACT_GROUPS, SCOPES, is_known_fact, placeholders_for_scope
from linkcheck.diagnose.operands import OperandError, check_conditions, check_operand, override_problem
from linkcheck.diagnose.rule import Condition, Rule
from linkcheck.errors import PlaybookError
from linkcheck.model import Severity
from linkcheck.yamlfile import line_of, parse_yaml_text, read_yaml_text

BUILTIN_DIR = Path(__file__).resolve().parent.parent / "playbooks"
RULE_KEYS = {"id", "title", "severity", "scope", "check", "when", "where", "needs", "thresholds", "message",
             "mechanism", "fix", "references", "required", "threshold_sources", "unknown"}
TOP_KEYS = {"playbook", "description", "rules"}
COMPARE_OPS = {"eq", "ne", "lt", "le", "gt", "ge", "in", "not_in", "matches", "between", "below_baseline"}
OPERATORS = COMPARE_OPS | {"missing", "differs"}
ID_RE = re.compile(r"^[A-Z][A-Z0-9_]*$")
PLACEHOLDER_RE = re.compile(r"\{([A-Za-z_][\w.]*)\}")
# A placeholder written inside quotes in a fix line ('{profile}', "{netdev}"): quoted twice once rendered.
QUOTED_PLACEHOLDER_RE = re.compile(r"""(['"])\{[A-Za-z_][\w.]*\}\1""")


class _Ctx:
    """Where we are while validating, so every error can say file:line."""

    def __init__(self, path: str) -> None:
        self.path = path

    def fail(self, reason: str, node: Any = None, key: str | None = None) -> PlaybookError:
        return PlaybookError(self.path, reason, line=line_of(node, key))


def _text(ctx: _Ctx, rule: dict[str, Any], key: str, *, required: bool = True) -> str:
    value = rule.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or not value.strip():
        raise ctx.fail(f"rule key '{key}' must be a non-empty string", rule, key)
    return value.strip()


def _strings(ctx: _Ctx, rule: dict[str, Any], key: str) -> tuple[str, ...]:
    value = rule.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ctx.fail(f"rule key '{key}' must be a list of strings", rule, key)
    return tuple(value)


def _condition(ctx: _Ctx, raw: Any, scope: str, thresholds: Mapping[str, Any]) -> Condition:
    if not isinstance(raw, dict) or not raw:
        raise ctx.fail("a condition must be a mapping such as {fact: mtu, lt: 9000}", raw)
    if set(raw) in ({"all"}, {"any"}):
        op = next(iter(raw))
        items = raw[op]
        if not isinstance(items, list) or not items:
            raise ctx.fail(f"'{op}' needs a non-empty list of conditions", raw, op)
        return Condition(op, children=tuple(_condition(ctx, c, scope, thresholds) for c in items))
    ops = [k for k in raw if k != "fact"]
    if len(ops) != 1 or ops[0] not in OPERATORS:
        raise ctx.fail(f"unknown operator {', '.join(map(str, ops)) or '(none)'}; expected one of "
                       f"{', '.join(sorted(OPERATORS | {'all', 'any'}))}", raw, ops[0] if ops else None)
    if ops[0] == "differs":
        return _differs(ctx, raw, scope)
    return _comparison(ctx, raw, ops[0], scope, thresholds)


def _differs(ctx: _Ctx, raw: dict[str, Any], scope: str) -> Condition:
    value = raw["differs"]
    if not (isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value)):
        raise ctx.fail("'differs' takes a list of two fact paths", raw, "differs")
    for fact in value:
        _check_fact(ctx, fact, scope, raw)
    return Condition("differs", value=tuple(value))


def _comparison(ctx: _Ctx, raw: dict[str, Any], op: str, scope: str, thresholds: Mapping[str, Any]) -> Condition:
    value = raw[op]
    fact = raw.get("fact")
    if not isinstance(fact, str):
        raise ctx.fail(f"'{op}' needs a 'fact'", raw)
    _check_fact(ctx, fact, scope, raw)
    _check_threshold_refs(ctx, value, thresholds, raw, op)
    try:
        check_operand(op, value, fact, scope, thresholds)
    except OperandError as exc:
        raise ctx.fail(str(exc), raw, op) from None
    return Condition(op, fact=fact, value=value)


def _check_fact(ctx: _Ctx, fact: str, scope: str, node: Any) -> None:
    if not is_known_fact(scope, fact):
        raise ctx.fail(f"unknown fact path '{fact}' for scope '{scope}'", node)


def _check_threshold_refs(ctx: _Ctx, value: Any, thresholds: Mapping[str, Any], node: Any, key: str) -> None:
    refs = [value] if isinstance(value, str) else list(value) if isinstance(value, list) else []
    for ref in refs:
        if isinstance(ref, str) and ref.startswith("$") and ref[1:] not in thresholds:
            raise ctx.fail(f"threshold '{ref}' is not defined in this rule's thresholds", node, key)


def _check_placeholders(ctx: _Ctx, rule: dict[str, Any], allowed: set[str], texts: dict[str, list[str]]) -> None:
    for key, items in texts.items():
        for text in items:
            for name in PLACEHOLDER_RE.findall(text):
                if name not in allowed:
                    raise ctx.fail(f"unknown placeholder {{{name}}} in '{key}'", rule, key)
            quoted = QUOTED_PLACEHOLDER_RE.search(text) if key == "fix" else None
            if quoted is not None:
                raise ctx.fail(f"placeholder {quoted.group(0)} is quoted in 'fix'; the fix renderer quotes every "
                               "value itself (with shlex.quote), so write it bare", rule, key)


def _header(ctx: _Ctx, raw: Any) -> tuple[str, Severity, dict[str, Any]]:
    """Id, severity and thresholds, after rejecting unknown keys."""
    if not isinstance(raw, dict):
        raise ctx.fail("each rule must be a mapping", raw)
    unknown = sorted(set(raw) - RULE_KEYS)
    if unknown:
        raise ctx.fail(f"unknown key '{unknown[0]}' (allowed: {', '.join(sorted(RULE_KEYS))})", raw, unknown[0])
    rule_id = _text(ctx, raw, "id")
    if not ID_RE.match(rule_id):
        raise ctx.fail(f"rule id '{rule_id}' must be UPPER_SNAKE", raw, "id")
    try:
        severity = Severity(raw.get("severity"))
    except ValueError:
        raise ctx.fail("severity must be one of info, warning, error", raw, "severity") from None
    thresholds = raw.get("thresholds", {})
    if not isinstance(thresholds, dict):
        raise ctx.fail("thresholds must be a mapping of name: value", raw, "thresholds")
    return rule_id, severity, thresholds


def _scope_and_placeholders(ctx: _Ctx, raw: dict[str, Any], thresholds: Mapping[str, Any]) -> tuple[str, set[str]]:
    """The rule's scope, and the placeholder names its message and fix may use."""
    check = raw.get("check")
    scope = raw.get("scope", "pair" if check else None)
    if scope not in SCOPES:
        raise ctx.fail(f"scope must be one of {', '.join(SCOPES)}", raw, "scope")
    if (check is None) == ("when" not in raw):
        raise ctx.fail("a rule needs exactly one of 'when' (a condition) or 'check' (a named check)", raw)
    common = {f"thresholds.{k}" for k in thresholds} | {"subject"}
    if check is None:
        return scope, set(placeholders_for_scope(scope)) | common
    if check not in CHECKS:
        raise ctx.fail(f"unknown check '{check}' (known: {', '.join(sorted(CHECKS))})", raw, "check")
    missing = sorted(CHECKS[check].thresholds - set(thresholds))
    if missing:
        raise ctx.fail(f"check '{check}' needs threshold '{missing[0]}'", raw, "thresholds")
    return scope, set(CHECKS[check].placeholders) | common


def _needs(ctx: _Ctx, raw: dict[str, Any]) -> tuple[str, ...]:
    needs = _strings(ctx, raw, "needs")
    for need in needs:
        if need not in FACT_GROUPS:
            raise ctx.fail(f"unknown fact group '{need}' in needs (known: {', '.join(sorted(FACT_GROUPS))})",
                           raw, "needs")
    return needs


def _threshold_sources(ctx: _Ctx, raw: dict[str, Any], thresholds: Mapping[str, Any]) -> dict[str, str]:
    sources = raw.get("threshold_sources", {})
    if not isinstance(sources, dict) or not all(isinstance(v, str) and v.strip() for v in sources.values()):
        raise ctx.fail("threshold_sources must map threshold names to a non-empty text", raw, "threshold_sources")
    unknown = sorted(str(k) for k in set(sources) - set(thresholds))
    if unknown:
        raise ctx.fail(f"threshold_sources names '{unknown[0]}', which is not in this rule's thresholds",
                       sources, unknown[0])
    return {str(k): str(v).strip() for k, v in sources.items()}


def _parse_rule(ctx: _Ctx, raw: Any) -> Rule:
    rule_id, severity, thresholds = _header(ctx, raw)
    scope, allowed = _scope_and_placeholders(ctx, raw, thresholds)
    needs = _needs(ctx, raw)
    message = _text(ctx, raw, "message")
    fix = _strings(ctx, raw, "fix")
    _check_placeholders(ctx, raw, allowed, {"message": [message], "fix": list(fix)})
    required = raw.get("required", True)
    if not isinstance(required, bool):
        raise ctx.fail("required must be true or false", raw, "required")
    return Rule(
        id=rule_id, title=_text(ctx, raw, "title"), severity=severity, scope=scope, message=message,
        mechanism=_text(ctx, raw, "mechanism", required=False), check=raw.get("check"),
        when=_condition(ctx, raw["when"], scope, thresholds) if "when" in raw else None,
        where=_condition(ctx, raw["where"], scope, thresholds) if "where" in raw else None,
        needs=needs, thresholds=dict(thresholds), fix=fix, references=_strings(ctx, raw, "references"),
        required=required, source=f"{ctx.path}:{line_of(raw) or '?'}",
        threshold_sources=_threshold_sources(ctx, raw, thresholds), unknown=_unknown(ctx, raw),
    )


def _unknown(ctx: _Ctx, raw: dict[str, Any]) -> str:
    """The skip reason a `when` rule gives when a fact is unknown; a named check states its own."""
    if "unknown" in raw and "when" not in raw:
        raise ctx.fail("'unknown' is the skip reason of a 'when' rule; a named check states its own", raw, "unknown")
    return _text(ctx, raw, "unknown", required=False)


def parse_playbook(text: str, path: str) -> list[Rule]:
    """Validate one playbook file's text; PlaybookError names path:line on the first problem."""
    ctx = _Ctx(path)
    data = parse_yaml_text(text, path, PlaybookError)
    if not isinstance(data, dict):
        raise PlaybookError(path, "a playbook must be a mapping with 'playbook' and 'rules'", line=1)
    unknown = sorted(set(data) - TOP_KEYS)
    if unknown:
        raise ctx.fail(f"unknown top-level key '{unknown[0]}' (allowed: {', '.join(sorted(TOP_KEYS))})",
                       data, unknown[0])
    rules = data.get("rules")
    if not isinstance(rules, list):
        raise ctx.fail("'rules' must be a list", data, "rules" if "rules" in data else None)
    return [_parse_rule(ctx, r) for r in rules]


def load_playbooks(paths: list[Path] | None = None, *, include_builtin: bool = True) -> list[Rule]:
    """Built-in playbooks plus the user's files or folders; duplicate rule ids are an error."""
    files = sorted(BUILTIN_DIR.glob("*.yaml")) if include_builtin else []
    for extra in paths or []:
        if extra.is_dir():
            files.extend(sorted(extra.glob("*.yaml")))
        elif os.path.lexists(extra):  # a file, or a FIFO or device that the read refuses by name
            files.append(extra)
        else:
            raise PlaybookError(str(extra), "no such playbook file or folder")
    rules: list[Rule] = []
    seen: dict[str, str] = {}
    for file in files:
        for rule in parse_playbook(read_yaml_text(file, PlaybookError), str(file)):
            if rule.id in seen:
                raise PlaybookError(str(file), f"duplicate rule id {rule.id} (first defined at {seen[rule.id]})",
                                    line=int(rule.source.rsplit(":", 1)[1]) if rule.source[-1].isdigit() else None)
            seen[rule.id] = rule.source
            rules.append(rule)
    return rules


def with_thresholds(rules: list[Rule], overrides: dict[str, dict[str, Any]], source: str) -> list[Rule]:
    """Rules with the user's threshold values; unknown rule ids or threshold names are errors."""

    by_id = {r.id: r for r in rules}
    for rule_id, values in overrides.items():
        if rule_id not in by_id:
            raise PlaybookError(source, f"thresholds for unknown rule {rule_id}", line=line_of(overrides, rule_id),
                                fix="`linkcheck playbooks list` names the rules")
        unknown = sorted(set(values) - set(by_id[rule_id].thresholds))
        if unknown:
            raise PlaybookError(source, f"rule {rule_id} has no threshold '{unknown[0]}' "
                                f"(it has: {', '.join(sorted(by_id[rule_id].thresholds)) or 'none'})",
                                line=line_of(values, unknown[0]))
        _check_override(by_id[rule_id], values, source)
    return [replace(r, thresholds={**r.thresholds, **overrides.get(r.id, {})}) for r in rules]


def _check_override(rule: Rule, values: dict[str, Any], source: str) -> None:
    """An override keeps its threshold's kind, and the rule's conditions still accept the new values."""
    for name, value in values.items():
        problem = override_problem(rule.thresholds[name], value)
        if problem:
            raise PlaybookError(source, f"threshold {rule.id}.{name} {problem}", line=line_of(values, name))
    try:
        check_conditions((rule.when, rule.where), rule.scope, {**rule.thresholds, **values})
    except OperandError as exc:
        raise PlaybookError(source, f"threshold override for {rule.id}: {exc}", line=line_of(values)) from None

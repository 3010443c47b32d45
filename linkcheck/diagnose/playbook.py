"""Playbooks: rules as data, read into typed msgspec models (linkcheck/schema.py) that name file and line for every
mistake.

A rule either states a condition over facts (a small operator vocabulary, never eval) or names a Python check from
`checks.CHECKS`. Thresholds live in the rule, so users tune them without code. The file is decoded into `_Playbook`
(unknown keys refused); what a schema cannot say (fact paths known for the scope, `$threshold` references defined,
placeholders known, check names and their thresholds, ids, operands a comparison can use) is checked after, by the
small functions below, each naming the line of what it refuses.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, UnsetType
from msgspec.structs import replace

from linkcheck import schema
from linkcheck.diagnose.checks.registry import CHECKS, KNOWN_BAD_CHECKS
from linkcheck.diagnose.facts_schema import CLUSTER_SCOPES, FACT_GROUPS, SCOPES, is_known_fact, placeholders_for_scope
from linkcheck.diagnose.operands import OperandError, check_conditions, check_operand, fact_kind, override_problem
from linkcheck.diagnose.rule import Choice, Condition, EvidenceSpec, Explanation, Grade, Rule
from linkcheck.errors import PlaybookError
from linkcheck.integers import ascii_int
from linkcheck.model import Severity
from linkcheck.yamlfile import line_of, parse_yaml_text, read_yaml_text

log = logging.getLogger(__name__)
BUILTIN_DIR = Path(__file__).resolve().parent.parent / "playbooks"
COMPARE_OPS = {"eq", "ne", "lt", "le", "gt", "ge", "in", "not_in", "matches", "between", "below_baseline"}
OPERATORS = COMPARE_OPS | {"missing", "differs"}
ID_RE = re.compile(r"^[A-Z][A-Z0-9_]*$")
PLACEHOLDER_RE = re.compile(r"\{([A-Za-z_][\w.]*)\}")
# A placeholder written inside quotes in a fix line ('{profile}', "{netdev}"): quoted twice once rendered.
QUOTED_PLACEHOLDER_RE = re.compile(r"""(['"])\{[A-Za-z_][\w.]*\}\1""")

Text = Annotated[str, msgspec.Meta(pattern=r"\S")]  # a text with something in it
Steps = schema.Steps


# -- the file's shape ------------------------------------------------------------------------------------------------

class _Condition(msgspec.Struct, forbid_unknown_fields=True):
    """`{fact: F, OP: operand}`, `{differs: [F, G]}`, or `{all: [...]}` / `{any: [...]}`; which keys go together is
    checked after decoding (`_condition`)."""

    fact: Any = UNSET
    all: list[_Condition] | UnsetType = UNSET
    any: list[_Condition] | UnsetType = UNSET
    eq: Any = UNSET
    ne: Any = UNSET
    lt: Any = UNSET
    le: Any = UNSET
    gt: Any = UNSET
    ge: Any = UNSET
    in_: Any = msgspec.field(default=UNSET, name="in")
    not_in: Any = UNSET
    matches: Any = UNSET
    between: Any = UNSET
    below_baseline: Any = UNSET
    missing: Any = UNSET
    differs: Any = UNSET

    def present(self) -> list[str]:
        """The keys the file gave, in the model's order (`in` under its own name)."""
        return [key for key in _CONDITION_KEYS if self.operand(key) is not UNSET]

    def operand(self, key: str) -> Any:
        return getattr(self, "in_" if key == "in" else key)


_CONDITION_KEYS = tuple("in" if name == "in_" else name for name in _Condition.__struct_fields__)


class _Choice(msgspec.Struct, forbid_unknown_fields=True):
    text: str
    when: _Condition | UnsetType = UNSET


class _Grade(msgspec.Struct, forbid_unknown_fields=True):
    when: _Condition
    severity: Severity


class _Evidence(msgspec.Struct, forbid_unknown_fields=True):
    fact: str | UnsetType = UNSET
    each: str | UnsetType = UNSET
    name: str | None = None
    source: str | None = None


class _Explanation(msgspec.Struct, forbid_unknown_fields=True):
    rule: str
    same_subject: bool = False


class _Rule(msgspec.Struct, forbid_unknown_fields=True):
    id: Text
    title: Text
    severity: Severity
    message: Text
    scope: str | None = None
    check: Text | None = None
    when: _Condition | UnsetType = UNSET
    where: _Condition | UnsetType = UNSET
    needs: list[str] = []
    thresholds: dict[str, Any] = {}
    threshold_sources: dict[str, Text] = {}
    mechanism: Text | None = None
    fix: list[str] = []
    references: list[str] = []
    required: bool = True
    unknown: Text | None = None
    subject: Text | None = None
    values: dict[str, str | list[_Choice]] = {}
    grades: list[_Grade] = []
    evidence: list[_Evidence] = []
    explained_by: list[str | _Explanation] = []
    # A pair's named-check rule that also judges a cluster: under the same id, with this cluster check and every
    # text the same (its former cluster id CLUSTER_<id> an alias).
    cluster_check: Text | None = None
    # The same rule judged over a cluster (3-8 nodes, or a pair seen as a cluster of one cable): its own subjects and
    # condition, under this rule's id, title and mechanism (see _Layout).
    cluster: _Layout | UnsetType = UNSET
    # Ids this rule had before, still accepted wherever a rule is named (thresholds, explained_by, profiles) for one
    # release; each use is told the new id.
    aliases: list[str] = []


class _Layout(msgspec.Struct, forbid_unknown_fields=True):
    """How a rule judges a cluster: the subjects (scope), condition or check and what its finding says, where they
    differ from the pair's. The id, severity and references are the rule's; thresholds and their sources join the
    rule's (one table, keyed by layout where a figure differs, e.g. ring_min_busbw_gbs); `mechanism` adds what a
    cluster adds to the rule's one mechanism; a field left out is the rule's."""

    scope: str
    check: Text | None = None
    when: _Condition | UnsetType = UNSET
    where: _Condition | UnsetType = UNSET
    needs: list[str] = []
    thresholds: dict[str, Any] = {}
    threshold_sources: dict[str, Text] = {}
    title: Text | None = None
    severity: Severity | None = None
    message: Text | None = None
    mechanism: Text | None = None
    fix: list[str] | None = None
    references: list[str] = []
    required: bool | None = None
    unknown: Text | None = None
    subject: Text | None = None
    values: dict[str, str | list[_Choice]] = {}
    grades: list[_Grade] = []
    evidence: list[_Evidence] = []
    explained_by: list[str | _Explanation] = []


class _KnownBad(msgspec.Struct, forbid_unknown_fields=True):
    """One entry of a known-bad list: a tool's versions, what goes wrong, who says so, what fixes it. `unless`: the
    settings that avoid it (all of them set so: a note instead of a warning)."""

    tool: Literal["nccl"]
    versions: list[Annotated[str, msgspec.Meta(pattern=r"^[0-9]+(\.[0-9]+)*$")]]
    symptom: Text
    source: Text
    fixed: Text | None = None
    workaround: Text | None = None
    unless: dict[Annotated[str, msgspec.Meta(pattern=r"^NCCL_[A-Z0-9_]+$")], str] = {}


class _Playbook(msgspec.Struct, forbid_unknown_fields=True):
    rules: list[_Rule]
    playbook: str | None = None
    description: str | None = None
    known_bad: list[_KnownBad] = []


_TEXT = "a non-empty text"
_TEXTS = "a list of texts"
_ALLOWED = {
    "rules": "a list of rules", "rules[]": "a mapping with id, title, severity, message, ...",
    "known_bad": "a list of entries (tool, versions, symptom, source, fixed, workaround, unless)",
    "known_bad[]": "a mapping with tool, versions, symptom, source and optionally fixed, workaround, unless",
    "known_bad[].tool": "nccl", "known_bad[].versions": "a list of versions such as 2.30.4",
    "known_bad[].versions[]": "a version such as 2.30.4", "known_bad[].symptom": _TEXT,
    "known_bad[].source": _TEXT, "known_bad[].fixed": _TEXT, "known_bad[].workaround": _TEXT,
    "known_bad[].unless": "a mapping of NCCL_* settings to the values that avoid it",
    "rules[].cluster_check": "the name of a cluster's named check",
    "rules[].cluster": "a mapping with scope and when or check, and what a cluster's finding says differently",
    "rules[].cluster.scope": "a cluster's scope", "rules[].aliases": "a list of the rule's former ids",
    "rules[].aliases[]": "an UPPER_SNAKE id",
    "rules[].id": "an UPPER_SNAKE id", "rules[].title": _TEXT, "rules[].message": _TEXT,
    "rules[].check": "the name of a named check", "rules[].mechanism": _TEXT, "rules[].unknown": _TEXT,
    "rules[].needs": "a list of fact groups", "rules[].needs[]": "a fact group", "rules[].fix": _TEXTS,
    "rules[].fix[]": "a text", "rules[].references": _TEXTS, "rules[].references[]": "a text",
    "rules[].required": "true or false", "rules[].thresholds": "a mapping of name: value",
    "rules[].threshold_sources": "a mapping of threshold names to a non-empty text",
    "rules[].subject": _TEXT, "rules[].values": "a mapping of names to a text or a list of {when, text}",
    "rules[].grades": "a list of {when, severity}", "rules[].grades[]": "{when: CONDITION, severity: info|warning}",
    "rules[].grades[].severity": "info, warning or error",
    "rules[].evidence": "a list of {fact or each, name, source}", "rules[].evidence[]": "{fact or each, name, source}",
    "rules[].explained_by": "a list of rule ids or {rule: ID, same_subject: true}",
    "rules[].explained_by[]": "a rule id, or {rule: ID, same_subject: true}",
    "playbook": "the playbook's name", "description": "a text",
}


def _where(steps: Steps) -> str:
    """`rules[].when.all[]`: a dotted path with its list indices left out, to look up what a field allows."""
    return re.sub(r"\[\d+\]", "[]", schema.dotted(steps))


def _allowed(field: str) -> str | None:
    field = re.sub(r"\[\d+\]", "[]", field)  # `rules[0].cluster.*`: the model's path, whatever the index
    if field.endswith("*"):
        steps = tuple(0 if part == "[]" else part for part in re.findall(r"[^.\[]+|\[\]", field[:-2]))
        return ", ".join(schema.field_names(_Playbook, steps) or []) or None
    return _ALLOWED.get(field)


def _reason(problem: schema.Problem, value: Any) -> str:
    """What msgspec refused, in the words of the rule language where it has its own."""
    where = _where(problem.steps)
    last = problem.steps[-1] if problem.steps else None
    condition = where.endswith((".when", ".where")) or re.search(r"\.(all|any)\[\]$", where)
    if problem.unknown is not None and condition:
        return (f"unknown operator {problem.unknown}; expected one of "
                f"{', '.join(sorted(OPERATORS | {'all', 'any', 'fact'}))}")
    if problem.unknown is None and problem.missing is None:
        if condition:
            return "a condition must be a mapping such as {fact: mtu, lt: 9000}"
        if where.endswith((".all", ".any")):
            return f"'{last}' needs a non-empty list of conditions"
        if where == "rules[].severity":
            return f"severity must be one of {', '.join(s.value for s in Severity)}, got {schema.shown(value)}"
        if where == "rules[].scope":
            return f"scope must be one of {', '.join(SCOPES)}, got {schema.shown(value)}"
        if where == "rules[]":
            return "each rule must be a mapping"
        if where == "rules":
            return "'rules' must be a list of rules"
    return schema.describe(problem, value, _allowed)


# -- what the schema cannot say -------------------------------------------------------------------------------------

def _condition(file: schema.YamlFile, cond: _Condition, at: Steps, scope: str,
               thresholds: Mapping[str, Any]) -> Condition:
    keys = cond.present()
    if not keys:
        raise file.refuse("a condition must be a mapping such as {fact: mtu, lt: 9000}", at)
    if keys in (["all"], ["any"]):
        op = keys[0]
        items: list[_Condition] = cond.operand(op)
        if not items:
            raise file.refuse(f"'{op}' needs a non-empty list of conditions", at, op)
        return Condition(op, children=tuple(_condition(file, c, (*at, op, i), scope, thresholds)
                                            for i, c in enumerate(items)))
    ops = [k for k in keys if k != "fact"]
    if len(ops) != 1 or ops[0] not in OPERATORS:
        raise file.refuse(f"unknown operator {', '.join(ops) or '(none)'}; expected one of "
                          f"{', '.join(sorted(OPERATORS | {'all', 'any'}))}", at, ops[0] if ops else None)
    if ops[0] == "differs":
        return _differs(file, cond.differs, at, scope)
    return _comparison(file, cond, ops[0], at, scope, thresholds)


def _differs(file: schema.YamlFile, value: Any, at: Steps, scope: str) -> Condition:
    if not (isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value)):
        raise file.refuse("'differs' takes a list of two fact paths", at, "differs")
    for fact in value:
        _known_fact(file, fact, scope, at)
    return Condition("differs", value=tuple(value))


def _comparison(file: schema.YamlFile, cond: _Condition, op: str, at: Steps, scope: str,
                thresholds: Mapping[str, Any]) -> Condition:
    value = cond.operand(op)
    if not isinstance(cond.fact, str):
        raise file.refuse(f"'{op}' needs a 'fact'", at)
    _known_fact(file, cond.fact, scope, at)
    refs = [value] if isinstance(value, str) else list(value) if isinstance(value, list) else []
    for ref in refs:
        if isinstance(ref, str) and ref.startswith("$") and ref[1:] not in thresholds:
            raise file.refuse(f"threshold '{ref}' is not defined in this rule's thresholds", at, op)
    try:
        check_operand(op, value, cond.fact, scope, thresholds)
    except OperandError as exc:
        raise file.refuse(str(exc), at, op) from None
    return Condition(op, fact=cond.fact, value=value)


def _known_fact(file: schema.YamlFile, fact: str, scope: str, at: Steps) -> None:
    if not is_known_fact(scope, fact):
        raise file.refuse(f"unknown fact path '{fact}' for scope '{scope}'", at)


def _placeholders(file: schema.YamlFile, at: Steps, allowed: Callable[[str], bool],
                  texts: dict[str, list[str]]) -> None:
    """Every {placeholder} of these texts is one the rule fills; none in a fix line is quoted."""
    for key, items in texts.items():
        for text in items:
            for name in PLACEHOLDER_RE.findall(text):
                if not allowed(name):
                    raise file.refuse(f"unknown placeholder {{{name}}} in '{key}'", at, key)
            quoted = QUOTED_PLACEHOLDER_RE.search(text) if key == "fix" else None
            if quoted is not None:
                raise file.refuse(f"placeholder {quoted.group(0)} is quoted in 'fix'; the fix renderer quotes every "
                                  "value itself (with shlex.quote), so write it bare", at, key)


def _scope_and_placeholders(file: schema.YamlFile, doc: _Rule, at: Steps) -> tuple[str, Callable[[str], bool]]:
    """The rule's scope (a named check's defaults to the pair), and which placeholder names its message and fix may
    use: a named check's values, or the scope's facts and the rule's computed values; the thresholds and the
    subject either way."""
    scope = doc.scope or ("pair" if doc.check is not None else None)
    if scope not in SCOPES:
        raise file.refuse(f"scope must be one of {', '.join(SCOPES)}", at, "scope")
    if (doc.check is None) == isinstance(doc.when, UnsetType):
        raise file.refuse("a rule needs exactly one of 'when' (a condition) or 'check' (a named check)", at)
    common = {f"thresholds.{k}" for k in doc.thresholds} | {"subject"}
    if doc.check is None:
        names = set(placeholders_for_scope(scope)) | common | set(doc.values)
        return scope, lambda name: name in names or is_known_fact(scope, name)
    # A cluster's named checks read the cluster's facts, a pair's the pair's: a scope names only checks of its kind.
    registry = {name: c for name, c in CHECKS.items() if c.cluster == (scope in CLUSTER_SCOPES)}
    if doc.check not in registry:
        raise file.refuse(f"unknown check '{doc.check}' for scope '{scope}' (known: {', '.join(sorted(registry))})",
                          at, "check")
    missing = sorted(registry[doc.check].thresholds - set(doc.thresholds))
    if missing:
        raise file.refuse(f"check '{doc.check}' needs threshold '{missing[0]}'", at, "thresholds")
    names = set(registry[doc.check].placeholders) | common
    return scope, names.__contains__


def _header(file: schema.YamlFile, doc: _Rule, at: Steps) -> None:
    """The id, the fact groups and the threshold sources name what exists."""
    if not ID_RE.match(doc.id.strip()):
        raise file.refuse(f"rule id '{doc.id.strip()}' must be UPPER_SNAKE", at, "id")
    for need in doc.needs:
        if need not in FACT_GROUPS:
            raise file.refuse(f"unknown fact group '{need}' in needs (known: {', '.join(sorted(FACT_GROUPS))})",
                              at, "needs")
    unknown = sorted(set(doc.threshold_sources) - set(doc.thresholds))
    if unknown:
        raise file.refuse(f"threshold_sources names '{unknown[0]}', which is not in this rule's thresholds",
                          (*at, "threshold_sources"), unknown[0])
    if doc.unknown is not None and isinstance(doc.when, UnsetType):
        raise file.refuse("'unknown' is the skip reason of a 'when' rule; a named check states its own", at,
                          "unknown")
    for key in ("subject", "values", "grades", "evidence"):
        if isinstance(doc.when, UnsetType) and getattr(doc, key):
            raise file.refuse(f"'{key}' belongs to a 'when' rule; a named check states its own", at, key)
    for cause in doc.explained_by:
        name = cause if isinstance(cause, str) else cause.rule
        if not ID_RE.match(name) or name == doc.id.strip():
            raise file.refuse(f"explained_by names '{name}', which is no other rule's id", (*at, "explained_by"))


def _language(file: schema.YamlFile, doc: _Rule, at: Steps, scope: str,
              allowed: Callable[[str], bool]) -> dict[str, Any]:
    """A `when` rule's computed values, grades, evidence, subject and skip reason, their conditions and placeholders
    checked like the rule's own."""

    def condition(cond: _Condition, steps: Steps) -> Condition:
        return _condition(file, cond, steps, scope, doc.thresholds)

    values: dict[str, tuple[Choice, ...]] = {}
    for name, raw in doc.values.items():
        where: Steps = (*at, "values")
        if not re.fullmatch(r"[A-Za-z_]\w*", name) or is_known_fact(scope, name) or name.startswith("thresholds"):
            raise file.refuse(f"value '{name}' must be a name of its own (letters, digits, _), not a fact's", where,
                              name)
        choices = [_Choice(raw)] if isinstance(raw, str) else raw

        def known(n: str, earlier: frozenset[str] = frozenset(values)) -> bool:  # facts, thresholds, earlier values
            return (allowed(n) and n not in doc.values) or n in earlier

        _placeholders(file, where, known, {f"values.{name}": [c.text for c in choices]})
        values[name] = tuple(Choice(c.text, None if isinstance(c.when, UnsetType) else
                                    condition(c.when, (*where, name, i, "when"))) for i, c in enumerate(choices))
    grades = tuple(Grade(condition(g.when, (*at, "grades", i, "when")), g.severity) for i, g in enumerate(doc.grades))
    evidence = []
    for i, spec in enumerate(doc.evidence):
        where = (*at, "evidence", i)
        if isinstance(spec.fact, UnsetType) == isinstance(spec.each, UnsetType):
            raise file.refuse("an evidence line takes exactly one of 'fact' (a value) or 'each' (a mapping: one line "
                              "per entry)", where)
        fact = spec.each if not isinstance(spec.each, UnsetType) else str(spec.fact)
        _known_fact(file, fact, scope, where)
        if not isinstance(spec.each, UnsetType) and fact_kind(scope, fact) != "other":
            raise file.refuse(f"'each' takes a fact that holds a mapping, and '{fact}' is {fact_kind(scope, fact)}",
                              where, "each")
        def named(n: str, each: bool = not isinstance(spec.each, UnsetType)) -> bool:  # and {entry} with each
            return allowed(n) or (n == "entry" and each)

        _placeholders(file, where, named, {"name": [spec.name or ""], "source": [spec.source or ""]})
        evidence.append(EvidenceSpec(fact, spec.name or "", spec.source or "", not isinstance(spec.each, UnsetType)))
    _placeholders(file, at, allowed, {"unknown": [doc.unknown or ""], "subject": [doc.subject or ""]})
    return {"values": values, "grades": grades, "evidence": tuple(evidence), "subject": (doc.subject or "").strip(),
            "unknown": (doc.unknown or "").strip()}


def _rule(file: schema.YamlFile, doc: _Rule, index: int, at: Steps | None = None) -> Rule:
    at = ("rules", index) if at is None else at
    _header(file, doc, at)
    scope, allowed = _scope_and_placeholders(file, doc, at)
    _placeholders(file, at, allowed, {"message": [doc.message], "fix": doc.fix})

    def condition(key: str, cond: _Condition | UnsetType) -> Condition | None:
        return None if isinstance(cond, UnsetType) else _condition(file, cond, (*at, key), scope, doc.thresholds)

    return Rule(
        id=doc.id.strip(), title=doc.title.strip(), severity=doc.severity, scope=scope, message=doc.message.strip(),
        mechanism=(doc.mechanism or "").strip(), check=doc.check, when=condition("when", doc.when),
        where=condition("where", doc.where), needs=tuple(doc.needs), thresholds=dict(doc.thresholds),
        fix=tuple(doc.fix), references=tuple(doc.references), required=doc.required,
        source=f"{file.path}:{line_of(schema.value_at(file.data, at)[0]) or '?'}",
        threshold_sources={k: v.strip() for k, v in doc.threshold_sources.items()},
        explained_by=tuple(Explanation(c) if isinstance(c, str) else Explanation(c.rule, c.same_subject)
                           for c in doc.explained_by),
        aliases=tuple(a.strip() for a in doc.aliases),
        **_language(file, doc, at, scope, allowed),
    )


def _decode(file: schema.YamlFile) -> _Playbook:
    """The file as the model, or one PlaybookError at file:line saying what is wrong and what is allowed."""
    if not isinstance(file.data, dict):
        raise PlaybookError(file.path, "a playbook must be a mapping with 'playbook' and 'rules'", line=1)
    return file.decode(_Playbook, wording=_reason)


def parse_playbook(text: str, path: str) -> list[Rule]:
    """Read one playbook file's text; PlaybookError names path:line on the first problem."""
    return parse_playbook_file(text, path)[0]


def parse_playbook_file(text: str, path: str) -> tuple[list[Rule], list[dict[str, Any]]]:
    """One playbook file's rules and its known-bad entries (each with the file:line that defines it)."""
    file = schema.YamlFile(path, parse_yaml_text(text, path, PlaybookError), PlaybookError)
    doc = _decode(file)
    # A built-in entry is named by its file's name (no path of this installation in a report); a user's by its path.
    where = f"playbooks/{Path(path).name}" if Path(path).parent == BUILTIN_DIR else path
    entries = [{**msgspec.structs.asdict(e),
                "defined_at": f"{where}:{line_of(schema.value_at(file.data, ('known_bad', i))[0]) or '?'}"}
               for i, e in enumerate(doc.known_bad)]
    rules = []
    for i, r in enumerate(doc.rules):
        for alias in r.aliases:
            if not ID_RE.match(alias.strip()) or alias.strip() == r.id.strip():
                raise file.refuse(f"alias '{alias.strip()}' must be an UPPER_SNAKE id other than the rule's own",
                                  ("rules", i), "aliases")
        if r.cluster_check is not None:
            if r.check is None or r.scope not in (None, "pair"):
                raise file.refuse("'cluster_check' belongs to a pair's named-check rule", ("rules", i), "cluster_check")
            # The same check over every node of a cluster, under the rule's own id (a cluster's form of it was
            # once a rule of its own, CLUSTER_<id>: that id is a former one, as a `cluster:` block's twins are).
            named = replace(r, aliases=[*r.aliases, f"CLUSTER_{r.id.strip()}"], cluster_check=None)
            rules += [_rule(file, named, i), _rule(file, replace(named, scope="cluster", check=r.cluster_check), i)]
        elif isinstance(r.cluster, UnsetType):
            rules.append(_rule(file, r, i))
        else:
            pair, cluster = _layouts(file, r, i)
            rules += [_rule(file, pair, i), _rule(file, cluster, i, ("rules", i, "cluster"))]
    return rules, entries


def _layouts(file: schema.YamlFile, doc: _Rule, index: int) -> tuple[_Rule, _Rule]:
    """One rule's two layouts: the pair's (the rule as written) and the cluster's (its `cluster:` block over the
    rule), both with the one table of thresholds."""
    layout = doc.cluster
    assert not isinstance(layout, UnsetType)
    if doc.scope in CLUSTER_SCOPES or layout.scope not in CLUSTER_SCOPES:
        raise file.refuse(f"'cluster' gives a cluster's scope ({', '.join(CLUSTER_SCOPES)}) to a pair's rule",
                          ("rules", index, "cluster"), "scope")
    if doc.cluster_check is not None:
        raise file.refuse("a rule takes 'cluster' or 'cluster_check', not both", ("rules", index), "cluster")
    thresholds = {**doc.thresholds, **layout.thresholds}
    sources = {**doc.threshold_sources, **layout.threshold_sources}
    pair = replace(doc, thresholds=thresholds, threshold_sources=sources, cluster=UNSET)
    mechanism = " ".join(m.strip() for m in (doc.mechanism, layout.mechanism) if m)
    cluster = replace(
        pair, scope=layout.scope, check=layout.check, when=layout.when, where=layout.where, needs=layout.needs,
        title=layout.title or doc.title, severity=layout.severity or doc.severity,
        message=layout.message or doc.message, mechanism=mechanism or None,
        fix=doc.fix if layout.fix is None else layout.fix, references=[*doc.references, *layout.references],
        required=doc.required if layout.required is None else layout.required, unknown=layout.unknown,
        subject=layout.subject, values=layout.values, grades=layout.grades, evidence=layout.evidence,
        explained_by=layout.explained_by)
    return pair, cluster


def is_cluster_rule(rule: Rule) -> bool:
    return rule.scope in CLUSTER_SCOPES


def renamed(rules: list[Rule]) -> dict[str, str]:
    """Former rule ids (aliases) -> the id that replaced them."""
    return {alias: r.id for r in rules for alias in r.aliases}


def resolve_id(rule_id: str, names: Mapping[str, str], where: str) -> str:
    """The current id of a rule named `rule_id` (itself unless it is a former id), telling the user of a former one."""
    new = names.get(rule_id)
    if new is None:
        return rule_id
    log.warning("%s: rule %s is now %s; the old id still works in this release, then no more", where, rule_id, new)
    return new


def load_playbooks(paths: list[Path] | None = None, *, include_builtin: bool = True,
                   kind: Literal["pair", "cluster", "all"] = "pair") -> list[Rule]:
    """Built-in playbooks plus the user's files or folders; duplicate rule ids are an error. `kind` keeps a pair's
    rules (every scope but a cluster's), a cluster's, or all of them (to list and validate)."""
    files = sorted(BUILTIN_DIR.glob("*.yaml")) if include_builtin else []
    for extra in paths or []:
        if extra.is_dir():
            files.extend(sorted(extra.glob("*.yaml")))
        elif os.path.lexists(extra):  # a file, or a FIFO or device that the read refuses by name
            files.append(extra)
        else:
            raise PlaybookError(str(extra), "no such playbook file or folder")
    rules: list[Rule] = []
    # A rule's id once per layout (a pair's, a cluster's), both from the one entry that defines it.
    seen: dict[tuple[str, bool], str] = {}
    first: dict[str, str] = {}
    known_bad: list[dict[str, Any]] = []
    for file in files:
        parsed, entries = parse_playbook_file(read_yaml_text(file, PlaybookError), str(file))
        known_bad += entries
        for rule in parsed:
            at = first.get(rule.id)
            if (rule.id, is_cluster_rule(rule)) in seen or (at is not None and at.rsplit(":", 1)[0] != str(file)):
                raise PlaybookError(str(file), f"duplicate rule id {rule.id} (first defined at {at})",
                                    line=_source_line(rule))
            seen[(rule.id, is_cluster_rule(rule))] = first.setdefault(rule.id, rule.source)
            rules.append(rule)
    rules = _current_ids(rules, first)
    for rule in rules:
        unknown = [c.rule for c in rule.explained_by if c.rule not in first]
        if unknown:
            raise PlaybookError(rule.source.rsplit(":", 1)[0], f"rule {rule.id}: explained_by names no rule "
                                f"{unknown[0]} (`linkcheck playbooks list` names the rules)", line=_source_line(rule))
    # Every file's known-bad entries, the built-in list's and the user's, reach the rules that judge them.
    rules = [replace(r, thresholds={**r.thresholds, "known_bad": tuple(known_bad)}) if r.check in KNOWN_BAD_CHECKS
             else r for r in rules]
    return of_kind(rules, kind)


def _current_ids(rules: list[Rule], first: dict[str, str]) -> list[Rule]:
    """The rules, each explained_by that names a former id naming the current one; a rule whose id is another's
    former id is refused (it would shadow the rename)."""
    names = renamed(rules)
    for alias, new in names.items():
        if alias in first:
            raise PlaybookError(first[alias].rsplit(":", 1)[0], f"rule id {alias} is a former id of {new}; "
                                f"name the rule {new}", line=_source_line(next(r for r in rules if r.id == alias)))
    return [replace(r, explained_by=tuple(replace(c, rule=resolve_id(c.rule, names, r.source))
                                          for c in r.explained_by)) if any(c.rule in names for c in r.explained_by)
            else r for r in rules]


def of_kind(rules: list[Rule], kind: Literal["pair", "cluster", "all"]) -> list[Rule]:
    """The rules a pair's diagnosis judges, or a cluster's, or all of them."""
    if kind == "all":
        return rules
    return [r for r in rules if (r.scope in CLUSTER_SCOPES) == (kind == "cluster")]


def _source_line(rule: Rule) -> int | None:
    line = rule.source.rsplit(":", 1)[-1]
    return ascii_int(line, 1, 1 << 31)


def with_thresholds(rules: list[Rule], overrides: dict[str, dict[str, Any]], source: str) -> list[Rule]:
    """Rules with the user's threshold values; unknown rule ids or threshold names are errors."""

    by_id: dict[str, list[Rule]] = {}
    for r in rules:
        by_id.setdefault(r.id, []).append(r)
    names = renamed(rules)
    current: dict[str, dict[str, Any]] = {}
    for named, values in overrides.items():
        rule_id = resolve_id(named, names, f"{source}:{line_of(overrides, named) or '?'}")
        if rule_id not in by_id:
            raise PlaybookError(source, f"thresholds for unknown rule {rule_id}", line=line_of(overrides, named),
                                fix="`linkcheck playbooks list` names the rules")
        if rule_id in current:
            raise PlaybookError(source, f"thresholds for rule {rule_id} given twice (once under a former id)",
                                line=line_of(overrides, named))
        # A rule's layouts share one table of thresholds (see _layouts), so its first layout names them all.
        unknown = sorted(set(values) - set(by_id[rule_id][0].thresholds))
        if unknown:
            raise PlaybookError(source, f"rule {rule_id} has no threshold '{unknown[0]}' "
                                f"(it has: {', '.join(sorted(by_id[rule_id][0].thresholds)) or 'none'})",
                                line=line_of(values, unknown[0]))
        for rule in by_id[rule_id]:
            _check_override(rule, values, source)
        current[rule_id] = values
    return [replace(r, thresholds={**r.thresholds, **current.get(r.id, {})}) for r in rules]


def _check_override(rule: Rule, values: dict[str, Any], source: str) -> None:
    """An override keeps its threshold's kind, and the rule's conditions still accept the new values."""
    for name, value in values.items():
        problem = override_problem(rule.thresholds[name], value)
        if problem:
            raise PlaybookError(source, f"threshold {rule.id}.{name} {problem}", line=line_of(values, name))
    try:
        check_conditions(rule.conditions(), rule.scope, {**rule.thresholds, **values})
    except OperandError as exc:
        raise PlaybookError(source, f"threshold override for {rule.id}: {exc}", line=line_of(values)) from None


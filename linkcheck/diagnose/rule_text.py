"""A readable, complete description of one rule for `linkcheck playbooks show`."""

from __future__ import annotations

import textwrap
from pathlib import Path

from linkcheck.diagnose.playbook import BUILTIN_DIR
from linkcheck.diagnose.rule import Condition, Rule


def _condition(cond: Condition, indent: int = 0) -> list[str]:
    pad = "  " * indent
    if cond.children:
        return [f"{pad}{cond.op}:"] + [ln for c in cond.children for ln in _condition(c, indent + 1)]
    if cond.op == "differs":
        return [f"{pad}differs: {cond.value[0]} vs {cond.value[1]}"]
    return [f"{pad}{cond.fact} {cond.op} {cond.value}"]


def _language(rule: Rule) -> list[str]:
    """A `when` rule's grades, subject, computed values and evidence, and what explains its findings."""
    lines = []
    for grade in rule.grades:
        lines += [f"  severity {grade.severity.value} when:"] + ["    " + ln for ln in _condition(grade.when)]
    if rule.subject:
        lines.append(f"  subject: {rule.subject}")
    for name, choices in rule.values.items():
        for choice in choices:
            lines.append(f"  value {name}: {choice.text}")
            lines += ["    when " + ln.strip() for ln in _condition(choice.when)] if choice.when else []
    for spec in rule.evidence:
        what = f"each entry of {spec.fact}" if spec.each else spec.fact
        lines.append(f"  evidence: {spec.name or what} = {what}" + (f" (source: {spec.source})" if spec.source else ""))
    for cause in rule.explained_by:
        lines.append(f"  explained by: {cause.rule}" + (" (same subject)" if cause.same_subject else ""))
    return lines


def rule_source(rule: Rule, full: bool = False) -> str:
    """Where a rule is written: a built-in's file name and line (`link-state.yaml:4`), a user's playbook as given;
    the full path with `full`."""
    if full:
        return rule.source
    path, sep, line = rule.source.rpartition(":")
    if sep and Path(path).parent == BUILTIN_DIR:
        return f"{Path(path).name}:{line} (built-in)"
    return rule.source


def describe_rule(rule: Rule, full: bool = False) -> str:
    lines = [f"{rule.id}: {rule.title}", f"  severity: {rule.severity.value}   scope: {rule.scope}   "
             f"required: {rule.required}", f"  source: {rule_source(rule, full)}"]
    if rule.check:
        lines.append(f"  check: {rule.check} (named check)")
    if rule.where:
        lines += ["  where:"] + ["    " + ln for ln in _condition(rule.where)]
    if rule.when:
        lines += ["  when:"] + ["    " + ln for ln in _condition(rule.when)]
    lines += _language(rule)
    if rule.needs:
        lines.append(f"  needs: {', '.join(rule.needs)}")
    for name, value in rule.thresholds.items():
        source = rule.threshold_sources.get(name)
        lines.append(f"  threshold {name}: {value}" + (f"  (source: {source})" if source else ""))
    lines.append("  message: " + rule.message)
    if rule.mechanism:
        lines.append("  mechanism:")
        lines += textwrap.wrap(rule.mechanism, 100, initial_indent="    ", subsequent_indent="    ")
    lines += [f"  fix: {f}" for f in rule.fix]
    lines += [f"  reference: {r}" for r in rule.references]
    return "\n".join(lines)

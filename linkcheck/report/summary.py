"""The answer a report starts with: the bundle's verdict (the acceptance's, where there is one, with the diagnosis's
beside it), then each cause once with its fix and what it explains, then what could not be judged and why.

A cause is a rule that warns or fails and that no other finding explains; its findings on several subjects (the same
hot-plug state on both paths) are one cause. What it explains: the findings the playbooks say it explains
(`explained_by`, reports/causes.py), and the acceptance checks that did not pass on the subjects it names (a path's
rate below the profile's line is the same measurement as the path's finding). The counts keep causes and
consequences apart: "1 cause, 9 explained". Every report format renders this one record."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any

import msgspec

from linkcheck.accept.text import non_standard_line
from linkcheck.model import Finding, Status
from linkcheck.report.causes import causes_first
from linkcheck.report.fix_lines import continued, split_step
from linkcheck.report.verdict import BundleVerdict


class Cause(msgspec.Struct, frozen=True):
    rule_id: str
    status: str  # fail | warn
    title: str
    subjects: tuple[str, ...]
    fix: tuple[str, ...]  # each distinct fix line of its findings, in order
    explains: tuple[str, ...]  # the findings it explains (`RULE subject`)
    checks: tuple[str, ...] = ()  # the acceptance checks not met on its subjects (`check subject`)


class NotJudged(msgspec.Struct, frozen=True):
    reason: str
    rules: tuple[str, ...]  # `RULE (subject)`
    required: bool  # one of them was required: the verdict is inconclusive for it


class Summary(msgspec.Struct, frozen=True):
    verdict: str  # the bundle's one line
    verdict_word: str
    exit_code: int
    by_acceptance: bool
    diagnosis: str  # the diagnosis's line, beside an acceptance's verdict
    non_standard: str | None  # what made the acceptance's run weaker than the standard one
    causes: tuple[Cause, ...]
    unexplained_checks: tuple[str, ...]  # acceptance checks not met that no cause explains (`check subject`)
    not_judged: tuple[NotJudged, ...]

    @property
    def explained(self) -> int:
        return sum(len(c.explains) + len(c.checks) for c in self.causes)

    @property
    def count(self) -> str:
        """`2 causes, 10 explained`; `no cause named` when nothing warns or fails."""
        if not self.causes:
            return "no cause named"
        named = f"{len(self.causes)} cause{'' if len(self.causes) == 1 else 's'}"
        return f"{named}, {self.explained} explained" if self.explained else named


def _check_name(check: dict[str, Any]) -> str:
    return f"{check.get('id')} {check.get('subject')}"


def summarize(findings: Sequence[Finding], bundle: BundleVerdict, diagnosis_line: str,
              doc: dict[str, Any] | None) -> Summary:
    """The summary of `findings` (a pair's, or a cluster's with each subject named by its test) under the bundle's
    verdict; `doc` the acceptance shown, if any."""
    problems = [f for f in findings if f.status in (Status.FAIL, Status.WARN)]
    ordered = causes_first(problems)
    groups: dict[str, list[Finding]] = {}
    effects: dict[str, list[str]] = {}
    rule_of_root = ""
    for finding, depth in ordered:
        if depth == 0:
            rule_of_root = finding.rule_id
            groups.setdefault(rule_of_root, []).append(finding)
            effects.setdefault(rule_of_root, [])
        else:
            effects[rule_of_root].append(f"{finding.rule_id} {finding.subject}")
    shown = doc if doc is not None and "problem" not in doc else None
    missed = [c for c in (shown or {}).get("checks") or [] if isinstance(c, dict) and c.get("status") != "PASS"]
    claimed: set[int] = set()
    causes = []
    for rule_id, found in groups.items():
        subjects = tuple(dict.fromkeys(f.subject for f in found))
        mine = [i for i, c in enumerate(missed) if i not in claimed
                and any(str(c.get("subject", "")).startswith(f"{s} ") for s in subjects)]
        claimed.update(mine)
        worst = Status.FAIL if any(f.status is Status.FAIL for f in found) else Status.WARN
        causes.append(Cause(rule_id, worst.value, found[0].title, subjects,
                            tuple(dict.fromkeys(line for f in found for line in f.fix)),
                            tuple(dict.fromkeys(effects[rule_id])), tuple(_check_name(missed[i]) for i in mine)))
    causes.sort(key=lambda c: c.status != Status.FAIL.value)  # failures first, each group in the report's order
    unexplained = tuple(_check_name(c) for i, c in enumerate(missed) if i not in claimed)
    skipped: dict[str, list[Finding]] = {}
    for f in findings:
        if f.status is Status.SKIP:
            skipped.setdefault(f.skip_reason or "no reason given", []).append(f)
    not_judged = tuple(NotJudged(reason, tuple(dict.fromkeys(f"{f.rule_id} ({f.subject})" for f in found)),
                                 any(f.required for f in found)) for reason, found in skipped.items())
    return Summary(bundle.line, bundle.word, bundle.exit_code, bundle.by_acceptance, diagnosis_line,
                   non_standard_line(shown) if shown else None, tuple(causes), unexplained, not_judged)


def summary_document(summary: Summary) -> dict[str, Any]:
    """The summary for the JSON report (`summary`)."""
    return {"verdict": summary.verdict_word, "exit_code": summary.exit_code, "line": summary.verdict,
            "decided_by": "acceptance" if summary.by_acceptance else "diagnosis", "diagnosis": summary.diagnosis,
            "non_standard": summary.non_standard, "count": summary.count, "causes": len(summary.causes),
            "explained": summary.explained,
            "cause_list": [msgspec.to_builtins(c) for c in summary.causes],
            "acceptance_checks_unexplained": list(summary.unexplained_checks),
            "not_judged": [msgspec.to_builtins(n) for n in summary.not_judged]}


def explains_text(cause: Cause, limit: int = 4) -> str:
    """What a cause explains in one line: the findings (the first `limit` named, then how many more), then the
    acceptance checks on its subjects grouped by check."""
    named = list(cause.explains[:limit])
    more = len(cause.explains) - len(named)
    parts = ["; ".join(named) + (f" and {more} more" if more else "")] if named else []
    if cause.checks:
        parts.append(f"{len(cause.checks)} acceptance check{'' if len(cause.checks) == 1 else 's'} on "
                     f"{'its subject' if len(cause.subjects) == 1 else 'these subjects'}: {grouped(cause.checks)}")
    return "; ".join(parts)


def grouped(names: Sequence[str]) -> str:
    """`check subject` names grouped by check: `rdma_concurrent_total_gbps (2), nccl_busbw_gbs`."""
    counts: dict[str, int] = {}
    for name in names:
        key = name.split(" ", 1)[0]
        counts[key] = counts.get(key, 0) + 1
    return ", ".join(k if n == 1 else f"{k} ({n})" for k, n in counts.items())


def not_judged_text(item: NotJudged, limit: int = 3) -> str:
    """`NCCL_BUSBW_LOW (pair), ...: no NCCL test in this bundle`, the rules cut after `limit`."""
    rules = list(item.rules[:limit])
    more = len(item.rules) - len(rules)
    return ", ".join(rules) + (f" and {more} more" if more else "") + f": {item.reason}"


def _wrapped(line: str, width: int, indent: str) -> list[str]:
    return textwrap.wrap(line, width, subsequent_indent=indent + "  ", break_on_hyphens=False) or [line]


def _cause_text(cause: Cause, width: int) -> list[str]:
    lines = _wrapped(f"  {cause.status.upper()} {cause.rule_id}: {cause.title}", width, "  ")
    lines += _wrapped(f"    on {', '.join(cause.subjects)}", width, "    ")
    for step in map(split_step, cause.fix):
        if step.prose:
            lines += _wrapped(f"    fix: {step.prose}", width, "    ")
        for command in step.commands:
            lines += continued(command, width, indent="      ")
    if cause.explains or cause.checks:
        lines += _wrapped(f"    explains: {explains_text(cause)}", width, "    ")
    return lines


def summary_text(summary: Summary, width: int = 80) -> list[str]:
    """The summary as plain lines no wider than `width` (a command continued with ` \\`), ending with the bundle's
    verdict line: the text reports that are not drawn by rich (a cluster's check) end with it."""
    lines = ["summary:"]
    if summary.by_acceptance:
        lines += _wrapped(f"  {summary.diagnosis}", width, "  ")
    if summary.non_standard:
        lines += _wrapped(f"  {summary.non_standard}", width, "  ")
    lines.append(f"  {summary.count}" + (":" if summary.causes else ""))
    for cause in summary.causes:
        lines += _cause_text(cause, width)
    if summary.unexplained_checks:
        lines += _wrapped(f"  acceptance checks not met that no cause explains: {grouped(summary.unexplained_checks)}",
                          width, "  ")
    if summary.not_judged:
        lines.append("  not judged:")
        for item in summary.not_judged:
            lines += _wrapped(f"    {not_judged_text(item)}", width, "    ")
    return [*lines, summary.verdict]

"""Each test of a cluster that warned, failed or was not measured, as the Markdown and HTML reports show it: its
label and round, why it is inconclusive, the cluster finding that explains it, and its warnings and failures with
their evidence, causes first."""

from __future__ import annotations

import msgspec
from msgspec.structs import replace

from linkcheck.model import Finding, Status
from linkcheck.outcome import ClusterCheck
from linkcheck.report.causes import causes_first


class CableFindings(msgspec.Struct, frozen=True):
    """One test's part of a report. Where the cluster names one of its nodes slow with every partner (`cause`), the
    fix is that node's, shown with the cluster's findings: its own findings then carry no fix."""

    label: str
    round_text: str  # `round 2`, `round 4, 2nd pass`
    problem: str | None
    cause: Finding | None
    findings: tuple[tuple[Finding, int], ...]  # causes first, each with its depth under its cause


def cable_findings(check: ClusterCheck) -> list[CableFindings]:
    """The tests a reader must look at, in the check's order: each that warned, failed or was not measured."""
    out = []
    for result in check.cables:
        problems = [f for f in result.findings if f.status in (Status.FAIL, Status.WARN)]
        if not problems and not result.problem:
            continue
        cause = check.node_cause(result)
        if cause is not None:
            problems = [replace(f, fix=()) for f in problems]
        round_text = f"round {result.test.round}" + (", 2nd pass" if result.test.pass_no == 2 else "")
        out.append(CableFindings(result.test.label, round_text, result.problem, cause,
                                tuple(causes_first(problems))))
    return out

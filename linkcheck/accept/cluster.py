"""Judge a cluster's run against a cluster profile (`layout: ring3`, `switch`, ...): one verdict for the cluster.

Every test of the schedule (a cable of the ring, or two nodes through the switch, the second pass included) is
judged by the profile's per-cable checks on its own pair view, exactly as a pair is (accept/judge.py: the worst of
the repetitions, missing is never passing), together with the findings of the pair's throughput rules on that
test. The `nccl_*` checks judge the one all_gather_perf run across every node. The cluster's own findings (its
rules over the layout, the N-node traps, a node slow with every partner), a node that could not be inspected and a
traffic test that stopped count as they do for `check`. The verdict is the worst of all of it.
"""

from __future__ import annotations

from typing import Any

import msgspec

from linkcheck.accept.judge import (
    FROM_DIAGNOSIS,
    AcceptVerdict,
    CheckResult,
    FindingRef,
    Measured,
    counted_findings,
    judge_check,
    judge_measured,
    nccl_measured,
    record_head,
    worst,
)
from linkcheck.accept.profile import Profile
from linkcheck.errors import ExitCode
from linkcheck.model import Verdict
from linkcheck.outcome import CableResult, ClusterCheck

# Judged once, on the NCCL run across every node; every other check is judged per test.
CLUSTER_CHECKS = ("nccl_busbw_gbs", "nccl_wrong")


class TestAcceptance(msgspec.Struct, frozen=True):
    """One test of the schedule as the profile judges it: its checks (subjects as on the pair), the findings of the
    pair's throughput rules on it, and why it was not measured when it was not."""

    label: str
    round: int
    a: str
    b: str
    verdict: AcceptVerdict
    checks: tuple[CheckResult, ...]
    findings: tuple[FindingRef, ...] = ()
    pass_no: int = 1
    switched: bool = False
    problem: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"test": self.label, "round": self.round, "a": self.a, "b": self.b, "pass": self.pass_no,
                "switched": self.switched, "verdict": self.verdict.value,
                "checks": len(self.checks), "problem": self.problem}


class ClusterAcceptance(msgspec.Struct, frozen=True):
    profile: Profile
    repetitions: int
    layout: str
    nodes: tuple[str, ...]
    verdict: AcceptVerdict
    tests: tuple[TestAcceptance, ...]
    checks: tuple[CheckResult, ...]  # the NCCL run's, judged once
    diagnosis_verdict: Verdict  # the cluster check's own verdict (its rules and every test's)
    findings: tuple[FindingRef, ...] = ()  # the cluster rules' findings that count
    notes: tuple[str, ...] = ()
    nccl_largest_bytes: int | None = None

    @property
    def exit_code(self) -> ExitCode:
        return self.verdict.exit_code

    def all_checks(self) -> list[tuple[str, CheckResult]]:
        """Every judged check with the test it belongs to ("" for the cluster's)."""
        return [(t.label, c) for t in self.tests for c in t.checks] + [("", c) for c in self.checks]

    def to_dict(self) -> dict[str, Any]:
        """acceptance.json as a pair's, with `cluster` (the layout, nodes and each test's verdict); each check's
        subject starts with its test's label, so every report that reads a pair's record reads this one."""
        checks = []
        for label, check in self.all_checks():
            row = check.to_dict()
            row["subject"] = f"{label} {row['subject']}" if label else row["subject"]
            checks.append(row)
        findings = [{"id": r, "status": s, "subject": subj} for r, s, subj in self.findings]
        findings += [{"id": r, "status": s, "subject": f"{t.label} {subj}"} for t in self.tests
                     for r, s, subj in t.findings]
        return {
            **record_head(self.profile, self.repetitions, self.nccl_largest_bytes),
            "verdict": self.verdict.value, "exit_code": int(self.exit_code),
            "cluster": {"layout": self.layout, "nodes": list(self.nodes), "tests": [t.to_dict() for t in self.tests]},
            "diagnosis": {"verdict": self.diagnosis_verdict.value, "findings": findings},
            "checks": checks,
            "notes": list(self.notes),
        }


def judge_test(result: CableResult, profile: Profile, repetitions: int) -> TestAcceptance:
    """One test by the per-cable checks of `profile` on its own pair view and runs, and its findings."""
    checks = tuple(r for check in profile.checks if check.id not in CLUSTER_CHECKS
                   for r in judge_check(check, result.link, repetitions))
    findings, _ = counted_findings(result.findings, ())
    verdicts = [FROM_DIAGNOSIS[result.verdict], *(c.status for c in checks)]
    if result.problem:  # not measured, or its run stopped: never a pass
        verdicts.append(AcceptVerdict.INCONCLUSIVE)
    test = result.test
    return TestAcceptance(test.label, test.round, test.a, test.b, worst(verdicts), checks, findings, test.pass_no,
                          test.switched, result.problem)


def judge_cluster(check: ClusterCheck, profile: Profile, repetitions: int | None = None) -> ClusterAcceptance:
    """The acceptance of a cluster's run: every test, the NCCL run across the nodes, the cluster's findings."""
    reps = repetitions if repetitions is not None else profile.test.repetitions
    tests = tuple(judge_test(r, profile, reps) for r in check.cables)
    nccl = check.facts.nccl
    subject = f"all_gather across {len(check.facts.topology.nodes)} nodes"
    measured = {what: nccl_measured(nccl, what, subject) for what in ("busbw", "wrong")}
    if nccl is None and check.nccl_error:  # say why it did not run
        measured = dict.fromkeys(measured, [Measured(subject, missing=(check.nccl_error,))])
    checks = tuple(r for c in profile.checks if c.id in CLUSTER_CHECKS
                   for r in judge_measured(c, measured["busbw" if c.id == "nccl_busbw_gbs" else "wrong"]))
    diagnosis = check.view.diagnosis
    findings, unjudged = counted_findings(diagnosis.findings, profile.require)
    from_cluster = FROM_DIAGNOSIS[diagnosis.verdict]
    notes = []
    if unjudged:
        from_cluster = worst([from_cluster, AcceptVerdict.INCONCLUSIVE])
    if from_cluster is not AcceptVerdict.PASS:
        notes.append(f"the cluster's findings make it {from_cluster.value} (verdict {diagnosis.verdict.value})")
    if check.view.topology.flags:
        notes.append("the cabling is flagged: " + "; ".join(f.message for f in check.view.topology.flags))
        from_cluster = worst([from_cluster, AcceptVerdict.DEGRADED])
    for node, why in check.view.errors.items():
        notes.append(f"node {node} was not inspected: {why}")
        from_cluster = worst([from_cluster, AcceptVerdict.INCONCLUSIVE])
    if check.traffic_error:
        notes.append(f"the traffic test stopped: {check.traffic_error}")
        from_cluster = worst([from_cluster, AcceptVerdict.INCONCLUSIVE])
    if not tests:
        notes.append("no test was measured")
        from_cluster = worst([from_cluster, AcceptVerdict.INCONCLUSIVE])
    verdict = worst([from_cluster, *(t.verdict for t in tests), *(c.status for c in checks)])
    if check.interrupted:
        verdict = AcceptVerdict.INCONCLUSIVE
        notes.append("interrupted (Ctrl-C): the run is partial")
    return ClusterAcceptance(profile, reps, check.facts.topology.layout, tuple(check.facts.topology.nodes), verdict,
                             tests, checks, check.verdict, findings, tuple(notes),
                             nccl.largest_bytes if nccl is not None else None)


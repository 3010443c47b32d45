"""What one judging produced, the one module of records every reporter reads: a pair's `Outcome` (the bundle, its
facts, the findings and the rules that judged them), and a cluster's `ClusterCheck` (the inspection's `ClusterView`
and, with traffic, every test's `CableResult`). Both say their `verdict` and `exit_code` the same way: the worst of
their verdicts, its exit code (EXIT_CODES), a cluster's flagged cabling at least a warning."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeAlias

import msgspec

from linkcheck.bundle.format import Bundle
from linkcheck.cluster.cables import CableTest, cable_tests
from linkcheck.cluster.facts import ClusterFacts, TrafficOutcome
from linkcheck.cluster.hosts import ClusterHost
from linkcheck.cluster.schedule import Schedule, schedule
from linkcheck.cluster.topology import Topology, one_cable
from linkcheck.diagnose.engine import EXIT_CODES, Diagnosis
from linkcheck.diagnose.rule import Rule
from linkcheck.errors import ExitCode
from linkcheck.facts.model import LinkFacts
from linkcheck.model import Capture, Finding, Status, Verdict

WORST = (Verdict.PASS, Verdict.WARN, Verdict.INCONCLUSIVE, Verdict.FAIL)  # verdicts from the best to the worst
# The cluster rule that names a node as the cause of every slow test it is in (playbooks/cluster.yaml).
NODE_CAUSE_RULE = "NODE_SLOW_WITH_EVERY_PARTNER"
# Below this a path measured slow: LINK_BELOW_NOMINAL's nominal_min_gbps (playbooks/throughput.yaml; a healthy path
# gives ~92-98 Gb/s with both busy). A test whose rules fail while every rate is above it failed on configuration.
HEALTHY_PATH_MIN_GBPS = 80.0


def worst(verdicts: Iterable[Verdict]) -> Verdict:
    """The worst of the verdicts (FAIL over INCONCLUSIVE over WARN over PASS)."""
    return max(verdicts, key=WORST.index)


def flagged_exit_code(verdict: Verdict, topology: Topology) -> ExitCode:
    """A verdict's exit code, at least 1 (a warning) when the cabling is flagged: a flag alone never passes."""
    code = EXIT_CODES[verdict]
    return ExitCode.WARN if code is ExitCode.PASS and topology.flags else code


class Outcome(msgspec.Struct, frozen=True):
    """What one diagnosis of a pair produced, for the reporters."""

    bundle: Bundle
    link: LinkFacts
    diagnosis: Diagnosis
    rules: tuple[Rule, ...] = ()  # what judged it: reports name each finding's playbook (its stage)

    @property
    def verdict(self) -> Verdict:
        return self.diagnosis.verdict

    @property
    def exit_code(self) -> ExitCode:
        return self.diagnosis.exit_code

    @property
    def links(self) -> tuple[LinkFacts, ...]:
        """The cables judged: the pair's one."""
        return (self.link,)

    @property
    def baseline_name(self) -> str | None:
        """The baseline it was judged against (`--baseline`), if any."""
        return self.link.baseline.baseline.name if self.link.baseline else None

    def statuses(self) -> dict[str, Status]:
        """Each finding's status by its id."""
        return {f.finding_id: f.status for f in self.diagnosis.findings}

    def node_problems(self) -> list[str]:
        """Collection errors first (unreachable, refused, truncated), then per node the fact groups missing."""
        lines = [error for _, error in sorted(self.bundle.collection_errors.items())]
        failed = set(self.bundle.collection_errors)
        for node in (self.link.a, self.link.b):
            if node.name in failed or not node.unavailable:
                continue
            reasons = "; ".join(f"{group}: {why}" for group, why in sorted(node.unavailable.items()))
            lines.append(f"node {node.name}: some facts could not be gathered, the rules needing them are not "
                         f"judged: {reasons}")
        return lines



def cable_state(verdict: Verdict, link: LinkFacts) -> str:
    """What a test (a pair's one cable, or one of a cluster's) measured: `slow` only when its rules failed and a rate
    is below a healthy path's; a test that failed on configuration alone (an NCCL_IB_HCA that ib_write_bw does not
    read) with healthy rates is a pass for the traffic, its findings stay on its own report; nothing measured is
    inconclusive. A test of the latency test alone (no rate) is `slow` when its rules failed, else a pass."""
    lowest = lowest_gbps(link)
    if verdict is not Verdict.INCONCLUSIVE and lowest is None and any(r.typical_us is not None
                                                                       for r in link.bench.latency):
        return "slow" if verdict is Verdict.FAIL else "pass"
    if verdict is Verdict.INCONCLUSIVE or lowest is None:
        return "inconclusive"
    return "slow" if verdict is Verdict.FAIL and lowest < HEALTHY_PATH_MIN_GBPS else "pass"


def lowest_gbps(link: LinkFacts) -> float | None:
    rates = [r.gbps for r in link.bench.rdma if r.gbps is not None]
    return min(rates) if rates else None


class ClusterView(msgspec.Struct, frozen=True):
    """What `topology` learned: the hosts, the topology, the rounds, the cluster rules' findings, and the nodes
    that could not be read."""

    hosts: tuple[ClusterHost, ...]
    topology: Topology
    schedule: Schedule
    diagnosis: Diagnosis
    errors: dict[str, str] = {}

    @property
    def exit_code(self) -> ExitCode:
        """3 when a node could not be read; else the findings' verdict (2 a failure, 1 a warning), at least 1
        when the cabling is flagged; 0 otherwise."""
        if self.errors:
            return ExitCode.INCONCLUSIVE
        return flagged_exit_code(self.diagnosis.verdict, self.topology)


class CableResult(msgspec.Struct, frozen=True):
    """One test as measured and judged: its pair view with the traffic results, its findings and verdict, or why
    it was not measured."""

    test: CableTest
    link: LinkFacts
    verdict: Verdict
    findings: tuple[Finding, ...] = ()
    problem: str | None = None  # why the test is inconclusive (not measured, or the run stopped)
    captures: tuple[Capture, ...] = ()  # its own traffic runs' records, whose durations its JUnit testcase shows
    notes: tuple[str, ...] = ()  # a pair's one cable: its diagnosis's notes (the errors, what passed with a word)

    @property
    def state(self) -> str:
        return cable_state(self.verdict, self.link)

    @property
    def lowest_gbps(self) -> float | None:
        return lowest_gbps(self.link)

    def outcome(self) -> TrafficOutcome:
        traps = tuple(dict.fromkeys(f.rule_id for f in self.findings if f.status in (Status.FAIL, Status.WARN)))
        return TrafficOutcome(self.test.label, self.test.a, self.test.b, self.state, self.lowest_gbps, traps,
                           self.test.pass_no, self.test.switched)


class ClusterCheck(msgspec.Struct, frozen=True):
    """The cluster as inspected and judged, every test's result, and whether the traffic test stopped early."""

    view: ClusterView
    facts: ClusterFacts
    cables: tuple[CableResult, ...] = ()
    traffic_error: str | None = None
    interrupted: bool = False
    # The bundle's acceptance (`linkcheck accept` over the cluster) as saved, for the reports; {"problem": ...} when
    # the one there is not shown; None when there is none.
    acceptance: dict[str, Any] | None = None
    nccl_error: str | None = None  # why NCCL across the nodes did not run or finish (also in `traffic_error`)
    # What it was judged from (every node's captures and its runs' records), which its repairs and its history
    # read, as a pair's Outcome carries its own; None only for a check made from captures alone (tests).
    bundle: Bundle | None = None
    rules: tuple[Rule, ...] = ()  # what judged it: reports name each finding's playbook (its stage)

    @property
    def created(self) -> str:
        """When the bundle was collected (ISO 8601, as its manifest says); "" when not known."""
        return self.bundle.created if self.bundle is not None else ""

    @property
    def verdict(self) -> Verdict:
        verdicts = [self.view.diagnosis.verdict, *(c.verdict for c in self.cables)]
        if self.view.errors or self.traffic_error:
            verdicts.append(Verdict.INCONCLUSIVE)
        return worst(verdicts)

    @property
    def exit_code(self) -> ExitCode:
        if self.interrupted:
            return ExitCode.INTERRUPTED
        return flagged_exit_code(self.verdict, self.view.topology)

    @property
    def links(self) -> tuple[LinkFacts, ...]:
        """Each cable's pair view (a switch's: each pair of nodes a test would join), the cluster's names kept: what
        a node's changed interfaces are verified over."""
        return tuple(t.link for t in cable_tests(self.facts, schedule(self.facts.topology)))

    @property
    def baseline_name(self) -> str | None:
        """The baseline it was judged against (`--baseline`), if any."""
        return self.facts.drift.baseline if self.facts.drift else None

    def statuses(self) -> dict[str, Status]:
        """Each finding's status by its id, a cable's findings with `(cable LABEL)` (two cables share path keys)."""
        found = {f.finding_id: f.status for f in self.view.diagnosis.findings}
        for cable in self.cables:
            found |= {f"{f.finding_id} (cable {cable.test.label})": f.status for f in cable.findings}
        return found

    def node_problems(self) -> list[str]:
        """Each node that could not be read, and why; then why the traffic test stopped, as a pair's bundle says its
        `bench` error."""
        return [*(f"node {name}: {error}" for name, error in sorted(self.view.errors.items())),
                *([self.traffic_error] if self.traffic_error else [])]

    def node_cause(self, result: CableResult) -> Finding | None:
        """The cluster finding that names one of the test's nodes slow with every partner: it explains the test's
        own findings (their fix is the node's)."""
        return next((f for f in self.view.diagnosis.findings if f.rule_id == NODE_CAUSE_RULE
                     and f.status in (Status.FAIL, Status.WARN)
                     and f.subject.removeprefix("node ") in result.test.nodes), None)


def judged_view(check: ClusterCheck) -> Outcome | ClusterCheck:
    """What the reports, repairs and advice read of a check: a pair (the cluster of one cable: topology.py
    `one_cable`, judged by the pair's rules) as its one cable's `Outcome` (the pair's look: its paths, its nodes'
    facts, its findings under the nodes' own names), any other cluster as the check itself."""
    if not one_cable(check.view.topology) or len(check.cables) != 1 or check.bundle is None:
        return check
    return pair_outcome(check.cables[0], check.bundle, check.rules)


def pair_outcome(cable: CableResult, bundle: Bundle, rules: tuple[Rule, ...]) -> Outcome:
    """The pair's look of the one cable of a pair judged by the pair's rules (its notes kept): what judged it and
    the bundle it was judged from."""
    return Outcome(bundle, cable.link, Diagnosis(cable.findings, cable.verdict, cable.notes), rules)


Judged: TypeAlias = Outcome | ClusterCheck
"""What one judging produced, the one module of records every reporter, repair and advice reads: a pair's
`Outcome` (the bundle, its facts, the findings and the rules that judged them), and a cluster's `ClusterCheck` (the
inspection's `ClusterView` and, with traffic, every test's `CableResult`). Both say their `verdict`, `exit_code`,
`links`, `statuses()` and `node_problems()` the same way: the worst of their verdicts, its exit code (EXIT_CODES),
a cluster's flagged cabling at least a warning."""

"""`linkcheck check` over a cluster: inspect every node, infer the cabling, measure every cable in rounds, isolate.

One inspection round trip per node, all at once (as `topology`). With traffic (--quick or --bench), each test of
the schedule (a cable, or two nodes through the switch) is measured as a pair is, the tests of one round side by
side, and judged by the pair's throughput rules on that test's own results (CABLE_RULES): the hot-plug state, one
shared PCIe link, a path below nominal, named per cable. On a switch, the nodes of a slow test are then measured
again with a node that passed everywhere (the second pass). The cluster's rules then judge the whole: the layout,
the N-node traps, a node slow with every partner, a ring cable only a swap can tell from its ports.

A node that could not be inspected leaves the tests it is in inconclusive (never passing); the others are measured.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec
from msgspec.structs import replace

from linkcheck.accept.budget import cluster_plan_line, nccl_seconds, rounds_seconds
from linkcheck.accept.record import bundle_acceptance
from linkcheck.app.topology import cluster_facts, inspect_cluster, judge_facts, open_cluster
from linkcheck.bench.guard import Progress, Schedule
from linkcheck.bench.nccl import NcclOptions, run_cluster_nccl
from linkcheck.bench.plan import RdmaOptions
from linkcheck.bench.rounds import Planned, captures_of, plan_cluster_rounds, plan_test, run_cluster_rdma
from linkcheck.bench.runner import detect_tools, inspected_tools, repetition_captures
from linkcheck.bundle.format import Bundle, write_bundle
from linkcheck.bundle.verify import load_trusted
from linkcheck.cluster.cables import CableTest, cable_tests, pair_view, second_pass, test_subnets
from linkcheck.cluster.facts import ClusterFacts, ExpectedCluster, with_nccl
from linkcheck.cluster.hosts import ClusterHost
from linkcheck.cluster.record import (
    SCHEMA,
    SCHEMA_VERSION,
    CableEntry,
    ClusterDocument,
    HostEntry,
    load_cluster,
    write_cluster,
)
from linkcheck.cluster.schedule import Match, schedule
from linkcheck.cluster_outcome import CableResult, ClusterCheck
from linkcheck.collect.collector import close_transports
from linkcheck.config import SshOptions
from linkcheck.diagnose.engine import diagnose
from linkcheck.diagnose.rule import Rule
from linkcheck.facts.model import LinkFacts
from linkcheck.facts.pair import with_traffic
from linkcheck.model import Capture, Verdict
from linkcheck.transport.base import Transport, parse_target

# The pair's rules that judge one test's traffic: why a cable is slow, named per cable. The pair's other rules judge
# a node's configuration, which the cluster's inspection and rules already cover once per node.
CABLE_RULES = ("LINK_HOTPLUG_DEGRADED", "SINGLE_PCIE_PATH", "LINK_BELOW_NOMINAL")


def _judge_test(planned: Planned, captures: Sequence[Capture], rules: list[Rule], error: str | None,
                runs_expected: bool) -> CableResult:
    """One test judged from its own captures. With traffic asked for (`runs_expected`), a test of which no run is
    there is INCONCLUSIVE, never passed on its inspection alone: a missing measurement is never a passing one."""
    test = planned.test
    if planned.refused:
        return CableResult(test, test.link, Verdict.INCONCLUSIVE, problem=planned.refused)
    own = list(captures_of(planned, captures))
    if runs_expected and not any(c.meta.get("kind") == "rdma" for c in own):
        return CableResult(test, test.link, Verdict.INCONCLUSIVE,
                           problem=error or "planned with traffic, but no run of it is there")
    link = with_traffic(test.link, own)
    diagnosis = diagnose(link, rules, collection_errors={"bench": error} if error else None)
    problem = error if diagnosis.verdict is Verdict.INCONCLUSIVE else None
    return CableResult(test, link, diagnosis.verdict, diagnosis.findings, problem, tuple(own))


def _plan(tests: Sequence[CableTest], errors: dict[str, str]) -> list[Planned]:
    """Each test ready to run; one with a node that was not inspected is refused, naming the node and why."""
    out = []
    for test in tests:
        lost = next((n for n in test.nodes if n in errors), None)
        out.append(Planned(test, refused=f"node {lost} was not inspected: {errors[lost]}") if lost else plan_test(test))
    return out


class ClusterTraffic(msgspec.Struct, frozen=True):
    """What a cluster's run sends after the inspection: the RDMA rounds per cable (`repetitions` times: `accept`),
    then NCCL across every node; nothing when both are None (inspection only)."""

    rdma: RdmaOptions | None = None
    nccl: NcclOptions | None = None
    repetitions: int = 1
    command: str = "check"  # as the plan line names the run


# The traffic to send, decided once the inspection has shown the cluster (`accept` picks its profile by the
# layout); it may refuse (UsageError) before anything is sent.
TrafficPlan = Callable[[ClusterFacts], ClusterTraffic]


class _Measured(msgspec.Struct):
    results: list[CableResult]
    error: str | None = None
    interrupted: bool = False


def _measure(transports: dict[str, Transport], planned: Sequence[Planned], captures: list[Capture],
             traffic: ClusterTraffic, rules: list[Rule], progress: Progress | None) -> _Measured:
    """The tests' rounds, `traffic.repetitions` times (each repetition's round ids its own); the first error or
    Ctrl-C ends the repetitions."""
    runnable = [p for p in planned if not p.refused]
    nodes = sorted({n for p in runnable for n in p.test.nodes})
    live = {n: transports[n] for n in nodes}
    error: str | None = None
    interrupted = False
    reps = traffic.repetitions
    if runnable and traffic.rdma is not None:
        tools = inspected_tools(captures, nodes)
        if tools is None:
            tools, caps = detect_tools(live)
            captures += caps
        for n in range(1, reps + 1):
            result = run_cluster_rdma(live, runnable, traffic.rdma, tools, progress)
            captures += result.captures if reps == 1 else repetition_captures(result.captures, n)
            error, interrupted = result.error, result.interrupted
            if error or interrupted:
                error = f"repetition {n} of {reps}: {error}" if reps > 1 and error else error
                break
    expected = traffic.rdma is not None
    return _Measured([_judge_test(p, captures, rules, error, expected) for p in planned], error, interrupted)


def _unreached(facts: ClusterFacts, errors: dict[str, str]) -> list[CableResult]:
    """The tests a node that could not be inspected would be in, each inconclusive: on a switch, that node with each
    switched node; on cables, each cage of an inspected node whose subnets no inspected node shares (its far end is
    most likely that node). Never a pass, never left out of the report."""
    lost = [n for n in facts.topology.nodes if n in errors]
    if not lost:
        return []
    why = "; ".join(f"node {n} was not inspected: {errors[n]}" for n in lost)
    out = []
    switched = sorted({n for s in facts.topology.segments for n in s.nodes}, key=facts.topology.nodes.index)
    for name in switched:
        for other in lost:
            test = CableTest(f"{name}<->{other}", 0, name, other, LinkFacts(a=facts.nodes[name], b=facts.nodes[other]),
                             True)
            out.append(CableResult(test, test.link, Verdict.INCONCLUSIVE, problem=why))
    cages: dict[tuple[str, str], None] = {}
    for flag in facts.topology.flagged("far_unknown"):
        name, _, netdev = flag.subject.partition(":")
        fn = next((f for f in facts.nodes[name].functions if f.netdev == netdev), None) if name in facts.nodes else None
        cages[(name, fn.cage if fn is not None and fn.cage else netdev)] = None
    for name, cage in cages:
        # The node's own end only: its functions of this cage (its other cage is another cable, judged on its own).
        near = facts.nodes[name]
        near = replace(near, functions=tuple(f for f in near.functions if (f.cage or f.netdev) == cage))
        test = CableTest(f"{name}:{cage}<->?", 0, name, "?", LinkFacts(a=near, b=facts.nodes[lost[0]]))
        out.append(CableResult(test, test.link, Verdict.INCONCLUSIVE,
                               problem=f"its far end is not known: {why}"))
    return out


def judge_cluster(hosts: Sequence[ClusterHost], captures: Sequence[Capture], errors: dict[str, str],
                  doc: ClusterDocument, rules: list[Rule], expected: ExpectedCluster | None = None) -> ClusterCheck:
    """A cluster judged from its captures and its record: the facts, every planned test's results from its own
    captures, the unreached tests, then the cluster's rules over all of it. The live check and a saved bundle both
    come here, so a bundle gives the verdict its run showed."""
    cluster_rules = [r for r in rules if r.id not in CABLE_RULES]
    cable_rules = [r for r in rules if r.id in CABLE_RULES]
    facts = cluster_facts([h.name for h in hosts], captures, errors, expected)
    tests = []
    for t in doc.tests:
        subnets, _ = test_subnets(facts.topology, Match(t.a, t.b, t.label))
        tests.append(CableTest(t.label, t.round, t.a, t.b, pair_view(facts, t.a, t.b, subnets), t.switched, t.pass_no))
    results = [_judge_test(p, captures, cable_rules, doc.traffic_error, doc.traffic) for p in _plan(tests, errors)]
    if doc.traffic:
        results += _unreached(facts, errors)
    facts = with_nccl(replace(facts, tests=tuple(r.outcome() for r in results)), captures)
    view = judge_facts(hosts, facts, errors, cluster_rules)
    nccl_error = doc.nccl_error and f"NCCL across the nodes: {doc.nccl_error}"
    traffic_error = "; ".join(e for e in (doc.traffic_error, nccl_error) if e) or None
    return ClusterCheck(view, facts, tuple(results), traffic_error, doc.interrupted, nccl_error=nccl_error)


def _say_plan(progress: Progress, planned: Sequence[Planned], traffic: ClusterTraffic) -> None:
    """The run's plan once the schedule is known: the line, and the clock the live display counts down."""
    rdma, nccl = traffic.rdma, traffic.nccl
    if rdma is None:
        return
    runnable = [p for p in planned if not p.refused]
    rounds = len(plan_cluster_rounds(runnable, rdma, modes=("concurrent",) if rdma.adaptive else None))
    nccl_bytes = nccl.max_bytes if nccl is not None else None
    progress.note(cluster_plan_line(traffic.command, tests=len(runnable), rounds=rounds, duration_s=rdma.duration_s,
                                    repetitions=traffic.repetitions, nccl_max_bytes=nccl_bytes,
                                    adaptive=rdma.adaptive))
    if rounds:
        progress.plan_known(Schedule(0, nccl_bytes, rounds * traffic.repetitions,
                                     rounds_seconds(rounds, rdma.duration_s) / rounds,
                                     nccl_seconds(nccl_bytes) if nccl_bytes is not None else 0.0))


def _entries(tests: Sequence[CableTest]) -> tuple[CableEntry, ...]:
    return tuple(CableEntry(t.label, t.round, t.a, t.b, t.pass_no, t.switched) for t in tests)


def check_cluster(hosts: Sequence[ClusterHost], ssh: SshOptions, rules: list[Rule],
                  traffic: ClusterTraffic | TrafficPlan, progress: Progress | None = None,
                  expected: ExpectedCluster | None = None) -> tuple[ClusterCheck, Bundle, ClusterDocument]:
    """Inspect, measure (the RDMA rounds when `traffic.rdma` is given, then NCCL across every node when
    `traffic.nccl` is) and judge; with the bundle to save and its cluster record. `traffic` may be a plan that
    decides from the inspected cluster."""
    cable_rules = [r for r in rules if r.id in CABLE_RULES]
    transports = open_cluster(hosts, ssh)
    tests: list[CableTest] = []
    error: str | None = None
    interrupted = False
    try:
        captures, errors = inspect_cluster(transports, ssh, hosts)
        created = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        facts = cluster_facts([h.name for h in hosts], captures, errors)
        sent = traffic if isinstance(traffic, ClusterTraffic) else traffic(facts)
        rdma, nccl = sent.rdma, sent.nccl
        if rdma is not None:
            tests = cable_tests(facts, schedule(facts.topology))
            planned = _plan(tests, errors)
            if progress is not None:
                _say_plan(progress, planned, sent)
            first = _measure(transports, planned, captures, sent, cable_rules, progress)
            error, interrupted = first.error, first.interrupted
            slow = {r.test.label for r in first.results if r.state == "slow"}
            again = second_pass(facts, tests, slow) if not (error or interrupted) else []
            if again:
                more = _measure(transports, _plan(again, errors), captures, sent, cable_rules, progress)
                tests += again
                error, interrupted = more.error, more.interrupted
        nccl_error: str | None = None
        if nccl is not None and not interrupted:
            run = run_cluster_nccl({h.name: transports[h.name] for h in hosts}, facts, nccl, progress,
                                   {h.name: h.target.host for h in hosts})
            captures += run.captures
            nccl_error, interrupted = run.error, run.interrupted
    finally:
        close_transports(transports)
    doc = ClusterDocument(SCHEMA, SCHEMA_VERSION, tuple(HostEntry(h.name, str(h.target), h.origin) for h in hosts),
                          _entries(tests), rdma is not None, error, interrupted, nccl is not None, nccl_error)
    nodes: dict[str, dict[str, object]] = {h.name: {"target": str(h.target)} for h in hosts}
    for cap in captures:
        if cap.spec == "hostname" and cap.ok and cap.node in nodes and not cap.meta:
            nodes[cap.node]["hostname"] = cap.stdout.strip()
    bundle = Bundle(captures=captures, nodes=nodes, created=created, collection_errors=dict(errors))
    return replace(judge_cluster(hosts, captures, errors, doc, rules, expected), created=created), bundle, doc


def save_cluster(bundle: Bundle, doc: ClusterDocument, directory: Path) -> None:
    """The cluster's bundle: every capture (inspection and traffic) and cluster.json, covered by `verify`."""
    write_bundle(bundle, directory)
    write_cluster(directory, doc)


def cluster_bundle(path: Path, rules: list[Rule], *, allow_unverified: bool = False,
                   warn: Callable[[str], None] | None = None, expected: ExpectedCluster | None = None) -> ClusterCheck:
    """A saved cluster bundle judged again: refused (exit 4) when `verify` rejects it, unless `allow_unverified`."""
    bundle = load_trusted(path, allow_unverified=allow_unverified, warn=warn)
    doc = load_cluster(path)
    hosts = [ClusterHost(parse_target(h.target, name=h.name), h.origin or "the bundle") for h in doc.hosts]
    names = {h.name for h in hosts}
    errors = {n: e for n, e in bundle.collection_errors.items() if n in names}
    check = judge_cluster(hosts, bundle.captures, errors, doc, rules, expected)
    return replace(check, acceptance=bundle_acceptance(path, bundle.unverified), created=bundle.created)

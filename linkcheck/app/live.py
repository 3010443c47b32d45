"""The live run: `check_cluster`, the one live check of two to eight nodes (a pair's a and b are the hosts of its
one cable) that `check`, `bench`, `collect`, `accept`, `fix` and the library face run: inspect the nodes (one round
trip each, all at once), optionally run the traffic tests, save the bundle, judge what was saved.

A cluster's traffic: each test of the schedule (a cable, or two nodes through the switch) is measured as a pair is,
the tests of one round side by side, and judged by the pair's throughput rules on that test's own results
(CABLE_RULES, diagnose/engine.py): the hot-plug state, one shared PCIe link, a path below nominal, named per cable.
On a switch, the nodes of a slow test are then measured again with a node that passed everywhere (the second pass).
The cluster's rules then judge the whole (`judge_cluster`, as a saved bundle is judged). A node that could not be
inspected leaves the tests it is in inconclusive (never passing); the others are measured."""

from __future__ import annotations

import datetime as dt
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

import msgspec
from msgspec.structs import replace

from linkcheck.accept.budget import cluster_plan_line, latency_seconds, nccl_seconds, rounds_seconds
from linkcheck.app.offline import configured_rules, judge_cluster, judge_test, plan_tests
from linkcheck.app.topology import cluster_facts, inspect_nodes, open_cluster
from linkcheck.baseline.store import ClusterBaseline
from linkcheck.bench.guard import Progress, Schedule
from linkcheck.bench.latency import LatencyOptions, run_cluster_latency
from linkcheck.bench.nccl import NcclOptions, run_cluster_nccl
from linkcheck.bench.plan import BenchPath, RdmaOptions
from linkcheck.bench.rounds import Planned, plan_cluster_rounds, run_cluster_rdma
from linkcheck.bench.runner import detect_tools, inspected_tools, repetition_captures
from linkcheck.bundle.anonymize_saved import anonymize_any_saved
from linkcheck.bundle.format import Bundle, write_bundle
from linkcheck.bundle.run_record import SCHEMA, SCHEMA_VERSION, CableEntry, ClusterDocument, HostEntry, write_cluster
from linkcheck.cluster.cables import CableTest, cable_tests, second_pass
from linkcheck.cluster.facts import ClusterFacts, ExpectedCluster
from linkcheck.cluster.hosts import PAIR_NODES, SLURM_VAR, ClusterHost, cluster_hosts
from linkcheck.cluster.schedule import schedule
from linkcheck.collect.collector import close_transports
from linkcheck.config import Config, SshOptions, find_config, resolve_pair
from linkcheck.diagnose.engine import CABLE_RULES
from linkcheck.diagnose.rule import Rule
from linkcheck.errors import UnreachableError
from linkcheck.facts.model import ExpectedLink
from linkcheck.facts.snapshot_model import Baseline
from linkcheck.model import Capture
from linkcheck.outcome import CableResult, ClusterCheck
from linkcheck.transport.base import Transport

INSPECTION_INTERRUPTED = "interrupted (Ctrl-C) during the inspection; this bundle is partial"
# Traffic asked for, and the inspection found no test to run: no cable and no switch segment between any two nodes.
NOTHING_TO_MEASURE = ("no two nodes share a subnet on their ConnectX-7 ports, so no cable or switch path can be "
                      "measured (fix: address the twins with netplan; `linkcheck topology` shows what was found)")


class LiveNodes(msgspec.Struct, frozen=True):
    """The nodes a live run reaches, from whichever source named them, and linkcheck.yaml as found. The pair's own
    form (`pair_form`: --node a=/b=, linkcheck.yaml's `nodes:`) is one host source among the others (--node,
    --hostfile, --inventory, linkcheck.yaml's `cluster:` nodes, Slurm's): every one gives the hosts of one live check,
    whatever their layout."""

    pair_form: bool
    config: Config | None = None
    rules: tuple[Rule, ...] = ()  # the built-in rules with linkcheck.yaml's playbooks and thresholds, read once
    node: tuple[str, ...] = ()
    hostfile: Path | None = None
    inventory: Path | None = None
    group: str | None = None

    def hosts(self, environ: Mapping[str, str] = os.environ) -> tuple[ClusterHost, ...]:
        """The hosts from the one source that names them, Slurm's `$SLURM_JOB_NODELIST` when nothing else does; a
        pair's nodes a and b (--node a=/b= over linkcheck.yaml's `nodes:`) are the hosts of the cluster of its one
        cable. Resolved when the run starts, after the command's own options are checked (a bad hostfile is
        ConfigError, exit 4)."""
        if self.pair_form:
            pair = resolve_pair(self.config, list(self.node))
            given = {v.partition("=")[0] for v in self.node}
            return tuple(ClusterHost(pair.nodes[n], "--node" if n in given else pair.source or "linkcheck.yaml")
                         for n in PAIR_NODES)
        return cluster_hosts(nodes=self.node, hostfile=self.hostfile, inventory=self.inventory, group=self.group,
                             environ=environ, configured=self.config.cluster_nodes if self.config else ())


def resolve_nodes(node: Sequence[str], hostfile: Path | None = None, inventory: Path | None = None,
                  group: str | None = None, config: Path | None = None,
                  environ: Mapping[str, str] = os.environ) -> LiveNodes:
    """The one place a live run's host source is decided: a hostfile or inventory, three or more --node, --node
    values none of which is in the pair's own form `a=`/`b=` (two `--node spark-1 --node spark-2` are the cluster of
    their one cable, named as they are), linkcheck.yaml's `cluster:` nodes when no --node is given, or a Slurm
    allocation ($SLURM_JOB_NODELIST) when nothing names any node (no --node, no linkcheck.yaml `nodes:` or
    `cluster:`); otherwise the pair's own form names nodes a and b (a value in another form beside one in the pair's
    is then refused as the pair's). The rules (linkcheck.yaml's playbooks and thresholds with the built-in ones) are
    read here, once, for every command that contacts the nodes."""
    found = find_config(config)
    rules = tuple(configured_rules([], found, kind="all"))  # an unknown rule or threshold: refused before any node
    named_by_config = found is not None and bool(found.nodes or found.cluster_nodes)
    slurm = not node and not named_by_config and bool(environ.get(SLURM_VAR, "").strip())
    named_a_b = any(value.partition("=")[0] in PAIR_NODES and "=" in value for value in node)
    other = hostfile is not None or inventory is not None or group is not None or len(node) > 2 or slurm or (
        bool(node) and not named_a_b) or (not node and found is not None and bool(found.cluster_nodes))
    return LiveNodes(not other, found, rules, tuple(node), hostfile, inventory, group)


class TrafficRequest(msgspec.Struct, frozen=True):
    """Which traffic tests to run after the inspection (None = skip that test), a pair's or a cluster's: the RDMA
    rounds (over a cluster, per cable in the schedule's rounds), then NCCL (across every node), then the latency
    test (ib_write_lat per path of every cable, the small all_reduce across every node).

    `repetitions` > 1 (`accept`) runs the RDMA rounds that many times, then NCCL and the latency test once; each
    repetition's captures carry their own `round` ids (`<round>-rep<n>`), so the facts keep them apart."""

    rdma: RdmaOptions | None = None
    nccl: NcclOptions | None = None
    repetitions: int = 1
    latency: LatencyOptions | None = None
    command: str = "check"  # as a cluster's plan line names the run


def bundle_nodes(targets: Iterable[tuple[str, str]], captures: Iterable[Capture]) -> dict[str, dict[str, object]]:
    """The manifest's nodes, a pair's or a cluster's: each one's target as named, and the hostname it answered (its
    inspection's, never a traffic run's)."""
    nodes: dict[str, dict[str, object]] = {name: {"target": target} for name, target in targets}
    for cap in captures:
        if cap.spec == "hostname" and cap.ok and cap.node in nodes and not cap.meta:
            nodes[cap.node]["hostname"] = cap.stdout.strip()
    return nodes


def save_bundle(write: Callable[[Path], object], target: Path, *, anonymize: bool) -> None:
    """Save a run's bundle into `target` with `write` (a pair's bundle, or a cluster's with its cluster.json); with
    `anonymize`, the copy `linkcheck anonymize` makes of it instead, by the same code whatever the layout: the bundle
    is first written to a private temporary folder (mode 0700), removed once the copy is made."""
    if not anonymize:
        write(target)
        return
    with tempfile.TemporaryDirectory(prefix="linkcheck-") as private:
        real = Path(private) / "bundle"
        write(real)
        anonymize_any_saved(real, target)


def low_path_gbps(rules: list[Rule], default: float) -> float:
    """Where the quick tier calls a path low: the same line LINK_BELOW_NOMINAL judges it by (a user's
    threshold override included), so a path the diagnosis would judge below nominal is always run alone."""
    rule = next((r for r in rules if r.id == "LINK_BELOW_NOMINAL"), None)
    value = rule.thresholds.get("nominal_min_gbps") if rule else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default


# The traffic to send, decided once the inspection has shown the cluster (`accept` picks its profile by the
# layout); it may refuse (UsageError) before anything is sent.
TrafficPlan = Callable[[ClusterFacts], TrafficRequest]


class _Measured(msgspec.Struct):
    results: list[CableResult]
    error: str | None = None
    interrupted: bool = False


def _measure(transports: dict[str, Transport], planned: Sequence[Planned], captures: list[Capture],
             traffic: TrafficRequest, rules: list[Rule], progress: Progress | None) -> _Measured:
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
    return _Measured([judge_test(p, captures, rules, error, expected) for p in planned], error, interrupted)


def _say_cluster_plan(progress: Progress, planned: Sequence[Planned], traffic: TrafficRequest) -> None:
    """The run's plan once the schedule is known: the line, and the clock the live display counts down. The latency
    test's paths are those it will measure: every path of the first pass's tests (`latency_paths`)."""
    rdma, nccl, latency = traffic.rdma, traffic.nccl, traffic.latency
    if rdma is None and latency is None:
        return
    runnable = [p for p in planned if not p.refused]
    rounds = len(plan_cluster_rounds(runnable, rdma, modes=("concurrent",) if rdma.adaptive else None)) if rdma else 0
    duration_s = rdma.duration_s if rdma else 0
    nccl_bytes = nccl.max_bytes if nccl is not None else None
    paths = len(latency_paths(planned))
    progress.note(cluster_plan_line(traffic.command, tests=len(runnable), rounds=rounds, duration_s=duration_s,
                                    repetitions=traffic.repetitions, nccl_max_bytes=nccl_bytes,
                                    adaptive=rdma is not None and rdma.adaptive,
                                    latency_paths=paths if latency is not None else None))
    if rounds or latency is not None:
        progress.plan_known(Schedule(0, nccl_bytes, rounds * traffic.repetitions,
                                     rounds_seconds(rounds, duration_s) / rounds if rounds else 0.0,
                                     nccl_seconds(nccl_bytes) if nccl_bytes is not None else 0.0,
                                     latency_seconds(paths, len(latency.sizes), latency.allreduce)
                                     if latency is not None else 0.0))


def latency_paths(planned: Sequence[Planned]) -> tuple[BenchPath, ...]:
    """The paths the latency test measures: every path of every test that can run (a test refused has none)."""
    return tuple(path for p in planned if not p.refused for path in p.paths)


def _entries(tests: Sequence[CableTest]) -> tuple[CableEntry, ...]:
    return tuple(CableEntry(t.label, t.round, t.a, t.b, t.pass_no, t.switched) for t in tests)


class _Sent(msgspec.Struct):
    """What the traffic run did: every test measured (a switch's second pass included), and why each part stopped."""

    tests: list[CableTest]
    error: str | None = None  # the RDMA rounds'
    nccl_error: str | None = None
    latency_error: str | None = None
    interrupted: bool = False


def _send(transports: dict[str, Transport], facts: ClusterFacts, planned: Sequence[Planned], captures: list[Capture],
          sent: TrafficRequest, cable_rules: list[Rule], progress: Progress | None,
          reach: Mapping[str, str]) -> _Sent:
    """The traffic of any layout, its captures appended to `captures`: each test's RDMA rounds (a switch's slow
    tests measured again with a node that passed, judged by `cable_rules`), then NCCL across every node, then the
    latency test. A pair is one test in one round, and NCCL across its two ranks. Ctrl-C stops what follows; an
    error stops only its own part (NCCL still runs after a refused RDMA round: its evidence stands on its own)."""
    out = _Sent([p.test for p in planned])
    if sent.rdma is not None:
        first = _measure(transports, planned, captures, sent, cable_rules, progress)
        out.error, out.interrupted = first.error, first.interrupted
        slow = {r.test.label for r in first.results if r.state == "slow"}
        again = second_pass(facts, out.tests, slow) if not (out.error or out.interrupted) else []
        if again:
            more = _measure(transports, plan_tests(again, {}), captures, sent, cable_rules, progress)
            out.tests += again
            out.error, out.interrupted = more.error, more.interrupted
    if sent.nccl is not None and not out.interrupted:
        run = run_cluster_nccl(transports, facts, sent.nccl, progress, reach)
        captures += run.captures
        out.nccl_error, out.interrupted = run.error, run.interrupted
    if sent.latency is not None and not out.interrupted:
        # Last: nothing else of ours is on any cable while a latency is measured.
        measured = run_cluster_latency(transports, latency_paths(planned), facts, sent.latency, progress, reach)
        captures += measured.captures
        out.latency_error, out.interrupted = measured.error, measured.interrupted
    return out


def check_cluster(hosts: Sequence[ClusterHost], ssh: SshOptions, rules: list[Rule],
                  traffic: TrafficRequest | TrafficPlan, progress: Progress | None = None,
                  expected: ExpectedCluster | None = None, baseline: Baseline | ClusterBaseline | None = None,
                  save: Path | None = None, anonymize: bool = False, expected_link: ExpectedLink | None = None
                  ) -> tuple[ClusterCheck, Bundle, ClusterDocument]:
    """Inspect, measure (the RDMA rounds when `traffic.rdma` is given, then NCCL across every node when
    `traffic.nccl` is) and judge, against `baseline` when one is given; with the bundle and its cluster record,
    saved to `save` (when given) before they are judged, so that a judgement refused (a baseline of another
    cluster: BaselineError) loses no run; the saved copy anonymised with `anonymize`. `traffic` may be a plan that
    decides from the inspected cluster."""
    cable_rules = [r for r in rules if r.id in CABLE_RULES]
    transports = open_cluster(hosts, ssh)
    try:
        captures, errors, stopped = inspect_nodes(transports, ssh, hosts)
        if not stopped and not captures and errors:
            raise UnreachableError(errors)  # one line per node, and no empty bundle folder left behind
        created = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        facts = cluster_facts([h.name for h in hosts], captures, errors)
        command = traffic.command if isinstance(traffic, TrafficRequest) else "check"
        # Ctrl-C during the inspection: what arrived is saved and judged, no traffic is sent.
        sent = TrafficRequest(command=command) if stopped else traffic if isinstance(traffic, TrafficRequest) \
            else traffic(facts)
        if sent.rdma is not None and sent.rdma.adaptive:
            sent = replace(sent, rdma=replace(sent.rdma, low_gbps=low_path_gbps(rules, sent.rdma.low_gbps)))
        planned: list[Planned] = []
        if sent.rdma is not None or sent.latency is not None:
            planned = plan_tests(cable_tests(facts, schedule(facts.topology)), errors)
        if progress is not None:
            _say_cluster_plan(progress, planned, sent)
        run = _send(transports, facts, planned, captures, sent, cable_rules, progress,
                    {h.name: h.target.host for h in hosts})
    finally:
        close_transports(transports)
    doc = ClusterDocument(SCHEMA, SCHEMA_VERSION, tuple(HostEntry(h.name, str(h.target), h.origin) for h in hosts),
                          _entries(run.tests), sent.rdma is not None, run.error, run.interrupted or stopped,
                          sent.nccl is not None, run.nccl_error, sent.latency is not None, run.latency_error)
    nodes = bundle_nodes(((h.name, str(h.target)) for h in hosts), captures)
    partial = {"interrupted": INSPECTION_INTERRUPTED} if stopped else {}
    # The traffic's first error, in the order it ran, is the bundle's `bench` error (a test with no path to measure
    # first: no carrier, no GID, a node not inspected), as every bundle keeps it.
    refused = next((f"traffic test not run: {p.refused}" for p in planned if p.refused), None)
    if refused is None and not planned and not stopped and (sent.rdma is not None or sent.latency is not None):
        refused = f"traffic test not run: {NOTHING_TO_MEASURE if not errors else 'a node could not be inspected'}"
    failed = next((e for e in (refused, run.error, run.nccl_error, run.latency_error) if e), None)
    bench = {"bench": failed} if failed else {}
    bundle = Bundle(captures=captures, nodes=nodes, created=created, collection_errors={**errors, **partial, **bench})
    if save is not None:
        save_cluster(bundle, doc, save, anonymize=anonymize)
    saved = bundle if save is None else replace(bundle, path=save)  # the folder its history names
    check = judge_cluster(hosts, captures, errors, doc, rules, expected, baseline, expected_link=expected_link,
                          bundle=saved)
    return replace(check, bundle=check.bundle or saved), bundle, doc


def save_cluster(bundle: Bundle, doc: ClusterDocument, directory: Path, *, anonymize: bool = False) -> None:
    """The cluster's bundle: every capture (inspection and traffic) and cluster.json, covered by `verify`; with
    `anonymize`, its anonymised copy (`save_bundle`)."""
    def write(target: Path) -> None:
        write_bundle(bundle, target)
        write_cluster(target, doc)

    save_bundle(write, directory, anonymize=anonymize)

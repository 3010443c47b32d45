"""ClusterChecks as `linkcheck check` over a cluster builds them, without a lab: the nodes are the lab's cluster models
rendered into captures, each test of the schedule gets ib_write_bw results (each twin alone and both at once, each
direction) at the rates a scenario names, is judged by the pair's throughput rules on them, and the cluster's rules
then judge the whole, the tests' outcomes included."""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Mapping, Sequence
from contextlib import redirect_stdout
from pathlib import Path
from unittest.mock import patch

from msgspec.structs import replace

from linkcheck.app.live import save_cluster
from linkcheck.app.offline import judge_cluster, plan_tests
from linkcheck.app.topology import cluster_facts, judge_facts
from linkcheck.baseline.drift import attach_cluster_baseline
from linkcheck.baseline.store import ClusterBaseline
from linkcheck.bench.latency import LatencyOptions, lat_meta, plan_latency
from linkcheck.bundle.format import Bundle
from linkcheck.bundle.run_record import SCHEMA, SCHEMA_VERSION, ClusterDocument, HostEntry
from linkcheck.cluster.cables import CableTest, cable_tests, second_pass
from linkcheck.cluster.facts import ClusterFacts
from linkcheck.cluster.hosts import ClusterHost, parse_node_values
from linkcheck.cluster.schedule import schedule
from linkcheck.collect.specs import CLUSTER_SPECS, SPECS
from linkcheck.diagnose.engine import CABLE_RULES, diagnose
from linkcheck.diagnose.playbook import load_playbooks
from linkcheck.facts.model import BenchFacts, RdmaRun
from linkcheck.model import Capture, Verdict
from linkcheck.outcome import CableResult, ClusterCheck
from linkcheck.report.console import print_console
from linkcheck.transport.base import NodeTarget
from tests.emulators.bench_perftest import PerftestRun, render_ib_write_lat
from tests.emulators.captures import node_captures
from tests.emulators.node import Node
from tests.lab.cluster import CLUSTER_SCENARIOS, Cluster, cluster_models, switch_by_cage

# The pair's throughput rules judge each test; the cluster's rules judge the whole.
TEST_RULES = [r for r in load_playbooks() if r.id in CABLE_RULES]
CLUSTER_RULES = load_playbooks(kind="cluster")
ALL_RULES = load_playbooks(kind="all")

HEALTHY = (98.01, 98.01)  # per path: both twins at once, a twin alone (spark-link s.8: 196.02 Gb/s in total)
HOTPLUG = (13.3, 13.3)  # the hot-plug state: 13-15 Gb/s per path whatever runs beside it (spark-link s.0)
ONE_PCIE = (47.6, 98.0)  # both twins share one PCIe x4 link: ~95 Gb/s together, each fine alone

Rates = Callable[[CableTest], tuple[float, float]]


def facts_of(cluster: Cluster) -> ClusterFacts:
    models = cluster_models(cluster)
    captures = [c for n, m in models.items() for c in node_captures(n, m, SPECS + CLUSTER_SPECS)]
    return cluster_facts(list(models), captures, {})


def measured(test: CableTest, concurrent_gbps: float, alone_gbps: float) -> CableResult:
    """The test with each of its paths at `alone_gbps` alone and `concurrent_gbps` both at once, each direction, as
    the pair's rules judge it."""
    runs = []
    for direction in ("a->b", "b->a"):
        client = test.a if direction == "a->b" else test.b
        for path in test.link.paths:
            device = (path.a if direction == "a->b" else path.b).rdma_dev
            runs.append(RdmaRun(path.key, "alone", direction, alone_gbps, client, device,
                                round_id=f"{test.label} alone {direction} {path.key}"))
            runs.append(RdmaRun(path.key, "concurrent", direction, concurrent_gbps, client, device,
                                round_id=f"{test.label} concurrent {direction}"))
    link = replace(test.link, bench=BenchFacts(rdma=tuple(runs)), bench_present=frozenset({"rdma"}))
    diagnosis = diagnose(link, TEST_RULES)
    return CableResult(test, link, diagnosis.verdict, diagnosis.findings)


def judged(facts: ClusterFacts, results: Sequence[CableResult], errors: Mapping[str, str] | None = None,
           traffic_error: str | None = None, interrupted: bool = False,
           baseline: ClusterBaseline | None = None) -> ClusterCheck:
    """The cluster's rules over the facts and the tests' outcomes, as `check_cluster` ends: with `baseline` attached
    to the facts before that one diagnosis when one is given (then every rule, the pair's drift rules included)."""
    hosts = [ClusterHost(NodeTarget(name, f"10.20.0.{21 + i}"), "--node")
             for i, name in enumerate(facts.topology.nodes)]
    with_tests = replace(facts, tests=tuple(r.outcome() for r in results))
    if baseline is not None:
        with_tests = attach_cluster_baseline(with_tests, results, dict(errors or {}), baseline, ())
    view = judge_facts(hosts, with_tests, dict(errors or {}), CLUSTER_RULES if baseline is None else ALL_RULES)
    return ClusterCheck(view, with_tests, tuple(results), traffic_error, interrupted)


def slow_node(node: str, rates: tuple[float, float] = HOTPLUG) -> Rates:
    """Every test with `node` at `rates`, the others healthy."""
    return lambda test: rates if node in test.nodes else HEALTHY


def checked(cluster: Cluster, rates: Rates = lambda _: HEALTHY) -> ClusterCheck:
    """Every test of the schedule measured at `rates`; on a switch, the second pass of the all-slow nodes too."""
    facts = facts_of(cluster)
    first = [measured(t, *rates(t)) for t in cable_tests(facts, schedule(facts.topology))]
    slow = {r.test.label for r in first if r.state == "slow"}
    again = [measured(t, *rates(t)) for t in second_pass(facts, [r.test for r in first], slow)]
    return judged(facts, [*first, *again])


def switch(names: Sequence[str] = "abcd", rates: Rates = lambda _: HEALTHY) -> ClusterCheck:
    return checked(switch_by_cage(dict.fromkeys(names, "p1")), rates)


def not_measured(test: CableTest, why: str) -> CableResult:
    return CableResult(test, test.link, Verdict.INCONCLUSIVE, problem=why)


def saved_bundle(folder: Path, scenario: str | Cluster = "ring3",
                 change: Callable[[str, Node], Node] = lambda _, m: m) -> Path:
    """A cluster bundle of a lab scenario (its name, or the cluster itself; inspection only) saved in `folder` as
    `check` saves one, each node's model changed by `change` first."""
    cluster = CLUSTER_SCENARIOS[scenario]() if isinstance(scenario, str) else scenario
    models = {n: change(n, m) for n, m in cluster_models(cluster).items()}
    captures = [c for n, m in models.items() for c in node_captures(n, m, SPECS + CLUSTER_SPECS)]
    hosts = parse_node_values([f"{n}=root@{n}.lab" for n in models])
    doc = ClusterDocument(SCHEMA, SCHEMA_VERSION, tuple(HostEntry(h.name, str(h.target), h.origin) for h in hosts))
    judge_cluster(hosts, captures, {}, doc, load_playbooks(kind="all"))
    save_cluster(Bundle(captures=captures, nodes={n: {"target": f"root@{n}.lab"} for n in models},
                        created="2026-12-02T20:00:00+00:00"), doc, folder)
    return folder


def console_text(check: ClusterCheck, show_all: bool = False) -> str:
    """The console report of a cluster as `print_console` writes it on stdout, on a terminal wide enough that no
    line is wrapped."""
    out = io.StringIO()
    with patch.dict(os.environ, {"COLUMNS": "10000"}), redirect_stdout(out):
        print_console(check, show_all=show_all)
    return out.getvalue()


def latency_captures(tests: Sequence[CableTest], slow_us: float) -> list[Capture]:
    """ib_write_lat on every path of every cable as the latency test records it (the emulator's output), the 48 KiB
    runs of the cable between a and b at `slow_us`, the others at the published healthy 1.47 and 8.8 us."""
    planned = plan_tests(tests, {})
    runs = plan_latency(tuple(p for t in planned for p in t.paths), LatencyOptions(port_base=31000))
    caps = []
    for run in runs:
        healthy = 1.47 if run.size_bytes == 2 else 8.8
        us = slow_us if run.size_bytes > 2 and run.path.key.startswith("a:") and "b:" in run.path.key else healthy
        for role in ("client", "server"):
            end = run.ends()[0 if role == "client" else 1]
            out, _, _ = render_ib_write_lat(PerftestRun(role, end.rdma_dev, end.gid_index, "::ffff:1.2.3.4",
                                                        "::ffff:1.2.3.5", 0.0, size_bytes=run.size_bytes,
                                                        iterations=1000), us)
            caps.append(Capture(end.node, "ib_write_lat", "ib_write_lat ...", out, "", 0,
                                meta=lat_meta(run, role, "r1")))
    return caps

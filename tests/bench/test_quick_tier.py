"""The quick tier's adaptive plan: concurrent rounds first, a path alone only where it was low, and what it
leaves out listed as not run (never as a result, never as a pass), in the facts, the diagnosis and every report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from msgspec.structs import replace

from linkcheck.app.live import low_path_gbps
from linkcheck.app.offline import configured_rules, diagnose_captures, plan_tests
from linkcheck.app.topology import cluster_facts
from linkcheck.bench.plan import RdmaOptions, Round, bench_paths, quick_options
from linkcheck.bench.rounds import Planned, concurrent_rates, low_paths, not_run, plan_cluster_rounds, quick_follow_ups
from linkcheck.bench.runner import inspected_tools, tool_info
from linkcheck.bundle.format import Bundle, load_bundle
from linkcheck.cluster.cables import CableTest, cable_tests
from linkcheck.cluster.schedule import schedule
from linkcheck.errors import LinkcheckError
from linkcheck.facts.bench_facts import build_bench_facts
from linkcheck.facts.pair import build_link_facts
from linkcheck.facts.snapshot import snapshot_of
from linkcheck.facts.snapshot_model import Baseline
from linkcheck.model import Capture, Status, Verdict
from linkcheck.outcome import Outcome
from linkcheck.report.formats import renderer

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _bundle(name: str) -> Bundle:
    return load_bundle(FIXTURES / name)


def _pair_test(name: str = "healthy", paths: int = 2) -> Planned:
    """The pair's one test, its paths keyed as the pair's own facts key them."""
    link = build_link_facts(_bundle(name).captures)
    link = replace(link, paths=link.paths[:paths])
    return Planned(CableTest("a<->b", 1, "a", "b", link), bench_paths(link))


def test_the_quick_tier_runs_the_concurrent_rounds_first_and_holds_the_alone_rounds_back() -> None:
    pair = [_pair_test()]
    first = plan_cluster_rounds(pair, quick_options(), modes=("concurrent",))
    assert [(r.mode, r.direction) for r in first] == [("concurrent", "a->b"), ("concurrent", "b->a")]
    later = plan_cluster_rounds(pair, quick_options(), modes=("alone",))
    assert sorted((r.mode, r.direction) for r in later) == [("alone", "a->b")] * 2 + [("alone", "b->a")] * 2
    # The full traffic test and accept run every round, in the usual order.
    full = plan_cluster_rounds(pair, RdmaOptions(port_base=30000))
    assert [(r.mode, r.direction) for r in full] == [("alone", "a->b")] * 2 + [("concurrent", "a->b")] + [
        ("alone", "b->a")] * 2 + [("concurrent", "b->a")]


def test_with_one_path_there_is_no_concurrent_round_to_judge_first() -> None:
    # run_cluster_rdma then runs the test's alone rounds at once.
    assert plan_cluster_rounds([_pair_test(paths=1)], quick_options(), modes=("concurrent",)) == []


def test_a_low_path_runs_alone_once_in_the_direction_where_it_was_lowest() -> None:
    options = quick_options()
    rates: dict[tuple[str, str], float | None] = {("p1", "a->b"): 98.0, ("p1", "b->a"): 97.9,
                                                  ("p2", "a->b"): 13.3, ("p2", "b->a"): 13.1}
    assert low_paths(rates, options) == {"p2": "b->a"}
    assert low_paths({("p1", "a->b"): None, ("p1", "b->a"): 98.0}, options) == {"p1": "a->b"}  # no number is low
    assert low_paths(rates, replace(options, low_gbps=98.0)) == {"p1": "b->a", "p2": "b->a"}
    assert low_paths({k: 95.0 for k in rates}, options) == {}


def _follow_ups(name: str) -> tuple[Bundle, list[Round], list[Capture]]:
    """The quick tier's follow-ups after the concurrent rounds a recorded cluster bundle holds."""
    bundle = _bundle(name)
    names = sorted(bundle.nodes)
    facts = cluster_facts(names, bundle.captures, {})
    planned = plan_tests(cable_tests(facts, schedule(facts.topology)), {})
    concurrent = [c for c in bundle.captures if not (c.meta.get("kind") == "rdma" and c.meta.get("mode") == "alone")]
    tools = inspected_tools(bundle.captures, names)
    assert tools is not None
    rounds, skipped = quick_follow_ups(planned, concurrent, quick_options(), tools, "r1")
    return bundle, rounds, skipped


def test_follow_ups_run_each_low_path_alone_once_as_the_recorded_hot_plugged_pair_did() -> None:
    bundle, rounds, skipped = _follow_ups("cluster-pair-hotplug")
    ran = {(c.meta["path"], c.meta["direction"]) for c in bundle.captures
           if c.meta.get("mode") == "alone" and c.meta.get("role") == "client" and "plan" not in c.meta}
    assert len(ran) == 2 and {(r.paths[0].key, r.direction) for r in rounds} == ran  # both paths at 13 Gb/s
    assert {(c.meta["path"], c.meta["direction"]) for c in skipped}.isdisjoint(ran) and len(skipped) == 2
    assert all(c.meta["plan"] == "skipped" and c.skipped for c in skipped)


def test_a_healthy_ring_runs_no_alone_round_and_lists_every_one_as_not_run() -> None:
    _, rounds, skipped = _follow_ups("cluster-ring3-healthy")
    assert rounds == [] and len(skipped) == 3 * 4  # three cables, two paths, two directions


def _quick_like(name: str) -> tuple[Bundle, list[Capture]]:
    """A fixture's captures as the quick tier would leave them on a healthy pair: the alone client and server
    runs gone, a `plan: skipped` client capture for each instead."""
    bundle = _bundle(name)
    link = build_link_facts(bundle.captures)
    rates = concurrent_rates(bundle.captures, link)
    later = plan_cluster_rounds([_pair_test(name)], quick_options(), modes=("alone",))
    kept = [c for c in bundle.captures if not (c.meta.get("kind") == "rdma" and c.meta.get("mode") == "alone")]
    tools = inspected_tools(bundle.captures, ["a", "b"])
    assert tools is not None
    left_out = not_run(later, quick_options(), tools, "r1", rates, {})
    return replace(bundle, captures=kept + left_out), left_out


def test_a_run_left_out_is_listed_as_not_run_and_is_never_a_rate_nor_a_problem() -> None:
    bundle, left_out = _quick_like("healthy")
    assert all(c.skipped and c.skipped.startswith("not run: ") and c.meta["plan"] == "skipped" for c in left_out)
    link = build_link_facts(bundle.captures)
    bench, present = build_bench_facts(bundle.captures, link.paths)
    assert "rdma" in present
    assert {r.mode for r in bench.rdma} == {"concurrent"} and all(r.gbps and not r.problem for r in bench.rdma)
    assert sorted((n.mode, n.direction) for n in bench.not_run) == [("alone", "a->b")] * 2 + [("alone", "b->a")] * 2
    assert all("Gb/s a->b" in n.reason or "Gb/s b->a" in n.reason for n in bench.not_run)


def _outcome(bundle: Bundle, baseline: Baseline | None = None) -> Outcome:
    return diagnose_captures(bundle, configured_rules([], None), baseline=baseline)


def test_a_healthy_pair_passes_on_its_concurrent_rounds_and_the_reports_say_what_was_not_run() -> None:
    bundle, _ = _quick_like("healthy")
    outcome = _outcome(bundle)
    assert outcome.diagnosis.verdict is Verdict.PASS
    throughput = [f for f in outcome.diagnosis.findings
                  if f.rule_id in ("LINK_HOTPLUG_DEGRADED", "LINK_BELOW_NOMINAL", "SINGLE_PCIE_PATH")]
    assert throughput and all(f.status is Status.PASS for f in throughput)
    report = json.loads(renderer("json")(outcome))
    assert len(report["bench"]["not_run"]) == 4 and {r["mode"] for r in report["bench"]["rdma"]} == {"concurrent"}
    for fmt in ("markdown", "html"):
        text = renderer(fmt)(outcome)
        assert text.count("not run: alone") == 4, fmt  # one line per run left out, with the rate that spared it
        assert text.count("Gb/s a-") == 2 and text.count("Gb/s b-") == 2, fmt


@pytest.mark.parametrize("fixture, rule", [("hotplug-degraded", "LINK_HOTPLUG_DEGRADED"),
                                           ("single-pcie-path", "SINGLE_PCIE_PATH")])
def test_both_traps_show_in_the_concurrent_rounds(fixture: str, rule: str) -> None:
    link = build_link_facts(_bundle(fixture).captures)
    rates = concurrent_rates(_bundle(fixture).captures, link)
    low = low_paths(rates, quick_options())
    assert set(low) == {p.key for p in link.paths}  # every path is low with both at once: each runs alone
    failing = {f.rule_id for f in _outcome(_bundle(fixture)).diagnosis.findings if f.status is Status.FAIL}
    assert rule in failing


def test_drift_compares_what_ran_and_leaves_the_runs_not_run_out() -> None:
    healthy = _bundle("healthy")
    link = build_link_facts(healthy.captures)
    snapshot = snapshot_of(healthy, link, "pass")
    baseline = Baseline("full", "2026-01-01T00:00:00+00:00", "0", "healthy", healthy.created or "", False, snapshot)
    quick, _ = _quick_like("healthy")
    outcome = _outcome(quick, baseline)
    drift = [f for f in outcome.diagnosis.findings if f.rule_id == "DRIFT_THROUGHPUT"]
    assert drift and not [f for f in drift if f.status is Status.SKIP and "alone" in f.subject], drift
    assert {f.subject for f in drift if "concurrent" in f.subject}
    assert outcome.diagnosis.verdict is not Verdict.INCONCLUSIVE


def test_the_quick_tier_calls_a_path_low_by_the_rule_the_diagnosis_judges_it_with() -> None:
    rules = configured_rules([], None)
    below = next(r for r in rules if r.id == "LINK_BELOW_NOMINAL")
    assert low_path_gbps(rules, 1.0) == below.thresholds["nominal_min_gbps"]
    tightened = [replace(r, thresholds={**r.thresholds, "nominal_min_gbps": 90}) if r is below else r for r in rules]
    assert low_path_gbps(tightened, 1.0) == 90.0
    assert low_path_gbps([], 80.0) == 80.0


def test_the_inspections_perftest_version_spares_a_second_ib_write_bw_v() -> None:
    captures = _bundle("healthy").captures
    tools = inspected_tools(captures, ["a", "b"])
    assert tools is not None and tools["a"].version == "6.22"
    assert inspected_tools([c for c in captures if c.node != "b"], ["a", "b"]) is None  # b must be asked
    missing = Capture("a", "perftest_version", "ib_write_bw -V", "", "sh: ib_write_bw: not found", 127,
                      skipped="tool missing: ib_write_bw")
    with pytest.raises(LinkcheckError, match="ib_write_bw not found"):
        tool_info(missing)


def test_a_transport_proof_records_its_bandwidth_and_leaves_it_unjudged_without_an_inconclusive_verdict() -> None:
    bundle = _bundle("healthy")
    proof = replace(bundle, captures=[replace(c, meta={**c.meta, "purpose": "transport"})
                                      if c.meta.get("kind") == "nccl" and c.spec != "nccl_log" else c
                                      for c in bundle.captures])
    outcome = _outcome(proof)
    busbw = [f for f in outcome.diagnosis.findings if f.rule_id == "NCCL_BUSBW_LOW"]
    assert [f.status for f in busbw] == [Status.SKIP] and not busbw[0].required
    assert "transport proof" in busbw[0].message
    assert outcome.diagnosis.verdict is Verdict.PASS
    assert outcome.link.bench.nccl is not None and outcome.link.bench.nccl.busbw_gbs


def test_the_quick_plan_with_the_transport_proof_names_its_sweep() -> None:
    from linkcheck.accept.budget import plan_line
    from linkcheck.bench.nccl import TRANSPORT_PROOF_BYTES

    line = plan_line("check --quick", duration_s=4, nccl_max_bytes=TRANSPORT_PROOF_BYTES, traffic_total=True,
                     adaptive=True)
    assert "all_gather_perf up to 256 MiB" in line and "planned wall time ~" in line, line

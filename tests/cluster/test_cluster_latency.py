"""The latency test over a cluster, offline: each cable's own ib_write_lat runs and the small all_reduce across every
node judged by the pair's latency rules on that cable's pair view; a cable planned with the test but without a run of
it is inconclusive; the all_reduce's job is the cluster's all_gather job at the decode sizes; the run's bundle saved
anonymised is the copy `linkcheck anonymize` makes."""

from __future__ import annotations

import json
from pathlib import Path

from msgspec.structs import replace

from linkcheck.app.live import save_cluster
from linkcheck.app.offline import judge_cluster, plan_tests
from linkcheck.app.topology import cluster_facts
from linkcheck.bench.latency import LatencyOptions, cluster_allreduce
from linkcheck.bench.nccl import NcclOptions, plan_cluster_nccl
from linkcheck.bench.rounds import captures_of
from linkcheck.bundle.anonymize_saved import anonymize_any_saved
from linkcheck.bundle.format import load_bundle
from linkcheck.bundle.run_record import ClusterDocument, load_cluster
from linkcheck.bundle.verify import verify_bundle
from linkcheck.cluster.cables import CableTest, cable_tests
from linkcheck.cluster.hosts import ClusterHost
from linkcheck.cluster.schedule import schedule
from linkcheck.diagnose.playbook import load_playbooks
from linkcheck.model import Capture, Status, Verdict
from linkcheck.transport.base import parse_target
from tests.cluster.cluster_checks import latency_captures

RING = Path(__file__).resolve().parents[2] / "fixtures" / "cluster-ring3-healthy"
RULES = load_playbooks(kind="all")
SLOW = "a:p0<->b:p1"


def _ring() -> tuple[list[ClusterHost], list[Capture], list[CableTest]]:
    bundle = load_bundle(RING)
    doc = load_cluster(RING)
    hosts = [ClusterHost(parse_target(h.target, name=h.name), h.origin or "the bundle") for h in doc.hosts]
    inspection = [c for c in bundle.captures if c.meta.get("kind") in (None, "version")]
    facts = cluster_facts([h.name for h in hosts], inspection, {})
    return hosts, inspection, cable_tests(facts, schedule(facts.topology))


def _doc(tests: list[CableTest], error: str | None = None) -> ClusterDocument:
    """The ring's record as a run of the latency test alone writes it: the tests planned, no RDMA rounds."""
    saved = load_cluster(RING)
    assert {e.label for e in saved.tests} == {t.label for t in tests}
    return replace(saved, traffic=False, latency=True, latency_error=error)


def test_each_cable_is_judged_on_its_own_latency_runs() -> None:
    hosts, inspection, tests = _ring()
    assert {t.label for t in tests} == {SLOW, "a:p1<->c:p0", "b:p0<->c:p1"}
    check = judge_cluster(hosts, inspection + latency_captures(tests, 31.0), {}, _doc(tests), RULES)
    for result in check.cables:
        lat = [f for f in result.findings if f.rule_id == "RDMA_LATENCY_HIGH"]
        assert len(lat) == 4, (result.test.label, lat)  # its own two paths at two sizes, no other cable's
        failing = {f.subject for f in lat if f.status is Status.FAIL}
        if result.test.label == SLOW:
            assert result.verdict is Verdict.FAIL and len(failing) == 2
            assert all(s.endswith("ib_write_lat 48 KiB") for s in failing)
        else:
            assert result.verdict is Verdict.PASS and not failing, result.findings
    assert check.verdict is Verdict.FAIL


def test_a_cable_planned_with_the_latency_test_but_without_its_runs_is_inconclusive() -> None:
    hosts, inspection, tests = _ring()
    captures = [c for c in latency_captures(tests, 8.8) if not c.meta["path"].startswith("b:")]
    check = judge_cluster(hosts, inspection + captures, {}, _doc(tests, "node b: ib_write_lat exited 1"), RULES)
    states = {r.test.label: (r.verdict, r.problem) for r in check.cables}
    assert states["b:p0<->c:p1"] == (Verdict.INCONCLUSIVE, "node b: ib_write_lat exited 1")
    assert {v for label, (v, _) in states.items() if label != "b:p0<->c:p1"} == {Verdict.PASS}
    assert check.traffic_error == "the latency test: node b: ib_write_lat exited 1"
    # Without an error said, the missing measurement is still never a pass.
    again = judge_cluster(hosts, inspection + captures, {}, _doc(tests), RULES)
    assert next(r for r in again.cables if r.test.label == "b:p0<->c:p1").problem == (
        "planned with the latency test, but no run of it is there")


def test_a_cable_whose_latency_runs_did_not_all_answer_is_inconclusive() -> None:
    """The test stops at a node without ib_write_lat: its server's run (exit 127) is that cable's only one."""
    hosts, inspection, tests = _ring()
    captures = latency_captures(tests, 8.8)
    first = next(i for i, c in enumerate(captures) if c.node == "c")  # a server: its client is the one before
    refused = replace(captures[first], stdout="", exit_status=127, skipped="ib_write_lat server on c exited before "
                      "listening")
    check = judge_cluster(hosts, inspection + [*captures[:first - 1], refused], {},
                          _doc(tests, "node c: ib_write_lat not found"), RULES)
    states = {r.test.label: (r.verdict, r.problem) for r in check.cables}
    lost = (Verdict.INCONCLUSIVE, "node c: ib_write_lat not found")
    assert states == {SLOW: (Verdict.PASS, None), "b:p0<->c:p1": lost, "a:p1<->c:p0": lost}
    # Without an error said, a failed run is still never a pass.
    again = judge_cluster(hosts, inspection + [*captures[:first - 1], refused], {}, _doc(tests), RULES)
    assert next(r for r in again.cables if r.test.label == "b:p0<->c:p1").problem == (
        "its latency test did not answer on every path")


def test_the_all_reduce_across_every_node_is_each_first_pass_cables_and_never_anothers_run() -> None:
    _, inspection, tests = _ring()
    planned = plan_tests(tests, {})
    reduce = Capture("a", "all_reduce_perf", "mpirun ...", "", meta={"kind": "latency", "tool": "all_reduce_perf"})
    captures = latency_captures(tests, 8.8) + [reduce]
    for p in planned:
        own = [c for c in captures_of(p, captures) if c.meta.get("kind") == "latency"]
        assert reduce in own and all(c.meta.get("path") in p.keys for c in own if c is not reduce)
        assert len(own) == 1 + 8  # two paths, two sizes, client and server
        second = replace(p, test=replace(p.test, pass_no=2))
        assert not [c for c in captures_of(second, captures) if c.meta.get("kind") == "latency"]


def test_the_all_reduce_job_is_the_clusters_all_gather_job_at_the_decode_sizes() -> None:
    hosts, inspection, _ = _ring()
    facts = cluster_facts([h.name for h in hosts], inspection, {})
    plan = plan_cluster_nccl(facts, NcclOptions())
    job = cluster_allreduce(plan, LatencyOptions(), "r1")
    last = job.script.splitlines()[-1]
    assert "all_reduce_perf" in job.script and "all_gather_perf" not in job.script and "-J" not in job.script
    assert last.count("-b 16384 -e 65536 -f 2 -g 1 -n 200 -w 20") == 3  # one app context per rank
    assert all(f"NCCL_IB_HCA={r.hca_setting}" in last for r in plan.ranks)
    assert all(f"{k}={v}" in last for k, v in plan.env)  # the ring's NCCL settings, as the all_gather's
    assert (job.template.node, job.template.spec) == (plan.head, "all_reduce_perf")
    assert (job.template.meta["kind"], job.template.meta["nodes"]) == ("latency", "a,b,c")


def test_the_run_saved_anonymised_is_the_copy_anonymize_makes(tmp_path: Path) -> None:
    bundle, doc = load_bundle(RING), load_cluster(RING)
    save_cluster(replace(bundle, path=None), doc, tmp_path / "run", anonymize=True)
    anonymize_any_saved(RING, tmp_path / "offline")
    assert verify_bundle(tmp_path / "run").ok
    run, offline = ((tmp_path / d / "cluster.json").read_text(encoding="utf-8") for d in ("run", "offline"))
    assert run == offline and [h["name"] for h in json.loads(run)["hosts"]] == ["n1", "n2", "n3"]
    assert [c.stdout for c in load_bundle(tmp_path / "run").captures] == [
        c.stdout for c in load_bundle(tmp_path / "offline").captures]
    assert not [p for p in Path(tmp_path).iterdir() if p.name.startswith("linkcheck-")]

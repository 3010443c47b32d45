"""A cluster's acceptance, judged without a lab: profiles per layout, every test by the per-cable checks, the NCCL
run across the nodes by the NCCL checks, and the cluster's own findings, over ClusterChecks built as `check` builds
them (tests/cluster/cluster_checks.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
import pytest
from msgspec.structs import replace

from linkcheck.accept.budget import cluster_plan_line, latency_seconds, plan_line, planned_seconds
from linkcheck.accept.evidence import cluster_evidence
from linkcheck.accept.judge import CLUSTER_CHECKS, AcceptVerdict, judge, judge_cluster
from linkcheck.accept.profile import ProfileError, layout_profile, parse_profile, resolve_profile
from linkcheck.accept.record import AcceptanceRecord
from linkcheck.accept.standard import standard_record
from linkcheck.accept.text import cluster_acceptance_text, describe_profile
from linkcheck.app.accept import _Choice, choose_profile, traffic_request
from linkcheck.app.live import save_cluster
from linkcheck.app.offline import diagnose_bundle, unreached
from linkcheck.app.offline import judge_cluster as offline_cluster
from linkcheck.app.topology import cluster_facts
from linkcheck.bench.latency import LatencyOptions
from linkcheck.bundle.acceptance import write_acceptance
from linkcheck.bundle.format import Bundle, load_bundle
from linkcheck.bundle.run_record import SCHEMA_VERSION as CLUSTER_VERSION
from linkcheck.bundle.run_record import ClusterDocument, load_cluster
from linkcheck.cluster.cables import cable_tests
from linkcheck.cluster.hosts import ClusterHost
from linkcheck.cluster.schedule import schedule
from linkcheck.collect.specs import CLUSTER_SPECS, SPECS
from linkcheck.diagnose.playbook import load_playbooks
from linkcheck.errors import UsageError
from linkcheck.facts.nccl_ranks import ClusterNccl
from linkcheck.model import Capture, Status
from linkcheck.outcome import ClusterCheck
from linkcheck.report.markdown import md
from linkcheck.transport.base import parse_target
from tests.cluster.cluster_checks import (
    HEALTHY,
    HOTPLUG,
    ONE_PCIE,
    checked,
    judged,
    latency_captures,
    measured,
    slow_node,
    switch,
)
from tests.emulators.captures import node_captures
from tests.lab.cluster import cluster_models, ring3, ring4

if TYPE_CHECKING:
    from tests.conftest import InProcessCli

RING = resolve_profile("dgx-spark-ring3")
PAIR = resolve_profile("dgx-spark-pair")
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
SWITCH = resolve_profile("dgx-spark-switch")
FIRST = "a:p0<->b:p1"


def _with_nccl(check: ClusterCheck, busbw: float | None = 15.0, wrong: int = 0) -> ClusterCheck:
    run = ClusterNccl((), check.facts.topology.layout, busbw, busbw, wrong, 16 << 30)
    return replace(check, facts=replace(check.facts, nccl=run))


def _verdicts(check: ClusterCheck, profile: object = RING, reps: int = 1) -> dict[str, AcceptVerdict]:
    acceptance = judge_cluster(check, profile, reps)  # type: ignore[arg-type]
    return {t.label: t.verdict for t in acceptance.tests}


def test_the_built_in_profiles_name_their_layout_and_take_nvidias_cluster_figures() -> None:
    assert {layout_profile(x) for x in ("pair", "ring3", "switch")} == {"dgx-spark-pair", "dgx-spark-ring3",
                                                                         "dgx-spark-switch"}
    assert layout_profile("ring4") is None and layout_profile("mixed") is None
    ring_nccl = RING.check("nccl_busbw_gbs")
    switch_nccl = SWITCH.check("nccl_busbw_gbs")
    assert ring_nccl is not None and switch_nccl is not None
    assert {t.band: t.value for t in ring_nccl.thresholds} == {"fail_below": 8.0, "warn_below": 10.0}
    # NVIDIA's 21.875 GB/s less the 1 % runs vary by, as for a pair (NCCL_BUSBW_LOW is one rule for both).
    assert {t.band: t.value for t in switch_nccl.thresholds} == {"fail_below": 8.0, "warn_below": 21.65}
    assert "spark_cluster_setup.py" in next(t.source for t in switch_nccl.thresholds if t.band == "warn_below")
    # Through a switch each node's cable ends at the switch: no check of one cable seen from both ends.
    assert SWITCH.check("cable_serial_both_ends") is None and RING.check("cable_serial_both_ends") is not None


@pytest.mark.parametrize(("layout", "problem"), [
    ("ring9", "'layout' must be pair, ring3 to ring8, or switch"),
    ("[ring3]", "'layout' must be"),
    ("''", "'layout' must be"),
])
def test_a_layout_no_cabling_has_is_refused_at_its_line(layout: str, problem: str) -> None:
    text = RING.text.replace("layout: ring3", f"layout: {layout}")
    with pytest.raises(ProfileError) as err:
        parse_profile(text, "site.yaml")
    assert problem in str(err.value) and "site.yaml:" in str(err.value)


def test_a_check_that_cannot_hold_on_a_switch_is_refused_when_read() -> None:
    with pytest.raises(ProfileError, match="cable_serial_both_ends' cannot hold on a switch"):
        parse_profile(RING.text.replace("layout: ring3", "layout: switch"), "site.yaml")


def test_a_run_is_compared_with_the_built_in_profile_of_its_layout() -> None:
    assert standard_record(RING, 3) == {"profile": "dgx-spark-ring3", "sha256": RING.sha256, "non_standard": False,
                                        "differences": []}
    weaker = standard_record(RING, 1)
    assert weaker["non_standard"] and weaker["differences"] == ["1 repetition (standard 3)"]
    ring4_profile = parse_profile(RING.text.replace("layout: ring3", "layout: ring4"), "site.yaml")
    record = standard_record(ring4_profile, 3)
    assert record["profile"] == "dgx-spark-ring3" and record["non_standard"]
    assert record["differences"][0].startswith("layout ring4: no built-in profile accepts it")


def test_a_healthy_ring_is_accepted_with_every_test_and_the_nccl_run() -> None:
    acceptance = judge_cluster(_with_nccl(checked(ring3())), RING, 1)
    assert acceptance.verdict is AcceptVerdict.PASS and acceptance.layout == "ring3"
    assert {t.label: t.verdict for t in acceptance.tests} == dict.fromkeys(
        ["a:p0<->b:p1", "b:p0<->c:p1", "a:p1<->c:p0"], AcceptVerdict.PASS)
    # Per test: 4 alone + 4 concurrent + 2 totals + 4 + 4 PCIe + 2 part numbers + serial + firmware.
    assert [len(t.checks) for t in acceptance.tests] == [22, 22, 22]
    assert {c.check.id for c in acceptance.checks} == set(CLUSTER_CHECKS)
    subjects = [(c.check.id, f"{label} {c.subject}") for label, c in acceptance.all_checks()]
    assert len(subjects) == len(set(subjects)), "every check of the record has its own subject"
    # Directions are named by the test's own nodes.
    third = next(t for t in acceptance.tests if t.label == "a:p1<->c:p0")
    assert {c.subject.rsplit(" ", 1)[1] for c in third.checks if c.check.id == "rdma_alone_gbps"} == {"a->c", "c->a"}


def test_a_hot_plugged_node_fails_its_own_tests_only_and_names_the_trap() -> None:
    acceptance = judge_cluster(_with_nccl(checked(ring3(), slow_node("a", HOTPLUG))), RING, 1)
    assert acceptance.verdict is AcceptVerdict.FAIL
    assert {t.label: t.verdict.value for t in acceptance.tests} == {
        "a:p0<->b:p1": "FAIL", "b:p0<->c:p1": "PASS", "a:p1<->c:p0": "FAIL"}
    first = next(t for t in acceptance.tests if t.label == FIRST)
    assert ("LINK_HOTPLUG_DEGRADED", "fail") in {(r, s) for r, s, _ in first.findings}
    text = cluster_acceptance_text(acceptance.to_dict())
    assert text.splitlines()[-1] == "ACCEPTANCE: FAIL (20 of 68 checks) NON-STANDARD exit 2"
    assert f"{FIRST}  1      FAIL" in text


def test_one_pcie_path_fails_the_total_while_each_path_alone_passes() -> None:
    acceptance = judge_cluster(_with_nccl(checked(ring3(), lambda t: ONE_PCIE if t.label == FIRST else (98.01,
                                                                                                      98.01))), RING, 1)
    first = next(t for t in acceptance.tests if t.label == FIRST)
    failed = {c.check.id for c in first.checks if c.status is AcceptVerdict.FAIL}
    assert failed == {"rdma_concurrent_gbps", "rdma_concurrent_total_gbps"}
    assert acceptance.verdict is AcceptVerdict.FAIL


@pytest.mark.parametrize(("busbw", "wrong", "verdict"), [
    (15.0, 0, AcceptVerdict.PASS), (9.5, 0, AcceptVerdict.DEGRADED), (5.0, 0, AcceptVerdict.FAIL),
    (15.0, 3, AcceptVerdict.FAIL), (None, 0, AcceptVerdict.INCONCLUSIVE)])
def test_the_nccl_run_across_the_ring_is_judged_by_nvidias_ring_figure(busbw: float | None, wrong: int,
                                                                       verdict: AcceptVerdict) -> None:
    nccl = {c.check.id: c.status for c in judge_cluster(_with_nccl(checked(ring3()), busbw, wrong), RING, 1).checks}
    assert max(nccl.values(), key=[AcceptVerdict.PASS, AcceptVerdict.DEGRADED, AcceptVerdict.INCONCLUSIVE,
                                   AcceptVerdict.FAIL].index) is verdict


def test_a_switch_is_held_to_the_switch_figure() -> None:
    healthy = _with_nccl(switch("abcd"), 22.5)
    assert judge_cluster(healthy, SWITCH, 1).verdict is AcceptVerdict.PASS
    assert judge_cluster(_with_nccl(switch("abcd"), 20.0), SWITCH, 1).verdict is AcceptVerdict.DEGRADED


def test_missing_is_never_passing() -> None:
    healthy = _with_nccl(checked(ring3()))
    # Two repetitions asked for, one measured: every rate is short of a run.
    short = judge_cluster(healthy, RING, 2)
    assert short.verdict is AcceptVerdict.INCONCLUSIVE
    assert all(t.verdict is AcceptVerdict.INCONCLUSIVE for t in short.tests)
    # No NCCL run, a node not inspected, a traffic test that stopped, an interrupted run: never a pass.
    assert judge_cluster(checked(ring3()), RING, 1).verdict is AcceptVerdict.INCONCLUSIVE
    lost = replace(healthy, view=replace(healthy.view, errors={"c": "connection refused"}))
    assert judge_cluster(lost, RING, 1).verdict is AcceptVerdict.INCONCLUSIVE
    stopped = replace(healthy, traffic_error="round 2: ib_write_bw server on b did not start")
    assert judge_cluster(stopped, RING, 1).verdict is AcceptVerdict.INCONCLUSIVE
    cut = judge_cluster(replace(healthy, interrupted=True), RING, 1)
    assert cut.verdict is AcceptVerdict.INCONCLUSIVE and "interrupted" in cut.notes[-1]
    no_tests = judge_cluster(replace(healthy, cables=()), RING, 1)
    assert no_tests.verdict is AcceptVerdict.INCONCLUSIVE and "no test was measured" in no_tests.notes


def test_an_nccl_run_that_could_not_start_says_why() -> None:
    check = replace(checked(ring3()), nccl_error="NCCL across the nodes: no connection to node c")
    nccl = judge_cluster(check, RING, 1).checks
    assert {c.reason for c in nccl} == {"NCCL across the nodes: no connection to node c"}


def test_the_record_reads_back_through_its_model(tmp_path: Path) -> None:
    doc = judge_cluster(_with_nccl(checked(ring3(), slow_node("a", HOTPLUG))), RING, 1).to_dict()
    record = msgspec.json.decode(msgspec.json.encode(doc), type=AcceptanceRecord)
    assert record.cluster is not None and record.cluster.layout == "ring3"
    assert [(t.test, t.verdict) for t in record.cluster.tests] == [
        ("a:p0<->b:p1", "FAIL"), ("b:p0<->c:p1", "PASS"), ("a:p1<->c:p0", "FAIL")]
    assert sum(t.checks for t in record.cluster.tests) + 2 == len(record.checks)
    assert all(c.subject.startswith(("a:", "b:", "all_gather across 3 nodes")) for c in record.checks)


def test_the_profile_is_the_one_of_the_layout_the_nodes_show() -> None:
    ring, four = checked(ring3()).view.topology, checked(ring4()).view.topology
    assert choose_profile(None, ring, []) == RING
    assert choose_profile(RING, ring, []) is RING
    with pytest.raises(UsageError, match="the nodes show a ring of 3") as err:
        choose_profile(SWITCH, ring, [])
    assert err.value.fix == "--profile dgx-spark-ring3"
    with pytest.raises(UsageError, match="no built-in profile accepts a ring of 4"):
        choose_profile(None, four, [])
    # A node not inspected: the layout is unsure; a given profile still runs, none is guessed.
    assert choose_profile(SWITCH, ring, ["c"]) is SWITCH and choose_profile(None, ring, ["c"]) is None


LATENCY_RING = parse_profile(RING.text.replace("  nccl: {max_bytes: 17179869184}",
                                               "  nccl: {max_bytes: 17179869184}\n  latency: true"), "site.yaml")
RING_BUNDLE = FIXTURES / "cluster-ring3-healthy"
# That ring was recorded by `check --quick`, which runs each path alone only where one is low: judged without the
# alone check, every other check of the ring's profile has its measurements.
QUICK_RING = replace(LATENCY_RING, checks=tuple(c for c in LATENCY_RING.checks if c.id != "rdma_alone_gbps"))
# The small all_reduce as the lab's pair recorded it (2 ranks): a stand-in for the ring's own run across its three
# nodes, which prints the same table; the latency rules read its sizes, times and transport, not its rank count.
ALLREDUCE_BUNDLE = FIXTURES / "healthy-latency-lab"
C_LACKS_LAT = "traffic test stopped: node c: ib_write_lat not found (fix: sudo apt-get install perftest)"


def _allreduce() -> Capture:
    found = next(c for c in load_bundle(ALLREDUCE_BUNDLE).captures if c.spec == "all_reduce_perf")
    return replace(found, meta={**found.meta, "nodes": "a,b,c", "layout": "ring3"})


def _latency_run(slow_us: float = 8.8, lost: str | None = None) -> tuple[ClusterCheck, Bundle, ClusterDocument]:
    """The recorded healthy ring with the latency test after its rounds, judged as `accept` judges its run: every
    path of every cable at 2 B and 48 KiB (the a-b cable's 48 KiB runs at `slow_us`), the all_reduce across the
    nodes; with `lost`, that node lacks ib_write_lat: the test stopped at its first run, before the all_reduce."""
    bundle, doc = load_bundle(RING_BUNDLE), load_cluster(RING_BUNDLE)
    hosts = [ClusterHost(parse_target(h.target, name=h.name), h.origin) for h in doc.hosts]
    facts = cluster_facts([h.name for h in hosts], [c for c in bundle.captures if not c.meta], {})
    latency = [*latency_captures(cable_tests(facts, schedule(facts.topology)), slow_us), _allreduce()]
    if lost is not None:  # the runs before its first, then its server that never listened (exit 127, as recorded)
        first = next(c for c in latency if c.node == lost)
        said = "timeout: failed to run command 'ib_write_lat': No such file or directory"
        refused = replace(first, stdout="", stderr=said, exit_status=127,
                          skipped=f"ib_write_lat server on {lost} exited before listening")
        latency = [*latency[:latency.index(first) - 1], refused]  # its client (the one before) never started
    doc = replace(doc, schema_version=CLUSTER_VERSION, latency=True, latency_error=C_LACKS_LAT if lost else None)
    bundle = replace(bundle, path=None, captures=[*bundle.captures, *latency])
    check = offline_cluster(hosts, bundle.captures, {}, doc, load_playbooks(kind="all"))
    return _with_nccl(check), bundle, doc


def _record(check: ClusterCheck, bundle: Bundle) -> dict[str, Any]:
    acceptance = judge_cluster(check, QUICK_RING, 1)
    return {**acceptance.to_dict(), "evidence": cluster_evidence(check, bundle.captures, bundle.created, None)}


def test_a_cluster_profile_asks_for_the_latency_test_and_the_run_sends_the_pairs_request() -> None:
    assert LATENCY_RING.test.latency and LATENCY_RING.layout == "ring3"
    assert "the latency test (ib_write_lat per path" in describe_profile(LATENCY_RING)
    facts = checked(ring3()).facts
    # The cluster's run asks for what a pair's asks for with the same profile, -D and repetitions included.
    sent = _Choice(LATENCY_RING, 1, 2).plan(facts)
    shortened = replace(LATENCY_RING, test=replace(LATENCY_RING.test, duration_s=2))
    assert sent == traffic_request(shortened, 1) and sent.latency == LatencyOptions() and sent.command == "accept"
    assert _Choice(None, None, None).plan(facts).latency is None  # the built-in ring profile does not ask for it
    # A profile asking for it is no weaker than the standard: it runs more.
    assert standard_record(LATENCY_RING, 3)["non_standard"] is False


def test_the_clusters_plan_line_says_the_latency_test_as_a_pairs_does() -> None:
    bare = cluster_plan_line("accept", tests=3, rounds=9, duration_s=2, nccl_max_bytes=1 << 34)
    line = cluster_plan_line("accept", tests=3, rounds=9, duration_s=2, nccl_max_bytes=1 << 34, latency_paths=6)
    said = ("12 ib_write_lat runs one at a time (2 B and 48 KiB per path) and all_reduce_perf 16-64 KiB across every "
            "node (~20 s)")
    assert said in line and said not in bare
    assert planned_seconds(paths=6, latency=True) - planned_seconds(paths=6) == latency_seconds(6) == 20.0
    pair = plan_line("accept", paths=2, duration_s=10, latency=True)
    assert "4 ib_write_lat runs one at a time (2 B and 48 KiB per path) and all_reduce_perf 16-64 KiB (~8 s)" in pair
    # The latency test alone (`bench latency`): no round is said, and the time is the inspection's and its own.
    alone = cluster_plan_line("bench latency", tests=3, rounds=0, duration_s=0, latency_paths=6)
    assert alone == f"linkcheck bench latency: planned wall time ~21 s after the inspection ({said})", alone


def test_every_cable_is_judged_on_its_latency_runs_by_the_pairs_latency_rules() -> None:
    healthy, bundle, _ = _latency_run()
    for result in healthy.cables:  # each cable: its four ib_write_lat runs and the all_reduce, all passing
        judged_by = [(f.rule_id, f.status) for f in result.findings if "LATENCY" in f.rule_id]
        assert sorted(judged_by) == [("NCCL_ALLREDUCE_LATENCY_HIGH", Status.PASS),
                                     *[("RDMA_LATENCY_HIGH", Status.PASS)] * 4], result.test.label
    record = _record(healthy, bundle)
    assert record["verdict"] == "PASS" and record["test"]["latency"] is True
    # The evidence names every latency process: 12 runs, client and server, and the all_reduce.
    runs = [r for r in record["evidence"]["runs"] if r["tool"] in ("ib_write_lat", "all_reduce_perf")]
    assert len([r for r in runs if r["tool"] == "ib_write_lat"]) == 24 and runs[-1]["tool"] == "all_reduce_perf"
    assert {r["round"] for r in runs if r["tool"] == "ib_write_lat"} == {f"lat-{n}-{s}" for n in range(12)
                                                                        for s in (2, 49152) if (n % 2 == 0) == (s == 2)}

    slow, bundle, _ = _latency_run(slow_us=31.0)  # the hot-plug state's 48 KiB write (RDMA_LATENCY_HIGH fails at 26)
    acceptance = judge_cluster(slow, QUICK_RING, 1)
    assert acceptance.verdict is AcceptVerdict.FAIL
    assert {t.label: t.verdict.value for t in acceptance.tests} == {FIRST: "FAIL", "b:p0<->c:p1": "PASS",
                                                                    "a:p1<->c:p0": "PASS"}
    failed = [f for f in acceptance.to_dict()["diagnosis"]["findings"] if f["id"] == "RDMA_LATENCY_HIGH"]
    assert len(failed) == 2 and all(f["status"] == "fail" and f["subject"].startswith(f"{FIRST} ")
                                    and f["subject"].endswith("ib_write_lat 48 KiB") for f in failed), failed
    # As a pair's acceptance counts the same finding: its diagnosis' failure fails it.
    pair = diagnose_bundle(FIXTURES / "hotplug-latency")
    pair_profile = replace(PAIR, test=replace(PAIR.test, latency=True))
    pair_acceptance = judge(pair.link, pair.diagnosis, pair_profile, 1)
    assert ("RDMA_LATENCY_HIGH", "fail") in {(r, s) for r, s, _ in pair_acceptance.findings}
    assert pair_acceptance.verdict is AcceptVerdict.FAIL


def test_a_node_without_ib_write_lat_leaves_the_acceptance_inconclusive_saying_why() -> None:
    lost, bundle, _ = _latency_run(lost="c")
    acceptance = judge_cluster(lost, QUICK_RING, 1)
    assert acceptance.verdict is AcceptVerdict.INCONCLUSIVE
    # The cable measured before the test stopped is judged on its runs; the two with node c never pass.
    assert {t.label: (t.verdict.value, t.problem) for t in acceptance.tests} == {
        FIRST: ("PASS", None), "b:p0<->c:p1": ("INCONCLUSIVE", C_LACKS_LAT),
        "a:p1<->c:p0": ("INCONCLUSIVE", C_LACKS_LAT)}
    assert f"the traffic test stopped: the latency test: {C_LACKS_LAT}" in acceptance.notes
    record = msgspec.json.decode(msgspec.json.encode(_record(lost, bundle)), type=AcceptanceRecord)
    assert record.verdict == "INCONCLUSIVE" and record.test is not None and record.test.latency is True


def test_the_saved_clusters_reports_show_its_latency_and_the_acceptance_that_judged_it(
        tmp_path: Path, cli: InProcessCli) -> None:
    check, bundle, doc = _latency_run(slow_us=31.0)
    save_cluster(bundle, doc, tmp_path / "run")
    write_acceptance(tmp_path / "run", _record(check, bundle), LATENCY_RING.text)
    assert cli("verify", str(tmp_path / "run")).returncode == 0
    markdown = cli("report", str(tmp_path / "run"), "-f", "markdown")
    assert markdown.returncode == 2, markdown.stderr
    text = markdown.stdout
    assert md("Test: 1 repetitions, ib_write_bw -D 10 -s 1 MiB -q 1, all_gather_perf up to 16 GiB, the latency test "
              "(ib_write_lat per path at 2 B and 48 KiB, all_reduce_perf 16-64 KiB)") in text
    assert "1 repetitions, with the latency test)" in text  # the acceptance's headline
    latency = text[text.index("## Latency"):].split("\n## ")[0]
    rows = [line for line in latency.splitlines() if line.startswith(f"| {md('ib_write_lat')}")]
    assert len(rows) == 12 and sum("| 31 us" in row for row in rows) == 2, latency
    slow = [row.replace("\\", "") for row in rows if "| 31 us" in row]  # unescaped: the a-b cable's 48 KiB runs
    assert all("48 KiB, a:" in row and "<->b:" in row for row in slow), slow
    assert latency.count(f"| {md('all_reduce_perf')}") == 3  # 16, 32 and 64 KiB, once for the cluster
    assert f"finding FAIL {md('RDMA_LATENCY_HIGH')} {md(FIRST)}" in text
    data = json.loads(cli("report", str(tmp_path / "run"), "-f", "json").stdout)
    assert data["acceptance"]["test"]["latency"] is True and data["acceptance"]["verdict"] == "FAIL"
    judged_by = {t["label"]: {f["status"] for f in t["findings"] if f["id"] == "RDMA_LATENCY_HIGH"}
                 for t in data["tests"]}
    assert judged_by == {FIRST: {"pass", "fail"}, "b:p0<->c:p1": {"pass"}, "a:p1<->c:p0": {"pass"}}
    html = cli("report", str(tmp_path / "run"), "-f", "html")
    assert html.returncode == 2 and "<h2>Latency</h2>" in html.stdout


def test_a_cluster_profile_for_two_nodes_and_a_bad_hostfile_are_refused_before_any_node(
        tmp_path: Path, cli: InProcessCli) -> None:
    two = cli("accept", "--profile", "dgx-spark-ring3", "--node", "a=127.0.0.1:9", "--node", "b=127.0.0.1:9")
    assert two.returncode == 4 and "accepts a ring of 3 (layout: ring3); these are 2 nodes" in two.stderr, two.stderr
    assert "--profile dgx-spark-pair" in two.stderr
    pair = cli("accept", "--profile", "dgx-spark-pair", "--node", "a=127.0.0.1:9", "--node", "b=127.0.0.2:9",
               "--node", "c=127.0.0.3:9")
    assert pair.returncode == 4, pair.stderr
    assert "accepts two nodes direct (layout: pair); these are 3 nodes" in pair.stderr, pair.stderr
    missing = cli("accept", "--hostfile", str(tmp_path / "no-such-hostfile"))
    assert missing.returncode == 4 and "no-such-hostfile" in missing.stderr and "Traceback" not in missing.stderr
    bad = tmp_path / "site.yaml"
    bad.write_text(RING.text.replace("layout: ring3", "layout: torus"), encoding="utf-8")
    refused = cli("accept", "--profile", str(bad), "--node", "a=127.0.0.1:9", "--node", "b=127.0.0.1:9",
                  "--node", "c=127.0.0.1:9")
    assert refused.returncode == 4 and "'layout' must be" in refused.stderr and f"{bad}:" in refused.stderr


def test_a_required_rule_must_run_on_the_profiles_layout() -> None:
    copied = RING.text.replace("require: [MTU_NOT_JUMBO_EVERYWHERE, RING_SAME_PORT]",
                               "require: [PCIE_LINK_DEGRADED, CABLE_NOT_APPROVED]")
    assert copied != RING.text
    with pytest.raises(ProfileError, match="'require' names PCIE_LINK_DEGRADED, which does not run on a ring3"):
        parse_profile(copied, "site.yaml")
    pair = resolve_profile("dgx-spark-pair").text.replace("require: [PCIE_LINK_DEGRADED, CABLE_NOT_APPROVED]",
                                                          "require: [RING_SAME_PORT]")
    with pytest.raises(ProfileError, match="RING_SAME_PORT, which does not run on a pair"):
        parse_profile(pair, "site.yaml")


def test_a_cable_whose_far_node_was_not_inspected_holds_only_its_own_cage() -> None:
    """A node not inspected: the cage of an inspected node that led to it is a test of its own, inconclusive,
    whose evidence and checks are that cage's (not the node's other cable)."""
    models = cluster_models(ring3())
    captures = [c for n, m in models.items() if n != "c" for c in node_captures(n, m, SPECS + CLUSTER_SPECS)]
    errors = {"c": "connection refused"}
    facts = cluster_facts(list(models), captures, errors)
    measured_tests = [measured(t, *HEALTHY) for t in cable_tests(facts, schedule(facts.topology))]
    placeholders = unreached(facts, errors)
    check = judged(facts, [*measured_tests, *placeholders], errors)
    acceptance = judge_cluster(_with_nccl(check), RING, 1)
    verdicts = {t.label: t.verdict for t in acceptance.tests}
    assert verdicts == {"a:p0<->b:p1": AcceptVerdict.PASS, "a:p1<->?": AcceptVerdict.INCONCLUSIVE,
                        "b:p0<->?": AcceptVerdict.INCONCLUSIVE}
    a_p1 = next(t for t in acceptance.tests if t.label == "a:p1<->?")
    assert {c.subject for c in a_p1.checks if c.check.id == "pcie_width"} == {"a:enp1s0f1np1", "a:enP2p1s0f1np1"}
    ends = [e for e in cluster_evidence(check, [], None, None)["cable"] if e["test"] == "a:p1<->?"]
    first = next(e for e in cluster_evidence(check, [], None, None)["cable"] if e["test"] == "a:p0<->b:p1")
    assert ends and ends[0]["cage"] == "p1" and ends[0]["serial"] != first["serial"]

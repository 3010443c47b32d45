"""A cluster's acceptance, judged without a lab: profiles per layout, every test by the per-cable checks, the NCCL
run across the nodes by the NCCL checks, and the cluster's own findings, over ClusterChecks built as `check` builds
them (tests/cluster/cluster_checks.py)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import msgspec
import pytest
from msgspec.structs import replace

from linkcheck.accept.evidence import cluster_evidence
from linkcheck.accept.judge import CLUSTER_CHECKS, AcceptVerdict, judge_cluster
from linkcheck.accept.profile import ProfileError, layout_profile, parse_profile, resolve_profile
from linkcheck.accept.record import AcceptanceRecord
from linkcheck.accept.standard import standard_record
from linkcheck.accept.text import cluster_acceptance_text
from linkcheck.app.accept import choose_profile
from linkcheck.app.offline import unreached
from linkcheck.app.topology import cluster_facts
from linkcheck.cluster.cables import cable_tests
from linkcheck.cluster.schedule import schedule
from linkcheck.collect.specs import CLUSTER_SPECS, SPECS
from linkcheck.errors import UsageError
from linkcheck.facts.nccl_ranks import ClusterNccl
from linkcheck.outcome import ClusterCheck
from tests.cluster.cluster_checks import HEALTHY, HOTPLUG, ONE_PCIE, checked, judged, measured, slow_node, switch
from tests.emulators.captures import node_captures
from tests.lab.cluster import cluster_models, ring3, ring4

if TYPE_CHECKING:
    from tests.conftest import InProcessCli

RING = resolve_profile("dgx-spark-ring3")
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


def test_the_latency_test_is_a_pair_s_only() -> None:
    text = RING.text.replace("  nccl: {max_bytes: 17179869184}", "  nccl: {max_bytes: 17179869184}\n  latency: true")
    assert text != RING.text
    with pytest.raises(ProfileError, match="'latency' runs on a pair only"):
        parse_profile(text, "site.yaml")


def test_a_cluster_profile_for_two_nodes_and_a_bad_hostfile_are_refused_before_any_node(
        tmp_path: Path, cli: InProcessCli) -> None:
    two = cli("accept", "--profile", "dgx-spark-ring3", "--node", "a=127.0.0.1:9", "--node", "b=127.0.0.1:9")
    assert two.returncode == 4 and "accepts a cluster (layout: ring3)" in two.stderr, two.stderr
    assert "--profile dgx-spark-pair" in two.stderr
    pair = cli("accept", "--profile", "dgx-spark-pair", "--node", "a=127.0.0.1:9", "--node", "b=127.0.0.1:9",
               "--node", "c=127.0.0.1:9")
    assert pair.returncode == 4 and "accepts a pair (layout: pair)" in pair.stderr, pair.stderr
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

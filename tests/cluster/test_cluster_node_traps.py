"""The pair's traps of a node's own configuration and of its end of a cable (GID index, PCIe width, FEC, netplan,
NetworkManager, a late plug-in, twins on one subnet, the cable's approval) judged on every cable of a cluster, as on
a pair: a node of a ring or a switch that has one is named, once, on a bundle saved without traffic."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec
import pytest
from msgspec.structs import replace as replace_struct

from linkcheck.app.offline import judge_bundle
from linkcheck.app.topology import cluster_facts
from linkcheck.bundle.verify import load_trusted
from linkcheck.cluster.facts import TrafficOutcome
from linkcheck.collect.specs import CLUSTER_SPECS, SPECS
from linkcheck.diagnose.engine import CABLE_TRAPS, diagnose
from linkcheck.model import Status, Verdict
from linkcheck.outcome import ClusterCheck
from linkcheck.repair.cables import cluster_plan
from tests.cluster.cluster_checks import ALL_RULES, saved_bundle
from tests.emulators.build import boot_dmesg, hotplug_dmesg
from tests.emulators.captures import node_captures
from tests.emulators.node import Cable, Node
from tests.fixture_bundles import FIXTURE_DIR
from tests.lab.cluster import CLUSTER_SCENARIOS, cluster_models

if TYPE_CHECKING:
    from tests.conftest import InProcessCli


def _firing(path: Path) -> list[tuple[str, str, str]]:
    check = judge_bundle(path)
    findings = check.view.diagnosis.findings if hasattr(check, "view") else ()
    return sorted((f.rule_id, f.status.value, f.subject) for f in findings
                  if f.rule_id in CABLE_TRAPS and f.status in (Status.WARN, Status.FAIL))


def _on(node: str, change):  # type: ignore[no-untyped-def]
    return lambda name, model: change(model) if name == node else model


def _fec_none(model: Node) -> Node:
    return replace(model, functions=tuple(replace(f, fec_active="None") if f.cage == "p0" else f
                                          for f in model.functions))


def _pcie_x2(model: Node) -> Node:
    return replace(model, functions=tuple(replace(f, pcie_width=2) if f.netdev == "enP2p1s0f1np1" else f
                                          for f in model.functions))


def test_a_healthy_ring_meets_every_trap_and_none_fires(tmp_path: Path) -> None:
    bundle = saved_bundle(tmp_path / "ring", "ring3")
    check = judge_bundle(bundle)
    judged = {f.rule_id for f in check.view.diagnosis.findings if f.rule_id in CABLE_TRAPS}  # type: ignore[union-attr]
    # All but NCCL_HCA_PAIRING (never on a ring: its nodes' other cages are live, NCCL routes it by subnet).
    assert judged == set(CABLE_TRAPS) - {"NCCL_HCA_PAIRING"}
    assert _firing(bundle) == []
    assert check.verdict is Verdict.PASS


def test_a_ring_nodes_fec_off_is_named_on_its_cable_alone(tmp_path: Path) -> None:
    bundle = saved_bundle(tmp_path / "ring", "ring3", _on("b", _fec_none))
    firing = _firing(bundle)
    # Node b's cage p0 is its cable to c: both of that cable's paths, named by the cable; a's cables are left alone.
    assert [f[:2] for f in firing] == [("FEC_NOT_RS", "warn")] * 2
    assert all(subject.startswith("b:p0<->c:p1: ") for _, _, subject in firing), firing
    assert judge_bundle(bundle).verdict is Verdict.WARN


def test_a_switched_nodes_narrow_pcie_link_fails_once_not_once_per_partner(tmp_path: Path) -> None:
    bundle = saved_bundle(tmp_path / "switch", "switch4", _on("c", _pcie_x2))
    # Node c meets three partners through the switch; its function is one finding.
    assert _firing(bundle) == [("PCIE_LINK_DEGRADED", "fail", "c:enP2p1s0f1np1")]
    assert judge_bundle(bundle).verdict is Verdict.FAIL


def test_a_switched_paths_fec_is_not_compared_across_the_switch(tmp_path: Path) -> None:
    bundle = saved_bundle(tmp_path / "switch", "switch4", _on("d", _fec_none))
    # Through a switch each node's port negotiates with the switch: the two ends of a path are not one link.
    assert not any(rule == "FEC_NOT_RS" for rule, _, _ in _firing(bundle))


def test_a_stale_gid_pin_on_a_ring_node_fails_with_the_pairs_fix(tmp_path: Path, cli: InProcessCli) -> None:
    def stale(model: Node) -> Node:
        return replace(model, nccl_conf="NCCL_IB_GID_INDEX=7\n")

    bundle = saved_bundle(tmp_path / "ring", "ring3", _on("c", stale))
    firing = _firing(bundle)
    assert {rule for rule, _, _ in firing} >= {"GID_INDEX_STALE"}
    assert all(subject.startswith("c:") or subject.startswith("node c") or ": pair" in subject
               for rule, _, subject in firing if rule == "GID_INDEX_STALE"), firing
    run = cli("diagnose", str(bundle), "-f", "json")
    assert run.returncode == 2, run.stderr
    found = [f for f in json.loads(run.stdout)["findings"] if (f["id"], f["status"]) == ("GID_INDEX_STALE", "fail")]
    assert found and all("NCCL_IB_GID_INDEX=7" in f["message"] for f in found)


@pytest.mark.parametrize("scenario", ["ring3", "switch4"])
def test_a_node_not_inspected_has_no_trap_judged_and_its_partners_are(scenario: str) -> None:
    models = cluster_models(CLUSTER_SCENARIOS[scenario]())
    captures = [c for n, m in models.items() if n != "c" for c in node_captures(n, m, SPECS + CLUSTER_SPECS)]
    facts = cluster_facts(list(models), captures, {"c": "ssh: connection refused"})
    findings = [f for f in diagnose(facts, ALL_RULES).findings if f.rule_id in CABLE_TRAPS]
    # Node c's cables are not judged (its facts are unknown, and the cluster is inconclusive for it already); every
    # other node still meets every trap once.
    about_c = [f for f in findings if f.subject.startswith(("c:", "node c")) or "c:p" in f.subject or ">c" in f.subject]
    assert about_c == []
    assert {f.subject for f in findings if f.rule_id == "GID_INDEX_EMPTY_PIN"} == {"node a", "node b", "node d"} - (
        {"node d"} if scenario == "ring3" else set())
    assert all(f.status is Status.PASS for f in findings)


def test_fix_plans_a_ring_nodes_fec_on_the_cable_it_was_judged_on(tmp_path: Path, cli: InProcessCli) -> None:
    bundle = saved_bundle(tmp_path / "ring", "ring3", _on("b", _fec_none))
    run = cli("fix", str(bundle), "-f", "json")
    assert run.returncode == 1, run.stderr  # the bundle's verdict: a warning
    steps = json.loads(run.stdout)["steps"]
    # The pair's FEC repair, on node b's two netdevs of cage p0 (its cable to c), each step named by that cable.
    assert sorted((s["node"], tuple(s["runtime"])) for s in steps) == [
        ("b", ("sudo ethtool --set-fec enP2p1s0f0np0 encoding rs",)),
        ("b", ("sudo ethtool --set-fec enp1s0f0np0 encoding rs",))]
    assert all(str(s["finding"]).startswith("FEC_NOT_RS:b:p0<->c:p1: ") for s in steps)
    assert "not planned" not in cli("fix", str(bundle)).stdout  # nothing of it left to the user


def test_fix_plans_a_stale_gid_pin_on_that_node_alone(tmp_path: Path, cli: InProcessCli) -> None:
    bundle = saved_bundle(tmp_path / "ring", "ring3", _on("c", lambda m: replace(m, nccl_conf="NCCL_IB_GID_INDEX=7\n")))
    run = cli("fix", str(bundle), "-f", "json")
    assert run.returncode == 2, run.stderr
    plan = json.loads(run.stdout)
    # The pair's repair: the stale pin removed from node c's /etc/nccl.conf, once for its four HCAs; a and b untouched.
    assert [(s["node"], s["persistent"]["path"]) for s in plan["steps"]] == [("c", "/etc/nccl.conf")]
    assert plan["steps"][0]["finding"].startswith("GID_INDEX_STALE:c:")


@pytest.mark.parametrize("fixture", ["twins-same-subnet", "real-dec2025-same-subnet"])
def test_twins_on_one_subnet_are_one_finding_the_pairs_rule(fixture: str) -> None:
    # A pair's bundle read as the cluster of its one cable: the topology flags the cable whose twins share a subnet,
    # and the pair's TWINS_SAME_SUBNET judges it on the cable, at the pair's severity; CABLING_FAULT does not judge
    # that flag again.
    bundle = load_trusted(FIXTURE_DIR / fixture)
    facts = cluster_facts(list(bundle.nodes), bundle.captures, {})
    assert any(flag.kind == "twins_share_subnet" for flag in facts.topology.flags)
    firing = {(f.rule_id, f.status) for f in diagnose(facts, ALL_RULES).findings
              if f.status in (Status.WARN, Status.FAIL)}
    assert firing == {("TWINS_SAME_SUBNET", Status.WARN)}


def test_a_twin_down_fails_a_cluster_as_it_fails_a_pair() -> None:
    # One trap, one severity: the pair's LINK_DOWN on the cable, where CABLING_FAULT warned before.
    bundle = load_trusted(FIXTURE_DIR / "link-down")
    facts = cluster_facts(list(bundle.nodes), bundle.captures, {})
    assert any(flag.kind == "link_down" for flag in facts.topology.flags)
    diagnosis = diagnose(facts, ALL_RULES)
    firing = {(f.rule_id, f.status) for f in diagnosis.findings if f.status in (Status.WARN, Status.FAIL)}
    assert ("LINK_DOWN", Status.FAIL) in firing and not any(rule == "CABLING_FAULT" for rule, _ in firing)
    assert diagnosis.verdict is Verdict.FAIL


def _no_carrier(*netdevs: str):  # type: ignore[no-untyped-def]
    def change(model: Node) -> Node:
        return replace(model, functions=tuple(replace(f, carrier=False) if f.netdev in netdevs else f
                                              for f in model.functions))
    return change


def _view_firing(path: Path) -> set[tuple[str, str]]:
    check = judge_bundle(path)
    assert isinstance(check, ClusterCheck)
    return {(f.rule_id, f.status.value) for f in check.view.diagnosis.findings
            if f.status in (Status.WARN, Status.FAIL)}


def test_a_ring_twin_without_carrier_fails_as_on_a_pair(tmp_path: Path) -> None:
    # b's p0 cage (its cable to c): its domain-0002 twin lost carrier, its twin still has it. LINK_DOWN on that cable,
    # at the pair's severity; no CABLING_FAULT beside it for the same twin.
    bundle = saved_bundle(tmp_path / "ring", "ring3", _on("b", _no_carrier("enP2p1s0f0np0")))
    assert _view_firing(bundle) == {("LINK_DOWN", "fail")}
    assert judge_bundle(bundle).verdict is Verdict.FAIL


def test_a_cable_pulled_from_a_ring_stays_a_cabling_fault(tmp_path: Path) -> None:
    # Both twins of b's p0 cage without carrier: b's other cage is cabled, so the pair's LINK_DOWN (a twin of a cabled
    # cage) does not judge them, and the topology's fault is still a finding: never a pass with a flag alone.
    bundle = saved_bundle(tmp_path / "ring", "ring3", _on("b", _no_carrier("enp1s0f0np0", "enP2p1s0f0np0")))
    firing = _view_firing(bundle)
    assert ("CABLING_FAULT", "warn") in firing and not any(rule == "LINK_DOWN" for rule, _ in firing)
    assert judge_bundle(bundle).verdict is not Verdict.PASS


def test_switched_nodes_on_different_cages_are_no_cable_joining_different_cages(tmp_path: Path) -> None:
    # b is on the switch by its p0 cage, the others by p1: through a switch no cable joins two nodes' cages, so the
    # pair's note on a cable between different cages is not said of any switched test.
    bundle = saved_bundle(tmp_path / "switch", "switch3-hca-copied")
    check = judge_bundle(bundle)
    assert isinstance(check, ClusterCheck)
    assert not [f for f in check.view.diagnosis.findings if f.rule_id == "LINK_DOWN" and f.subject.endswith(": pair")]
    assert not any("different cages" in note for note in check.view.diagnosis.notes)


def test_a_trap_whose_cable_is_not_found_is_listed_as_not_planned_never_dropped(tmp_path: Path) -> None:
    bundle = saved_bundle(tmp_path / "ring", "ring3", _on("b", _fec_none))
    check = judge_bundle(bundle)
    assert isinstance(check, ClusterCheck) and check.bundle is not None
    fec = next(f for f in check.view.diagnosis.findings if f.rule_id == "FEC_NOT_RS" and f.status is Status.WARN)
    # The same finding named by a cable this cluster does not have (a record edited by hand, say).
    stray = msgspec.structs.replace(fec, subject="x:p0<->y:p1: enp1s0f0np0<->enp1s0f1np1")
    view = msgspec.structs.replace(check.view, diagnosis=msgspec.structs.replace(
        check.view.diagnosis, findings=(*check.view.diagnosis.findings, stray)))
    plan = cluster_plan(msgspec.structs.replace(check, view=view), check.bundle)
    assert [n.finding for n in plan.not_planned] == [stray.finding_id]
    assert len(plan.steps) == 2  # b's own two FEC steps are still planned


GENERIC_DAC = Cable(identifier_code=0x11, vendor_name="FS", vendor_oui="64:9d:99", vendor_pn="QSFP-100G-CU1M",
                    vendor_sn="F2240812345", vendor_rev="A", length_m=1.0, date_code="240815")


def _generic_cables(model: Node) -> Node:
    return replace(model, cable=GENERIC_DAC, more_cables=dict.fromkeys(model.more_cables, GENERIC_DAC))


def test_an_unapproved_cable_is_named_on_a_ring_and_left_to_the_switch_through_one(tmp_path: Path) -> None:
    # NVIDIA's list is of the cables between two Sparks: a ring's node with a generic DAC is named as a pair's is;
    # a node's cable to a switch is the switch's to approve.
    ring = _firing(saved_bundle(tmp_path / "ring", "ring3", _on("c", _generic_cables)))
    assert ("CABLE_NOT_APPROVED", "warn", "node c") in ring
    switch = _firing(saved_bundle(tmp_path / "switch", "switch4", _on("c", _generic_cables)))
    assert not any(rule == "CABLE_NOT_APPROVED" for rule, _, _ in switch)


def test_the_textfile_names_a_traps_node_or_cable(tmp_path: Path, cli: InProcessCli) -> None:
    def both(name: str, model: Node) -> Node:
        model = _fec_none(model) if name == "b" else model
        return replace(model, nccl_conf="NCCL_IB_GID_INDEX=7\n") if name == "c" else model

    run = cli("report", str(saved_bundle(tmp_path / "ring", "ring3", both)), "-f", "prometheus")
    assert run.returncode == 2, run.stderr
    fired = {line.rsplit(" ", 1)[0] for line in run.stdout.splitlines()
             if line.startswith("linkcheck_finding{") and not line.endswith(" 0")}
    assert fired == {'linkcheck_finding{rule="FEC_NOT_RS",severity="warning",cable="b:p0<->c:p1"}',
                     'linkcheck_finding{rule="GID_INDEX_STALE",severity="error",node="c"}'}


def test_a_late_plug_in_still_warns_where_one_of_the_nodes_cables_was_not_measured() -> None:
    models = cluster_models(CLUSTER_SCENARIOS["ring3"]())
    b = models["b"]
    models["b"] = replace(b, dmesg=(*boot_dmesg(b.functions, None), *hotplug_dmesg(b.functions, "p1", 3600.41)),
                          uptime_s=7212.55)
    captures = [c for n, m in models.items() for c in node_captures(n, m, SPECS + CLUSTER_SPECS)]
    facts = cluster_facts(list(models), captures, {})
    # b's cable to a was measured (its throughput rules judge its speed: the plug-in is a note there); its cable to c
    # was not, so there the plug-in still warns, and the node's one finding says so.
    measured = replace_struct(facts, tests=(TrafficOutcome("a:p0<->b:p1", "a", "b", "pass", 98.0),))
    found = [f for f in diagnose(measured, ALL_RULES).findings
             if f.rule_id == "LINK_REPLUGGED_SINCE_BOOT" and f.subject == "node b"]
    assert [f.status for f in found] == [Status.WARN]
    both = replace_struct(facts, tests=(TrafficOutcome("a:p0<->b:p1", "a", "b", "pass", 98.0),
                                        TrafficOutcome("b:p0<->c:p1", "b", "c", "pass", 98.0)))
    noted = [f for f in diagnose(both, ALL_RULES).findings
             if f.rule_id == "LINK_REPLUGGED_SINCE_BOOT" and f.subject == "node b"]
    assert [f.status for f in noted] == [Status.PASS] and "plug-in" in noted[0].message

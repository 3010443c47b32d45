"""`fix` over a cluster's bundle: each cable planned as a pair's (the pair is the one-cable case), each node's own
setting on that node, the cluster's network repairs named with their fix but not planned, and `--apply` refused in
one line (exit 4) until the transaction serves a cluster."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING

from linkcheck.bundle.format import Bundle
from linkcheck.collect.specs import CLUSTER_SPECS, SPECS
from linkcheck.repair.plan import cluster_plan
from tests.cluster import cluster_checks as cc
from tests.cluster.cluster_checks import saved_bundle
from tests.emulators.captures import node_captures
from tests.fixture_bundles import FIXTURE_DIR
from tests.lab.cluster import CLUSTER_SCENARIOS, cluster_models

if TYPE_CHECKING:
    from tests.conftest import InProcessCli
    from tests.emulators.node import Node

RING = FIXTURE_DIR / "cluster-ring3-hotplug"
REBOOT = "sudo systemctl reboot --no-block"


def _plan(cli: InProcessCli, bundle: Path) -> tuple[int, dict[str, list[dict[str, object]]]]:
    run = cli("fix", str(bundle), "-f", "json")
    assert not run.stderr, run.stderr
    return run.returncode, json.loads(run.stdout)


def test_the_failing_cable_of_a_ring_is_planned_as_a_pairs_hotplug(cli: InProcessCli) -> None:
    before = sorted(p.name for p in RING.iterdir())
    code, plan = _plan(cli, RING)
    assert code == 2  # the bundle's verdict, as `diagnose` gives it
    # The pair's hot-plug repair for the two nodes of that cable, each once (its two paths ask for one reboot);
    # node c, whose cables pass, is left alone.
    assert [(s["node"], s["runtime"]) for s in plan["steps"]] == [("a", [REBOOT]), ("b", [REBOOT])]
    assert all(str(s["finding"]).startswith("LINK_HOTPLUG_DEGRADED:") and str(s["finding"]).endswith(
        "(cable a:p0<->b:p1)") for s in plan["steps"])
    assert sorted(p.name for p in RING.iterdir()) == before  # a bundle given is never changed
    text = cli("fix", str(RING))
    assert text.returncode == 2 and "node a: LINK_HOTPLUG_DEGRADED" in text.stdout
    assert "only with --allow-reboot" in text.stdout


def test_a_healthy_ring_has_nothing_to_repair(cli: InProcessCli) -> None:
    run = cli("fix", str(FIXTURE_DIR / "cluster-ring3-healthy"))
    assert run.returncode == 0 and run.stdout.strip() == "Nothing to repair.", run.stdout


def test_a_node_slow_with_every_partner_is_rebooted_alone(cli: InProcessCli) -> None:
    code, plan = _plan(cli, FIXTURE_DIR / "cluster-switch4-slow-node")
    assert code == 2
    assert [(s["node"], s["runtime"], s["finding"]) for s in plan["steps"]] == [
        ("c", [REBOOT], "NODE_SLOW_WITH_EVERY_PARTNER:node c")]


def test_a_copied_nccl_ib_hca_is_set_to_the_nodes_own(cli: InProcessCli, tmp_path: Path) -> None:
    """b is on the switch by its p0 cage, its /etc/nccl.conf names the head's p1 HCAs: the step on b writes b's own."""
    def conf(name: str, model: Node) -> Node:
        if name != "b":
            return model
        return dataclasses.replace(model, nccl_env={}, nccl_conf="NCCL_IB_HCA=rocep1s0f1,roceP2p1s0f1\n")

    folder = saved_bundle(tmp_path / "bundle", "switch3-hca-copied", conf)
    code, plan = _plan(cli, folder)
    assert code == 2
    steps = [s for s in plan["steps"] if s["finding"] == "NCCL_IB_HCA_COPIED:node b"]
    assert [s["node"] for s in steps] == ["b"]
    persistent = steps[0]["persistent"]
    assert isinstance(persistent, dict) and persistent["path"] == "/etc/nccl.conf"
    assert "+NCCL_IB_HCA==rocep1s0f0,roceP2p1s0f0" in str(persistent["diff"])


def test_transit_repairs_are_named_with_their_fix_not_planned(cli: InProcessCli, tmp_path: Path) -> None:
    folder = saved_bundle(tmp_path / "bundle", "ring4-fabric-sockets")
    run = cli("fix", str(folder), "-o", str(tmp_path / "plan.json"))
    assert "not planned: TRANSIT_FORWARDING_OFF:node b" in run.stdout
    saved = json.loads((tmp_path / "plan.json").read_text(encoding="utf-8"))["plan"]
    skipped = {n["finding"]: n["reason"] for n in saved["not_planned"]}
    assert "sudo sysctl -w net.ipv4.ip_forward=1" in skipped["TRANSIT_FORWARDING_OFF:node b"]
    assert "sudo ip route add" in skipped["NO_ROUTE_TO_NON_NEIGHBOUR:node a"]
    assert not saved["steps"]


def test_apply_refuses_a_cluster_bundle_in_one_line(cli: InProcessCli) -> None:
    run = cli("fix", "--apply", str(RING))
    assert run.returncode == 4 and not run.stdout
    assert run.stderr.count("\n") == 1 and "fix --apply serves a pair; this bundle holds 3 nodes (ring3)" in \
        run.stderr, run.stderr


def test_the_plan_is_saved_where_asked(cli: InProcessCli, tmp_path: Path) -> None:
    run = cli("fix", str(RING), "-o", str(tmp_path / "plan.json"))
    assert run.returncode == 2
    saved = json.loads((tmp_path / "plan.json").read_text(encoding="utf-8"))["plan"]
    assert [s["node"] for s in saved["steps"]] == ["a", "b"]


def test_a_live_cluster_is_refused_in_one_line_before_any_node_is_contacted(cli: InProcessCli, tmp_path: Path) -> None:
    nodes = [f"--node={n}=root@198.18.255.{i}" for i, n in enumerate("abc", 1)]
    for args in (("fix",), ("fix", "--apply"), ("fix", "--restore")):
        run = cli(*args, *nodes, cwd=tmp_path)
        assert run.returncode == 4 and not run.stdout, run.stderr
        assert run.stderr.count("\n") == 1 and "serves a pair; over a cluster" in run.stderr, run.stderr
    assert not list(tmp_path.iterdir())  # no bundle folder


def test_a_cable_between_b_and_c_is_planned_on_b_and_c() -> None:
    """The planner's roles a and b are the cable's two nodes, named back: the hot-plug state on cable b<->c of a
    ring reboots b and c, never a; a measured SINGLE_PCIE_PATH is listed with its cable."""
    ring = CLUSTER_SCENARIOS["ring3"]()
    models = cluster_models(ring)
    bundle = Bundle(captures=[c for n, m in models.items() for c in node_captures(n, m, SPECS + CLUSTER_SPECS)])

    def on_bc(rates: tuple[float, float]) -> cc.Rates:
        return lambda test: rates if set(test.nodes) == {"b", "c"} else cc.HEALTHY

    plan = cluster_plan(cc.checked(ring, on_bc(cc.HOTPLUG)), bundle)
    assert [(s.node, s.runtime) for s in plan.steps] == [("b", (REBOOT,)), ("c", (REBOOT,))]
    assert all(s.finding.endswith("(cable b:p0<->c:p1)") for s in plan.steps)
    shared = cluster_plan(cc.checked(ring, on_bc(cc.ONE_PCIE)), bundle)
    assert not shared.steps and shared.not_planned
    assert all(n.finding.startswith("SINGLE_PCIE_PATH:") and n.finding.endswith("(cable b:p0<->c:p1)")
               for n in shared.not_planned)

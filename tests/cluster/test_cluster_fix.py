"""`fix` over a cluster's bundle: each cable planned as a pair's (the pair is the one-cable case), each node's own
setting on that node, the cluster's own repairs (forwarding, routes to non-neighbours, DOCKER-USER accepts) as steps
the transaction applies, and `--apply` of a bundle refused in one line (exit 4) where the nodes named are of another
layout."""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec
import pytest

from linkcheck.app.offline import cluster_bundle
from linkcheck.bundle.format import Bundle
from linkcheck.bundle.verify import load_trusted
from linkcheck.cli.fix import _fix_nodes, _resolved, _same_nodes
from linkcheck.collect.specs import CLUSTER_SPECS, SPECS
from linkcheck.diagnose.playbook import load_playbooks
from linkcheck.errors import UsageError
from linkcheck.facts.forwarding_facts import accepts_forwarded
from linkcheck.parsers.netfilter import IptRule
from linkcheck.repair.cables import cluster_plan
from linkcheck.repair.runtime import ACCEPT_INSERT, parse_op
from tests.cluster import cluster_checks as cc
from tests.cluster.cluster_checks import saved_bundle
from tests.emulators.captures import node_captures
from tests.fixture_bundles import FIXTURE_DIR
from tests.lab.cluster import CLUSTER_SCENARIOS, cluster_models, ring3, ring4

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


def test_transit_repairs_are_planned_as_steps_the_transaction_applies(cli: InProcessCli, tmp_path: Path) -> None:
    """The ring of four with NCCL's sockets on the ring's addresses: every node lies between two others, does not
    forward and has no route to the node opposite; each gets forwarding on (now and in linkcheck's drop-in) and
    the route through the neighbour that shares a cable with both, as commands the transaction's grammar reads."""
    folder = saved_bundle(tmp_path / "bundle", "ring4-fabric-sockets")
    run = cli("fix", str(folder), "-o", str(tmp_path / "plan.json"))
    assert "node b: TRANSIT_FORWARDING_OFF:node b" in run.stdout
    saved = json.loads((tmp_path / "plan.json").read_text(encoding="utf-8"))["plan"]
    steps = {(s["node"], s["finding"].split(":")[0]): s for s in saved["steps"]}
    assert set(steps) == {(n, r) for n in "abcd" for r in ("TRANSIT_FORWARDING_OFF", "NO_ROUTE_TO_NON_NEIGHBOUR")}
    forward = steps[("b", "TRANSIT_FORWARDING_OFF")]
    assert forward["runtime"] == ["sudo sysctl -w net.ipv4.ip_forward=1"]
    assert forward["persistent"]["path"] == "/etc/sysctl.d/60-linkcheck-forward.conf"
    assert "+net.ipv4.ip_forward=1" in forward["persistent"]["diff"]
    # a reaches c's subnets through b, on a's cable to b (tests/lab/cluster.py ring4: a:p0 to b:p1, 192.168.10.x).
    route = steps[("a", "NO_ROUTE_TO_NON_NEIGHBOUR")]
    assert all(c.startswith("sudo ip route replace ") and " via 192.168.1" in c for c in route["runtime"])
    kinds = {parse_op(c).kind for s in saved["steps"] for c in s["runtime"]}  # OpError for one it would refuse
    assert kinds == {"forward", "route_replace"}
    assert not [n for n in saved["not_planned"] if n["finding"].startswith(("TRANSIT_", "NO_ROUTE_"))]
    # The route is persisted in the netplan definition of the interface it leaves by (netplan try commits it).
    assert route["persistent"]["manager"] == "netplan" and "+          via: 192.168.10.2" in route["persistent"]["diff"]


def test_a_docker_forward_drop_is_answered_by_accepts_between_the_nodes_own_ports(tmp_path: Path) -> None:
    """Docker's FORWARD DROP on a transit node with a DOCKER-USER chain: one exact accept per ordered pair of its
    own addressed CX-7 interfaces (nothing else is let through), each removed by its exact rule on revert; the
    accepts read back as the rule reads them: the finding then passes."""
    chains = {"FORWARD": "-P FORWARD DROP\n-A FORWARD -j DOCKER-USER\n",
              "DOCKER-USER": "-N DOCKER-USER\n-A DOCKER-USER -j RETURN\n"}

    def drop(name: str, model: Node) -> Node:
        return dataclasses.replace(model, iptables=chains, ip_forward=True) if name == "b" else model

    folder = saved_bundle(tmp_path / "bundle", "ring4-fabric-sockets", drop)
    check = cluster_bundle(folder, load_playbooks(kind="all"))
    plan = cluster_plan(check, load_trusted(folder))
    accepts = [s for s in plan.steps if s.finding == "DOCKER_FORWARD_DROP:node b"]
    assert [s.node for s in accepts] == ["b"]
    ops = [parse_op(c) for c in accepts[0].runtime]
    ports = {f.netdev for f in check.facts.nodes["b"].functions if f.ipv4}
    assert {o.value for o in ops} == ports and len(ops) == 4 * 3 and all(o.value != o.via for o in ops)
    assert all(o.kind == ACCEPT_INSERT for o in ops)
    assert any("DOCKER-USER accepts are runtime only" in n for n in plan.notes)
    # The chain as it reads once they are in: the rule that judges the finding takes it as accepting.
    fwd = check.facts.forwarding["b"]
    inserted = tuple(IptRule("DOCKER-USER", tuple(op.argv()[4:])) for op in ops)
    assert not accepts_forwarded(fwd, sorted(ports))
    # `iptables -I` puts them first in DOCKER-USER, before its RETURN.
    assert accepts_forwarded(msgspec.structs.replace(fwd, forward_rules=(*inserted, *fwd.forward_rules)), sorted(ports))


def test_apply_of_a_cluster_bundle_to_a_pair_is_refused_in_one_line(cli: InProcessCli, tmp_path: Path) -> None:
    nodes = ["--node=a=root@198.18.255.1", "--node=b=root@198.18.255.2"]
    run = cli("fix", "--apply", str(RING), *nodes, cwd=tmp_path)
    assert run.returncode == 4 and not run.stdout
    assert run.stderr.count("\n") == 1 and "this bundle holds the check of nodes a, b, c and the nodes named are " \
        "a, b: name the nodes its check named" in run.stderr, run.stderr
    assert not list(tmp_path.iterdir())  # no node contacted, no bundle folder


def test_apply_to_nodes_named_otherwise_than_the_bundles_check_is_refused_in_one_line(
        cli: InProcessCli, tmp_path: Path) -> None:
    # The pair's own bundle (nodes a and b), its two nodes named by a hostfile (named by their addresses there).
    hosts = tmp_path / "hosts"
    hosts.write_text("root@198.18.255.1\nroot@198.18.255.2\n", encoding="utf-8")
    run = cli("fix", "--apply", str(FIXTURE_DIR / "hotplug-degraded"), "--hostfile", str(hosts), cwd=tmp_path)
    assert run.returncode == 4 and not run.stdout and run.stderr.count("\n") == 1, run.stderr
    assert "the check of nodes a, b and the nodes named are 198.18.255.1, 198.18.255.2" in run.stderr, run.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hosts"]  # no node contacted


def test_a_bundles_nodes_are_the_nodes_named_whatever_named_them(tmp_path: Path) -> None:
    """The cluster of one cable's bundle (a hostfile named its nodes a and b) goes to the pair named a and b by
    linkcheck.yaml's `nodes:`: the same two nodes, however they were named."""
    config = tmp_path / "linkcheck.yaml"
    config.write_text("nodes: {a: {target: root@198.18.255.1}, b: {target: root@198.18.255.2}}\n", encoding="utf-8")
    target = _fix_nodes(_resolved(config, None, (None, None, None)), accept=False)
    _same_nodes(FIXTURE_DIR / "cluster-pair-hotplug", target)
    _same_nodes(FIXTURE_DIR / "hotplug-degraded", target)
    with pytest.raises(UsageError, match="the check of nodes a, b, c and the nodes named are a, b"):
        _same_nodes(RING, target)


def test_the_plan_is_saved_where_asked(cli: InProcessCli, tmp_path: Path) -> None:
    run = cli("fix", str(RING), "-o", str(tmp_path / "plan.json"))
    assert run.returncode == 2
    saved = json.loads((tmp_path / "plan.json").read_text(encoding="utf-8"))["plan"]
    assert [s["node"] for s in saved["steps"]] == ["a", "b"]


def test_live_nodes_are_a_cluster_from_the_sources_check_reads(tmp_path: Path) -> None:
    """Three --node, or linkcheck.yaml's `cluster:` nodes: `fix` reaches a cluster (its hosts in their order, the
    file's SSH options); two --node a=/b= the pair, the hosts a and b of its one cable."""
    three = _resolved(None, [f"{n}=root@198.18.255.{i}" for i, n in enumerate("abc", 1)], (None, None, None))
    target = _fix_nodes(three, accept=False)
    assert [h.name for h in target.hosts] == ["a", "b", "c"]
    assert sorted(target.config.nodes) == ["a", "b", "c"]
    config = tmp_path / "linkcheck.yaml"
    config.write_text('ssh: {connect_timeout_s: 7}\ncluster:\n  nodes:\n    a: "root@198.18.255.1"\n'
                      '    b: "root@198.18.255.2"\n    c: "root@198.18.255.3"\n    d: "root@198.18.255.4"\n',
                      encoding="utf-8")
    configured = _fix_nodes(_resolved(config, None, (None, None, None)), accept=True)
    assert len(configured.hosts) == 4
    assert configured.config.ssh.connect_timeout_s == 7 and configured.config.ssh.accept_new_host_keys
    pair = _fix_nodes(_resolved(None, ["a=root@198.18.255.1", "b=root@198.18.255.2"], (None, None, None)),
                      accept=False)
    assert [(h.name, str(h.target)) for h in pair.hosts] == [("a", "root@198.18.255.1"), ("b", "root@198.18.255.2")]
    assert sorted(pair.config.nodes) == ["a", "b"]


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


def test_twins_moved_out_of_a_shared_subnet_go_to_one_no_node_of_the_cluster_uses(tmp_path: Path) -> None:
    """A ring of four whose a-b twins share 192.168.10.0/24 while c and d use 192.168.11.0/24 on their own cable: the
    next subnet is free on a and b but not in the cluster (the ring's routes reach c-d's subnet through a neighbour,
    so a connected 192.168.11.0/24 on a and b would shadow that route), so the twins move to one no node uses."""
    ring = ring4()
    for node, netdev in (("a", "enP2p1s0f0np0"), ("b", "enP2p1s0f1np1")):  # a's p0 and b's p1: the a-b cable
        ring.addrs[node][netdev] = ring.addrs[node][netdev].replace("192.168.11.", "192.168.10.")
    for node, netdev in (("c", "enp1s0f0np0"), ("d", "enp1s0f1np1")):  # c's p0 and d's p1: the c-d cable
        ring.addrs[node][netdev] = ring.addrs[node][netdev].replace("192.168.14.", "192.168.11.")
    check = cluster_bundle(saved_bundle(tmp_path / "ring", ring), load_playbooks(kind="all"))
    assert any(f.rule_id == "TWINS_SAME_SUBNET" for f in check.view.diagnosis.findings if f.status.value != "pass")
    assert check.bundle is not None
    plan = cluster_plan(check, check.bundle)
    used = {ipaddress.ip_interface(c).network for n in check.facts.nodes.values() for f in n.functions
            for c in f.ipv4}
    moved = [shlex.split(s.runtime[1])[4] for s in plan.steps if s.finding.startswith("TWINS_SAME_SUBNET")]
    assert sorted(s.node for s in plan.steps if s.finding.startswith("TWINS_SAME_SUBNET")) == ["a", "b"]
    new = {ipaddress.ip_interface(m).network for m in moved}
    assert len(new) == 1 and not new & used, (moved, sorted(map(str, used)))


def test_a_files_drift_on_a_ring_nodes_second_cable_keeps_its_working_address(tmp_path: Path) -> None:
    """b's file gives its p0 twin (on the b-c cable) another address than the working one: the repair is planned on
    the cable that twin is on, so it faces its peer there and the file is made to say the live address. Planned on
    b's first cable (a-b), where that twin is in no path, it was taken for one facing nothing and given the file's
    address live, under the b-c path."""
    def drift(name: str, model: Node) -> Node:
        if name != "b":
            return model
        files = tuple(dataclasses.replace(f, text=f.text.replace("192.168.12.2/24", "192.168.12.9/24"))
                      for f in model.netplan_files)
        return dataclasses.replace(model, netplan_files=files)

    check = cluster_bundle(saved_bundle(tmp_path / "ring", "ring3", drift), load_playbooks(kind="all"))
    assert check.bundle is not None
    plan = cluster_plan(check, check.bundle)
    (step,) = [s for s in plan.steps if s.finding.startswith("NETPLAN_NOT_APPLIED:b:enp1s0f0np0")]
    assert step.node == "b" and step.runtime == ()  # nothing changed live: the address works
    assert step.persistent is not None
    assert "-        - 192.168.12.9/24\n+        - 192.168.12.2/24" in step.persistent.diff


def _at_1500(node: str, netdev: str) -> Callable[[str, Node], Node]:
    """The node's port at MTU 1500, live and in its file (no `mtu:` under it): nothing but the MTU differs."""
    def change(name: str, model: Node) -> Node:
        if name != node:
            return model
        files = []
        for f in model.netplan_files:
            head, sep, rest = f.text.partition(f"    {netdev}:\n")
            files.append(dataclasses.replace(f, text=head + sep + rest.replace("      mtu: 9000\n", "", 1)))
        functions = tuple(dataclasses.replace(fn, mtu=1500) if fn.netdev == netdev else fn for fn in model.functions)
        return dataclasses.replace(model, netplan_files=tuple(files), functions=functions)
    return change


def test_a_hop_below_the_clusters_mtu_is_raised_to_it_on_the_cable_it_is_on(tmp_path: Path) -> None:
    """The b-c cable's second twin at 1500 on both ends while every other hop runs 9000: the cluster's MTU_MISMATCH
    fires on both ports, and each is raised to 9000 live and in its file (no two ends differ, so a pair's rule would
    not see it)."""
    def both(name: str, model: Node) -> Node:
        return _at_1500("c", "enP2p1s0f1np1")(name, _at_1500("b", "enP2p1s0f0np0")(name, model))

    check = cluster_bundle(saved_bundle(tmp_path / "ring", "ring3", both), load_playbooks(kind="all"))
    assert check.bundle is not None
    fired = {f.finding_id for f in check.view.diagnosis.findings if f.status.value == "fail"}
    assert fired == {"MTU_MISMATCH:b:enP2p1s0f0np0", "MTU_MISMATCH:c:enP2p1s0f1np1"}
    plan = cluster_plan(check, check.bundle)
    assert [(s.node, s.runtime) for s in plan.steps] == [
        ("b", ("sudo ip link set dev enP2p1s0f0np0 mtu 9000",)),
        ("c", ("sudo ip link set dev enP2p1s0f1np1 mtu 9000",))]
    assert all(s.persistent is not None and "+      mtu: 9000" in s.persistent.diff for s in plan.steps)
    assert plan.not_planned == ()


def test_twins_sharing_a_subnet_on_a_ring_nodes_second_cable_are_moved_on_that_cable(tmp_path: Path) -> None:
    """The c-a cable's twins share 192.168.14.0/24 on both ends (a's p1, c's p0): for a the second of its cables, for c
    the second too. Planned on each node's first cable, the twin was moved into that other cable's subnet (a's into
    a-b's 192.168.11.0/24); planned on the cable of the shared subnet, both move into one subnet no node uses."""
    ring = ring3()
    for node, netdev in (("a", "enP2p1s0f1np1"), ("c", "enP2p1s0f0np0")):  # the c-a cable's second twins
        ring.addrs[node][netdev] = ring.addrs[node][netdev].replace("192.168.15.", "192.168.14.1")
    check = cluster_bundle(saved_bundle(tmp_path / "ring", ring), load_playbooks(kind="all"))
    assert check.bundle is not None
    firing = {f.finding_id for f in check.view.diagnosis.findings if f.status.value == "warn"}
    assert firing == {"TWINS_SAME_SUBNET:node a", "TWINS_SAME_SUBNET:node c"}
    plan = cluster_plan(check, check.bundle)
    moves = {s.node: (shlex.split(s.runtime[0])[4], shlex.split(s.runtime[1])[4]) for s in plan.steps}
    assert set(moves) == {"a", "c"} and plan.not_planned == ()
    used = {ipaddress.ip_interface(c).network for n in check.facts.nodes.values() for f in n.functions
            for c in f.ipv4}
    new = {ipaddress.ip_interface(to).network for _, to in moves.values()}
    assert len(new) == 1 and not new & used, moves
    assert {old for old, _ in moves.values()} == {"192.168.14.11/24", "192.168.14.13/24"}


def test_an_nccl_ib_hca_that_misses_a_cabled_cage_is_set_to_every_cabled_hca(tmp_path: Path) -> None:
    def pair_setting(name: str, model: Node) -> Node:
        if name != "b":
            return model
        return dataclasses.replace(model, nccl_env={}, nccl_conf="NCCL_IB_HCA=rocep1s0f1,roceP2p1s0f1\n")

    check = cluster_bundle(saved_bundle(tmp_path / "ring", "ring3", pair_setting), load_playbooks(kind="all"))
    assert check.bundle is not None
    (step,) = cluster_plan(check, check.bundle).steps
    assert step.node == "b" and step.finding == "NCCL_IB_HCA_MISSES_CAGE:node b"
    assert step.persistent is not None and step.persistent.path == "/etc/nccl.conf"
    assert "+NCCL_IB_HCA==rocep1s0f0,rocep1s0f1,roceP2p1s0f0,roceP2p1s0f1" in step.persistent.diff

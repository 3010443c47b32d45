"""Clusters in the lab: three and four nodes cabled as a ring of veth pairs or on a Linux bridge (the switch), each
inspected over real SSH by linkcheck's collector, all nodes at once; the topology inferred from what they answer
names the layout, the cables and the flags the scenario states (tests/lab/cluster.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from linkcheck.cluster.topology import infer_topology
from linkcheck.collect.collector import collect
from linkcheck.facts.build import build_node_facts
from tests.lab.cluster import CLUSTER_SCENARIOS, RING4_C_FROM_A, docker_forward_drop, route_ring4

if TYPE_CHECKING:
    from tests.conftest import InProcessCli
    from tests.live.conftest import ClusterFactory, ClusterLab

pytestmark = pytest.mark.lab  # builds a lab of three or four nodes

SCENARIOS = ("ring3", "switch4", "ring3-same-port", "mixed")


@pytest.mark.parametrize("name", SCENARIOS)
def test_every_node_of_a_cluster_is_inspected_and_its_topology_named(cluster_factory: ClusterFactory, name: str,
                                                                    cli: InProcessCli) -> None:
    cluster = cluster_factory(name)
    expected = CLUSTER_SCENARIOS[name]().expected
    names = cluster.names
    with cluster.transports() as transports:
        result = collect(transports, timeout_s=90)
    assert result.errors == {}
    facts = {n: build_node_facts(n, [c for c in result.captures if c.node == n]) for n in names}
    # The answers came from the nodes' own sshd, namespaces and kernels: the hostnames and the lab's addresses.
    assert [facts[n].hostname for n in names] == [f"spark-{n}" for n in names]
    assert all(a.startswith("198.19.") for f in facts.values() for fn in f.functions for a in fn.ipv4)
    topo = infer_topology(facts)
    assert topo.layout == expected.layout
    assert sorted(c.key for c in topo.cables) == sorted(expected.cables)
    assert len(topo.segments) == expected.segments
    assert all(len(s.nodes) == len([n for n in names if n in s.nodes]) for s in topo.segments)
    assert sorted((f.kind, f.subject) for f in topo.flags) == sorted(expected.flags)
    assert all(p.neighbour_confirmed for c in topo.cables for p in c.paths)
    # The same through the command a user runs: nodes named by --node (ssh_config aliases), the lab's SSH files
    # named in a linkcheck.yaml.
    run = cli("topology", *cluster.args, "-f", "json", timeout=120)
    # A ring cabled p0 to p0 warns (RING_SAME_PORT), as the other flags do.
    assert run.returncode == (1 if expected.flags else 0), run.stderr
    data = json.loads(run.stdout)
    assert data["layout"] == expected.layout
    assert sorted(c["key"] for c in data["cables"]) == sorted(expected.cables)
    assert sorted((f["kind"], f["subject"]) for f in data["flags"]) == sorted(expected.flags)
    assert data["schedule"]["rounds"] and all(n["error"] is None for n in data["nodes"])
    firing = {(f["id"], f["subject"]) for f in data["findings"] if f["status"] in ("warn", "fail")}
    assert {i for i, _ in firing} <= {"RING_SAME_PORT", "CLUSTER_LAYOUT_UNSUPPORTED"}
    assert {s for i, s in firing if i == "RING_SAME_PORT"} == {f"cable {s}" for k, s in expected.flags
                                                               if k == "ring_same_port"}


def _fired(cli: InProcessCli, cluster: ClusterLab) -> list[dict[str, Any]]:
    run = cli("topology", *cluster.args, "-f", "json", timeout=120)
    assert run.returncode in (1, 2), run.stderr
    return [f for f in json.loads(run.stdout)["findings"] if f["status"] in ("warn", "fail")]


def _firing(cli: InProcessCli, cluster: ClusterLab) -> set[tuple[str, str]]:
    return {(f["id"], f["subject"]) for f in _fired(cli, cluster)}


def test_a_ring_of_four_needs_forwarding_and_routes_on_its_transit_nodes(cluster_factory: ClusterFactory,
                                                                          cli: InProcessCli) -> None:
    """Real namespace state: a fresh namespace does not forward and has routes only to its own subnets, so every
    node of the ring, whose NCCL sockets are on the ring's addresses, is a transit node that stops traffic between
    its neighbours; with forwarding on and a route through the node between, a ping crosses it and both rules
    pass."""
    cluster = cluster_factory("ring4-fabric-sockets")
    lab = cluster.lab
    assert _firing(cli, cluster) == {("CLUSTER_LAYOUT_UNSUPPORTED", "cluster"),
                                     *{("TRANSIT_FORWARDING_OFF", f"node {n}") for n in "abcd"},
                                     *{("NO_ROUTE_TO_NON_NEIGHBOUR", f"node {n}") for n in "abcd"}}
    # c's address on its cable to b, from a: no route, so it fails before any forwarding is asked of b.
    assert lab.exec("a", ["ping", "-c", "1", "-W", "1", RING4_C_FROM_A]).returncode != 0
    route_ring4(lab)
    ping = lab.exec("a", ["ping", "-c", "1", "-W", "2", RING4_C_FROM_A])
    assert ping.returncode == 0, ping.stdout + ping.stderr
    assert _firing(cli, cluster) == {("CLUSTER_LAYOUT_UNSUPPORTED", "cluster")}


def test_the_switch_is_one_l2_domain_and_the_ring_is_cabled_point_to_point(cluster_factory: ClusterFactory) -> None:
    """The lab's wiring itself: through the bridge every node reaches every other on the twin's subnet; on the
    ring, a cable reaches only the node at its other end."""
    switch = cluster_factory("switch4").lab
    for peer in ("198.19.100.2", "198.19.100.3", "198.19.100.4", "198.19.101.4"):
        ping = switch.exec("a", ["ping", "-c", "1", "-W", "2", peer])
        assert ping.returncode == 0, ping.stdout + ping.stderr
    ring = cluster_factory("ring3").lab
    # a:enp1s0f0np0 (192.168.10.1/24 -> 198.19.10.1) is cabled to b:enp1s0f1np1 (.2); c has no address there.
    assert ring.exec("a", ["ping", "-c", "1", "-W", "2", "198.19.10.2"]).returncode == 0
    assert ring.exec("a", ["ping", "-c", "1", "-W", "1", "-I", "enp1s0f0np0", "198.19.14.3"]).returncode != 0


def test_dockers_forward_drop_on_a_transit_node_looks_like_a_dead_cable_and_is_named(
        cluster_factory: ClusterFactory, cli: InProcessCli) -> None:
    """Real netfilter in each node's namespace: on the ring of four with forwarding and routes in place, Docker's
    FORWARD policy DROP with an empty DOCKER-USER on node b stops a's traffic to c as a dead cable would, and
    DOCKER_FORWARD_DROP names b; the rule's own fix (accept each ordered pair of its CX-7 interfaces in DOCKER-USER,
    by name) brings it back."""
    cluster = cluster_factory("ring4-fabric-sockets")
    lab = cluster.lab
    route_ring4(lab)
    assert lab.exec("a", ["ping", "-c", "1", "-W", "2", RING4_C_FROM_A]).returncode == 0
    docker_forward_drop(lab, "b")
    assert lab.exec("a", ["ping", "-c", "1", "-W", "1", RING4_C_FROM_A]).returncode != 0  # as if the cable were dead
    drops = [f for f in _fired(cli, cluster) if f["id"] == "DOCKER_FORWARD_DROP"]
    assert [f["subject"] for f in drops] == ["node b"]
    # The fix the finding prints, run as it says (the lab node's sudo runs the command).
    head, command = drops[0]["fix"][0].split(": ", 1)
    assert head.startswith("on node b")
    done = lab.exec("b", ["sh", "-c", command])
    assert done.returncode == 0, done.stderr
    accepts = [r for r in lab.exec("b", ["iptables", "-S", "DOCKER-USER"]).stdout.splitlines() if "ACCEPT" in r]
    assert len(accepts) == 12 and all(" -i en" in r and " -o en" in r for r in accepts), accepts
    assert lab.exec("a", ["ping", "-c", "1", "-W", "2", RING4_C_FROM_A]).returncode == 0
    assert not any(r == "DOCKER_FORWARD_DROP" for r, _ in _firing(cli, cluster))


def test_init_records_the_cabling_and_a_later_topology_names_what_moved(cluster_factory: ClusterFactory,
                                                                        cli: InProcessCli, tmp_path: Path) -> None:
    """`init` over the ring of three writes the nodes and cables; `topology` with that file alone (no --node) finds
    no change; with one cable's addresses really removed on node a, LINK_CHANGED names that cable."""
    cluster = cluster_factory("ring3")
    lab = cluster.lab
    written = tmp_path / "linkcheck.yaml"
    run = cli("init", *cluster.args, "-o", str(written), timeout=120)
    assert run.returncode == 0, run.stderr
    assert "layout ring3, 3 cable(s)" in run.stdout
    again = cli("init", *cluster.args, "-o", str(written), timeout=120)
    assert again.returncode == 4 and "already exists" in again.stderr
    same = cli("topology", "-c", str(written), "-f", "json", timeout=120)
    assert same.returncode == 0, same.stderr
    assert [n["name"] for n in json.loads(same.stdout)["nodes"]] == ["a", "b", "c"]
    for netdev in ("enp1s0f0np0", "enP2p1s0f0np0"):  # a's p0 cage: the cable to b
        assert lab.exec("a", ["ip", "addr", "flush", "dev", netdev]).returncode == 0
    moved = cli("topology", "-c", str(written), "-f", "json", timeout=120)
    changed = [f for f in json.loads(moved.stdout)["findings"] if f["id"] == "LINK_CHANGED"]
    assert [f["status"] for f in changed] == ["warn"], moved.stdout
    assert "recorded cables not found: a:p0<->b:p1" in changed[0]["message"]


def test_collect_over_a_cluster_saves_the_bundle_diagnose_judges_as_check_did(
        cluster_factory: ClusterFactory, cli: InProcessCli, tmp_path: Path) -> None:
    """`collect` with three --node saves the cluster's bundle as `check` saves it without traffic (every node's
    inspection and cluster.json), judging nothing; `diagnose` on it gives what `check` gave of the same nodes."""
    nodes = cluster_factory("ring3").args
    collected = cli("collect", *nodes, "--save", str(tmp_path / "collected"), timeout=120)
    assert collected.returncode == 0, collected.stderr
    assert collected.stdout == "" and f"bundle saved to {tmp_path / 'collected'}" in collected.stderr
    assert cli("verify", str(tmp_path / "collected")).returncode == 0
    offline = cli("diagnose", str(tmp_path / "collected"), "-f", "json", timeout=120)
    checked = cli("check", *nodes, "--save", str(tmp_path / "checked"), "-f", "json", timeout=120)
    assert offline.returncode == checked.returncode == 0, (offline.stderr, checked.stderr)

    def ids(run: str) -> list[tuple[str, str]]:
        return sorted((f["id"], f["status"]) for f in json.loads(run)["findings"])
    assert ids(offline.stdout) == ids(checked.stdout) and json.loads(offline.stdout)["layout"] == "ring3"


def test_a_workers_nccl_ib_hca_copied_from_the_head_is_named(cluster_factory: ClusterFactory,
                                                             cli: InProcessCli) -> None:
    """On a switch with a cabled by p0 and the others by p1, b's NCCL_IB_HCA is a's: the HCAs of a cage b has
    no cable in. topology, over real SSH, names b and no other node."""
    copied = {s for r, s in _firing(cli, cluster_factory("switch4-hca-copied")) if r == "NCCL_IB_HCA_COPIED"}
    assert copied == {"node b"}

"""LLDP in the cluster's topology: lldpctl's real JSON, as a node's capture, confirms a cable cage to cage, names the
cage a port really leads to when the addressing disagrees, and shows a switch between two nodes that the addressing
alone takes for a direct cable. Without lldpd the topology is the addressing's, and why LLDP was not read is kept.

The captures are lldpd's own test output (tests/samples/lldp/real/json_lldpd_integration_neighbors.json) with the
interface, names and MACs of the scenario's nodes put in.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from linkcheck.app.topology import cluster_facts
from linkcheck.cluster.facts import ClusterFacts
from linkcheck.collect.specs import CLUSTER_SPECS, SPECS
from linkcheck.model import Capture
from linkcheck.report.topology import view_text
from tests.emulators.captures import node_captures
from tests.emulators.node import Node
from tests.lab.cluster import Cluster, cluster_models, ring3, switch_by_cage

SAMPLES = Path(__file__).resolve().parent.parent / "samples" / "lldp" / "real"
TEMPLATE: dict[str, Any] = json.loads((SAMPLES / "json_lldpd_integration_neighbors.json").read_text(encoding="utf-8"))


def _lldpctl(local: str, system_name: str, port_mac: str, port_descr: str) -> str:
    """`lldpctl -f json` on a node with one neighbour on `local`, in lldpd's own shape (one interface: a dict)."""
    body = json.loads(json.dumps(TEMPLATE["lldp"]["interface"]["eth0"]))
    chassis = body["chassis"].pop("ns-2.example.com")
    chassis["id"]["value"] = port_mac
    body["chassis"] = {system_name: chassis}
    body["port"]["id"]["value"] = port_mac
    body["port"]["descr"] = port_descr
    return json.dumps({"lldp": {"interface": {local: body}}}, indent=2)


def _facts(cluster: Cluster, lldp: dict[str, str]) -> tuple[ClusterFacts, dict[str, Node]]:
    """The cluster's facts with each node's lldp capture replaced by `lldp[node]` (lldpctl's stdout)."""
    models = cluster_models(cluster)
    captures = []
    for name, model in models.items():
        for cap in node_captures(name, model, SPECS + CLUSTER_SPECS):
            if cap.spec == "lldp" and name in lldp:
                cap = Capture(name, "lldp", cap.command, lldp[name])
            captures.append(cap)
    return cluster_facts(list(models), captures, {}), models


def _mac(models: dict[str, Node], node: str, netdev: str) -> str:
    return next(f.mac for f in models[node].functions if f.netdev == netdev)


def test_without_lldpd_the_topology_is_the_addressings_and_says_why() -> None:
    facts, _ = _facts(ring3(), {})
    assert facts.topology.layout == "ring3"
    assert not any(p.lldp_confirmed for c in facts.topology.cables for p in c.paths)
    assert set(facts.lldp_unread) == {"a", "b", "c"} and "lldpctl is not installed" in facts.lldp_unread["a"]


def test_a_neighbour_that_is_the_far_nodes_cage_confirms_the_cable() -> None:
    _, models = _facts(ring3(), {})
    # a:p0 faces b:p1. LLDP on a's twin shows b's other twin of that cage: the cage is what counts.
    seen = _lldpctl("enp1s0f0np0", "spark-b", _mac(models, "b", "enP2p1s0f1np1"), "enP2p1s0f1np1")
    facts, _ = _facts(ring3(), {"a": seen})
    cable = next(c for c in facts.topology.cables if c.key == "a:p0<->b:p1")
    assert all(p.lldp_confirmed for p in cable.paths)
    assert not any(p.lldp_confirmed for c in facts.topology.cables if c.key != cable.key for p in c.paths)
    assert not facts.topology.flagged("lldp_mismatch") and facts.topology.layout == "ring3"
    assert "a:p0" not in facts.lldp_unread


def test_a_neighbour_of_another_cage_is_named_where_the_addressing_disagrees() -> None:
    _, models = _facts(ring3(), {})
    # a:p0 is addressed to face b:p1, but LLDP on it shows c's p0 (c is known by hostname and port name).
    seen = _lldpctl("enp1s0f0np0", "spark-c.lab.example", "02:00:00:00:00:99", "enp1s0f0np0")
    facts, _ = _facts(ring3(), {"a": seen})
    flags = facts.topology.flagged("lldp_mismatch")
    assert sorted(f.subject for f in flags) == ["a:enP2p1s0f0np0", "a:enp1s0f0np0"]  # both twins of the cage
    assert "LLDP shows c:enp1s0f0np0 at the other end" in flags[0].message
    assert "a:enp1s0f0np0" in view_text_of(facts)


def test_a_switch_between_two_nodes_makes_their_subnet_a_switch_segment() -> None:
    cluster = switch_by_cage({"a": "p1", "b": "p1"})
    plain, _ = _facts(cluster, {})
    assert plain.topology.layout == "pair", "two nodes in a subnet read as a cable without LLDP"
    switch = _lldpctl("enp1s0f1np1", "crs812", "78:9a:18:00:00:0c", "qsfp56dd-1-1")
    facts, _ = _facts(cluster, {"a": switch})
    assert facts.topology.layout == "switch" and not facts.topology.cables
    assert {s.switches for s in facts.topology.segments} == {("crs812 port qsfp56dd-1-1",)}
    assert "switch segment" in view_text_of(facts) and "LLDP: crs812 port qsfp56dd-1-1" in view_text_of(facts)


def test_a_port_that_leads_nowhere_says_what_lldp_shows_there() -> None:
    _, models = _facts(ring3(), {})
    cluster = ring3()
    del cluster.addrs["b"]["enp1s0f1np1"], cluster.addrs["b"]["enP2p1s0f1np1"]  # b's end of a:p0<->b:p1 unaddressed
    seen = _lldpctl("enp1s0f0np0", "spark-b", _mac(models, "b", "enp1s0f1np1"), "enp1s0f1np1")
    facts, _ = _facts(cluster, {"a": seen})
    dangling = {f.subject: f.message for f in facts.topology.flagged("dangling")}
    assert "LLDP shows b:enp1s0f1np1 at its other end" in dangling["a:enp1s0f0np0"]


def test_lldpd_not_running_and_output_that_is_not_lldpctls_are_kept_as_reasons() -> None:
    not_running = (SAMPLES / "stderr_not_running_lldpd1011_no_socket.txt").read_text(encoding="utf-8")
    models = cluster_models(ring3())
    captures = []
    for name, model in models.items():
        for cap in node_captures(name, model, SPECS + CLUSTER_SPECS):
            if cap.spec == "lldp" and name == "a":
                cap = Capture(name, "lldp", cap.command, "", not_running, exit_status=1)
            elif cap.spec == "lldp" and name == "b":
                cap = Capture(name, "lldp", cap.command, "<html>not json</html>")
            captures.append(cap)
    facts = cluster_facts(list(models), captures, {})
    assert facts.topology.layout == "ring3"
    assert "unable to connect" in facts.lldp_unread["a"] or "not running" in facts.lldp_unread["a"]
    assert facts.lldp_unread["b"]


def view_text_of(facts: ClusterFacts) -> str:
    from linkcheck.app.topology import judge_facts
    from linkcheck.cluster.hosts import ClusterHost
    from linkcheck.config import NodeTarget

    hosts = [ClusterHost(NodeTarget(n, f"10.20.0.{21 + i}"), "--node") for i, n in enumerate(facts.topology.nodes)]
    return view_text(judge_facts(hosts, facts, {}))


def test_the_cabling_rule_says_what_to_do_about_a_cable_lldp_contradicts() -> None:
    _, models = _facts(ring3(), {})
    facts, _ = _facts(ring3(), {"a": _lldpctl("enp1s0f0np0", "spark-c", "02:00:00:00:00:99", "enp1s0f0np0")})
    text = view_text_of(facts)
    assert "CABLING_FAULT" in text and "LLDP shows at its other end" in text, text


def test_one_end_showing_a_switch_and_the_other_the_far_node_stays_a_cable() -> None:
    _, models = _facts(ring3(), {})
    switch = _lldpctl("enp1s0f0np0", "crs812", "78:9a:18:00:00:0c", "qsfp56dd-1-1")
    node = _lldpctl("enp1s0f1np1", "spark-a", _mac(models, "a", "enp1s0f0np0"), "enp1s0f0np0")
    facts, _ = _facts(ring3(), {"a": switch, "b": node})
    assert facts.topology.layout == "ring3" and not facts.topology.segments
    cable = next(c for c in facts.topology.cables if c.key == "a:p0<->b:p1")
    assert all(p.lldp_confirmed for p in cable.paths)

"""Topology inference: the layout's name, the cables cage to cage, the switch segments, and every flag, from
NodeFacts of pairs, rings and switches (tests/cluster/spark_facts.py)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec.structs import replace

from linkcheck.cluster.topology import Topology, infer_topology
from linkcheck.facts.model import Function, Neighbour, NodeFacts
from tests.cluster.spark_facts import cabled, ring, spark, switch, with_neighbours

ABC = ("a", "b", "c")


def _kinds(topo: Topology) -> list[tuple[str, str]]:
    return sorted((f.kind, f.subject) for f in topo.flags)


def _with_function(node: NodeFacts, netdev: str, **changes: object) -> NodeFacts:
    return replace(node, functions=tuple(replace(f, **changes) if f.netdev == netdev else f  # type: ignore[arg-type]
                                         for f in node.functions))


def test_nvidias_pair_is_one_cable_of_two_twin_paths() -> None:
    topo = infer_topology(cabled([("a", "p1", "b", "p1")], ("a", "b")))
    assert topo.layout == "pair" and topo.flags == () and topo.supported
    (cable,) = topo.cables
    assert cable.key == "a:p1<->b:p1"
    assert [p.key for p in cable.paths] == ["a:enp1s0f1np1<->b:enp1s0f1np1", "a:enP2p1s0f1np1<->b:enP2p1s0f1np1"]
    assert all(p.neighbour_confirmed for p in cable.paths)


def test_a_pair_with_both_cages_cabled_is_still_a_pair() -> None:
    topo = infer_topology(cabled([("a", "p0", "b", "p0"), ("a", "p1", "b", "p1")], ("a", "b")))
    assert topo.layout == "pair" and len(topo.cables) == 2 and topo.flags == ()


def test_nvidias_ring_of_three() -> None:
    topo = infer_topology(ring(ABC))
    assert topo.layout == "ring3" and topo.flags == () and topo.supported
    assert [c.key for c in topo.cables] == ["a:p0<->b:p1", "a:p1<->c:p0", "b:p0<->c:p1"]
    assert sorted({p.subnet for c in topo.cables for p in c.paths}) == [f"192.168.{n}.0/24" for n in range(10, 16)]


def test_a_ring_cabled_p0_to_p0_is_flagged_on_each_such_cable() -> None:
    topo = infer_topology(ring(ABC, same_port=(0,)))
    assert topo.layout == "ring3"
    same = topo.flagged("ring_same_port")
    assert [f.subject for f in same] == ["a:p0<->b:p0", "b:p1<->c:p1"]
    assert "p0 to the next node's p1" in same[0].message
    assert topo.supported  # a ring of three is documented; its cabling is the fault


def test_a_ring_of_four_departs_from_nvidias_layouts() -> None:
    topo = infer_topology(ring(("a", "b", "c", "d")))
    assert topo.layout == "ring4" and not topo.supported
    assert _kinds(topo) == [("unsupported", "ring4")]
    assert "exactly three" in topo.flags[0].message


def test_a_switch_of_four_is_two_segments_one_per_twin() -> None:
    topo = infer_topology(switch(("a", "b", "c", "d")))
    assert topo.layout == "switch" and topo.flags == () and topo.cables == ()
    assert [(s.subnet, s.nodes) for s in topo.segments] == [("192.168.100.0/24", ("a", "b", "c", "d")),
                                                           ("192.168.101.0/24", ("a", "b", "c", "d"))]


def test_eight_nodes_on_a_switch_are_a_layout_nvidia_documents() -> None:
    # nvidia/multi-sparks-through-switch README: "will work for any number of DGX Spark devices connected with a
    # switch"; only NVIDIA's helper and Sync stop at four.
    topo = infer_topology(switch(tuple("abcdefgh")))
    assert topo.layout == "switch" and topo.flags == () and topo.supported is True


def test_mixed_direct_and_switched_links() -> None:
    nodes = switch(ABC)
    a = spark("a", 0, {"enp1s0f0np0": "192.168.50.1/24", "enP2p1s0f0np0": "192.168.51.1/24",
                       **{f.netdev: f.ipv4[0] for f in nodes["a"].functions if f.ipv4}}, ("p0", "p1"))
    b = spark("b", 1, {"enp1s0f0np0": "192.168.50.2/24", "enP2p1s0f0np0": "192.168.51.2/24",
                       **{f.netdev: f.ipv4[0] for f in nodes["b"].functions if f.ipv4}}, ("p0", "p1"))
    topo = infer_topology(with_neighbours([a, b, nodes["c"]]))
    assert topo.layout == "mixed" and not topo.supported
    assert [c.key for c in topo.cables] == ["a:p0<->b:p0"] and len(topo.segments) == 2
    assert _kinds(topo) == [("mixed", "cluster"), ("unsupported", "mixed")]


def test_a_cable_that_leads_nowhere() -> None:
    nodes = cabled([("a", "p1", "b", "p1")], ("a", "b"))
    a = spark("a", 0, {f.netdev: f.ipv4[0] for f in nodes["a"].functions if f.ipv4} | {"enp1s0f0np0": "10.9.0.1/24"},
              ("p0", "p1"))
    topo = infer_topology({"a": a, "b": nodes["b"]})
    assert topo.layout == "pair"
    assert _kinds(topo) == [("dangling", "a:enp1s0f0np0"), ("unaddressed", "a:enP2p1s0f0np0")]
    assert "10.9.0.0/24" in topo.flagged("dangling")[0].message


def test_a_dangling_port_whose_neighbour_table_reaches_another_node_says_so() -> None:
    a = spark("a", 0, {"enp1s0f1np1": "192.168.100.1/24"}, ("p1",))
    b = spark("b", 1, {"enp1s0f1np1": "192.168.110.2/24"}, ("p1",))
    b_mac = b.function("enp1s0f1np1").mac  # type: ignore[union-attr]
    a = replace(a, neighbours=(Neighbour("192.168.100.2", "enp1s0f1np1", b_mac),))
    topo = infer_topology({"a": a, "b": b})
    assert topo.layout == "unknown"
    dangling = {f.subject: f.message for f in topo.flagged("dangling")}
    assert "reaches b:enp1s0f1np1" in dangling["a:enp1s0f1np1"]
    assert [f.subject for f in topo.flagged("isolated")] == ["a", "b"]


def test_a_node_cut_off_from_the_others() -> None:
    nodes = cabled([("a", "p1", "b", "p1")], ABC)
    topo = infer_topology(nodes)
    assert topo.layout == "unknown"
    assert _kinds(topo) == [("isolated", "c"), ("unsupported", "unknown")]


def test_a_chain_of_three_is_not_a_ring() -> None:
    topo = infer_topology(cabled([("a", "p0", "b", "p1"), ("b", "p0", "c", "p1")], ABC))
    assert topo.layout == "unknown" and len(topo.cables) == 2
    assert _kinds(topo) == [("unsupported", "unknown")]


def test_the_wrong_twins_mac_in_a_neighbour_table() -> None:
    nodes = cabled([("a", "p1", "b", "p1")], ("a", "b"))
    b = nodes["b"]
    wrong = b.function("enP2p1s0f1np1").mac  # type: ignore[union-attr]
    entries = tuple(replace(n, mac=wrong) if n.dev == "enp1s0f1np1" else n for n in nodes["a"].neighbours)
    topo = infer_topology({"a": replace(nodes["a"], neighbours=entries), "b": b})
    (flag,) = topo.flagged("neighbour_mismatch")
    assert flag.subject == "a:enp1s0f1np1" and "b:enP2p1s0f1np1's MAC" in flag.message
    assert topo.cables[0].paths[0].neighbour_confirmed  # b's own table still resolves a's twin correctly


def test_twins_on_one_subnet_are_one_cable_not_a_switch() -> None:
    addrs = {"a": {"enp1s0f1np1": "192.168.100.10/24", "enP2p1s0f1np1": "192.168.100.14/24"},
             "b": {"enp1s0f1np1": "192.168.100.11/24", "enP2p1s0f1np1": "192.168.100.15/24"}}
    nodes = with_neighbours([spark(n, i, addrs[n], ("p1",)) for i, n in enumerate(("a", "b"))])
    topo = infer_topology(nodes)
    assert topo.layout == "pair" and topo.segments == ()
    assert [p.key for p in topo.cables[0].paths] == ["a:enp1s0f1np1<->b:enp1s0f1np1",
                                                     "a:enP2p1s0f1np1<->b:enP2p1s0f1np1"]
    assert _kinds(topo) == [("twins_share_subnet", "a:p1<->b:p1")]


def test_a_twin_without_carrier_on_an_addressed_path() -> None:
    nodes = cabled([("a", "p1", "b", "p1")], ("a", "b"))
    b = _with_function(nodes["b"], "enP2p1s0f1np1", carrier=False)
    topo = infer_topology({"a": nodes["a"], "b": b})
    assert topo.layout == "pair"
    assert _kinds(topo) == [("link_down", "a:enP2p1s0f1np1<->b:enP2p1s0f1np1")]
    assert "no carrier on b:enP2p1s0f1np1" in topo.flags[0].message


def test_a_third_address_of_two_nodes_in_one_subnet_is_unmatched() -> None:
    nodes = cabled([("a", "p1", "b", "p1")], ("a", "b"))
    a = _with_function(nodes["a"], "enp1s0f0np0", ipv4=("192.168.11.3/24",), carrier=True)
    topo = infer_topology({"a": a, "b": nodes["b"]})
    assert [p.key for p in topo.cables[0].paths] == ["a:enp1s0f1np1<->b:enp1s0f1np1",
                                                     "a:enP2p1s0f1np1<->b:enP2p1s0f1np1"]
    assert _kinds(topo) == [("unmatched", "a:enp1s0f0np0")]


def test_one_address_on_two_nodes() -> None:
    nodes = cabled([("a", "p1", "b", "p1")], ("a", "b"))
    b = _with_function(nodes["b"], "enP2p1s0f1np1", ipv4=("192.168.11.1/24",))
    topo = infer_topology({"a": nodes["a"], "b": b})
    assert ("duplicate_address", "192.168.11.1") in _kinds(topo)


def test_a_node_that_could_not_be_inspected() -> None:
    nodes = cabled([("a", "p1", "b", "p1")], ("a", "b"))
    topo = infer_topology({**nodes, "c": NodeFacts(name="c", unavailable={"addresses": "ssh: connection refused"})})
    # Its cables are not seen: the layout is unknown, never a departure from NVIDIA's, and the node is not isolated.
    assert topo.layout == "unknown" and topo.supported is None and topo.incomplete
    assert _kinds(topo) == [("uninspected", "c")]
    assert "connection refused" in topo.flagged("uninspected")[0].message
    assert topo.standing == "not known: a node was not inspected"


def test_nothing_addressed() -> None:
    topo = infer_topology({"a": spark("a", 0, {}), "b": spark("b", 1, {})})
    assert topo.layout == "unknown" and topo.cables == ()


def test_a_function_without_a_cage_is_its_own_cable() -> None:
    nodes = cabled([("a", "p1", "b", "p1")], ("a", "b"))
    a = replace(nodes["a"], functions=tuple(replace(f, cage=None) for f in nodes["a"].functions))
    topo = infer_topology({"a": a, "b": nodes["b"]})
    assert topo.layout == "pair"
    assert [c.key for c in topo.cables] == ["a:?<->b:p1", "a:?<->b:p1"]


@given(st.integers(3, 8), st.data())
@settings(max_examples=60, deadline=None)
def test_any_ring_is_named_and_its_same_port_cables_flagged(n: int, data: st.DataObject) -> None:
    names = tuple(f"s{i}" for i in range(n))
    same = data.draw(st.sets(st.integers(0, n - 1)))
    topo = infer_topology(ring(names, tuple(same)))
    assert topo.layout == f"ring{n}" and len(topo.cables) == n
    assert {f.subject for f in topo.flagged("ring_same_port")} == {c.key for c in topo.cables if c.a_cage == c.b_cage}
    assert topo.supported == (n == 3)
    assert all(len(c.paths) == 2 and all(p.neighbour_confirmed for p in c.paths) for c in topo.cables)


def test_functions_are_read_as_the_facts_give_them() -> None:
    fn = Function(node="a", netdev="x0", ipv4=("192.168.1.1/24",), carrier=True)
    other = Function(node="b", netdev="y0", ipv4=("192.168.1.2/24",), carrier=True)
    topo = infer_topology({"a": NodeFacts(name="a", functions=(fn,)), "b": NodeFacts(name="b", functions=(other,))})
    assert topo.layout == "pair" and topo.cables[0].key == "a:?<->b:?"

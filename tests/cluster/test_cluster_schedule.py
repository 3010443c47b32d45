"""Round schedules: every cable (or switch pair) exactly once, no node twice in a round, and the round counts the
layouts promise (a ring of 3 in 3 rounds, of 4 in 2; a switch of n in n-1 rounds for even n, n for odd)."""

from __future__ import annotations

import itertools
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from linkcheck.cluster.schedule import Edge, Round, circle_pairs, colour_edges, schedule, schedule_switch
from linkcheck.cluster.topology import Cable, Topology, infer_topology
from tests.cluster.spark_facts import cabled, ring, switch


def _valid(rounds: tuple[Round, ...], nodes: tuple[str, ...]) -> None:
    for r in rounds:
        used = [n for m in r.matches for n in (m.a, m.b)]
        assert len(used) == len(set(used)), f"a node twice in round {r.number}"
        assert sorted(used + list(r.idle)) == sorted(nodes)
        assert r.matches
    assert [r.number for r in rounds] == list(range(1, len(rounds) + 1))


def test_a_pairs_cable_is_one_round_and_two_cables_two() -> None:
    one = schedule(infer_topology(cabled([("a", "p1", "b", "p1")], ("a", "b"))))
    assert one.method == "colouring" and [[m.label for m in r.matches] for r in one.rounds] == [["a:p1<->b:p1"]]
    two = schedule(infer_topology(cabled([("a", "p0", "b", "p0"), ("a", "p1", "b", "p1")], ("a", "b"))))
    assert [[m.label for m in r.matches] for r in two.rounds] == [["a:p0<->b:p0"], ["a:p1<->b:p1"]]


def test_a_ring_of_three_takes_three_rounds_with_one_node_resting_each() -> None:
    plan = schedule(infer_topology(ring(("a", "b", "c"))))
    assert plan.method == "colouring" and len(plan.rounds) == 3
    assert [(r.matches[0].label, r.idle) for r in plan.rounds] == [
        ("a:p0<->b:p1", ("c",)), ("b:p0<->c:p1", ("a",)), ("a:p1<->c:p0", ("b",))]


def test_a_ring_of_four_takes_two_rounds() -> None:
    topo = infer_topology(ring(("a", "b", "c", "d")))
    plan = schedule(topo)
    assert len(plan.rounds) == 2 and all(len(r.matches) == 2 and r.idle == () for r in plan.rounds)
    _valid(plan.rounds, topo.nodes)


def test_a_switch_of_four_takes_three_rounds_of_every_pair() -> None:
    topo = infer_topology(switch(("a", "b", "c", "d")))
    plan = schedule(topo)
    assert plan.method == "circle" and len(plan.rounds) == 3
    assert sorted(tuple(sorted((m.a, m.b))) for r in plan.rounds for m in r.matches) == \
        sorted(itertools.combinations("abcd", 2))


def test_mixed_links_are_coloured_together() -> None:
    nodes = switch(("a", "b", "c"))
    topo = infer_topology(nodes)
    assert schedule(topo).method == "circle" and len(schedule(topo).rounds) == 3
    mixed = Topology(nodes=("a", "b", "c"), layout="mixed", segments=topo.segments,
                     cables=(Cable("a", "p0", "b", "p0", ()),))
    plan = schedule(mixed)
    assert plan.method == "greedy"
    _valid(plan.rounds, mixed.nodes)
    assert Counter(m.label for r in plan.rounds for m in r.matches) == Counter(
        ["a:p0<->b:p0", "a<->b", "a<->c", "b<->c"])


def test_nothing_to_schedule() -> None:
    assert schedule_switch(["a"]).method == "none"
    assert schedule(infer_topology(cabled([], ("a", "b")))).method == "none"


@st.composite
def _paths_and_cycles(draw: st.DrawFn) -> tuple[list[Edge], int]:
    """A multigraph of disjoint paths and cycles (what cables between two-cage nodes make), in a shuffled order,
    and its chromatic index: 0, 1, 2, or 3 when it holds an odd cycle."""
    edges: list[Edge] = []
    index = 0
    count = itertools.count()
    for _ in range(draw(st.integers(0, 4))):
        length = draw(st.integers(1, 7))
        cycle = draw(st.booleans()) and length >= 2
        names = [f"n{next(count)}" for _ in range(length if cycle else length + 1)]
        for i in range(length):
            edges.append((names[i], names[(i + 1) % len(names)], f"e{len(edges)}"))
        index = max(index, 3 if cycle and length % 2 else 2 if length > 1 else 1)
    return draw(st.permutations(edges)), index


@given(_paths_and_cycles())
@settings(max_examples=300, deadline=None)
def test_two_cage_cable_graphs_are_coloured_exactly(graph: tuple[list[Edge], int]) -> None:
    edges, index = graph
    colours, method = colour_edges(edges)
    assert method == "colouring" and len(colours) == len(edges)
    assert len(set(colours)) == index and set(colours) == set(range(index))
    for r in set(colours):
        ends = [n for (a, b, _), c in zip(edges, colours, strict=True) if c == r for n in (a, b)]
        assert len(ends) == len(set(ends))


@given(st.lists(st.tuples(st.integers(0, 7), st.integers(0, 7)).filter(lambda e: e[0] != e[1]), max_size=30))
@settings(max_examples=200, deadline=None)
def test_any_graph_gets_rounds_with_each_edge_once_and_no_node_twice(pairs: list[tuple[int, int]]) -> None:
    edges = [(f"n{a}", f"n{b}", f"e{i}") for i, (a, b) in enumerate(pairs)]
    colours, _ = colour_edges(edges)
    degree = Counter(n for a, b, _ in edges for n in (a, b))
    assert len(colours) == len(edges)
    if edges:
        assert max(colours) + 1 <= 2 * max(degree.values()) - 1  # greedy's bound
    for r in set(colours):
        ends = [n for (a, b, _), c in zip(edges, colours, strict=True) if c == r for n in (a, b)]
        assert len(ends) == len(set(ends))


@given(st.integers(2, 16))
@settings(max_examples=15, deadline=None)
def test_the_circle_method_meets_every_pair_once(n: int) -> None:
    nodes = tuple(f"s{i:02d}" for i in range(n))
    plan = schedule_switch(nodes)
    assert len(plan.rounds) == (n - 1 if n % 2 == 0 else n)
    _valid(plan.rounds, nodes)
    met = Counter(tuple(sorted((m.a, m.b))) for r in plan.rounds for m in r.matches)
    assert set(met) == set(itertools.combinations(nodes, 2)) and set(met.values()) == {1}
    assert all(len(r.matches) == n // 2 and len(r.idle) == n % 2 for r in plan.rounds)
    assert circle_pairs(list(nodes)) == [[(m.a, m.b) for m in r.matches] for r in plan.rounds]


@given(st.integers(3, 8), st.data())
@settings(max_examples=40, deadline=None)
def test_a_ring_of_n_takes_two_rounds_when_even_and_three_when_odd(n: int, data: st.DataObject) -> None:
    names = tuple(f"s{i}" for i in range(n))
    same = data.draw(st.sets(st.integers(0, n - 1)))
    topo = infer_topology(ring(names, tuple(same)))
    plan = schedule(topo)
    assert len(plan.rounds) == (2 if n % 2 == 0 else 3)
    _valid(plan.rounds, topo.nodes)
    assert sorted(m.label for r in plan.rounds for m in r.matches) == sorted(c.key for c in topo.cables)

"""Rounds of traffic tests in which every node takes part in at most one test.

A GB10's two cages share its two PCIe Gen5 x4 links, so two tests on one node at once would measure the node,
not the cables. Direct cables are scheduled by colouring the cable graph's edges (each colour a round); with at
most two cables per node (two cages) the graph is paths and cycles, coloured exactly: 1 round for a pair's cable,
2 for a path or an even ring, 3 for an odd ring (a ring of 3 takes 3 rounds). A switch lets every pair of nodes
test, so its pairs are scheduled by the circle method: n-1 rounds for even n, n rounds for odd n, one node resting
in each. Both are pure functions of the topology.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Sequence

import msgspec

from linkcheck.cluster.topology import Topology

Edge = tuple[str, str, str]  # (node, node, label): a cable's key, or "a<->b" for a pair of switch ports


class Match(msgspec.Struct, frozen=True):
    """One test of a round: two nodes, over one cable (direct) or through the switch."""

    a: str
    b: str
    label: str  # the cable's key (a:p0<->b:p1), or a<->b through a switch


class Round(msgspec.Struct, frozen=True):
    """Tests that run at once; no node is in two of them."""

    number: int  # 1-based
    matches: tuple[Match, ...]
    idle: tuple[str, ...] = ()  # nodes with no test this round


class Schedule(msgspec.Struct, frozen=True):
    """The rounds for one topology and how they were made."""

    method: str  # colouring | circle | greedy | none
    rounds: tuple[Round, ...] = ()


def _incident(edges: Sequence[Edge]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = defaultdict(list)
    for i, (a, b, _) in enumerate(edges):
        out[a].append(i)
        out[b].append(i)
    return out


def _walk(start: str, edges: Sequence[Edge], incident: dict[str, list[int]], colour: dict[int, int]) -> None:
    """Colour the path or cycle through `start` by alternating 0 and 1; an odd cycle's last edge takes 2."""
    node, walked = start, []
    while True:
        nxt = next((e for e in incident[node] if e not in colour and e not in walked), None)
        if nxt is None:
            break
        walked.append(nxt)
        a, b, _ = edges[nxt]
        node = b if a == node else a
    closed = len(walked) > 1 and node == start
    for i, e in enumerate(walked):
        colour[e] = 2 if closed and len(walked) % 2 and i == len(walked) - 1 else i % 2


def colour_edges(edges: Sequence[Edge]) -> tuple[list[int], str]:
    """A round index per edge, no node twice in a round: exact when no node has more than two edges (paths and
    cycles), greedy otherwise; and the method used."""
    incident = _incident(edges)
    colour: dict[int, int] = {}
    if all(len(ids) <= 2 for ids in incident.values()):
        # Paths from one of their ends first, then what is left: cycles, from anywhere on them.
        ends = [n for n, ids in incident.items() if len(ids) == 1]
        for start in [*ends, *incident]:
            _walk(start, edges, incident, colour)
        return [colour[i] for i in range(len(edges))], "colouring"
    busy: dict[int, set[str]] = defaultdict(set)
    out = []
    for a, b, _ in edges:
        r = next(r for r in itertools.count() if a not in busy[r] and b not in busy[r])
        busy[r] |= {a, b}
        out.append(r)
    return out, "greedy"


def _rounds(nodes: Sequence[str], edges: Sequence[Edge], colours: Sequence[int]) -> tuple[Round, ...]:
    rounds = []
    for r in range(max(colours, default=-1) + 1):
        matches = tuple(Match(a, b, label) for (a, b, label), c in zip(edges, colours, strict=True) if c == r)
        busy = {n for m in matches for n in (m.a, m.b)}
        rounds.append(Round(r + 1, matches, tuple(n for n in nodes if n not in busy)))
    return tuple(rounds)


def circle_pairs(nodes: Sequence[str]) -> list[list[tuple[str, str]]]:
    """Every pair of `nodes` once, in rounds (the circle method): the first node stays, the others turn one place
    a round; with an odd count a rest stands in for one more node, and whoever meets it sits the round out."""
    ring: list[str | None] = list(nodes) + ([None] if len(nodes) % 2 else [])
    n = len(ring)
    out = []
    for _ in range(n - 1):
        pairs = [(ring[i], ring[n - 1 - i]) for i in range(n // 2)]
        out.append([(a, b) for a, b in pairs if a is not None and b is not None])
        ring = [ring[0], ring[-1], *ring[1:-1]]
    return out


def schedule_switch(nodes: Sequence[str]) -> Schedule:
    """Rounds in which every pair of the switch's nodes meets once."""
    if len(nodes) < 2:
        return Schedule("none")
    rounds = []
    for i, pairs in enumerate(circle_pairs(nodes), 1):
        matches = tuple(Match(a, b, f"{a}<->{b}") for a, b in pairs)
        busy = {n for pair in pairs for n in pair}
        rounds.append(Round(i, matches, tuple(n for n in nodes if n not in busy)))
    return Schedule("circle", tuple(rounds))


def schedule(topology: Topology) -> Schedule:
    """The rounds for a topology: the circle method on a switch, the cable colouring otherwise; mixed links are
    all coloured together (greedy), so a node still has one test a round."""
    switched = [n for n in topology.nodes if any(n in s.nodes for s in topology.segments)]
    if topology.layout == "switch":
        return schedule_switch(switched)
    edges = [(c.a, c.b, c.key) for c in topology.cables]
    edges += [(a, b, f"{a}<->{b}") for a, b in itertools.combinations(switched, 2)]
    if not edges:
        return Schedule("none")
    colours, method = colour_edges(edges)
    return Schedule(method, _rounds(topology.nodes, edges, colours))

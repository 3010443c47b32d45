"""What a cluster's traffic run measures: each scheduled test as the pair view of its two nodes, over one cable.

A test of the schedule (linkcheck.cluster.schedule) joins two nodes over a direct cable, or through the switch. It
is measured and judged as a pair is (both twins alone and at once, each direction; the pair's throughput rules),
so its pair view holds the two nodes' own facts, named as the nodes are, and only the data paths of that cable:
the subnets of the cable's twin paths, or of the switch segments both nodes sit on. A node's other cable is not
part of the test, though the same twins' names appear on it.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence

import msgspec

from linkcheck.cluster.facts import ClusterFacts
from linkcheck.cluster.schedule import Match, Schedule
from linkcheck.cluster.topology import Topology
from linkcheck.facts.model import LinkFacts
from linkcheck.facts.pair import match_paths
from linkcheck.model import Capture

FIRST_PASS = 1
SECOND_PASS = 2  # a node of a slow test measured again with a node whose every test passed (switch only)


# The schedule round in a run's round id, as bench/rounds.py names them: `concurrent-a2b-c3-7`, `alone-b2a-c3-quick`,
# with `-rep2` after it for a repetition.
ROUND_NUMBER_RE = re.compile(r"-c(\d+)-")


def of_test_round(capture: Capture, number: int) -> bool:
    """Whether a run belongs to the test of schedule round `number`: a switch's second pass can meet the same two
    nodes again, in a round of its own, over the same path keys. A run without a round number (a not-run capture
    for a path without carrier) belongs to every test over that path."""
    found = ROUND_NUMBER_RE.search(capture.meta.get("round", ""))
    return found is None or int(found.group(1)) == number


class CableTest(msgspec.Struct, frozen=True):
    """One scheduled test: its label (the cable's key, or `a<->b` through the switch), its round, its two nodes,
    and their pair view restricted to this cable's data paths (no traffic yet)."""

    label: str
    round: int
    a: str
    b: str
    link: LinkFacts
    switched: bool = False
    pass_no: int = FIRST_PASS

    @property
    def nodes(self) -> tuple[str, str]:
        return self.a, self.b


def test_subnets(topology: Topology, match: Match) -> tuple[set[str], bool]:
    """The subnets a test measures, and whether they are a switch's."""
    cable = next((c for c in topology.cables if c.key == match.label), None)
    if cable is not None:
        return {p.subnet for p in cable.paths}, False
    return {s.subnet for s in topology.segments if match.a in s.nodes and match.b in s.nodes}, True


def pair_view(facts: ClusterFacts, a: str, b: str, subnets: set[str]) -> LinkFacts:
    """Nodes a and b as a pair, with the data paths between them in `subnets` only."""
    first, second = facts.nodes[a], facts.nodes[b]
    paths = tuple(p for p in match_paths(first, second) if p.subnet in subnets)
    return LinkFacts(a=first, b=second, paths=paths)


def cable_tests(facts: ClusterFacts, schedule: Schedule, skip: Iterable[str] = ()) -> list[CableTest]:
    """Every test of the schedule, in round order; those with a node in `skip` (not inspected) are left out."""
    left_out = set(skip)
    out = []
    for rnd in schedule.rounds:
        for match in rnd.matches:
            if match.a in left_out or match.b in left_out:
                continue
            subnets, switched = test_subnets(facts.topology, match)
            out.append(CableTest(match.label, rnd.number, match.a, match.b,
                                 pair_view(facts, match.a, match.b, subnets), switched))
    return out


def second_pass(facts: ClusterFacts, first: Sequence[CableTest], slow: set[str]) -> list[CableTest]:
    """On a switch, each node whose every test was slow (`slow`: labels), measured again with a node that passed a
    test, in rounds where no node takes part twice: a node slow with every partner shows again, a one-off does not.
    A node that passed with someone is cleared already. Nothing when no test was slow, no node passed, or the tests
    were not through a switch."""
    switched = [t for t in first if t.switched]
    if not slow or not switched:
        return []
    order = facts.topology.nodes
    passed = {n for t in switched if t.label not in slow for n in t.nodes}
    suspects = sorted({n for t in switched if t.label in slow for n in t.nodes} - passed, key=order.index)
    good = sorted(passed, key=order.index)
    if not good or not suspects:
        return []
    out: list[CableTest] = []
    busy: dict[int, set[str]] = {}
    base = max(t.round for t in first)
    for i, a in enumerate(suspects):
        b = good[i % len(good)]
        number = next(r for r in itertools.count(1) if not busy.setdefault(r, set()) & {a, b})
        busy[number] |= {a, b}
        subnets, _ = test_subnets(facts.topology, Match(a, b, f"{a}<->{b}"))
        out.append(CableTest(f"{a}<->{b}", base + number, a, b, pair_view(facts, a, b, subnets), True, SECOND_PASS))
    return sorted(out, key=lambda t: t.round)

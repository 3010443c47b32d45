"""What a cluster's rules judge: every node's facts, the inferred topology, and per node what decides whether it
carries traffic between two others (IPv4 forwarding, routes, the firewall's FORWARD chain; each node's read in
linkcheck.facts.forwarding_facts).

Derived here, once, from the topology: which nodes are neighbours (a cable between them, or one switch segment),
which nodes are transit nodes (inside a shortest path between two nodes that are not neighbours: a ring of four
or more), which non-neighbours a node has no route to, and how a ring should be cabled (each node's p0 to the next
node's p1) with the fewest cables moved.
"""

from __future__ import annotations

import ipaddress
import itertools
from collections import defaultdict
from collections.abc import Mapping, Sequence

import msgspec

from linkcheck.cluster.topology import Cable, Topology
from linkcheck.facts.drift import ClusterDrift
from linkcheck.facts.forwarding_facts import CLUSTER_GROUPS, Forwarding
from linkcheck.facts.model import NodeFacts
from linkcheck.facts.nccl_hca import select_hcas
from linkcheck.facts.nccl_ranks import ClusterNccl, cabled_hcas, cluster_nccl_facts
from linkcheck.model import Capture


class TrafficOutcome(msgspec.Struct, frozen=True):
    """How one traffic test of the cluster came out, as its pair diagnosis judged it: `pass`, `slow` (a throughput
    rule failed) or `inconclusive` (not measured, or the run stopped); the lowest rate any run of it measured, and
    the rules that fired on it. `pass_no` 2: the second pass, a slow test's node measured again with a good node."""

    label: str  # the cable's key, or a<->b through the switch
    a: str
    b: str
    state: str  # pass | slow | inconclusive
    lowest_gbps: float | None = None
    traps: tuple[str, ...] = ()
    pass_no: int = 1
    switched: bool = False

    @property
    def nodes(self) -> tuple[str, str]:
        return self.a, self.b

    def partner(self, node: str) -> str:
        return self.b if node == self.a else self.a


class ExpectedCluster(msgspec.Struct, frozen=True):
    """The cabling `linkcheck init` recorded in linkcheck.yaml's `cluster:` section: the direct cables (keys such as
    `a:p0<->b:p1`) and the nodes on the switch; `source` names the file."""

    cables: tuple[str, ...] = ()
    switch: tuple[str, ...] = ()
    source: str = "linkcheck.yaml"


def _ends(key: str) -> frozenset[str]:
    """A cable key's two ends, in either order: `a:p0<->b:p1` is the cable `b:p1<->a:p0` too."""
    return frozenset(key.split("<->"))


class CablingChanges(msgspec.Struct, frozen=True):
    """What differs from the recorded cabling: cables gone and new, switch nodes gone and new."""

    cables_gone: tuple[str, ...] = ()
    cables_new: tuple[str, ...] = ()
    switch_gone: tuple[str, ...] = ()
    switch_new: tuple[str, ...] = ()

    @property
    def any(self) -> bool:
        return bool(self.cables_gone or self.cables_new or self.switch_gone or self.switch_new)


class ClusterFacts(msgspec.Struct, frozen=True):
    """The nodes in the hosts' order, the topology inferred from them, each node's forwarding state, how each
    traffic test came out (empty when no traffic was sent) and the NCCL run across every node (None: not run)."""

    nodes: Mapping[str, NodeFacts]
    topology: Topology
    forwarding: Mapping[str, Forwarding] = {}
    tests: tuple[TrafficOutcome, ...] = ()
    expected: ExpectedCluster | None = None  # linkcheck.yaml's recorded cabling, when a config has one
    # Why a node's LLDP neighbours could not be read (lldpctl missing, lldpd not running): LLDP is optional.
    lldp_unread: Mapping[str, str] = {}
    nccl: ClusterNccl | None = None
    drift: ClusterDrift | None = None  # against a baseline (`--baseline`); the CLUSTER_DRIFT_* rules judge it

    def unavailable(self, name: str) -> dict[str, str]:
        """Every fact group the node could not give, the pair's and the cluster's."""
        fwd = self.forwarding.get(name)
        own = dict(self.nodes[name].unavailable)
        if fwd is None:
            return own | {g: "not inspected for a cluster" for g in CLUSTER_GROUPS}
        return own | dict(fwd.unavailable)


def hops(topology: Topology) -> dict[str, str]:
    """Each addressed CX-7 port on a cable or a switch segment (`node:netdev`), and the hop it is on (`cable KEY`,
    `switch segment SUBNET`): the ports the cluster's traffic crosses."""
    out: dict[str, str] = {}
    for cable in topology.cables:
        for path in cable.paths:
            out.update({e.label: f"cable {cable.key}" for e in (path.a, path.b)})
    for segment in topology.segments:
        out.update({end.label: f"switch segment {segment.subnet}" for end in segment.endpoints})
    return out


def hop_mtus(facts: ClusterFacts) -> set[int]:
    """The MTUs the cluster's hops run (`hops`); the largest is the one a hop below it is raised to (MTU_MISMATCH)."""
    on = hops(facts.topology)
    return {fn.mtu for node in facts.nodes.values() for fn in node.functions if fn.label in on and fn.mtu}


def with_nccl(facts: ClusterFacts, captures: Sequence[Capture]) -> ClusterFacts:
    """The facts with the NCCL run across every node that `captures` hold (unchanged when they hold none)."""
    run = cluster_nccl_facts(facts.nodes, captures, facts.topology.layout)
    return msgspec.structs.replace(facts, nccl=run) if run is not None else facts


def neighbours(topology: Topology) -> dict[str, set[str]]:
    """Nodes one hop apart: a direct cable, or both on one switch segment."""
    out: dict[str, set[str]] = {n: set() for n in topology.nodes}
    for cable in topology.cables:
        out[cable.a].add(cable.b)
        out[cable.b].add(cable.a)
    for segment in topology.segments:
        for x, y in itertools.permutations(segment.nodes, 2):
            out[x].add(y)
    return out


def _shortest_paths(start: str, goal: str, adjacent: Mapping[str, set[str]]) -> list[list[str]]:
    """Every shortest path from start to goal (breadth first), as lists of nodes."""
    paths: list[list[str]] = [[start]]
    while paths:
        done = [p for p in paths if p[-1] == goal]
        if done:
            return done
        seen = {n for p in paths for n in p}
        paths = [[*p, n] for p in paths for n in sorted(adjacent[p[-1]]) if n not in seen]
    return []


def transits(topology: Topology) -> dict[str, list[str]]:
    """Per node, the pairs of non-neighbours whose shortest paths run through it (`a<->c`)."""
    adjacent = neighbours(topology)
    out: dict[str, list[str]] = defaultdict(list)
    for x, z in itertools.combinations(topology.nodes, 2):
        if z in adjacent[x]:
            continue
        inner = {n for path in _shortest_paths(x, z, adjacent) for n in path[1:-1]}
        for node in sorted(inner):
            out[node].append(f"{x}<->{z}")
    return dict(out)


def _cx7_subnets(node: NodeFacts) -> list[ipaddress.IPv4Network]:
    return sorted({ipaddress.IPv4Interface(c).network for f in node.functions for c in f.ipv4})


def _routed(node: NodeFacts, subnet: ipaddress.IPv4Network) -> bool:
    """A route other than the default one covers the subnet: the default route leads out of the management NIC."""
    for dst, _ in node.routes:
        if dst == "default":
            continue
        try:
            net = ipaddress.ip_network(dst if "/" in dst else f"{dst}/32", strict=False)
        except ValueError:
            continue
        if isinstance(net, ipaddress.IPv4Network) and subnet.subnet_of(net):
            return True
    return False


class MissingRoute(msgspec.Struct, frozen=True):
    """A non-neighbour's subnet that a node has no route to, and the neighbour address to route it through."""

    to: str
    subnet: str
    via: str | None  # an address of a neighbour that shares a cable or segment with both, when one does


def _shared_address(node: NodeFacts, other: NodeFacts) -> str | None:
    """The other node's address in the lowest subnet that both have (the gateway for a route through it)."""
    mine = set(_cx7_subnets(node))
    shared = sorted((iface.network, iface.ip) for fn in other.functions for c in fn.ipv4
                    if (iface := ipaddress.IPv4Interface(c)).network in mine)
    return str(shared[0][1]) if shared else None


def missing_routes(facts: ClusterFacts, name: str) -> list[MissingRoute]:
    """Subnets of each non-neighbour that `name` has no route to. A non-neighbour counts as reached when some
    route covers one of its subnets; only when none does are all of them listed."""
    adjacent = neighbours(facts.topology)
    node = facts.nodes[name]
    out = []
    for other in facts.topology.nodes:
        if other == name or other in adjacent[name]:
            continue
        subnets = _cx7_subnets(facts.nodes[other])
        if not subnets or any(_routed(node, s) for s in subnets):
            continue
        paths = _shortest_paths(name, other, adjacent)
        hop = paths[0][1] if paths and len(paths[0]) > 2 else None
        via = _shared_address(node, facts.nodes[hop]) if hop else None
        out += [MissingRoute(other, str(s), via) for s in subnets]
    return out


def ring_order(topology: Topology) -> list[str]:
    """The ring's nodes in cable order, from the first node; [] when the layout is not a ring."""
    if not topology.layout.startswith("ring"):
        return []
    adjacent = neighbours(topology)
    order = [topology.nodes[0]]
    while len(order) < len(topology.nodes):
        nxt = sorted(adjacent[order[-1]] - set(order))
        if not nxt:
            return []
        order.append(nxt[0])
    return order


def ring_recabling(topology: Topology) -> dict[str, tuple[str, str]]:
    """Per ring cable that is not cabled p0 to the next node's p1: (node whose p0, node whose p1) it should join,
    in the direction around the ring that moves the fewest cables."""
    order = ring_order(topology)
    if not order:
        return {}
    by_pair = {frozenset((c.a, c.b)): c for c in topology.cables}
    best: dict[str, tuple[str, str]] | None = None
    for ring in (order, [order[0], *reversed(order[1:])]):
        wrong: dict[str, tuple[str, str]] = {}
        for x, y in zip(ring, [*ring[1:], ring[0]], strict=True):
            cable = by_pair[frozenset((x, y))]
            if _cage(cable, x) != "p0" or _cage(cable, y) != "p1":
                wrong[cable.key] = (x, y)
        if best is None or len(wrong) < len(best):
            best = wrong
    return best or {}


def _cage(cable: Cable, node: str) -> str | None:
    return cable.a_cage if cable.a == node else cable.b_cage


class HcaCopy(msgspec.Struct, frozen=True):
    """A node's NCCL_IB_HCA judged against its own cabling and the others': the devices it selects that are not
    on the node's cabled cages, its own cabled devices, the other nodes whose cabled devices it selects exactly
    (the node it was copied from), and its cabled cages of which it selects no device (`p0 (rocep1s0f0,...)`)."""

    foreign: tuple[str, ...]
    own: tuple[str, ...]
    fits: tuple[str, ...]
    missed: tuple[str, ...] = ()


def hca_copy(facts: ClusterFacts, name: str) -> HcaCopy | None:
    """None when the node shows no cabled HCA (nothing to judge its NCCL_IB_HCA by); nothing foreign when it sets
    none, or an empty one (NCCL then uses every HCA)."""
    node = facts.nodes[name]
    setting = node.nccl.get("NCCL_IB_HCA")
    own = cabled_hcas(node)
    if not own:
        return None
    if not setting or not setting.strip():
        return HcaCopy(foreign=(), own=own, fits=())
    selected = select_hcas(setting, [f.rdma_dev for f in node.functions if f.rdma_dev])
    foreign = tuple(d for d in selected if d not in own)
    cages: dict[str, list[str]] = {}
    for fn in node.functions:
        if fn.rdma_dev in own and fn.cage:
            cages.setdefault(fn.cage, []).append(fn.rdma_dev)
    missed = tuple(f"{cage} ({','.join(devs)})" for cage, devs in sorted(cages.items())
                   if not set(devs) & set(selected))
    fits = []
    for other_name, other in facts.nodes.items():
        theirs = cabled_hcas(other)
        devices = [f.rdma_dev for f in other.functions if f.rdma_dev]
        # Same device names on every GB10 (rocep1s0f0 ...): the setting means the same devices on the other node.
        if other_name != name and theirs and set(select_hcas(setting, devices)) == set(theirs):
            fits.append(other_name)
    return HcaCopy(foreign=foreign, own=own, fits=tuple(fits), missed=missed)


class Partners(msgspec.Struct, frozen=True):
    """A node's traffic tests by partner: those that measured (pass or slow), the slow ones, and whether the node is
    slow with every partner while some test it is not in passed (the node, not its cables, is at fault)."""

    tested: tuple[str, ...]
    slow: tuple[str, ...]
    slow_everywhere: bool


def partners(facts: ClusterFacts, name: str) -> Partners | None:
    """None when no test of the node measured anything. A partner met twice (the second pass) counts as slow only
    when it was slow both times; two partners at least, so a single slow cable never names a node."""
    mine = [t for t in facts.tests if name in t.nodes and t.state != "inconclusive"]
    if not mine:
        return None
    by_partner: dict[str, list[bool]] = defaultdict(list)
    for t in mine:
        by_partner[t.partner(name)].append(t.state == "slow")
    slow = tuple(p for p, states in by_partner.items() if all(states))
    others_pass = any(t.state == "pass" and name not in t.nodes for t in facts.tests)
    return Partners(tuple(by_partner), slow,
                    len(by_partner) >= 2 and len(slow) == len(by_partner) and others_pass)


def cable_outcome(facts: ClusterFacts, key: str) -> TrafficOutcome | None:
    """The first pass's outcome of a direct cable (None: not tested)."""
    return next((t for t in facts.tests if t.label == key and t.pass_no == 1), None)


def swap_partner(facts: ClusterFacts, cable: Cable) -> Cable | None:
    """A cable that passed, to swap with a slow one: the slowness follows the cable, or stays with the cages."""
    for other in facts.topology.cables:
        outcome = cable_outcome(facts, other.key)
        if other.key != cable.key and outcome is not None and outcome.state == "pass":
            return other
    return None


def cabling_changes(facts: ClusterFacts) -> CablingChanges | None:
    """The live cabling against the recorded one (None: nothing recorded). A node that could not be inspected shows
    no cable: its recorded cables are not counted as gone (its own finding says it was not read)."""
    expected = facts.expected
    if expected is None:
        return None
    lost = {f.subject for f in facts.topology.flagged("uninspected")}
    live = {_ends(c.key): c.key for c in facts.topology.cables}
    recorded = {_ends(k): k for k in expected.cables}
    gone = [k for e, k in recorded.items() if e not in live and not {x.split(":", 1)[0] for x in e} & lost]
    switched = {n for s in facts.topology.segments for n in s.nodes}
    return CablingChanges(tuple(sorted(gone)), tuple(sorted(k for e, k in live.items() if e not in recorded)),
                          tuple(n for n in expected.switch if n not in switched and n not in lost),
                          tuple(n for n in facts.topology.nodes if n in switched and n not in expected.switch))

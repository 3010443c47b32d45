"""The cluster's cabling, inferred from what each node shows: its CX-7 netdevs, their addresses, carrier and MACs,
and the MACs its neighbour table resolved.

A subnet whose addresses sit on exactly two nodes is a direct cable between them (a twin path; the two twins of
one cage make one cable, cage to cage). A subnet whose addresses sit on three or more nodes is a switch segment.
"Two nodes", not "two addresses": the twins-on-one-/24 layout NVIDIA once published puts four addresses of two
nodes in one subnet over one cable.

Where the nodes run lldpd, LLDP says what is at the other end of each port: another inspected node (its port MAC, or
its hostname with the port's name) confirms a cable cage to cage, or names the cage it really leads to when the
addressing says otherwise; a device that is no inspected node (a switch) makes a two-node subnet a switch segment,
which the addressing alone cannot tell from a direct pair. Twins of one cage share the cage's port, so a neighbour
is matched by cage, not by twin.

Layouts (spark-link.md s.10): `pair` (two nodes direct), `ring3` (each node's p0 to the next node's p1), `ringN`
for longer rings, `switch` (every node on the switch's segments), `mixed` (direct cables and a switch at once), and
`unknown` for anything else (a chain, a node cut off, nothing addressed). NVIDIA documents the pair, the ring of
exactly three and a switch (its helper capped at four nodes); every departure is a flag, as is each fault the
cabling shows.
"""

from __future__ import annotations

import ipaddress
from collections import defaultdict
from collections.abc import Mapping, Sequence

import msgspec

from linkcheck.facts.model import Function, NodeFacts
from linkcheck.parsers.lldp import LldpNeighbour


class Endpoint(msgspec.Struct, frozen=True):
    """One address of one CX-7 netdev: where a cable or a switch port ends."""

    node: str
    netdev: str
    address: str  # CIDR, e.g. 192.168.100.10/24
    cage: str | None = None  # phys_port_name: p0 or p1
    domain: str | None = None  # PCI domain: 0000 or 0002, the two PCIe x4 links
    mac: str | None = None
    up: bool | None = None  # carrier; None: unknown

    @property
    def label(self) -> str:
        return f"{self.node}:{self.netdev}"

    @property
    def ip(self) -> str:
        return self.address.split("/", 1)[0]


class TwinPath(msgspec.Struct, frozen=True):
    """One twin of one node facing one twin of another, in their own subnet."""

    a: Endpoint
    b: Endpoint
    subnet: str
    neighbour_confirmed: bool = False  # a neighbour table resolved the far address to the far twin's own MAC
    lldp_confirmed: bool = False  # LLDP at an end shows the far node's cage

    @property
    def key(self) -> str:
        return f"{self.a.label}<->{self.b.label}"


class Cable(msgspec.Struct, frozen=True):
    """One cable, cage to cage, and the twin paths it carries."""

    a: str
    a_cage: str | None
    b: str
    b_cage: str | None
    paths: tuple[TwinPath, ...]

    @property
    def key(self) -> str:
        return f"{self.a}:{self.a_cage or '?'}<->{self.b}:{self.b_cage or '?'}"


class Segment(msgspec.Struct, frozen=True):
    """A subnet shared by three or more nodes, or by two that LLDP shows behind a switch: one L2 domain."""

    subnet: str
    endpoints: tuple[Endpoint, ...]
    switches: tuple[str, ...] = ()  # the devices LLDP shows at the nodes' ports (`sw1 port Ethernet12`)

    @property
    def nodes(self) -> tuple[str, ...]:
        return tuple(sorted({e.node for e in self.endpoints}))


class Flag(msgspec.Struct, frozen=True):
    """Something about the cabling a person should know: a departure from NVIDIA's layouts, or a fault."""

    kind: str  # mixed | ring_same_port | dangling | unaddressed | isolated | unsupported | twins_share_subnet |
    # neighbour_mismatch | lldp_mismatch | link_down | unmatched | duplicate_address | uninspected | far_unknown
    subject: str
    message: str


class Topology(msgspec.Struct, frozen=True):
    """The nodes, their cables and switch segments, the layout's name, and the flags."""

    nodes: tuple[str, ...]
    layout: str  # pair | ring3 | ring4 | ringN | switch | mixed | unknown
    cables: tuple[Cable, ...] = ()
    segments: tuple[Segment, ...] = ()
    flags: tuple[Flag, ...] = ()

    @property
    def supported(self) -> bool | None:
        """A layout NVIDIA documents; None when a node was not inspected (its cables are not known)."""
        if self.incomplete:
            return None
        return not any(f.kind == "unsupported" for f in self.flags)

    @property
    def standing(self) -> str:
        """The layout against NVIDIA's documents, in words, for the reports."""
        if self.supported is None:
            return "not known: a node was not inspected"
        return "a layout NVIDIA documents" if self.supported else "departs from NVIDIA layouts"

    @property
    def incomplete(self) -> bool:
        """A node was not inspected: its cables, and so the layout, are not known."""
        return any(f.kind == "uninspected" for f in self.flags)

    def flagged(self, kind: str) -> tuple[Flag, ...]:
        return tuple(f for f in self.flags if f.kind == kind)


def one_cable(topology: Topology) -> bool:
    """Two nodes and no switch seen between them: a pair, judged as one cable by the pair's rules whatever named its
    nodes and whatever its cable's state (a cable with no carrier, or a node not inspected, is still the pair's one
    cable)."""
    return len(topology.nodes) == 2 and not topology.segments


def _endpoints(facts: NodeFacts) -> list[Endpoint]:
    return [Endpoint(node=facts.name, netdev=f.netdev, address=cidr, cage=f.cage, domain=f.domain, mac=f.mac,
                     up=f.carrier) for f in facts.functions for cidr in f.ipv4]


def _subnet(address: str) -> str:
    return str(ipaddress.ip_interface(address).network)


def _pair_up(subnet: str, ends: list[Endpoint], order: Mapping[str, int]) -> tuple[list[TwinPath], list[Endpoint]]:
    """Match the endpoints of a two-node subnet across the nodes; with more than one on a side, same PCI domain
    first, then same cage (NVIDIA's layouts pair domain with domain, as pair.py does)."""
    first, second = sorted({e.node for e in ends}, key=order.__getitem__)
    options = sorted(((n, f) for n in ends if n.node == first for f in ends if f.node == second),
                     key=lambda o: (o[0].domain != o[1].domain, o[0].cage != o[1].cage, o[0].netdev, o[1].netdev))
    paths: list[TwinPath] = []
    taken: set[str] = set()
    for near, far in options:
        if near.label in taken or far.label in taken:
            continue
        taken |= {near.label, far.label}
        paths.append(TwinPath(a=near, b=far, subnet=subnet))
    paths.sort(key=lambda p: (p.a.domain or "", p.a.netdev))
    return paths, [e for e in ends if e.label not in taken]


class LldpPeer(msgspec.Struct, frozen=True):
    """What LLDP shows at the other end of a port: an inspected node's cage (`node`, `cage`; the cage unknown when
    only the node could be told), or a device that is no inspected node (`node` None: a switch), as `shown`."""

    shown: str
    node: str | None = None
    cage: str | None = None


def _short(name: str | None) -> str:
    return (name or "").split(".", 1)[0].lower()


def lldp_peer(neighbour: LldpNeighbour, nodes: Mapping[str, NodeFacts], macs: Mapping[str, Function]) -> LldpPeer:
    """The inspected node an LLDP neighbour is: by its port MAC (lldpd's port id on Linux), else by its system name
    (the hostname, short or fully qualified) with the port named by its port id or description; else a device
    that is none of them."""
    port = neighbour.port_id or ""
    if neighbour.port_id_type == "mac" and (fn := macs.get(port.lower())) is not None:
        return LldpPeer(fn.label, fn.node, fn.cage)
    by_name = next((f for f in nodes.values() if f.hostname and _short(f.hostname) == _short(neighbour.system_name)),
                   None)
    if by_name is not None:
        fn = next((f for f in by_name.functions if f.netdev in (neighbour.port_id, neighbour.port_descr)), None)
        return LldpPeer(fn.label if fn else f"node {by_name.name}", by_name.name, fn.cage if fn else None)
    device = neighbour.system_name or neighbour.chassis_id or "a device without a name"
    return LldpPeer(f"{device} port {neighbour.port_descr or neighbour.port_id or '?'}")


def _peers(nodes: Mapping[str, NodeFacts], lldp: Mapping[str, Sequence[LldpNeighbour]],
           macs: Mapping[str, Function]) -> dict[str, tuple[LldpPeer, ...]]:
    """Per `node:netdev`, what LLDP shows at the other end of its port: what any twin of its cage saw (the twins
    share the cage's port and cable; which twin receives the frames is the NIC's affair)."""
    by_port: dict[tuple[str, str], list[LldpPeer]] = defaultdict(list)
    for name, seen in lldp.items():
        cages = {f.netdev: f.cage for f in nodes[name].functions} if name in nodes else {}
        for neighbour in seen:
            peer = lldp_peer(neighbour, nodes, macs)
            if peer.node != name:  # a node's own frames looped back say nothing of the cable
                by_port[(name, cages.get(neighbour.interface) or neighbour.interface)].append(peer)
    out = {}
    for name, facts in nodes.items():
        for fn in facts.functions:
            seen_here = by_port.get((name, fn.cage or fn.netdev), [])
            if seen_here:
                out[fn.label] = tuple(dict.fromkeys(seen_here))
    return out


def _lldp_check(path: TwinPath, peers: Mapping[str, tuple[LldpPeer, ...]]) -> tuple[TwinPath, list[Flag]]:
    """The path with what LLDP says at each end: the far node's cage (confirmed), or another node's cage."""
    confirmed = False
    flags = []
    for near, far in ((path.a, path.b), (path.b, path.a)):
        for peer in peers.get(near.label, ()):
            if peer.node is None:
                continue
            if peer.node == far.node and peer.cage in (None, far.cage):
                confirmed = confirmed or peer.cage is not None
                continue
            flags.append(Flag("lldp_mismatch", near.label, f"{near.label} is addressed to face {far.label}, but LLDP "
                              f"shows {peer.shown} at the other end of its cable: the cable and the addressing "
                              "disagree"))
    return msgspec.structs.replace(path, lldp_confirmed=confirmed), flags


def _by_mac(nodes: Mapping[str, NodeFacts]) -> dict[str, Function]:
    return {f.mac.lower(): f for facts in nodes.values() for f in facts.functions if f.mac}


def _confirm(path: TwinPath, nodes: Mapping[str, NodeFacts], macs: Mapping[str, Function]) -> tuple[TwinPath,
                                                                                                     list[Flag]]:
    """The path with what the two neighbour tables say about it: confirmed, or a MAC of another netdev."""
    confirmed = False
    flags = []
    for near, far in ((path.a, path.b), (path.b, path.a)):
        for entry in nodes[near.node].neighbours:
            if entry.ip != far.ip or (entry.dev is not None and entry.dev != near.netdev) or not entry.mac:
                continue
            if far.mac and entry.mac == far.mac.lower():
                confirmed = True
                continue
            owner = macs.get(entry.mac)
            whose = f"{owner.node}:{owner.netdev}'s" if owner else "an unknown"
            flags.append(Flag("neighbour_mismatch", near.label,
                              f"{near.label} resolves {far.ip} ({far.label}) to {whose} MAC {entry.mac}: its "
                              "traffic lands on another function than the twin it addresses"))
    return msgspec.structs.replace(path, neighbour_confirmed=confirmed), flags


def _cables(paths: list[TwinPath], order: Mapping[str, int]) -> tuple[Cable, ...]:
    """Twin paths grouped into cables by the two cages they join (a path without a cage is its own cable)."""
    grouped: dict[tuple[str, str, str, str], list[TwinPath]] = defaultdict(list)
    for path in paths:
        a, b = (path.a, path.b) if order[path.a.node] <= order[path.b.node] else (path.b, path.a)
        path = msgspec.structs.replace(path, a=a, b=b)
        grouped[(a.node, a.cage or f"?{a.netdev}", b.node, b.cage or f"?{b.netdev}")].append(path)
    cables = [Cable(a=k[0], a_cage=v[0].a.cage, b=k[2], b_cage=v[0].b.cage,
                    paths=tuple(sorted(v, key=lambda p: (p.a.domain or "", p.a.netdev))))
              for k, v in grouped.items()]
    return tuple(sorted(cables, key=lambda c: (order[c.a], order[c.b], c.a_cage or "", c.b_cage or "")))


def _path_flags(cable: Cable) -> list[Flag]:
    flags = []
    subnets = [p.subnet for p in cable.paths]
    if len(set(subnets)) < len(subnets):
        flags.append(Flag("twins_share_subnet", cable.key, f"cable {cable.key}: its twins share a subnet "
                          f"({', '.join(sorted(set(subnets)))}): routing can put both flows on one PCIe x4 link"))
    for path in cable.paths:
        down = [e.label for e in (path.a, path.b) if e.up is False]
        if down:
            flags.append(Flag("link_down", path.key, f"{path.key}: addressed, but no carrier on {', '.join(down)}"))
    return flags


def _lldp_hint(label: str, peers: Mapping[str, tuple[LldpPeer, ...]]) -> str:
    shown = sorted({p.shown for p in peers.get(label, ())})
    return f"; LLDP shows {', '.join(shown)} at its other end" if shown else ""


def _loose_ends(nodes: Mapping[str, NodeFacts], used: set[tuple[str, str]], alone: list[Endpoint],
                macs: Mapping[str, Function], peers: Mapping[str, tuple[LldpPeer, ...]], lost: set[str]) -> list[Flag]:
    """Ports with carrier that lead nowhere linkcheck can see: alone in their subnet, or without an address. Where a
    node was not inspected, a port alone in its subnet most likely faces that node (its addresses are unknown):
    `far_unknown`, not a cable that leads nowhere."""
    flags = []
    for end in alone:
        if end.up is False:
            continue
        if lost:
            flags.append(Flag("far_unknown", end.label, f"{end.label} ({end.address}) has carrier and no inspected "
                              f"node has an address in {_subnet(end.address)}: its far end is most likely node "
                              f"{', '.join(sorted(lost))}, which was not inspected"))
            continue
        reached = sorted({f"{o.node}:{o.netdev}" for n in nodes[end.node].neighbours if n.mac and
                          n.dev == end.netdev and (o := macs.get(n.mac)) is not None and o.node != end.node})
        hint = f"; its neighbour table reaches {', '.join(reached)} (addressed in another subnet?)" if reached else ""
        flags.append(Flag("dangling", end.label, f"{end.label} ({end.address}) has carrier but no other node has "
                          f"an address in {_subnet(end.address)}: a cable that leads nowhere{hint}"
                          f"{_lldp_hint(end.label, peers)}"))
    for facts in nodes.values():
        for fn in facts.functions:
            if fn.carrier and not fn.ipv4 and (facts.name, fn.netdev) not in used:
                lldp = _lldp_hint(fn.label, peers)
                flags.append(Flag("unaddressed", fn.label, f"{fn.label} has carrier but no IPv4 address: its cable "
                                  "carries no test" + (lldp if lldp else ", and where it leads cannot be told")))
    return flags


def _layout(names: tuple[str, ...], cables: tuple[Cable, ...], segments: tuple[Segment, ...],
            lost: set[str]) -> str:
    if lost:
        return "unknown"  # a node that was not inspected shows no cable: what is seen is not the layout
    if cables and segments:
        return "mixed"
    if segments:
        on_switch = {n for s in segments for n in s.nodes}
        return "switch" if on_switch == set(names) else "unknown"
    if not cables:
        return "unknown"
    neighbours: dict[str, set[str]] = defaultdict(set)
    for cable in cables:
        neighbours[cable.a].add(cable.b)
        neighbours[cable.b].add(cable.a)
    if not _connected(names, neighbours):
        return "unknown"
    if len(names) == 2:
        return "pair"
    if all(len(neighbours[n]) == 2 for n in names) and len(cables) == len(names):
        return f"ring{len(names)}"
    return "unknown"


def _connected(names: tuple[str, ...], neighbours: Mapping[str, set[str]]) -> bool:
    seen = {names[0]}
    todo = [names[0]]
    while todo:
        for nxt in neighbours.get(todo.pop(), set()) - seen:
            seen.add(nxt)
            todo.append(nxt)
    return seen == set(names)


def _layout_flags(topo: Topology, lost: set[str]) -> list[Flag]:
    flags = []
    n = len(topo.nodes)
    if topo.layout == "mixed":
        flags.append(Flag("mixed", "cluster", "direct cables and a switch at once: NVIDIA says never connect some "
                          "nodes directly and others through a switch"))
    if topo.layout.startswith("ring"):
        for cable in topo.cables:
            if cable.a_cage and cable.a_cage == cable.b_cage:
                flags.append(Flag("ring_same_port", cable.key, f"ring cable {cable.key} joins {cable.a_cage} to "
                                  f"{cable.b_cage}: a ring runs each node's p0 to the next node's p1, else device i "
                                  "of two nodes lands on different links (NCCL: ibv_modify_qp ... 110)"))
    reasons = {
        "mixed": "some nodes direct and others switched is not a layout NVIDIA supports",
        "unknown": "not a layout NVIDIA documents (two nodes direct, a ring of exactly three, or a switch)",
    }
    if topo.layout.startswith("ring") and n > 3:
        reasons[topo.layout] = f"a ring of {n}: NVIDIA documents a ring of exactly three (use a switch beyond)"
    if topo.layout in reasons and not lost:
        flags.append(Flag("unsupported", topo.layout, reasons[topo.layout]))
    linked = {c.a for c in topo.cables} | {c.b for c in topo.cables} | {n for s in topo.segments for n in s.nodes}
    flags += [Flag("isolated", name, f"node {name} shows no cable or switch segment to any other node")
              for name in topo.nodes if name not in linked and name not in lost and n > 1]
    return flags


def infer_topology(nodes: Mapping[str, NodeFacts],
                   lldp: Mapping[str, Sequence[LldpNeighbour]] | None = None) -> Topology:
    """The cluster's cables, switch segments, layout and flags, from every node's facts (in the hosts' order) and,
    where the nodes run lldpd, their LLDP neighbours."""
    names = tuple(nodes)
    order = {name: i for i, name in enumerate(names)}
    macs = _by_mac(nodes)
    peers = _peers(nodes, lldp or {}, macs)
    lost = {name for name, facts in nodes.items() if "addresses" in facts.unavailable}
    flags = [Flag("uninspected", name, f"node {name}: addresses unknown ({nodes[name].unavailable['addresses']})")
             for name in names if name in lost]
    by_subnet: dict[str, list[Endpoint]] = defaultdict(list)
    for facts in nodes.values():
        for end in _endpoints(facts):
            by_subnet[_subnet(end.address)].append(end)
    paths: list[TwinPath] = []
    segments: list[Segment] = []
    alone: list[Endpoint] = []
    for subnet, ends in sorted(by_subnet.items()):
        flags += _duplicates(ends)
        held = {e.node for e in ends}
        if len(held) == 1:
            alone += ends
        elif len(held) == 2 and (switches := _switches(ends, peers)):
            segments.append(Segment(subnet, tuple(sorted(ends, key=lambda e: (order[e.node], e.netdev))), switches))
        elif len(held) == 2:
            matched, left = _pair_up(subnet, ends, order)
            paths += matched
            flags += [Flag("unmatched", e.label, f"{e.label} ({e.address}) has no twin left to face in {subnet}")
                      for e in left]
        else:
            segments.append(Segment(subnet, tuple(sorted(ends, key=lambda e: (order[e.node], e.netdev))),
                                    _switches(ends, peers)))
    confirmed = []
    for path in paths:
        checked, said = _confirm(path, nodes, macs)
        checked, seen = _lldp_check(checked, peers)
        confirmed.append(checked)
        flags += said + seen
    cables = _cables(confirmed, order)
    for cable in cables:
        flags += _path_flags(cable)
    used = {(e.node, e.netdev) for p in confirmed for e in (p.a, p.b)}
    flags += _loose_ends(nodes, used, alone, macs, peers, lost)
    topo = Topology(nodes=names, layout=_layout(names, cables, tuple(segments), lost), cables=cables,
                    segments=tuple(segments))
    return msgspec.structs.replace(topo, flags=tuple(_layout_flags(topo, lost) + flags))


def _switches(ends: list[Endpoint], peers: Mapping[str, tuple[LldpPeer, ...]]) -> tuple[str, ...]:
    """The devices that are no inspected node which LLDP shows at these ports: a switch between the two nodes.
    None when LLDP at one of the ports shows an inspected node: a direct cable then, as its addressing says (a
    switch that forwards LLDP, or a stale neighbour, is not enough to take the cable away)."""
    seen = [p for e in ends for p in peers.get(e.label, ())]
    if any(p.node is not None for p in seen):
        return ()
    return tuple(sorted({p.shown for p in seen}))


def _duplicates(ends: list[Endpoint]) -> list[Flag]:
    seen: dict[str, Endpoint] = {}
    flags = []
    for end in ends:
        if end.ip in seen:
            flags.append(Flag("duplicate_address", end.ip, f"{end.ip} is on {seen[end.ip].label} and {end.label}"))
        seen.setdefault(end.ip, end)
    return flags

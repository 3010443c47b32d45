"""NodeFacts of GB10 nodes cabled into pairs, rings and switches, for the topology and schedule tests.

Each node has the four CX-7 functions of spark-link.md s.1 (p0: enp1s0f0np0 + enP2p1s0f0np0, p1: enp1s0f1np1 +
enP2p1s0f1np1), MACs in the observed base/+1/+4/+5 pattern, and neighbour entries that resolve each peer address
to the peer twin's own MAC, as a healthy node's table holds them after traffic.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping, Sequence

from msgspec.structs import replace

from linkcheck.facts.model import Function, Neighbour, NodeFacts

# (netdev, bdf, cage, MAC offset)
GB10 = (("enp1s0f0np0", "0000:01:00.0", "p0", 0), ("enp1s0f1np1", "0000:01:00.1", "p1", 1),
        ("enP2p1s0f0np0", "0002:01:00.0", "p0", 4), ("enP2p1s0f1np1", "0002:01:00.1", "p1", 5))
TWINS = {"p0": ("enp1s0f0np0", "enP2p1s0f0np0"), "p1": ("enp1s0f1np1", "enP2p1s0f1np1")}


def spark(name: str, index: int, addrs: Mapping[str, str], cabled: Iterable[str] = ()) -> NodeFacts:
    """One node: `addrs` netdev -> CIDR, `cabled` the cages with carrier."""
    up = set(cabled)
    functions = tuple(Function(node=name, netdev=netdev, bdf=bdf, cage=cage,
                               mac=f"4c:bb:47:00:{index:02x}:{0x10 + off:02x}", carrier=cage in up,
                               operstate="up" if cage in up else "down",
                               ipv4=(addrs[netdev],) if netdev in addrs else ())
                      for netdev, bdf, cage, off in GB10)
    return NodeFacts(name=name, functions=tuple(sorted(functions, key=lambda f: f.netdev)))


def with_neighbours(nodes: Sequence[NodeFacts]) -> dict[str, NodeFacts]:
    """Each node's neighbour table: every other node's address in a subnet it shares, with that netdev's MAC."""
    out = {}
    for node in nodes:
        entries = []
        for fn in node.functions:
            nets = [ipaddress.ip_interface(c).network for c in fn.ipv4]
            for other in nodes:
                if other.name == node.name:
                    continue
                for peer in other.functions:
                    for cidr in peer.ipv4:
                        ip = ipaddress.ip_interface(cidr).ip
                        if any(ip in net for net in nets) and fn.carrier and peer.carrier:
                            entries.append(Neighbour(cidr.split("/")[0], fn.netdev, peer.mac))
        out[node.name] = replace(node, neighbours=tuple(entries))
    return out


def cabled(links: Sequence[tuple[str, str, str, str]], names: Sequence[str]) -> dict[str, NodeFacts]:
    """Nodes joined by direct cables `(node, cage, node, cage)`, one /24 per cable and twin (NVIDIA's ring
    addressing), numbered in the order given."""
    addrs: dict[str, dict[str, str]] = {n: {} for n in names}
    cages: dict[str, set[str]] = {n: set() for n in names}
    for i, (a, a_cage, b, b_cage) in enumerate(links):
        for twin in (0, 1):
            subnet = 10 + 2 * i + twin
            addrs[a][TWINS[a_cage][twin]] = f"192.168.{subnet}.{names.index(a) + 1}/24"
            addrs[b][TWINS[b_cage][twin]] = f"192.168.{subnet}.{names.index(b) + 1}/24"
        cages[a].add(a_cage)
        cages[b].add(b_cage)
    return with_neighbours([spark(n, i, addrs[n], cages[n]) for i, n in enumerate(names)])


def ring(names: Sequence[str], same_port: Sequence[int] = ()) -> dict[str, NodeFacts]:
    """A ring: node i's p0 to node i+1's p1 (NVIDIA's ring), except the cables in `same_port`, which join p0 to p0
    (the first such cable) or p1 to p1 (a later one, as the remaining free cages make it)."""
    free = {n: {"p0", "p1"} for n in names}
    links = []
    for i, a in enumerate(names):
        b = names[(i + 1) % len(names)]
        wanted = ("p0", "p0") if i in same_port else ("p0", "p1")
        a_cage = wanted[0] if wanted[0] in free[a] else next(iter(free[a]))
        b_cage = wanted[1] if wanted[1] in free[b] else next(iter(free[b]))
        if i in same_port:
            b_cage = a_cage if a_cage in free[b] else b_cage
        free[a].discard(a_cage)
        free[b].discard(b_cage)
        links.append((a, a_cage, b, b_cage))
    return cabled(links, names)


def switch(names: Sequence[str], cage: str = "p1", first_subnet: int = 100) -> dict[str, NodeFacts]:
    """Every node's `cage` twins on a switch: one subnet per twin (NVIDIA's switch playbook), host i at .i+1."""
    nodes = []
    for i, name in enumerate(names):
        addrs = {TWINS[cage][t]: f"192.168.{first_subnet + t}.{i + 1}/24" for t in (0, 1)}
        nodes.append(spark(name, i, addrs, {cage}))
    return with_neighbours(nodes)

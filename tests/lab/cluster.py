"""Cluster scenarios for the lab: three and four GB10 nodes cabled as a ring of veth pairs, or attached to a Linux
bridge in the lab's switch namespace, each node with its model, sysfs tree and real sshd like the pair's.

NVIDIA's layouts (spark-link.md s.10): a ring of three runs each node's p0 to the next node's p1, all four
interfaces addressed, one /24 per link and twin (six /24s); a switch takes each node's cabled cage, one /24 per
twin. On the hardware a cable joins two cages and carries both twins; in the lab each twin is its own veth pair,
domain 0000 to 0000 and 0002 to 0002, as the twins face each other through one cable.

Scenarios, with what `infer_topology` must say of them (`expected`):
- ring3: NVIDIA's ring of three.
- ring3-same-port: a ring of three cabled a:p0 to b:p0 and c:p1 to a:p1 (only b:p1 to c:p0 crossed).
- ring4: a ring of four, NVIDIA's cabling carried on (not a documented layout).
- ring8: eight nodes in a ring, cabled as the ring of three is (owners run them; not a documented layout).
- ring4-fabric-sockets: the ring of four with NCCL_SOCKET_IFNAME on the CX-7 netdevs of every node, so NCCL's
  bootstrap and sockets use the ring's own addresses (as sparkring runs them): IP must cross the node between two
  that share no cable.
- switch4: four nodes, cage p1 on the switch.
- mixed: three nodes on the switch by p1, and a:p0 cabled straight to b:p0 as well.
- ring3-hotplug: the ring of three with its a:p0<->b:p1 cable in the hot-plug state: both cages' twins run ~13 Gb/s
  per path, sent or received (spark-link s.0: the NIC's state until a reboot), and ib_write_lat on them takes ~31 us at
  48 KiB; the other cables are healthy.
- switch4-slow-node: the switch of four with node c's cage in the hot-plug state: slow with every partner.
- switch4-hca-copied: a on the switch by its p0 cage, b, c and d by p1; a's NCCL_IB_HCA names its own cabled
  HCAs and b's is a copy of a's (the head's setting copied to a worker cabled on the other cage).
- switch3-hca-copied: three nodes on the switch, a and c by p1, b by p0, and b's NCCL_IB_HCA the head's (a's p1
  HCAs, which have no carrier on b): the head's setting copied to a worker cabled on the other cage.
"""

from __future__ import annotations

import ipaddress
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from linkcheck.facts.nccl_ranks import RING_ENV
from tests.emulators.build import gb10_node, with_function
from tests.emulators.node import Cable, Neighbour, Node
from tests.lab.errors import LabError
from tests.lab.lab import Lab
from tests.lab.scenario import Wiring, specs_from_models
from tests.lab.spec import LabNodeSpec

TWINS = {"p0": ("enp1s0f0np0", "enP2p1s0f0np0"), "p1": ("enp1s0f1np1", "enP2p1s0f1np1")}
HCA_ENV = {"NCCL_IB_SUBNET_AWARE_ROUTING": "1"}
# The first NCCL with NCCL_IB_SUBNET_AWARE_ROUTING (spark-link.md s.10): a healthy ring runs it or later.
RING_NCCL = "2.30.7"
SWITCH = "s1"


@dataclass(frozen=True)
class Expected:
    """What topology inference must find in a cluster scenario."""

    layout: str
    cables: tuple[str, ...] = ()
    segments: int = 0
    flags: tuple[tuple[str, str], ...] = ()  # (kind, subject), sorted


@dataclass(frozen=True)
class Cluster:
    """Nodes (name -> {netdev: CIDR}), how their functions are cabled, and what inference must say."""

    names: tuple[str, ...]
    addrs: dict[str, dict[str, str]]
    wiring: dict[tuple[str, str], tuple[str, str] | str]
    expected: Expected
    cages: dict[str, set[str]] = field(default_factory=dict)
    slow: dict[tuple[str, str], float] = field(default_factory=dict)  # (node, cage) -> Gb/s per twin, both ways
    env: dict[str, dict[str, str]] = field(default_factory=dict)  # node -> NCCL_* set on it beyond the owner's


def _direct(names: Sequence[str], links: Sequence[tuple[str, str, str, str]], first_subnet: int = 10) -> Cluster:
    """Cables `(node, cage, node, cage)`, one /24 per cable and twin from 192.168.<first_subnet>.0/24 on."""
    addrs: dict[str, dict[str, str]] = {n: {} for n in names}
    wiring: dict[tuple[str, str], tuple[str, str] | str] = {}
    cages: dict[str, set[str]] = {n: set() for n in names}
    for i, (a, a_cage, b, b_cage) in enumerate(links):
        for twin in (0, 1):
            subnet = first_subnet + 2 * i + twin
            a_if, b_if = TWINS[a_cage][twin], TWINS[b_cage][twin]
            addrs[a][a_if] = f"192.168.{subnet}.{names.index(a) + 1}/24"
            addrs[b][b_if] = f"192.168.{subnet}.{names.index(b) + 1}/24"
            wiring[(a, a_if)], wiring[(b, b_if)] = (b, b_if), (a, a_if)
        cages[a].add(a_cage)
        cages[b].add(b_cage)
    return Cluster(tuple(names), addrs, wiring, Expected("unknown"), cages)


def _on_switch(cluster: Cluster, names: Sequence[str], cage: str = "p1") -> Cluster:
    """The cluster with `cage` of each of `names` on the switch, one /24 per twin (192.168.100 and .101)."""
    for name in names:
        for twin in (0, 1):
            netdev = TWINS[cage][twin]
            cluster.addrs[name][netdev] = f"192.168.{100 + twin}.{cluster.names.index(name) + 1}/24"
            cluster.wiring[(name, netdev)] = SWITCH
        cluster.cages[name].add(cage)
    return cluster


def ring3() -> Cluster:
    c = _direct("abc", [("a", "p0", "b", "p1"), ("b", "p0", "c", "p1"), ("c", "p0", "a", "p1")])
    return replace(c, expected=Expected("ring3", ("a:p0<->b:p1", "a:p1<->c:p0", "b:p0<->c:p1")))


def ring3_same_port() -> Cluster:
    c = _direct("abc", [("a", "p0", "b", "p0"), ("b", "p1", "c", "p0"), ("c", "p1", "a", "p1")])
    return replace(c, expected=Expected("ring3", ("a:p0<->b:p0", "a:p1<->c:p1", "b:p1<->c:p0"),
                                        flags=(("ring_same_port", "a:p0<->b:p0"), ("ring_same_port", "a:p1<->c:p1"))))


def ring4() -> Cluster:
    c = _direct("abcd", [("a", "p0", "b", "p1"), ("b", "p0", "c", "p1"), ("c", "p0", "d", "p1"),
                         ("d", "p0", "a", "p1")])
    return replace(c, expected=Expected("ring4", ("a:p0<->b:p1", "a:p1<->d:p0", "b:p0<->c:p1", "c:p0<->d:p1"),
                                        flags=(("unsupported", "ring4"),)))


def ring8() -> Cluster:
    """Eight nodes in a ring, NVIDIA's cabling carried on: each node's p0 to the next node's p1."""
    names = "abcdefgh"
    c = _direct(names, [(x, "p0", y, "p1") for x, y in zip(names, names[1:] + names[0], strict=True)])
    cables = tuple(sorted(f"{x}:p0<->{y}:p1" if x < y else f"{y}:p1<->{x}:p0"
                          for x, y in zip(names, names[1:] + names[0], strict=True)))
    return replace(c, expected=Expected("ring8", cables, flags=(("unsupported", "ring8"),)))


# NCCL's sockets on the CX-7 netdevs (matchIfList prefixes): bootstrap over the ring's own addresses.
FABRIC_SOCKETS = {"NCCL_SOCKET_IFNAME": "enp1s0f,enP2p1s0f"}


def ring4_fabric_sockets() -> Cluster:
    return replace(ring4(), env=dict.fromkeys("abcd", FABRIC_SOCKETS))


def switch4() -> Cluster:
    c = _on_switch(_direct("abcd", []), "abcd")
    return replace(c, expected=Expected("switch", segments=2))


def switch_by_cage(cages: dict[str, str]) -> Cluster:
    """Nodes on the switch, each by its own cage (node -> cage): still NVIDIA's switch layout, but one node's
    cabled HCAs are not another's."""
    c = _direct(tuple(cages), [])
    for name, cage in cages.items():
        c = _on_switch(c, [name], cage)
    return replace(c, expected=Expected("switch", segments=2))


def mixed() -> Cluster:
    c = _on_switch(_direct("abc", [("a", "p0", "b", "p0")], first_subnet=50), "abc")
    return replace(c, expected=Expected("mixed", ("a:p0<->b:p0",), segments=2,
                                        flags=(("mixed", "cluster"), ("unsupported", "mixed"))))


HOTPLUG_GBPS = 13.3  # per path in the hot-plug state (spark-link s.0: 13-15 Gb/s)
HOTPLUG_LATENCY_BASE_US = 1.52  # ib_write_lat's fixed cost in the hot-plug state (tests/emulators/scenarios.py)


def ring3_hotplug() -> Cluster:
    return replace(ring3(), slow={("a", "p0"): HOTPLUG_GBPS, ("b", "p1"): HOTPLUG_GBPS})


def switch4_slow_node() -> Cluster:
    return replace(switch4(), slow={("c", "p1"): HOTPLUG_GBPS})


def switch4_hca_copied() -> Cluster:
    head = {"NCCL_IB_HCA": "rocep1s0f0,roceP2p1s0f0"}  # a's own cabled HCAs: cage p0
    return replace(switch_by_cage({"a": "p0", "b": "p1", "c": "p1", "d": "p1"}), env={"a": head, "b": head})


def switch3_hca_copied() -> Cluster:
    return replace(switch_by_cage({"a": "p1", "b": "p0", "c": "p1"}),
                   env={"b": {"NCCL_IB_HCA": "rocep1s0f1,roceP2p1s0f1"}})


CLUSTER_SCENARIOS: dict[str, Callable[[], Cluster]] = {
    "ring3": ring3, "ring3-same-port": ring3_same_port, "ring4": ring4, "ring4-fabric-sockets": ring4_fabric_sockets,
    "ring8": ring8,
    "switch4": switch4, "mixed": mixed,
    "ring3-hotplug": ring3_hotplug, "switch4-slow-node": switch4_slow_node, "switch4-hca-copied": switch4_hca_copied,
    "switch3-hca-copied": switch3_hca_copied}


def _neighbours(node: Node, others: Sequence[Node]) -> tuple[Neighbour, ...]:
    """What a node's table holds after traffic: each peer address in a subnet it shares, with that twin's MAC."""
    out = []
    for fn in node.functions:
        if not fn.link_up:
            continue
        nets = [ipaddress.ip_interface(c).network for c in fn.ipv4]
        out += [Neighbour(cidr.split("/")[0], fn.netdev, peer.mac) for other in others for peer in other.functions
                if peer.link_up for cidr in peer.ipv4 if any(ipaddress.ip_interface(cidr).ip in n for n in nets)]
    return tuple(out)


def _nccl_env(cluster: Cluster) -> dict[str, str]:
    """What an owner sets for NCCL: subnet-aware routing, NVIDIA's ring settings on a ring, and on a ring of four or
    more NCCL_ALGO=Ring (Tree and PAT would connect nodes that share no cable)."""
    ring = cluster.expected.layout.startswith("ring")
    big_ring = ring and len(cluster.names) >= 4
    # On a ring, what NVIDIA's ring run sets (spark_cluster_setup.py): subnet-aware routing, no NIC fusion, no plugin.
    return {**HCA_ENV, **(dict(RING_ENV) if ring else {}), **({"NCCL_ALGO": "Ring"} if big_ring else {})}


def _modules(cluster: Cluster, name: str) -> dict[str, Cable]:
    """The module in each cabled cage of `name`: a direct cable's two ends read one serial (one cable), a node's
    cable to the switch its own."""
    out = {}
    for cage in sorted(cluster.cages[name]):
        far = cluster.wiring.get((name, TWINS[cage][0]))
        if isinstance(far, tuple):
            far_cage = next(c for c, twins in TWINS.items() if far[1] in twins)
            ends = sorted([f"{name}{cage}", f"{far[0]}{far_cage}"])
            key = "".join(ends)
        else:
            key = f"{name}{cage}-switch"
        out[cage] = Cable(vendor_sn=f"APF2509{zlib.crc32(key.encode()) % 10**7:07d}")
    return out


def cluster_models(cluster: Cluster) -> dict[str, Node]:
    """A GB10 model per node: the cabled cages' twins with carrier and their modules, the addresses, the neighbour
    tables."""
    models = {}
    for i, name in enumerate(cluster.names):
        cages = sorted(cluster.cages[name])
        addrs = {netdev: (cidr,) for netdev, cidr in cluster.addrs[name].items()}
        modules = _modules(cluster, name)
        node = gb10_node(f"spark-{name}", f"4c:bb:47:1{i}:00:10", addrs=addrs,
                         mtu=dict.fromkeys(cluster.addrs[name], 9000), cabled_cage=cages[0] if cages else None,
                         cable=modules[cages[0]] if cages else None, mgmt_ip=f"10.20.0.{21 + i}/24")
        node = replace(node, more_cables={c: m for c, m in modules.items() if c != node.cabled_cage})
        for fn in node.functions:
            node = with_function(node, fn.netdev, carrier=fn.cage in cages)
        slow = {fn.rdma_dev: gbps for fn in node.functions for (n, cage), gbps in cluster.slow.items()
                if n == name and fn.cage == cage}
        # A slow cage's ib_write_lat follows the same wire rate after the hot-plug state's fixed cost (1.52 us, as the
        # pair's hotplug-degraded model): ~31 us at 48 KiB.
        node = replace(node, perftest_rates={d: (g, g) for d, g in slow.items()}, perftest_caps=slow,
                       latency_rates={d: (HOTPLUG_LATENCY_BASE_US, g) for d, g in slow.items()})
        models[name] = replace(node, nccl_env={**_nccl_env(cluster), **cluster.env.get(name, {})},
                               versions={**node.versions, "nccl": RING_NCCL})
    return {name: replace(m, neighbours=_neighbours(m, [o for o in models.values() if o is not m]))
            for name, m in models.items()}


def cluster_specs(name: str, model_dir: Path) -> list[LabNodeSpec]:
    """Lab specs for a cluster scenario; its node models are written to `model_dir` as <node>.json."""
    cluster = CLUSTER_SCENARIOS[name]()
    model_dir.mkdir(parents=True, exist_ok=True)
    paths = {}
    for node, model in cluster_models(cluster).items():
        paths[node] = model_dir / f"{node}.json"
        paths[node].write_text(model.to_json(), encoding="utf-8")
    wiring: Wiring = cluster.wiring
    return specs_from_models(paths, wiring)


# The ring of four's routes (tests/cluster/test_cluster_rules.py RING4_ROUTES) at the lab's addresses: each node
# reaches the node it shares no cable with through the one between them.
RING4_LAB_ROUTES = {"a": ("198.19.12.0/24", "198.19.10.2"), "b": ("198.19.14.0/24", "198.19.12.3"),
                    "c": ("198.19.10.0/24", "198.19.12.2"), "d": ("198.19.12.0/24", "198.19.14.3")}
RING4_C_FROM_A = "198.19.12.3"  # c's address on its cable to b: a reaches it only through b


def route_ring4(lab: Lab) -> None:
    """Forwarding on and RING4_LAB_ROUTES in every node of a ring of four (ring4, ring4-fabric-sockets): a fresh
    namespace has neither, so only then does a reach c through b."""
    for node, (subnet, via) in RING4_LAB_ROUTES.items():
        _must(lab, node, ["sysctl", "-w", "net.ipv4.ip_forward=1"])
        _must(lab, node, ["ip", "route", "add", subnet, "via", via])


def docker_forward_drop(lab: Lab, node: str) -> None:
    """What Docker leaves in a node's netfilter, with the real iptables: the FORWARD policy DROP and a jump to an
    empty DOCKER-USER chain."""
    for argv in (["-N", "DOCKER-USER"], ["-A", "DOCKER-USER", "-j", "RETURN"], ["-A", "FORWARD", "-j", "DOCKER-USER"],
                 ["-P", "FORWARD", "DROP"]):
        _must(lab, node, ["iptables", *argv])


def _must(lab: Lab, node: str, argv: list[str]) -> None:
    done = lab.exec(node, argv)
    if done.returncode != 0:
        raise LabError(f"node {node}: `{' '.join(argv)}` exited {done.returncode}: {done.stderr.strip()}")

"""SINGLE_PCIE_PATH: both flows on one PCIe x4 link, from configuration, neighbour MACs or throughput."""

from __future__ import annotations

import ipaddress
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import msgspec
from msgspec.structs import replace

from linkcheck.diagnose.checks.fec import fec_evidence
from linkcheck.diagnose.observation import Observation, ShellText, sh
from linkcheck.facts.model import DataPath, Function, LinkFacts, NodeFacts
from linkcheck.facts.nccl_hca import nccl_functions, select_hcas
from linkcheck.model import Evidence


class SinglePathValues(msgspec.Struct, frozen=True):
    """Why one PCIe x4 link carries both flows, on which node, and the first fix."""

    what: str
    node: str
    remedy: ShellText


def _hca_list(twins: list[Function]) -> str:
    return ",".join(sorted(f.rdma_dev for f in twins if f.rdma_dev)) or "<both twins of the cabled cage>"


def _hca_remedy(twins: list[Function]) -> ShellText:
    return ShellText(f"export NCCL_IB_HCA={sh(_hca_list(twins))}  (both twins, one per PCIe link)")


def _path_remedy(facts: NodeFacts) -> ShellText:
    twins = [f for f in facts.functions if f.cage in facts.cabled_cages]
    return ShellText(f"check that each twin's peer IP resolves to that twin's MAC (ip neigh), "
                     f"and export NCCL_IB_HCA={sh(_hca_list(twins))}")


def _config(node: NodeFacts) -> Observation | None:
    used = node.used_functions
    chosen = nccl_functions(node)
    hca = node.nccl.get("NCCL_IB_HCA")
    if len(used) >= 2 and len({f.domain for f in used}) == 1:
        why = (f"every addressed twin is on PCI domain {used[0].domain} "
               f"({', '.join(f.netdev for f in used)}): one PCIe x4 link carries all traffic")
    elif hca and len(used) >= 2 and len({f.domain for f in chosen}) < 2:
        why = f"NCCL_IB_HCA={hca} selects {', '.join(f.rdma_dev or '?' for f in chosen) or 'no device'} only"
    else:
        return None
    twins = [f for f in node.functions if f.cage in node.cabled_cages]
    return Observation(subject=f"node {node.name}", fired=True, nodes=(node.name,),
                       values=SinglePathValues(what=why, node=node.name,
                                               remedy=_hca_remedy(twins)),
                       evidence=(Evidence("NCCL_IB_HCA", hca, node.nccl_sources.get("NCCL_IB_HCA", "not set")),)
                       + tuple(Evidence(f"{f.netdev} PCI function", f.bdf, "sysfs") for f in used))


def _suggested_address(twin: Function) -> str:
    """An address for an unaddressed twin: the addressed twin's host in the next /24 (NVIDIA's current layout
    puts the two twins in 192.168.100.0/24 and 192.168.101.0/24), or that layout itself."""
    if twin.ipv4:
        iface = ipaddress.ip_interface(twin.ipv4[0])
        if iface.network.prefixlen >= 24 and not iface.ip.is_link_local:
            return f"{iface.ip + 256}/{iface.network.prefixlen}"
    return "192.168.101.<host>/24 (and 192.168.100.<host>/24 on its twin)"


def _unaddressed_twins(node: NodeFacts) -> list[Observation]:
    """A twin of the cabled cage without IPv4 while its twin has one: the pair runs on one PCIe x4 link.

    NVIDIA's October 2025 netplan addressed one twin only (link-local on the domain-0000 netdevs)."""
    out = []
    for cage in node.cabled_cages:
        twins = [f for f in node.functions if f.cage == cage]
        addressed = [f for f in twins if f.ipv4]
        for idle in (f for f in twins if not f.ipv4 and addressed):
            other = addressed[0]
            state = "up" if idle.carrier else "down" if idle.carrier is False else "in an unknown state"
            address = _suggested_address(other)
            stanza = sh(f"{idle.netdev}: {{addresses: [{address}], dhcp4: false}}")
            out.append(Observation(
                subject=idle.label, fired=True, nodes=(node.name,),
                values=SinglePathValues(
                    what=f"{idle.netdev} ({idle.rdma_dev or '?'}, PCI {idle.bdf or '?'}), the twin of "
                         f"{other.netdev} in cabled cage {cage}, is {state} but has no IPv4 address, so it "
                         f"carries nothing and every flow uses {other.netdev}'s PCIe link",
                    node=node.name,
                    remedy=ShellText(f"address {sh(idle.netdev)} in a subnet of its own: in /etc/netplan/40-cx7.yaml "
                                     f"add {stanza} (the "
                                     "peer's twin likewise), sudo netplan apply, and list both twins in NCCL_IB_HCA")),
                evidence=(Evidence(f"{idle.netdev} IPv4", [], "ip addr"),
                          Evidence(f"{other.netdev} IPv4", list(other.ipv4), "ip addr"),
                          Evidence(f"{idle.netdev} carrier", idle.carrier, "sysfs"),
                          Evidence(f"cage of {idle.netdev} and {other.netdev}", cage, "phys_port_name"))))
    return out


def _listed_hcas_without_gid(node: NodeFacts) -> list[Observation]:
    """An HCA of the cabled cage that NCCL_IB_HCA names but that has no RoCE v2 IPv4 GID: NCCL cannot reach the
    peer through it (auto-selection falls back to the link-local GID)."""
    hca = node.nccl.get("NCCL_IB_HCA")
    if not hca or "gids" in node.unavailable:
        return []
    live = [f for f in node.functions if f.cage in node.cabled_cages and f.rdma_dev]
    listed = set(select_hcas(hca, [f.rdma_dev or "" for f in live]))
    out = []
    for fn in (f for f in live if f.rdma_dev in listed and f.gid_index is None):
        why = "no IPv4 address" if not fn.ipv4 else f"no RoCE v2 GID for {fn.ip}"
        out.append(Observation(
            subject=f"{node.name}:{fn.rdma_dev}", fired=True, nodes=(node.name,),
            values=SinglePathValues(
                what=f"NCCL_IB_HCA={hca} names {fn.rdma_dev}, which has no RoCE v2 IPv4 GID ({fn.netdev} has "
                     f"{why}): NCCL cannot use it, so one PCIe link carries the collective",
                node=node.name,
                remedy=ShellText(f"address {sh(fn.netdev)} in its own subnet in /etc/netplan/40-cx7.yaml and sudo "
                                 f"netplan apply (its RoCE v2 GID appears with the address), or drop "
                                 f"{sh(fn.rdma_dev)} from NCCL_IB_HCA")),
            evidence=(Evidence("NCCL_IB_HCA", hca, node.nccl_sources.get("NCCL_IB_HCA", "?")),
                      Evidence(f"{fn.netdev} IPv4", list(fn.ipv4), "ip addr"),
                      Evidence(f"RoCE v2 IPv4 GID index of {fn.rdma_dev}", None, "sysfs gid_attrs"))))
    return out


def _wrong_mac(local: Function, peer: Function, node: NodeFacts, peer_node: NodeFacts) -> Observation | None:
    entry = next((n for n in node.neighbours if n.ip == peer.ip and n.dev in (local.netdev, None)), None)
    if entry is None or entry.mac is None or peer.mac is None or entry.mac == peer.mac.lower():
        return None
    owner = next((f for f in peer_node.functions if f.mac and f.mac.lower() == entry.mac), None)
    if owner is None:
        return None
    return Observation(
        subject=f"{node.name}:{local.netdev}", fired=True, nodes=(node.name, peer_node.name),
        values=SinglePathValues(
            what=f"node {node.name} sends to {peer.ip} ({peer_node.name}:{peer.netdev}) with the MAC of "
                 f"{peer_node.name}:{owner.netdev} ({entry.mac}), the other twin, so both flows reach one "
                 f"PCIe link on node {peer_node.name}",
            node=node.name,
            remedy=ShellText(f"sudo ip neigh del {sh(peer.ip)} dev {sh(local.netdev)}  (re-resolved on the next "
                             "packet; keep arp_ignore=1 and arp_announce=2)")),
        evidence=(Evidence(f"neighbour {peer.ip} on {node.name}:{local.netdev}", entry.mac, "ip neigh"),
                  Evidence(f"MAC of {peer_node.name}:{peer.netdev}", peer.mac, "sysfs"),
                  Evidence(f"MAC of {peer_node.name}:{owner.netdev}", owner.mac, "sysfs")))


def _neighbours(link: LinkFacts, path: DataPath) -> list[Observation]:
    found = [_wrong_mac(path.a, path.b, link.a, link.b), _wrong_mac(path.b, path.a, link.b, link.a)]
    return [o for o in found if o is not None]


def _bench(link: LinkFacts, thresholds: Mapping[str, Any]) -> list[Observation]:
    by_direction: dict[str, list[float]] = defaultdict(list)
    for run in link.bench.rdma:
        if run.mode == "concurrent" and run.gbps is not None:
            by_direction[run.direction].append(run.gbps)
    out = []
    low, high = thresholds["single_path_total_min_gbps"], thresholds["single_path_total_max_gbps"]
    for direction, rates in sorted(by_direction.items()):
        total = sum(rates)
        idle = len(rates) >= 2 and min(rates) < thresholds["idle_path_max_gbps"] <= max(rates)
        if (len(rates) >= 2 and low <= total <= high) or idle:
            src, named = link.ends(direction)[0], link.named(direction)  # by name: a cluster test's `b->c`
            out.append(Observation(
                subject=f"rdma {named} concurrent", fired=True,
                values=SinglePathValues(
                    what=f"both paths at once total {total:.1f} Gb/s ({' + '.join(f'{r:.1f}' for r in rates)})"
                         f" in direction {named}: roughly one PCIe x4 path",
                    node=src.name, remedy=_path_remedy(src)),
                evidence=tuple(Evidence(f"concurrent {named} path {i}", r, "ib_write_bw")
                               for i, r in enumerate(rates))))
    return out


def _counters(link: LinkFacts, thresholds: Mapping[str, Any]) -> list[Observation]:
    """In a concurrent round every used HCA must move data; one near zero means one PCIe path did the work."""
    concurrent = {r.round_id for r in link.bench.counters if r.round_id.startswith("concurrent")}
    out = []
    for round_id in sorted(concurrent):
        sent = {f"{c.node}:{c.rdma_dev}": c.xmit_bytes for c in link.bench.counters
                if c.round_id == round_id and c.xmit_bytes > 0}
        rows = [c for c in link.bench.counters if c.round_id == round_id]
        busiest = max(sent.values(), default=0)
        idle = [f"{c.node}:{c.rdma_dev}" for c in rows
                if busiest and c.xmit_bytes + c.rcv_bytes < busiest * thresholds["idle_counter_share"]
                and _used(link, c.node, c.rdma_dev)]
        if idle:
            out.append(Observation(
                subject=f"counters {round_id}", fired=True,
                values=SinglePathValues(what=f"during {round_id} {', '.join(idle)} moved almost nothing while "
                                             f"{max(sent, key=lambda k: sent[k])} sent {busiest / 1e9:.1f} GB",
                                        node=idle[0].split(":")[0],
                                        remedy=_path_remedy(link.node(idle[0].split(":")[0]))),
                evidence=tuple(Evidence(f"{c.node}:{c.rdma_dev} xmit/rcv bytes", [c.xmit_bytes, c.rcv_bytes],
                                        "port_xmit_data/port_rcv_data delta") for c in rows)))
    return out


def _used(link: LinkFacts, node: str, rdma_dev: str) -> bool:
    return any(getattr(p, node).rdma_dev == rdma_dev for p in link.paths)


def _nccl(link: LinkFacts) -> list[Observation]:
    run = link.bench.nccl
    if run is None or run.uses_socket or run.network is None or len(link.paths) < 2:
        return []
    if len(run.ib_devices) >= 2 and len(run.channel_net_devs) != 1:
        return []
    return [Observation(subject="nccl", fired=True,
                        values=SinglePathValues(what=f"NCCL used {', '.join(run.ib_devices) or 'one device'} (channels"
                                                     f" via NET/IB/{', '.join(map(str, run.channel_net_devs))}) only",
                                                node=link.a.name, remedy=_path_remedy(link.a)),
                        evidence=(Evidence("NET/IB devices", list(run.ib_devices), "NCCL log"),
                                  Evidence("NET/IB channel devices", list(run.channel_net_devs), "NCCL log")))]


def single_pcie_path(link: LinkFacts, thresholds: Mapping[str, Any]) -> list[Observation]:
    found = [o for o in (_config(link.a), _config(link.b)) if o is not None]
    for node in (link.a, link.b):
        found.extend(_unaddressed_twins(node))
        found.extend(_listed_hcas_without_gid(node))
    for path in link.paths:
        found.extend(_neighbours(link, path))
    if not link.bench.flapped:
        found.extend(_bench(link, thresholds))
        found.extend(_counters(link, thresholds))
    found.extend(_nccl(link))
    # The paths' FEC is evidence beside the cause named, never the cause itself (spark-link.md s.9).
    fec = tuple(e for path in link.paths for e in fec_evidence(path))
    return [replace(o, evidence=o.evidence + fec) for o in found] or [Observation(subject="pair", fired=False)]

"""SINGLE_PCIE_PATH: both flows on one PCIe x4 link, from configuration, neighbour MACs or throughput."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from linkcheck.diagnose.checks_gid import nccl_functions
from linkcheck.diagnose.observation import Observation
from linkcheck.facts.model import DataPath, Function, LinkFacts, NodeFacts
from linkcheck.model import Evidence


def _hca_list(twins: list[Function]) -> str:
    return ",".join(sorted(f.rdma_dev for f in twins if f.rdma_dev)) or "<both twins of the cabled cage>"


def _hca_remedy(twins: list[Function]) -> str:
    return f"export NCCL_IB_HCA={_hca_list(twins)}  (both twins, one per PCIe link)"


def _path_remedy(link: LinkFacts, node: str) -> str:
    facts = link.node(node)
    twins = [f for f in facts.functions if f.cage in facts.cabled_cages]
    return (f"check that each twin's peer IP resolves to that twin's MAC (ip neigh), "
            f"and export NCCL_IB_HCA={_hca_list(twins)}")


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
                       values={"what": why, "node": node.name,
                               "remedy": _hca_remedy(twins)},
                       evidence=(Evidence("NCCL_IB_HCA", hca, node.nccl_sources.get("NCCL_IB_HCA", "not set")),)
                       + tuple(Evidence(f"{f.netdev} PCI function", f.bdf, "sysfs") for f in used))


def _wrong_mac(local: Function, peer: Function, node: NodeFacts, peer_node: NodeFacts) -> Observation | None:
    entry = next((n for n in node.neighbours if n.ip == peer.ip and n.dev in (local.netdev, None)), None)
    if entry is None or entry.mac is None or peer.mac is None or entry.mac == peer.mac.lower():
        return None
    owner = next((f for f in peer_node.functions if f.mac and f.mac.lower() == entry.mac), None)
    if owner is None:
        return None
    return Observation(
        subject=f"{node.name}:{local.netdev}", fired=True, nodes=(node.name, peer_node.name),
        values={"what": f"node {node.name} sends to {peer.ip} ({peer_node.name}:{peer.netdev}) with the MAC of "
                        f"{peer_node.name}:{owner.netdev} ({entry.mac}), the other twin, so both flows reach one "
                        f"PCIe link on node {peer_node.name}",
                "node": node.name,
                "remedy": f"sudo ip neigh del {peer.ip} dev {local.netdev}  (re-resolved on the next packet; "
                          "keep arp_ignore=1 and arp_announce=2)"},
        evidence=(Evidence(f"neighbour {peer.ip} on {node.name}:{local.netdev}", entry.mac, "ip neigh"),
                  Evidence(f"MAC of {peer_node.name}:{peer.netdev}", peer.mac, "sysfs"),
                  Evidence(f"MAC of {peer_node.name}:{owner.netdev}", owner.mac, "sysfs")))


def _neighbours(link: LinkFacts, path: DataPath) -> list[Observation]:
    found = [_wrong_mac(path.a, path.b, link.a, link.b), _wrong_mac(path.b, path.a, link.b, link.a)]
    return [o for o in found if o is not None]


def _bench(link: LinkFacts, thresholds: dict[str, Any]) -> list[Observation]:
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
            out.append(Observation(
                subject=f"rdma {direction} concurrent", fired=True,
                values={"what": f"both paths at once total {total:.1f} Gb/s ({' + '.join(f'{r:.1f}' for r in rates)})"
                                f" in direction {direction}: roughly one PCIe x4 path",
                        "node": direction[0], "remedy": _path_remedy(link, direction[0])},
                evidence=tuple(Evidence(f"concurrent {direction} path {i}", r, "ib_write_bw")
                               for i, r in enumerate(rates))))
    return out


def _counters(link: LinkFacts, thresholds: dict[str, Any]) -> list[Observation]:
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
                values={"what": f"during {round_id} {', '.join(idle)} moved almost nothing while "
                                f"{max(sent, key=lambda k: sent[k])} sent {busiest / 1e9:.1f} GB",
                        "node": idle[0].split(":")[0], "remedy": _path_remedy(link, idle[0].split(":")[0])},
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
                        values={"what": f"NCCL used {', '.join(run.ib_devices) or 'one device'} "
                                        f"(channels via NET/IB/{', '.join(map(str, run.channel_net_devs))}) only",
                                "node": "a", "remedy": _path_remedy(link, "a")},
                        evidence=(Evidence("NET/IB devices", list(run.ib_devices), "NCCL log"),
                                  Evidence("NET/IB channel devices", list(run.channel_net_devs), "NCCL log")))]


def single_pcie_path(link: LinkFacts, thresholds: dict[str, Any]) -> list[Observation]:
    found = [o for o in (_config(link.a), _config(link.b)) if o is not None]
    for path in link.paths:
        found.extend(_neighbours(link, path))
    if not link.bench.flapped:
        found.extend(_bench(link, thresholds))
        found.extend(_counters(link, thresholds))
    found.extend(_nccl(link))
    return found or [Observation(subject="pair", fired=False)]

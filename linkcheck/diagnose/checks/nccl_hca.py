"""The named check on NCCL_IB_HCA across the pair: the devices NCCL pairs by index (a listed HCA off the cable is a
`when:` condition on the function facts nccl_listed and cabled)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from linkcheck.diagnose.observation import Observation
from linkcheck.facts.model import Function, LinkFacts, NodeFacts
from linkcheck.facts.nccl_hca import select_hcas
from linkcheck.model import Evidence

HCA = "NCCL_IB_HCA"


class HcaPairingValues(msgspec.Struct, frozen=True):
    """The devices each node's NCCL uses, in NCCL's order, and the positions whose devices do not face each other."""

    order_a: str
    order_b: str
    mismatch: str
    name_a: str  # the nodes by name: a pair's a and b, a cluster's cable's own
    name_b: str
    source: str
    readdress: str


def enumeration_order(node: NodeFacts) -> list[Function]:
    """The node's RDMA functions in ibv_get_device_list() order: the kernel registers them as the PCI functions
    probe, in PCI address order (0000:01:00.0, .1, then 0002:01:00.0, .1 on a GB10, as mlx5_0..3), whatever
    udev renames them to; without a PCI address, by name."""
    return sorted((f for f in node.functions if f.rdma_dev), key=lambda f: (f.bdf is None, f.bdf or "", f.rdma_dev))


def nccl_devices(node: NodeFacts) -> list[str]:
    """What NCCL's IB transport takes (`ncclIbInit`): devices in enumeration order, ACTIVE ports only, kept when
    NCCL_IB_HCA matches them. The order of the names in NCCL_IB_HCA changes nothing."""
    active = [f.rdma_dev or "" for f in enumeration_order(node) if f.rdma_state in (None, "ACTIVE")]
    return select_hcas(node.nccl.get(HCA), active)


def _log_devices(link: LinkFacts) -> tuple[list[str], list[str]] | None:
    """Each node's devices as its rank's NCCL log line named them, when the log has a line for both hosts."""
    run = link.bench.nccl
    by_host = dict(run.ib_devices_by_host) if run is not None else {}
    found = [by_host.get((n.hostname or "").split(".", 1)[0]) for n in (link.a, link.b)]
    return (list(found[0]), list(found[1])) if found[0] and found[1] else None


def nccl_hca_pairing(link: LinkFacts, thresholds: Mapping[str, Any]) -> list[Observation]:
    """NCCL connects device i of one rank to device i of the other, so device i of each node must be the two ends
    of one data path (same link, same subnet). NCCL's log, when the bundle has it, says which devices each rank
    used; otherwise they are derived from NCCL_IB_HCA, the port states and the enumeration order. Positions only one
    node has (a twin down or filtered out) and unaddressed devices are left to LINK_DOWN, SINGLE_PCIE_PATH and the
    addressing rules."""
    if not link.paths:
        return []
    logged = _log_devices(link)
    devs_a, devs_b = logged if logged is not None else (nccl_devices(link.a), nccl_devices(link.b))
    if not devs_a or not devs_b:
        return []  # NCCL would find no IB device on a node: NCCL_SOCKET_FALLBACK and the path rules say so
    source = "NCCL log (NET/IB : Using, per rank)" if logged is not None else "NCCL_IB_HCA, port state, PCI order"
    path_of = {(p.a.rdma_dev, p.b.rdma_dev): p.subnet for p in link.paths}
    subnet = {(n.name, f.rdma_dev): ",".join(f.subnets) or "no IPv4" for n in (link.a, link.b) for f in n.functions}
    a, b = link.a.name, link.b.name
    wrong, readdress = [], []
    for i, (dev_a, dev_b) in enumerate(zip(devs_a, devs_b, strict=False)):
        net_a, net_b = subnet.get((a, dev_a), "?"), subnet.get((b, dev_b), "?")
        if (dev_a, dev_b) in path_of or "no IPv4" in (net_a, net_b):
            continue  # facing each other; or unaddressed, which the addressing rules judge
        wrong.append(f"device {i}: {a}:{dev_a} ({net_a}) faces {b}:{dev_b} ({net_b})")
        if net_a != "?":
            readdress.append(f"{b}:{dev_b} into {net_a}")
    peers = [f"{x}<->{y}" for x, y in sorted(path_of, key=str)]
    return [Observation(
        subject="pair", fired=bool(wrong),
        values=HcaPairingValues(order_a=",".join(devs_a), order_b=",".join(devs_b), mismatch="; ".join(wrong),
                                source=source, readdress="; ".join(readdress) or "the twins of the cabled cage",
                                name_a=a, name_b=b),
        evidence=(Evidence(f"{HCA} on {a}", link.a.nccl.get(HCA), link.a.nccl_sources.get(HCA, "not set")),
                  Evidence(f"{HCA} on {b}", link.b.nccl.get(HCA), link.b.nccl_sources.get(HCA, "not set")),
                  Evidence(f"devices NCCL uses on {a}, in order", devs_a, source),
                  Evidence(f"devices NCCL uses on {b}, in order", devs_b, source),
                  Evidence(f"paths ({a} device <-> {b} device)", peers, "subnets")))]

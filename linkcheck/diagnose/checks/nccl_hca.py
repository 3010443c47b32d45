"""Named checks on NCCL_IB_HCA across the pair: the order that pairs HCAs, and listed HCAs off the cable."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from linkcheck.diagnose.nccl_hca import ordered_hcas, select_hcas
from linkcheck.diagnose.observation import Observation
from linkcheck.facts.model import LinkFacts, NodeFacts
from linkcheck.model import Evidence

HCA = "NCCL_IB_HCA"


class HcaOrderValues(msgspec.Struct, frozen=True):
    """Both nodes' NCCL_IB_HCA orders and the order that pairs each path's twins."""

    order_a: str
    order_b: str
    mismatch: str
    fixed_b: str


class HcaUncabledValues(msgspec.Struct, frozen=True):
    """A listed HCA that cannot reach the peer."""

    node: str
    hca: str
    netdev: str
    why: str
    hca_list: str
    kept: str


def _order(node: NodeFacts) -> list[str] | None:
    return ordered_hcas(node.nccl.get(HCA), [f.rdma_dev for f in node.functions if f.rdma_dev])


def nccl_hca_order(link: LinkFacts, thresholds: Mapping[str, Any]) -> list[Observation]:
    """NCCL pairs the k-th HCA of one rank with the k-th of the other: each position must hold a path's twins."""
    order_a, order_b = _order(link.a), _order(link.b)
    if order_a is None or order_b is None or not link.paths:
        return []  # no list on one node, or the exclude form: NCCL keeps its own device order on both
    peer_of = {p.a.rdma_dev: p.b.rdma_dev for p in link.paths if p.a.rdma_dev and p.b.rdma_dev}
    used_a = [d for d in order_a if d in peer_of]
    used_b = [d for d in order_b if d in peer_of.values()]
    wrong = [f"position {k}: a:{dev_a} faces b:{dev_b}, but its path's twin is b:{peer_of[dev_a]}"
             for k, (dev_a, dev_b) in enumerate(zip(used_a, used_b, strict=False)) if peer_of[dev_a] != dev_b]
    fixed = [peer_of[d] for d in used_a] + [d for d in order_b if d not in peer_of.values()]
    return [Observation(
        subject="pair", fired=bool(wrong),
        values=HcaOrderValues(order_a=",".join(order_a), order_b=",".join(order_b), mismatch="; ".join(wrong),
                              fixed_b=",".join(fixed)),
        evidence=(Evidence(f"{HCA} on a", link.a.nccl.get(HCA), link.a.nccl_sources.get(HCA, "?")),
                  Evidence(f"{HCA} on b", link.b.nccl.get(HCA), link.b.nccl_sources.get(HCA, "?")),
                  Evidence("paths (a twin <-> b twin)", [f"{a}<->{b}" for a, b in sorted(peer_of.items())],
                           "subnets")))]


def nccl_hca_uncabled(link: LinkFacts, thresholds: Mapping[str, Any]) -> list[Observation]:
    """A listed HCA that is not a twin of the cabled cage, or whose port is not ACTIVE, cannot reach the peer:
    an extra live port in the list made NCCL fail with `ibv_modify_qp ... 110` in a field report."""
    out = []
    for node in (link.a, link.b):
        value = node.nccl.get(HCA)
        if not value or not value.strip():
            continue  # unset: NCCL itself skips ports that are not ACTIVE
        devices = [f for f in node.functions if f.rdma_dev]
        listed = set(select_hcas(value, [f.rdma_dev or "" for f in devices]))
        for fn in (f for f in devices if f.rdma_dev in listed):
            off_cable = fn.cage not in node.cabled_cages
            inactive = fn.rdma_state is not None and fn.rdma_state != "ACTIVE"
            why = (f"is in cage {fn.cage or '?'}, not the cabled {', '.join(node.cabled_cages) or 'none'}"
                   if off_cable else f"has its RDMA port {fn.rdma_state}" if inactive else "")
            kept = ",".join(sorted(d for d in listed if d != fn.rdma_dev))
            out.append(Observation(
                subject=f"{node.name}:{fn.rdma_dev}", fired=bool(why), nodes=(node.name,),
                values=HcaUncabledValues(node=node.name, hca=fn.rdma_dev or "?", netdev=fn.netdev, why=why,
                                         hca_list=value, kept=kept or "<the twins of the cabled cage>"),
                evidence=(Evidence(HCA, value, node.nccl_sources.get(HCA, "?")),
                          Evidence(f"cage of {fn.netdev}", fn.cage, "phys_port_name"),
                          Evidence(f"{fn.rdma_dev} port state", fn.rdma_state, "sysfs infiniband"))))
    return out

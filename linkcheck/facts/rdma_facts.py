"""RDMA side of a node's facts: which RDMA device serves each netdev, its port state, its RoCE GID index."""

from __future__ import annotations

from typing import TYPE_CHECKING

from linkcheck.facts.sysfs_views import ib_devices
from linkcheck.parsers.gids import GidEntry, gid_entries_from_sysfs, holes, ipv4_of_gid, resolve_roce_v2_ipv4_index

if TYPE_CHECKING:
    from linkcheck.facts.draft import NodeDraft
    from linkcheck.parsers.gids import GidEntry
    from linkcheck.parsers.sysfs import SysfsDump


def _device_map(b: NodeDraft, ib: SysfsDump | None) -> dict[str, tuple[str, str | None]]:
    """netdev -> (rdma device, port state); by PCI function first, then by what rdma tools report."""
    by_bdf = {d["bdf"]: (name, d.get("state")) for name, d in (ib_devices(ib) if ib else {}).items() if d.get("bdf")}
    out: dict[str, tuple[str, str | None]] = {}
    for netdev, fn in b.functions.items():
        if fn.bdf in by_bdf:
            out[netdev] = by_bdf[fn.bdf]
    for port in b.src.rdma_link() or ():
        if port.netdev in b.functions and port.netdev not in out:
            out[port.netdev] = (port.device, port.state)
    for entry in b.src.ibdev2netdev() or ():
        if entry.netdev in b.functions and entry.netdev not in out:
            out[entry.netdev] = (entry.device, None)
    return out


def _gid_entries(b: NodeDraft, ib: SysfsDump | None) -> tuple[GidEntry, ...] | None:
    """GID table entries from sysfs, else show_gids, else ibv_devinfo; None if no source worked."""
    if ib is not None:
        entries = gid_entries_from_sysfs(ib)
        if entries:
            return tuple(entries)
    shown = b.src.show_gids()
    if shown:
        return tuple(shown)
    devices = b.src.ibv_devinfo()
    if devices:
        ndev = {fn.rdma_dev: fn.netdev for fn in b.functions.values() if fn.rdma_dev}
        return tuple(
            GidEntry(device=d.hca_id, port=p.port, index=g.index, gid=g.gid, roce_version=g.roce_version,
                     netdev=ndev.get(d.hca_id), ipv4=_ipv4(g.gid))
            for d in devices if d.hca_id for p in d.ports if p.port is not None for g in p.gids
        )
    return None


def _ipv4(gid: str) -> str | None:
    return ipv4_of_gid(gid)


def attach_rdma(b: NodeDraft) -> None:
    """Fill rdma_dev, rdma_state, gid_index and gid_holes of every function of the node."""
    if not b.functions:
        return  # no ConnectX-7 at all: LINK_DOWN says so; RDMA facts have nothing to describe
    ib = b.src.sysfs("sysfs_infiniband")
    mapping = _device_map(b, ib)
    if not mapping:
        b.missing("rdma", "; ".join([b.src.reason("sysfs_infiniband"), b.src.reason("rdma_link")]))
        return
    sysfs_devs = ib_devices(ib) if ib else {}
    for netdev, (dev, state) in mapping.items():
        fn, info = b.functions[netdev], sysfs_devs.get(dev, {})
        # The board PSID (sysfs board_id) and firmware also come from `ethtool -i`; sysfs fills what it lacks.
        b.update(netdev, rdma_dev=dev, rdma_state=state, psid=fn.psid or info.get("board_id"),
                 firmware=fn.firmware or info.get("fw_ver"))
    entries = _gid_entries(b, ib)
    if entries is None:
        b.missing("gids", "; ".join([b.src.reason("sysfs_infiniband"), b.src.reason("show_gids"),
                                     b.src.reason("ibv_devinfo")]))
        return
    for netdev, fn in list(b.functions.items()):
        if fn.rdma_dev is None:
            continue
        index = resolve_roce_v2_ipv4_index(entries, fn.rdma_dev, 1, netdev, fn.ip) if fn.ip else None
        b.update(netdev, gid_index=index, gid_holes=tuple(holes(entries, fn.rdma_dev, 1)))

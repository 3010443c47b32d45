"""An NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=INIT,NET log of a job of 2 ranks or more in NCCL 2.28 formats.

Line prefix "host:pid:tid [cudaDev] NCCL INFO " (src/debug.cc); transport lines from net_ib/init.cc,
net_socket.cc and init.cc: "NET/IB : Using [0]dev:1/RoCE ... [RO]; OOB if:ip<0>", "Using network IB",
channels "via NET/IB/<dev>", per-QP "NET/IB: NCCL Dev ..." lines with the GID index and the GID as two
little-endian 64-bit integers; or the socket fallback ("NET/IB : No device found.", "Using network Socket").
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass


@dataclass(frozen=True)
class RankNet:
    """One rank's view: host, pid, OOB interface and, for IB, its HCAs with GID index and GID."""

    host: str
    pid: int
    oob_if: str
    oob_ip: str
    hcas: tuple[str, ...] = ()
    gid_indices: tuple[int, ...] = ()
    gids: tuple[str, ...] = ()  # IPv6-notation GIDs, e.g. ::ffff:192.168.100.10
    ib_mtu_enum: int = 5
    # What this rank's own NCCL found (its init lines); None: the run's transport. A rank whose NCCL_IB_HCA matches
    # no active port finds no IB device and says so, while the others found theirs.
    transport: str | None = None


@dataclass(frozen=True)
class NcclLogRun:
    ranks: tuple[RankNet, ...]
    transport: str = "IB"  # IB | Socket
    nccl_version: str = "2.28.9"
    cuda: str = "13.0"
    env: tuple[tuple[str, str], ...] = ()  # NCCL_* variables as set (logged the way NCCL logs them)
    gid_pinned: int | None = None  # NCCL_IB_GID_INDEX when set ("... set by environment to N.")


def gid_le_pair(gid: str) -> str:
    """`(%lX/%lX)`: subnet prefix and interface id read as little-endian 64-bit integers."""
    raw = ipaddress.IPv6Address(gid).packed
    return f"{int.from_bytes(raw[:8], 'little'):X}/{int.from_bytes(raw[8:], 'little'):X}"


def _prefix(r: RankNet, tid_off: int) -> str:
    return f"{r.host.split('.')[0]}:{r.pid}:{r.pid + tid_off} [0] NCCL INFO "


def _init_lines(run: NcclLogRun, r: RankNet, rank: int) -> list[str]:
    p0, p1 = _prefix(r, 0), _prefix(r, 37)
    own = r.transport or run.transport
    nranks = len(run.ranks)
    lines = [
        p0 + f"Bootstrap: Using {r.oob_if}:{r.oob_ip}<0>",
        p0 + "cudaDriverVersion 13000",
        p0 + f"NCCL version {run.nccl_version}+cuda{run.cuda}",
        p1 + "NET/Plugin: Could not find: libnccl-net.so.",
    ]
    if run.gid_pinned is not None:
        lines.append(p1 + f"NCCL_IB_GID_INDEX set by environment to {run.gid_pinned}.")
    lines += [p1 + f"{k} set to {v}" for k, v in run.env if k == "NCCL_IB_HCA"]
    if own == "IB":
        devs = " ".join(f"[{i}]{h}:1/RoCE" for i, h in enumerate(r.hcas))
        lines.append(p1 + f"NET/IB : Using {devs} [RO]; OOB {r.oob_if}:{r.oob_ip}<0>")
        lines += [p1 + "Initialized NET plugin IB", p1 + "Assigned NET plugin IB to comm", p1 + "Using network IB"]
    else:
        lines.append(p1 + "NET/IB : No device found.")
        lines.append(p1 + f"NET/Socket : Using [0]{r.oob_if}:{r.oob_ip}<0>")
        lines += [p1 + "Initialized NET plugin Socket", p1 + "Assigned NET plugin Socket to comm",
                  p1 + "Using network Socket"]
    lines.append(p1 + f"ncclCommInitRankConfig comm 0xaaab{0x1d2e3f40 + rank:08x} rank {rank} nranks {nranks} "
                      "cudaDev 0 nvmlDev 0 busId f01000 commId 0x5c1f0e9d3b2a4c61 - Init START")
    if own == "IB":
        lines += [p1 + f"GPU Direct RDMA Disabled for HCA {i} '{h}'" for i, h in enumerate(r.hcas)]
    return lines


def _channel_lines(run: NcclLogRun, r: RankNet, rank: int) -> list[str]:
    p1 = _prefix(r, 37)
    n = len(run.ranks)
    prev, nxt = (rank - 1) % n, (rank + 1) % n  # the ring: receive from the rank before, send to the one after
    nch = max(2, len(r.hcas))
    order = " ".join(str(i) for i in range(n))
    lines = [p1 + f"Channel {c:02d}/{nch:02d} : {order}" for c in range(nch)]
    for c in range(nch):
        dev = c % max(1, len(r.hcas)) if run.transport == "IB" else 0
        lines.append(p1 + f"Channel {c:02d}/0 : {prev}[0] -> {rank}[0] [receive] via NET/{run.transport}/{dev}")
    for c in range(nch):
        dev = c % max(1, len(r.hcas)) if run.transport == "IB" else 0
        lines.append(p1 + f"Channel {c:02d}/0 : {rank}[0] -> {nxt}[0] [send] via NET/{run.transport}/{dev}")
    return lines


def _qp_lines(r: RankNet) -> list[str]:
    p2 = _prefix(r, 41)
    lines = []
    for i, (gid_index, gid) in enumerate(zip(r.gid_indices, r.gids, strict=True)):
        lines.append(p2 + f"NET/IB: NCCL Dev {i} IbDev {i} Port 1 qpn {0x107 + 2 * i} mtu {r.ib_mtu_enum} "
                          f"GID {gid_index} ({gid_le_pair(gid)}) fifoRkey=0x{0x2a00 + i * 0x100:x} "
                          f"fifoLkey=0x{0x2a00 + i * 0x100:x}")
    return lines


def render_nccl_log(run: NcclLogRun) -> tuple[str, str, int]:
    """Both ranks' lines as mpirun's merged stdout shows them (rank 0's block, then rank 1's)."""
    out: list[str] = []
    for rank, r in enumerate(run.ranks):
        out += _init_lines(run, r, rank)
    for rank, r in enumerate(run.ranks):
        out += _channel_lines(run, r, rank)
        if run.transport == "IB" and (r.transport or run.transport) == "IB":
            out += _qp_lines(r)
    for rank, r in enumerate(run.ranks):
        p1 = _prefix(r, 37)
        gdr = "Connected all rings, use ring PXN 0 GDR 0"
        out += [p1 + gdr, p1 + f"ncclCommInitRankConfig comm 0xaaab{0x1d2e3f40 + rank:08x} rank {rank} "
                            f"nranks {len(run.ranks)} "
                            "cudaDev 0 nvmlDev 0 busId f01000 commId 0x5c1f0e9d3b2a4c61 - Init COMPLETE"]
    return "".join(line + "\n" for line in out), "", 0

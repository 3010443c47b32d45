"""all_gather_perf / all_reduce_perf in the lab: two ranks started by a real mpirun that really talk.

Each rank reads OMPI_COMM_WORLD_RANK/SIZE and the job id (PMIX_NAMESPACE). Rank 0 listens on an
ephemeral TCP port and publishes it with its data IPs in <shared>/nccl/<job>.json (the stand-in for
NCCL's unique id, which the real test broadcasts over MPI); rank 1 waits for that file, connects over
the data link (no retry loop beyond the listed addresses) and both swap a hello (host, pid, HCAs,
GIDs, transport, fault), then one message per size of the sweep. A dead or unreachable peer makes a
rank fail (exit 3, "remote process exited or there was a network error") or wait, as NCCL does.
Rank 0 prints the nccl-tests text; each rank prints its own NCCL INFO lines (NCCL_DEBUG=INFO).
"""

from __future__ import annotations

import ipaddress
import json
import os
import socket
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tests.emulators.bench_nccl import (
    OUT_IN_PLACE,
    NcclTestsRun,
    busbw_curve,
    render_all_gather_perf,
    render_all_gather_perf_json,
)
from tests.emulators.bench_nccl_log import NcclLogRun, RankNet, render_nccl_log
from tests.emulators.derive import auto_gid_index, gid_entry, inet_ntop6, nccl_gid_pin, roce_mtu
from tests.emulators.live_conn import LineConn, Printer, hang
from tests.emulators.live_state import LabContext
from tests.emulators.node import Function, Node

RUN_S = (0.3, 1.0)  # the sweep takes its real time, clamped to this (seconds), unless armed "real-time"
CONNECT_TIMEOUT_S = 3.0
SOCKET_BUSBW_GBS = 2.04  # NCCL over TCP on the 10 GbE RJ45 (nccl-socket-fallback scenario)
NCCL_FAILURE = "remote process exited or there was a network error"


@dataclass(frozen=True)
class Job:
    rank: int
    size: int
    job_id: str

    @classmethod
    def from_env(cls) -> Job | None:
        try:
            rank, size = int(os.environ["OMPI_COMM_WORLD_RANK"]), int(os.environ["OMPI_COMM_WORLD_SIZE"])
        except (KeyError, ValueError):
            return None
        env = os.environ
        job = env.get("PMIX_NAMESPACE") or env.get("OMPI_MCA_ess_base_jobid") or str(os.getppid())
        return cls(rank, size, "".join(c if c.isalnum() else "_" for c in job))


def _nccl_env(node: Node) -> dict[str, str]:
    """NCCL_* as the rank sees them: mpirun's -x values over the model's environment."""
    env = dict(node.nccl_env)
    env.update({k: v for k, v in os.environ.items() if k.startswith("NCCL_")})
    return env


def _hcas(node: Node, env: dict[str, str]) -> list[Function]:
    """NCCL_IB_HCA filtering (prefix match, ^ excludes, = exact) over the functions whose link is up."""
    spec = env.get("NCCL_IB_HCA", "")
    up = [f for f in node.functions if f.link_up]
    if not spec:
        return up
    exclude, exact = spec.startswith("^"), spec.lstrip("^").startswith("=")
    names = [w.split(":")[0] for w in spec.lstrip("^=").split(",") if w]
    chosen = [f for f in up if any(f.rdma_dev == n if exact else f.rdma_dev.startswith(n) for n in names)]
    if exclude:
        chosen = [f for f in up if f not in chosen]
    order = {n: i for i, n in enumerate(names)}
    return sorted(chosen, key=lambda f: order.get(f.rdma_dev, len(order)))


def _transport(node: Node, env: dict[str, str], hcas: list[Function]) -> str:
    if env.get("NCCL_IB_DISABLE") == "1" or env.get("NCCL_NET") == "Socket" or not hcas:
        return "Socket"
    return node.nccl_transport or "IB"


def _me(node: Node, fault: str | None) -> dict[str, Any]:
    env = _nccl_env(node)
    hcas = _hcas(node, env)
    transport = _transport(node, env, hcas)
    pin = nccl_gid_pin(replace(node, nccl_env=env))
    indices = [pin if pin is not None else auto_gid_index(f) for f in hcas]
    return {
        "host": node.hostname, "pid": os.getpid(), "oob_if": node.mgmt.name, "oob_ip": node.mgmt.ipv4.split("/")[0],
        "hcas": [f.rdma_dev for f in hcas], "gid_indices": indices,
        "gids": [inet_ntop6(gid_entry(f, i).gid) for f, i in zip(hcas, indices, strict=True)],
        "mtu": min((roce_mtu(f.mtu)[1] for f in hcas), default=5), "transport": transport, "fault": fault,
        "ips": [a for f in node.functions if f.link_up for a in f.ipv4], "pin": pin, "nccl": node.version("nccl"),
    }


def _version(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(".")[:3])
    except ValueError:
        return (0,)


def _rank_net(info: dict[str, Any], transport: str) -> RankNet:
    ib = transport == "IB"
    return RankNet(host=str(info["host"]), pid=int(info["pid"]), oob_if=str(info["oob_if"]),
                   oob_ip=str(info["oob_ip"]), hcas=tuple(info["hcas"]) if ib else (),
                   gid_indices=tuple(info["gid_indices"]) if ib else (), gids=tuple(info["gids"]) if ib else (),
                   ib_mtu_enum=int(info["mtu"]))


def _rendezvous(ctx: LabContext, job: Job) -> Path:
    d = ctx.shared / "nccl"
    d.mkdir(parents=True, exist_ok=True)
    return d / f"{job.job_id}.json"


def _rank0_connect(ctx: LabContext, job: Job, me: dict[str, Any]) -> LineConn:
    lsock = socket.create_server(("0.0.0.0", 0))
    path = _rendezvous(ctx, job)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"port": lsock.getsockname()[1], "ips": me["ips"]}), encoding="utf-8")
    tmp.replace(path)
    conn, _ = lsock.accept()  # the peer never coming is a hang, as in NCCL's bootstrap
    lsock.close()
    path.unlink(missing_ok=True)
    return LineConn(conn)


def _candidates(ips: list[str], mine: list[str]) -> list[str]:
    """rank 0's addresses, those on a subnet this node shares first (the others go to the default route)."""
    nets = [ipaddress.ip_interface(m).network for m in mine]
    hosts = [ipaddress.ip_interface(i) for i in ips]
    near = [str(h.ip) for h in hosts if any(h.ip in n for n in nets)]
    return near + [str(h.ip) for h in hosts if str(h.ip) not in near]


def _rank1_connect(ctx: LabContext, job: Job, me: dict[str, Any]) -> LineConn | None:
    path = _rendezvous(ctx, job)
    while True:  # like MPI_Bcast of the unique id: waits as long as rank 0 does not come
        try:
            info = json.loads(path.read_text(encoding="utf-8"))
            break
        except (OSError, ValueError):
            time.sleep(0.05)
    for ip in _candidates(list(info["ips"]), list(me["ips"])):
        try:
            return LineConn(socket.create_connection((ip, int(info["port"])), timeout=CONNECT_TIMEOUT_S))
        except OSError:
            continue
    return None


def _failure(out: Printer, me: dict[str, Any], conn: LineConn | None) -> int:
    """What a rank prints when its peer vanished (exit 3 = testNcclError), WARN first with NCCL_DEBUG."""
    host = str(me["host"]).split(".")[0]
    last = "socketProgress: Connection closed by remote peer " + (conn.peer if conn is not None else "<unknown>")
    if os.environ.get("NCCL_DEBUG", "").upper() in ("WARN", "INFO", "TRACE"):
        stamp = time.strftime("[%Y-%m-%d %H:%M:%S] ") if _version(str(me["nccl"])) >= (2, 26) else ""
        out.out(f"\n{stamp}{host}:{me['pid']}:{int(me['pid']) + 41} [0] misc/socket.cc:64 NCCL WARN {last}\n")
    out.out(f"{host}: Test NCCL failure common.cu:1278 '{NCCL_FAILURE} / {last}'\n"
            f" .. {host} pid {me['pid']}: Test failure common.cu:1113\n")
    return 3


def run_rank(node: Node, ctx: LabContext, job: Job, run: NcclTestsRun, json_path: str | None) -> int:
    """One rank of a 2-rank job; returns its exit status (output already written)."""
    fault = ctx.fault(run.program)
    me = _me(node, fault)
    out = Printer(garbage=fault == "garbage" and job.rank == 0)
    conn = _rank0_connect(ctx, job, me) if job.rank == 0 else _rank1_connect(ctx, job, me)
    peer = conn.read_json() if conn is not None and conn.send_json(me) else None
    if conn is None or peer is None:
        return _failure(out, me, conn)
    ranks = (me, peer) if job.rank == 0 else (peer, me)
    transport, run = _agree(node, run, ranks)
    text, _, rc = render_all_gather_perf(run)
    head, table = _split(text)
    if job.rank == 0:
        out.out((f"# Writing JSON output to {json_path}\n" if json_path else "") + head)
    out.out(_info_lines(node, ranks, transport, me))
    if fault == "hang":
        hang()
    ok = _sweep(conn, job, run, fault)
    conn.close()
    if not ok:
        return _failure(out, me, conn)
    if job.rank == 0:
        out.out(table)
        if json_path and not out.garbage:
            Path(json_path).write_text(render_all_gather_perf_json(run), encoding="utf-8")
        out.finish()
    return rc


def _agree(node: Node, run: NcclTestsRun, ranks: tuple[dict[str, Any], dict[str, Any]]) -> tuple[str, NcclTestsRun]:
    """What both ranks settle on: the transport (sockets unless both have IB), hosts, pids, errors."""
    transport = "IB" if all(r["transport"] == "IB" for r in ranks) else "Socket"
    if transport == "Socket" and node.nccl_transport != "Socket":  # forced onto sockets: socket speed
        sizes = [size for size, _ in run.curve]
        run = replace(run, curve=busbw_curve(SOCKET_BUSBW_GBS, min(sizes), max(sizes)))
    run = replace(run, hosts=(str(ranks[0]["host"]), str(ranks[1]["host"])),
                  pids=(int(ranks[0]["pid"]), int(ranks[1]["pid"])))
    if any(r["fault"] == "wrong" for r in ranks):
        run = replace(run, wrong=1024)
    return transport, run


def _split(text: str) -> tuple[str, str]:
    """nccl-tests prints the device list, then NCCL initialises (INFO lines), then the table."""
    cut = text.rindex("\n", 0, text.index(OUT_IN_PLACE)) + 1
    return text[:cut], text[cut:]


def _info_lines(node: Node, ranks: tuple[dict[str, Any], dict[str, Any]], transport: str,
                me: dict[str, Any]) -> str:
    if os.environ.get("NCCL_DEBUG", "").upper() not in ("INFO", "TRACE"):
        return ""
    env = _nccl_env(node)
    log = NcclLogRun(ranks=(_rank_net(ranks[0], transport), _rank_net(ranks[1], transport)), transport=transport,
                     nccl_version=node.version("nccl"), cuda=node.version("cuda"),
                     env=tuple((k, v) for k, v in env.items() if k == "NCCL_IB_HCA"), gid_pinned=me["pin"])
    prefix = f"{str(me['host']).split('.')[0]}:{me['pid']}:"
    text = render_nccl_log(log)[0]
    return "".join(line + "\n" for line in text.splitlines() if line.startswith(prefix))


def _sweep(conn: LineConn, job: Job, run: NcclTestsRun, fault: str | None) -> bool:
    """One exchange per size, spread over the run's (clamped) time; False when the peer is gone."""
    busbw = max(b for _, b in run.curve) or 1.0
    real = sum(size / (busbw * 1e9) * (run.iters + run.warmup) for size, _ in run.curve)
    taken = real if fault == "real-time" else min(max(real, RUN_S[0]), RUN_S[1])
    pause = taken / max(len(run.curve), 1)
    for i, (size, _) in enumerate(run.curve):
        if fault == "crash-mid-run" and i >= len(run.curve) // 2:
            return False
        if job.rank == 0:
            ok = conn.send(f"S {size}") and conn.read_line() == f"A {size}"
        else:
            ok = conn.read_line() == f"S {size}" and conn.send(f"A {size}")
        if not ok:
            return False
        time.sleep(pause)
    return True

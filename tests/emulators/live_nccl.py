"""all_gather_perf / all_reduce_perf in the lab: two ranks or more, started by a real mpirun, that really talk.

Each rank reads OMPI_COMM_WORLD_RANK/SIZE and the job id (PMIX_NAMESPACE). Rank 0 listens on an
ephemeral TCP port and publishes it with its data IPs in <shared>/nccl/<job>.json (the stand-in for
NCCL's unique id, which the real test broadcasts over MPI); every other rank waits for that file, connects
over a data link (no retry loop beyond the listed addresses) and sends its hello (rank, host, pid, HCAs,
GIDs, transport, fault); rank 0 gathers them all and sends every rank the whole list, then one message
per size of the sweep to each rank. A dead or unreachable peer makes a rank fail (exit 3, "remote process
exited or there was a network error") or wait, as NCCL does. Rank 0 prints the nccl-tests text; each rank
prints its own NCCL INFO lines (NCCL_DEBUG=INFO).
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


def _rank_net(info: dict[str, Any], transport: str, own: str | None = None) -> RankNet:
    """The rank's lines: its HCAs when the transport it prints is IB (`own`, what its NCCL found, else the job's)."""
    ib = (own or transport) == "IB"
    return RankNet(host=str(info["host"]), pid=int(info["pid"]), oob_if=str(info["oob_if"]),
                   oob_ip=str(info["oob_ip"]), hcas=tuple(info["hcas"]) if ib else (),
                   gid_indices=tuple(info["gid_indices"]) if ib else (), gids=tuple(info["gids"]) if ib else (),
                   ib_mtu_enum=int(info["mtu"]), transport=own)


def _rendezvous(ctx: LabContext, job: Job) -> Path:
    d = ctx.shared / "nccl"
    d.mkdir(parents=True, exist_ok=True)
    return d / f"{job.job_id}.json"


def _rank0_connect(ctx: LabContext, job: Job, me: dict[str, Any]) -> list[LineConn]:
    """One connection per other rank, in the order they came (their hellos say which rank each is)."""
    lsock = socket.create_server(("0.0.0.0", 0))
    path = _rendezvous(ctx, job)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"port": lsock.getsockname()[1], "ips": me["ips"]}), encoding="utf-8")
    tmp.replace(path)
    conns = []
    for _ in range(job.size - 1):
        conn, _ = lsock.accept()  # a rank never coming is a hang, as in NCCL's bootstrap
        conns.append(LineConn(conn))
    lsock.close()
    path.unlink(missing_ok=True)
    return conns


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


def _gather(job: Job, me: dict[str, Any], conns: list[LineConn]) -> tuple[list[dict[str, Any]], list[LineConn]] | None:
    """Every rank's hello in rank order, and the connections in the same order (rank 0: one per other rank; another
    rank: its one to rank 0); None when a peer is gone before the sweep."""
    me = {**me, "rank": job.rank}
    if job.rank != 0:
        reply = conns[0].read_json() if conns[0].send_json(me) else None
        return (list(reply["ranks"]), conns) if reply is not None else None
    hellos = [c.read_json() for c in conns]
    said = [h for h in hellos if h is not None]
    if len(said) < len(hellos):
        return None
    ordered = sorted(zip(said, conns, strict=True), key=lambda hc: int(hc[0]["rank"]))
    ranks = [me, *(h for h, _ in ordered)]
    peers = [c for _, c in ordered]
    if not all(c.send_json({"ranks": ranks}) for c in peers):
        return None
    return ranks, peers


def run_rank(node: Node, ctx: LabContext, job: Job, run: NcclTestsRun, json_path: str | None) -> int:
    """One rank of the job; returns its exit status (output already written)."""
    fault = ctx.fault(run.program)
    me = _me(node, fault)
    out = Printer(garbage=fault == "garbage" and job.rank == 0)
    if job.rank == 0:
        conns = _rank0_connect(ctx, job, me)
    else:
        one = _rank1_connect(ctx, job, me)
        if one is None:
            return _failure(out, me, None)
        conns = [one]
    met = _gather(job, me, conns)
    if met is None:
        return _failure(out, me, conns[0] if conns else None)
    ranks, conns = met
    transport, run = _agree(node, run, ranks)
    text, _, rc = render_all_gather_perf(run)
    head, table = _split(text)
    if job.rank == 0:
        out.out((f"# Writing JSON output to {json_path}\n" if json_path else "") + head)
    out.out(_info_lines(node, ranks, transport, job))
    if fault == "hang":
        hang()
    gone = _sweep(conns, job, run, fault)
    for conn in conns:
        conn.close()
    if gone is not None:
        return _failure(out, me, gone)
    if job.rank == 0:
        out.out(table)
        if json_path and not out.garbage:
            Path(json_path).write_text(render_all_gather_perf_json(run), encoding="utf-8")
        out.finish()
    return rc


def _agree(node: Node, run: NcclTestsRun, ranks: list[dict[str, Any]]) -> tuple[str, NcclTestsRun]:
    """What every rank settles on: the transport (sockets unless all have IB), hosts, pids, errors."""
    transport = "IB" if all(r["transport"] == "IB" for r in ranks) else "Socket"
    if transport == "Socket" and node.nccl_transport != "Socket":  # forced onto sockets: socket speed
        sizes = [size for size, _ in run.curve]
        run = replace(run, curve=busbw_curve(SOCKET_BUSBW_GBS, min(sizes), max(sizes)))
    run = replace(run, hosts=tuple(str(r["host"]) for r in ranks), pids=tuple(int(r["pid"]) for r in ranks))
    if any(r["fault"] == "wrong" for r in ranks):
        run = replace(run, wrong=1024)
    return transport, run


def _split(text: str) -> tuple[str, str]:
    """nccl-tests prints the device list, then NCCL initialises (INFO lines), then the table."""
    cut = text.rindex("\n", 0, text.index(OUT_IN_PLACE)) + 1
    return text[:cut], text[cut:]


def _info_lines(node: Node, ranks: list[dict[str, Any]], transport: str, job: Job) -> str:
    if os.environ.get("NCCL_DEBUG", "").upper() not in ("INFO", "TRACE"):
        return ""
    env = _nccl_env(node)
    # A pair's ranks both print the transport they settle on (the pair's recorded runs were made so); a cluster's
    # rank prints what its own NCCL found, so the rank that fell back is the one that says "No device found".
    nets = tuple(_rank_net(r, transport, str(r["transport"]) if job.size > 2 else None) for r in ranks)
    me = ranks[job.rank]
    log = NcclLogRun(ranks=nets, transport=transport, nccl_version=node.version("nccl"), cuda=node.version("cuda"),
                     env=tuple((k, v) for k, v in env.items() if k == "NCCL_IB_HCA"), gid_pinned=me["pin"])
    prefix = f"{str(me['host']).split('.')[0]}:{me['pid']}:"
    text = render_nccl_log(log)[0]
    return "".join(line + "\n" for line in text.splitlines() if line.startswith(prefix))


def _sweep(conns: list[LineConn], job: Job, run: NcclTestsRun, fault: str | None) -> LineConn | None:
    """One exchange per size with every other rank (rank 0 asks, each answers), spread over the run's (clamped)
    time; the connection whose peer is gone, else None."""
    busbw = max(b for _, b in run.curve) or 1.0
    real = sum(size / (busbw * 1e9) * (run.iters + run.warmup) for size, _ in run.curve)
    taken = real if fault == "real-time" else min(max(real, RUN_S[0]), RUN_S[1])
    pause = taken / max(len(run.curve), 1)
    for i, (size, _) in enumerate(run.curve):
        if fault == "crash-mid-run" and i >= len(run.curve) // 2:
            return conns[0]
        for conn in conns:
            if job.rank == 0:
                ok = conn.send(f"S {size}") and conn.read_line() == f"A {size}"
            else:
                ok = conn.read_line() == f"S {size}" and conn.send(f"A {size}")
            if not ok:
                return conn
        time.sleep(pause)
    return None

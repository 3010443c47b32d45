"""ib_write_bw in the lab: the real TCP exchange between namespaces, real-time runs, counters and faults.

Server (no host argument): prints the waiting box, binds 0.0.0.0:<-p> (SO_REUSEADDR, listen(1)),
accept()s with no timeout, closes the listener. Client: one connect(), no retry. Both then sleep 1 s
(as perftest does), swap a hello line (node, device, GID, MTU, flap), print banner and addresses, and
the client runs for -D seconds (or -n iterations at the model's rate) sending progress lines; the
server moves its port_rcv_data by them, the client its port_xmit_data. The client's rate is the
model's alone rate, or its concurrent rate when another client between the same two nodes ran for
more than half of this run (the flow board). The server prints the client's row (WRITE semantics).
"""

from __future__ import annotations

import contextlib
import json
import socket
import time
from dataclasses import dataclass, replace
from pathlib import Path

from tests.emulators import bench_perftest as bp
from tests.emulators.derive import gid_entry, inet_ntop6, ipv4_of_gid, roce_mtu
from tests.emulators.live_conn import LineConn, Printer, hang
from tests.emulators.live_state import ByteCounter, Flap, FlowBoard, LabContext, live_gid_slot
from tests.emulators.node import GID_TYPE_V2, Function, GidSlot, Node

TICK_S = 0.1
SETTLE_S = 1.0  # perftest sleep(1)s after the TCP connection is up
SERVER_FAULTS = ("never-ready", "crash-mid-run", "hang", "garbage", "flap")
CLIENT_FAULTS = ("client-fail", "hang", "garbage", "flap")


@dataclass
class Side:
    """One ib_write_bw process: its node, device, options and what the run looks like."""

    node: Node
    ctx: LabContext
    fn: Function
    run: bp.PerftestRun
    port: int
    server: str | None
    fault: str | None
    out: Printer
    json_file: str | None

    @property
    def slot(self) -> GidSlot:
        """The -x slot as the node's GID table holds it now: the lab's sysfs copy, which follows the node's
        addresses (tests/lab/gid_watch.py), else the model's table."""
        live = live_gid_slot(self.ctx.sysfs, self.fn.rdma_dev, self.run.gid_index)
        return live if live is not None else gid_entry(self.fn, self.run.gid_index)

    @property
    def gid_class(self) -> str:
        """ok | empty | v1 | not-ipv4: what the -x slot holds (only "ok" carries traffic)."""
        slot = self.slot
        if slot.type is None:
            return "empty"
        if ipv4_of_gid(slot.gid) is None:
            return "not-ipv4"
        return "ok" if slot.type == GID_TYPE_V2 else "v1"


def make_side(node: Node, ctx: LabContext, fn: Function, run: bp.PerftestRun, opts: dict[str, str],
              flags: set[str], server: str | None) -> Side:
    fault = ctx.fault("ib_write_bw")
    if fault not in (CLIENT_FAULTS if server else SERVER_FAULTS):
        fault = None
    json_file = opts.get("json_file", "perftest_out.json") if "--out_json" in flags else None
    if bp.version_tuple(run.version) < (6, 20):
        json_file = None  # pseudo-JSON era: linkcheck parses the text output instead
    port = int(opts.get("port", "18515"))
    run = replace(run, seed=port % 97)
    return Side(node, ctx, fn, run, port, server, fault, Printer(garbage=fault == "garbage"), json_file)


def run_side(side: Side) -> int:
    """Run one side to its end; returns the exit status (stdout/stderr were written as it went)."""
    if side.run.duration_s is not None:
        side.out.out(" WARNING: BW peak won't be measured in this run.\n")
    conn = _server_connect(side) if side.server is None else _client_connect(side)
    if conn is None:
        return 1
    try:
        rc = _session(side, conn)
    finally:
        conn.close()
    if rc == 0:
        side.out.finish()
    return rc


def _server_connect(side: Side) -> LineConn | None:
    if side.fault == "never-ready":
        hang()
    side.out.out(bp.WAITING_BOX)
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        lsock.bind(("0.0.0.0", side.port))
        lsock.listen(1)
    except OSError:
        lsock.close()
        side.out.err(bp.listen_error(side.run.version, side.port))
        return None
    conn, _ = lsock.accept()
    lsock.close()
    return LineConn(conn)


def _client_connect(side: Side) -> LineConn | None:
    assert side.server is not None
    try:
        infos = socket.getaddrinfo(side.server, side.port, socket.AF_INET, socket.SOCK_STREAM)
    except OSError:
        side.out.err("Problem in resolving basic address and port\n"
                     + bp.socket_init_error(side.run.version, "")[1:])
        return None
    for family, kind, proto, _, addr in infos:
        sock = socket.socket(family, kind, proto)
        try:
            sock.connect(addr)
            return LineConn(sock)
        except OSError:
            sock.close()
    side.out.err(bp.connect_error(side.run.version, side.server, side.port))
    return None


def _hello(side: Side) -> dict[str, object]:
    slot = side.slot
    return {"node": side.ctx.node_name, "dev": side.fn.rdma_dev, "gid": inet_ntop6(slot.gid),
            "gid_class": side.gid_class, "mtu": roce_mtu(side.fn.mtu)[0], "flap": side.fault == "flap",
            "version": side.run.version, "cap": side.node.perftest_caps.get(side.fn.rdma_dev)}


def _session(side: Side, conn: LineConn) -> int:
    time.sleep(SETTLE_S)
    conn.send_json(_hello(side))
    peer = conn.read_json()
    role = side.run.role
    if peer is None:
        side.out.err(" Failed to exchange data between server and clients\n")
        return 1
    run = replace(side.run, local_gid=inet_ntop6(side.slot.gid), remote_gid=str(peer.get("gid", "::")),
                  mtu_bytes=min(side.run.mtu_bytes, int(str(peer.get("mtu", 4096)))))
    side.run = run
    side.out.out(bp.banner(run))
    failed = _gid_failure(side, peer)
    if failed is not None:
        return failed
    side.out.out(bp.addresses(run) + bp.results_header(run))
    if side.gid_class != "ok" or peer.get("gid_class") != "ok":
        return _no_traffic(side, conn)  # >= 6.20 with a wrong -x: header, no row, exit 0 (spark-link 3e)
    flap = side.fault == "flap" or bool(peer.get("flap"))
    pair = ".".join(sorted((side.ctx.node_name, str(peer.get("node", "peer")))))
    if role == "client":
        cap = peer.get("cap")
        return _client_run(side, conn, flap, pair, float(cap) if isinstance(cap, (int, float)) else None)
    return _server_run(side, conn, flap)


def _gid_failure(side: Side, peer: dict[str, object]) -> int | None:
    """How a bad -x on either side ends the run before traffic (None: it goes on).

    An empty slot fails QP RTR in every version; an IPv4-mapped GID against a non-mapped one trips the
    GID-type check on both sides; any other non-RoCE-v2-IPv4 slot fails RTR up to perftest 6.17 and
    gives "header, no row, exit 0" from 6.20 on. The peer of a side that fails sees the handshake fail.
    """
    run, mine, theirs = side.run, side.gid_class, str(peer.get("gid_class"))
    old, peer_old = (bp.version_tuple(v) < (6, 20) for v in (run.version, str(peer.get("version", ""))))
    if mine == "empty" or (old and mine != "ok" and not _incompatible(mine, theirs)):
        side.out.err(bp.rtr_error(bp.qpn(run)))
        return 1
    if _incompatible(mine, theirs):
        side.out.err(bp.GID_INCOMPATIBLE)
        return 1
    if theirs == "empty" or (peer_old and theirs != "ok"):
        side.out.out(bp.addresses(run).split(" remote")[0])
        side.out.err(bp.handshake_error(run.role))
        return 1
    return None


def _incompatible(mine: str, theirs: str) -> bool:
    return "empty" not in (mine, theirs) and (mine == "not-ipv4") != (theirs == "not-ipv4")


def _run_seconds(side: Side) -> float:
    run = side.run
    if run.duration_s is not None:
        return float(run.duration_s)
    rate = side.node.perftest_rate(side.fn.rdma_dev, False) or 1.0
    return run.iterations * run.size_bytes * 8 / (rate * 1e9)


def _no_traffic(side: Side, conn: LineConn) -> int:
    end = time.time() + _run_seconds(side)
    while time.time() < end and not conn.closed:
        conn.lines(min(TICK_S, max(0.0, end - time.time())))
    return 0


def _client_run(side: Side, conn: LineConn, flap_on: bool, pair: str, peer_cap: float | None = None) -> int:
    seconds = _run_seconds(side)

    def rate(concurrent: bool) -> float:
        own = side.node.perftest_rate(side.fn.rdma_dev, concurrent)
        return own if peer_cap is None else min(own, peer_cap)

    board = FlowBoard(side.ctx.shared, pair, side.ctx.node_name, side.fn.rdma_dev)
    counter = ByteCounter(side.ctx.sysfs, side.fn.rdma_dev, "port_xmit_data")
    start = last = board.start
    end = start + seconds
    flap = Flap(side.ctx.sysfs, side.fn.rdma_dev, side.fn.netdev, (start, seconds), flap_on)
    fail_at = start + min(0.2, seconds / 4) if side.fault == "client-fail" else None
    down_s = 0.0
    try:
        while (now := time.time()) < end:
            if side.fault == "hang":
                hang()
            if fail_at is not None and now >= fail_at:
                side.out.err(bp.completion_error(side.run.version, "client", bp.qpn(side.run)))
                return 1
            down = flap.step(now)
            now_rate = 0.0 if down else rate(board.busy_now())
            down_s += (now - last) if down else 0.0
            moved = now_rate * 1e9 / 8 * (now - last)
            counter.add(moved)
            last = now
            conn.lines(min(TICK_S, max(0.0, end - now)))
            if conn.closed or not conn.send(f"P {moved:.0f}"):
                time.sleep(0.5)  # the RC retries run out before the completion error shows
                side.out.err(bp.completion_error(side.run.version, "client", bp.qpn(side.run)))
                return 1
            board.heartbeat()
        concurrent = board.overlap_fraction(end) > 0.5
    finally:
        flap.finish()
        board.finish()
    gbps = rate(concurrent) * (1 - down_s / seconds)
    target = gbps * 1e9 / 8 * seconds
    top_up = max(0.0, target - counter.bytes)
    counter.add(top_up)
    conn.send(f"P {top_up:.0f}")
    return _client_report(side, conn, round(gbps, 2))


def _client_report(side: Side, conn: LineConn, gbps: float) -> int:
    run = replace(side.run, gbps=gbps)
    side.out.out(bp.result_row(run) + bp.RESULT_LINE)
    _write_json(side, run)
    conn.send_json({"report": gbps})
    if conn.read_line() is None:  # the server's report never came: it died or hung up
        side.out.err(" Failed to exchange data between server and clients\n")
        return 1
    return 0


def _server_run(side: Side, conn: LineConn, flap_on: bool) -> int:
    seconds = _run_seconds(side)
    start = time.time()
    counter = ByteCounter(side.ctx.sysfs, side.fn.rdma_dev, "port_rcv_data")
    flap = Flap(side.ctx.sysfs, side.fn.rdma_dev, side.fn.netdev, (start, seconds), flap_on)
    crash_at = start + seconds / 2 if side.fault == "crash-mid-run" else None
    try:
        report = _server_wait(side, conn, counter, flap, crash_at)
    finally:
        flap.finish()
    if report is None:
        return 1
    conn.send_json({"report": report})
    run = replace(side.run, gbps=report)
    side.out.out(bp.result_row(run) + bp.RESULT_LINE)
    _write_json(side, run)
    return 0


def _server_wait(side: Side, conn: LineConn, counter: ByteCounter, flap: Flap, crash_at: float | None) -> float | None:
    """The passive server during the run: count what arrives, until the client's report (None: failed)."""
    while True:
        if side.fault == "hang":
            hang()
        now = time.time()
        if crash_at is not None and now >= crash_at:
            side.out.err(bp.completion_error(side.run.version, "server", bp.qpn(side.run)))
            return None
        flap.step(now)
        report = _apply(conn.lines(TICK_S), counter)
        if report is not None:
            return report
        if conn.closed:
            side.out.err(bp.handshake_error("server"))
            return None


def _apply(lines: list[str], counter: ByteCounter) -> float | None:
    """Move the receive counter by the client's progress lines; the client's Gb/s once it reports."""
    for line in lines:
        if line.startswith("P "):
            with contextlib.suppress(ValueError):
                counter.add(float(line[2:]))
        elif line.startswith("{"):
            with contextlib.suppress(ValueError, KeyError, TypeError):
                return float(json.loads(line)["report"])
    return None


def _write_json(side: Side, run: bp.PerftestRun) -> None:
    if side.json_file and not side.out.garbage:
        Path(side.json_file).write_text(bp.render_ib_write_bw_json(run), encoding="utf-8")

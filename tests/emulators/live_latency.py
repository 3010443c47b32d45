"""ib_write_lat in the lab: the same TCP exchange and port behaviour as the ib_write_bw emulator, latency output.

Server (no host argument): the waiting box, bind 0.0.0.0:<-p> (SO_REUSEADDR, listen(1)), accept() with no
timeout, listener closed. Client: one connect(), no retry. Both sleep 1 s (as perftest does), swap a hello,
print the latency banner (TX depth 1, no CQ moderation line), the addresses and the latency header. The client
then "writes" -n messages: it waits -n round trips of the model's latency (2 x the half round trip), tells the
server its typical figure, and both print their row (a latency test's sides each print their own; here the
client's model speaks for the path, as a write's latency is the slower end's). Faults (`lab.set_fault(node,
"ib_write_lat", ...)`): `never-ready` (the server never listens), `client-fail` (the client's completion
error, exit 1; the server then fails its handshake).
"""

from __future__ import annotations

import json
import time
from dataclasses import replace

from tests.emulators import bench_perftest as bp
from tests.emulators.live_conn import LineConn
from tests.emulators.live_perftest import SETTLE_S, Side, _client_connect, _hello, _server_connect

MAX_RUN_S = 2.0  # 1000 round trips of a hot-plugged 48 KiB write take 62 ms; a big -n is clamped, not waited


def run_side(side: Side) -> int:
    """One side of ib_write_lat to its end; the exit status (stdout/stderr written as it went)."""
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


def _session(side: Side, conn: LineConn) -> int:
    time.sleep(SETTLE_S)
    conn.send_json(_hello(side))
    peer = conn.read_json()
    if peer is None:
        side.out.err(" Failed to exchange data between server and clients\n")
        return 1
    run = replace(side.run, remote_gid=str(peer.get("gid", "::")),
                  mtu_bytes=min(side.run.mtu_bytes, int(str(peer.get("mtu", 4096)))))
    side.run = run
    side.out.out(bp.latency_banner(run) + bp.addresses(run) + bp.RESULT_LINE + bp.LAT_HEADER)
    if side.server is not None:
        return _client_run(side, conn)
    return _server_run(side, conn)


def _client_run(side: Side, conn: LineConn) -> int:
    typical = side.node.write_latency_us(side.fn.rdma_dev, side.run.size_bytes)
    if side.fault == "client-fail":
        time.sleep(0.2)
        side.out.err(bp.completion_error(side.run.version, "client", bp.qpn(side.run)).replace(
            "run_iter_bw", "run_iter_lat_write"))
        return 1
    time.sleep(min(MAX_RUN_S, side.run.iterations * 2 * typical / 1e6))
    if not conn.send_json({"typical_us": typical}) or conn.read_line() is None:
        side.out.err(" Failed to exchange data between server and clients\n")
        return 1
    side.out.out(bp.latency_row(side.run.size_bytes, side.run.iterations, typical) + bp.RESULT_LINE)
    return 0


def _server_run(side: Side, conn: LineConn) -> int:
    line = conn.read_line()
    try:
        typical = float(json.loads(line or "")["typical_us"])
    except (ValueError, KeyError, TypeError):
        side.out.err(bp.handshake_error("server"))
        return 1
    conn.send("done")
    side.out.out(bp.latency_row(side.run.size_bytes, side.run.iterations, typical) + bp.RESULT_LINE)
    return 0

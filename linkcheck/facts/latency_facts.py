"""Latency results from the bundle's `kind: latency` captures: ib_write_lat per path and size, the small all_reduce."""

from __future__ import annotations

import math

from linkcheck.errors import ParseError
from linkcheck.facts.model import AllReduceRow, AllReduceRun, DataPath, LatencyRun
from linkcheck.integers import ascii_int
from linkcheck.model import Capture
from linkcheck.parsers.nccl_log import parse_nccl_log
from linkcheck.parsers.nccl_tests import parse_nccl_tests
from linkcheck.parsers.perftest_lat import parse_perftest_lat
from linkcheck.values import byte_size

KIND = "latency"


def _path_key(cap: Capture, paths: tuple[DataPath, ...]) -> str:
    """The path a client ran on: the recorded key when the bundle's paths still hold it, else its twins' names."""
    key = cap.meta.get("path", "")
    if any(p.key == key for p in paths):
        return key
    local, peer = cap.meta.get("local_netdev") or "?", cap.meta.get("peer_netdev") or "?"
    first = paths[0].a.node if paths else "a"  # the pair's first node ("a"; a cable's first end in a cluster)
    return key or (f"{local}<->{peer}" if cap.node == first else f"{peer}<->{local}")


def _size(cap: Capture) -> int:
    text = cap.meta.get("size_bytes", "")
    return ascii_int(text, 0, 1 << 40) or 0


def _lat_run(cap: Capture, paths: tuple[DataPath, ...]) -> LatencyRun:
    size = _size(cap)
    base = LatencyRun(_path_key(cap, paths), size, None, cap.node, cap.meta.get("local_rdma_dev"))
    if cap.skipped:
        return _with(base, problem=cap.skipped)
    try:
        result = parse_perftest_lat(cap.stdout)
    except ParseError as exc:
        return _with(base, problem=f"ib_write_lat {byte_size(size)} (client {cap.node}): {exc.reason}")
    row = result.row(size) or (result.rows[-1] if result.rows else None)
    failed = cap.exit_status not in (0, None)
    if row is None or row.typical_us is None or failed:
        stderr = next((ln.strip() for ln in cap.stderr.splitlines() if ln.strip()), None)
        why = result.errors[0] if result.errors else (stderr or "failed" if failed else "no result row")
        return _with(base, problem=f"exit {cap.exit_status}: {why}")
    return LatencyRun(base.path_key, row.size_bytes, row.typical_us, cap.node, base.device, row.p99_us,
                      row.t_max_us)


def _with(run: LatencyRun, *, problem: str) -> LatencyRun:
    return LatencyRun(run.path_key, run.size_bytes, None, run.client_node, run.device, problem=problem)


def _allreduce(cap: Capture) -> AllReduceRun:
    if cap.skipped:
        return AllReduceRun(problem=cap.skipped)
    try:
        result = parse_nccl_tests(cap.stdout)
    except ParseError as exc:
        return AllReduceRun(problem=f"all_reduce_perf: {exc.reason}")
    rows = tuple(AllReduceRow(r.size_bytes, r.oop_time_us) for r in result.rows
                 if r.oop_time_us is not None and math.isfinite(r.oop_time_us) and r.oop_time_us > 0)
    network, socket = None, False
    try:
        log = parse_nccl_log(cap.stdout)
        network, socket = log.network, log.uses_socket
    except ParseError:
        pass  # no NCCL_DEBUG=INFO lines: the transport is unknown, the times stand
    problem = None
    if not rows:
        problem = result.errors[0] if result.errors else "no result rows"
    elif cap.exit_status not in (0, None):
        problem = f"exited {cap.exit_status}"
    return AllReduceRun(rows, result.wrong_total, network, socket, problem)


def build_latency_facts(captures: list[Capture], paths: tuple[DataPath, ...]) -> tuple[tuple[LatencyRun, ...],
                                                                                      AllReduceRun | None]:
    """Every ib_write_lat client run (in bundle order) and the all_reduce run, when the bundle has them."""
    mine = [c for c in captures if c.meta.get("kind") == KIND and c.meta.get("format", "text") == "text"]
    runs = tuple(_lat_run(c, paths) for c in mine if c.spec == "ib_write_lat" and c.meta.get("role") == "client")
    reduce_cap = next((c for c in mine if c.spec == "all_reduce_perf"), None)
    return runs, (_allreduce(reduce_cap) if reduce_cap is not None else None)

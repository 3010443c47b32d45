"""Emulated perftest BW tests and nccl-tests binaries for the lab CLI (flags as the real tools take them).

Offline (no LINKCHECK_LAB_SHARED) each run prints at once from the node model (perftest_gbps, the link
state and NCCL_IB_HCA). In the lab, ib_write_bw and 2-rank all_gather_perf under mpirun run live: a real
TCP exchange between the nodes, real time, counters and faults (live_perftest, live_nccl). Device, port
and GID checks fail the way perftest fails.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from tests.emulators.bench_perftest import (
    PerftestRun,
    render_ib_write_bw,
    render_ib_write_bw_json,
    render_ib_write_lat,
    version_tuple,
)
from tests.emulators.derive import auto_gid_index, gid_entry, inet_ntop6, rdma_index_map, roce_mtu
from tests.emulators.live_conn import Printer, die_on_sigint, set_process_name
from tests.emulators.live_state import LabContext
from tests.emulators.node import Function, Node

if TYPE_CHECKING:
    from tests.emulators.bench_nccl import NcclTestsRun

Output = tuple[str, str, int]
_PERFTEST_WITH_ARG = {"-d": "device", "--ib-dev": "device", "-x": "gid", "--gid-index": "gid", "-s": "size",
                      "--size": "size", "-D": "duration", "--duration": "duration", "-n": "iters", "--iters": "iters",
                      "-p": "port", "--port": "port", "-i": "ib_port", "--ib-port": "ib_port", "-q": "qp", "--qp": "qp",
                      "--out_json_file": "json_file"}
_PERFTEST_FLAGS = {"-F", "--CPU-freq", "--report_gbits", "--out_json", "-V", "--version", "-h", "--help"}


def _size(text: str) -> int:
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * mult[text[-1].upper()] if text[-1:].upper() in mult else int(text)


def parse_perftest(args: list[str]) -> tuple[dict[str, str], set[str], list[str]] | str:
    """(options, flags, positionals) or the error text perftest prints for an unknown flag."""
    opts: dict[str, str] = {}
    flags: set[str] = set()
    pos: list[str] = []
    it = iter(args)
    for a in it:
        key, eq, val = a.partition("=")
        if key in _PERFTEST_WITH_ARG:
            opts[_PERFTEST_WITH_ARG[key]] = val if eq else next(it, "")
        elif a in _PERFTEST_FLAGS:
            flags.add(a)
        elif a.startswith("-"):
            return " Invalid Command or flag.\n Please check command line and run again.\n\n"
        else:
            pos.append(a)
    return opts, flags, pos


def _remote_gid(node: Node, fn: Function, server: str | None) -> str:
    if server:
        try:
            return f"::ffff:{ipaddress.IPv4Address(server)}"
        except ValueError:
            return "::"
    peer = next((n.dst for n in node.neighbours if n.dev == fn.netdev), None)
    return f"::ffff:{peer}" if peer else "::"


def run_perftest(test: str) -> Callable[[Node, list[str]], Output]:
    titles = {"ib_write_bw": "RDMA_Write BW Test", "ib_read_bw": "RDMA_Read BW Test", "ib_send_bw": "Send BW Test"}

    def run(node: Node, args: list[str]) -> Output:
        parsed = parse_perftest(args)
        if isinstance(parsed, str):
            return parsed, " Parser function exited with Error\n", 1
        opts, flags, pos = parsed
        if flags & {"-V", "--version"}:
            return f"Version: {node.version('perftest')}\n", "", 1
        if len(pos) > 1:
            return " Invalid Command line. Please check command rerun \n", " Parser function exited with Error\n", 1
        return _perftest_run(node, test, titles[test], opts, flags, pos[0] if pos else None)

    return run


def _perftest_run(node: Node, test: str, title: str, opts: dict[str, str], flags: set[str],
                  server: str | None) -> Output:
    order = rdma_index_map(node)
    name = opts.get("device") or min(order, key=lambda d: order[d])
    try:
        fn = node.function(name)
    except KeyError:
        return "", f"IB device {name} not found\n Unable to find the Infiniband/RoCE device\n", 1
    if not fn.link_up:
        return "", " Port number 1 state is Down\n Couldn't get context for the device\n", 1
    index = int(opts["gid"]) if "gid" in opts else auto_gid_index(fn)
    ctx = LabContext.from_env()
    if ctx is not None and test == "ib_write_bw":
        return _live_perftest(node, ctx, fn, index, opts, flags, server)
    if gid_entry(fn, index).type is None:
        return "", f"Failed to modify QP {0x107 + index} to RTR\n Unable to Connect the HCA's through the link\n", 1
    run = PerftestRun(
        role="client" if server else "server", device=fn.rdma_dev, gid_index=index,
        local_gid=inet_ntop6(gid_entry(fn, index).gid), remote_gid=_remote_gid(node, fn, server),
        gbps=node.perftest_gbps, mtu_bytes=roce_mtu(fn.mtu)[0], size_bytes=_size(opts.get("size", "65536")),
        duration_s=int(opts["duration"]) if "duration" in opts else None,
        iterations=int(opts.get("iters", "5000")), version=node.version("perftest"),
        report_gbits="--report_gbits" in flags,
    )
    stdout, stderr, rc = render_ib_write_bw(run)
    if test != "ib_write_bw":
        stdout = stdout.replace("RDMA_Write BW Test", title)
        if test == "ib_read_bw":
            stdout = stdout.replace(" Max inline data : 0[B]", " Outstand reads  : 16")
    if "--out_json" in flags and version_tuple(run.version) >= (6, 20):
        Path(opts.get("json_file", "perftest_out.json")).write_text(render_ib_write_bw_json(run), encoding="utf-8")
    return stdout, stderr, rc


def _live_perftest(node: Node, ctx: LabContext, fn: Function, index: int, opts: dict[str, str], flags: set[str],
                   server: str | None) -> Output:
    """In the lab: a real server/client pair over TCP (tests.emulators.live_perftest); output streamed."""
    from tests.emulators import live_perftest

    set_process_name("ib_write_bw")
    die_on_sigint()
    run = PerftestRun(
        role="client" if server else "server", device=fn.rdma_dev, gid_index=index,
        local_gid=inet_ntop6(gid_entry(fn, index).gid), remote_gid="::", gbps=0.0, mtu_bytes=roce_mtu(fn.mtu)[0],
        size_bytes=_size(opts.get("size", "65536")), duration_s=int(opts["duration"]) if "duration" in opts else None,
        iterations=int(opts.get("iters", "5000")), version=node.version("perftest"),
        report_gbits="--report_gbits" in flags,
    )
    side = live_perftest.make_side(node, ctx, fn, run, opts, flags, server)
    return "", "", live_perftest.run_side(side)


def run_write_lat(node: Node, args: list[str]) -> Output:
    """ib_write_lat: offline, one side's output at once from the model's latency; in the lab, live (live_latency)."""
    parsed = parse_perftest(args)
    if isinstance(parsed, str):
        return parsed, " Parser function exited with Error\n", 1
    opts, flags, pos = parsed
    if flags & {"-V", "--version"}:
        return f"Version: {node.version('perftest')}\n", "", 1
    if len(pos) > 1:
        return " Invalid Command line. Please check command rerun \n", " Parser function exited with Error\n", 1
    server = pos[0] if pos else None
    order = rdma_index_map(node)
    name = opts.get("device") or min(order, key=lambda d: order[d])
    try:
        fn = node.function(name)
    except KeyError:
        return "", f"IB device {name} not found\n Unable to find the Infiniband/RoCE device\n", 1
    if not fn.link_up:
        return "", " Port number 1 state is Down\n Couldn't get context for the device\n", 1
    index = int(opts["gid"]) if "gid" in opts else auto_gid_index(fn)
    run = PerftestRun(
        role="client" if server else "server", device=fn.rdma_dev, gid_index=index,
        local_gid=inet_ntop6(gid_entry(fn, index).gid), remote_gid=_remote_gid(node, fn, server), gbps=0.0,
        mtu_bytes=roce_mtu(fn.mtu)[0], size_bytes=_size(opts.get("size", "2")), duration_s=None,
        iterations=int(opts.get("iters", "1000")), version=node.version("perftest"))
    ctx = LabContext.from_env()
    if ctx is None:
        return render_ib_write_lat(run, node.write_latency_us(fn.rdma_dev, run.size_bytes))
    from tests.emulators import live_latency, live_perftest

    set_process_name("ib_write_lat")
    die_on_sigint()
    fault = ctx.fault("ib_write_lat")
    side = live_perftest.Side(node, ctx, fn, replace(run, seed=int(opts.get("port", "18515")) % 97),
                              int(opts.get("port", "18515")), server, fault, Printer(), None)
    return "", "", live_latency.run_side(side)


def _busbw_peak(node: Node) -> float:
    if os.environ.get("NCCL_IB_DISABLE") == "1" or os.environ.get("NCCL_NET") == "Socket":
        return 2.04
    up = sum(1 for f in node.functions if f.link_up)
    return 23.74 if up >= 2 else 11.9


SMALL_ALLREDUCE_BYTES = 1 << 20  # up to here an emulated all_reduce follows the latency model, not the busbw curve


def run_nccl_tests(collective: str) -> Callable[[Node, list[str]], Output]:
    def run(node: Node, args: list[str]) -> Output:
        # Imported here: the perftest emulators, started once per traffic round, need none of it.
        from tests.emulators.bench_nccl import (
            NcclTestsRun,
            allreduce_latency_curve,
            busbw_curve,
            render_all_gather_perf,
            render_all_gather_perf_json,
        )

        opts: dict[str, str] = {"-b": "32M", "-e": "32M", "-n": "20", "-w": "1"}
        it = iter(args)
        for a in it:
            if a in ("-b", "-e", "-f", "-g", "-n", "-w", "-c", "-J", "-t", "-d", "-o", "-a", "-z", "-G"):
                opts[a] = next(it, "")
            elif a in ("-h", "--help") or a.startswith("-"):
                return f"USAGE: {collective}_perf \n\t[-t,--nthreads <num threads>] \n", "", 0
        low, high = _size(opts["-b"]), _size(opts["-e"])
        if low > high:
            return f"invalid sizes for 'minbytes' and 'maxbytes': {low} > {high}\n", "", 255
        peer = os.environ.get("LINKCHECK_LAB_PEER", "peer")
        curve = busbw_curve(node.nccl_busbw_gbs or _busbw_peak(node), low, high)
        if collective == "all_reduce" and high <= SMALL_ALLREDUCE_BYTES:  # latency-bound: the decode sizes
            curve = allreduce_latency_curve(low, high, node.allreduce_slowdown)
        run = NcclTestsRun(hosts=(node.hostname, peer), curve=curve, iters=int(opts["-n"]), warmup=int(opts["-w"]),
                           version=node.version("nccl-tests"), nccl_version=node.version("nccl"),
                           collective=collective)
        json_path = opts.get("-J") if opts.get("-J", "").lower().endswith(".json") else None
        live = _live_nccl(node, run, json_path)
        if live is not None:
            return live
        stdout, stderr, rc = render_all_gather_perf(run)
        if json_path is not None:
            Path(opts["-J"]).write_text(render_all_gather_perf_json(run), encoding="utf-8")
            stdout = f"# Writing JSON output to {opts['-J']}\n" + stdout
        return stdout, stderr, rc

    return run


def _live_nccl(node: Node, run: NcclTestsRun, json_path: str | None) -> Output | None:
    """In the lab under mpirun with 2 ranks or more: the ranks really talk (tests.emulators.live_nccl)."""
    from tests.emulators import live_nccl

    ctx, job = LabContext.from_env(), live_nccl.Job.from_env()
    if ctx is None or job is None or job.size < 2:
        return None
    set_process_name(run.program)
    die_on_sigint()
    try:
        has_json = tuple(int(x) for x in run.version.split(".")[:3]) >= (2, 17, 3)
    except ValueError:
        has_json = True
    if not has_json:
        json_path = None  # -J arrived in nccl-tests 2.17.3
    return "", "", live_nccl.run_rank(node, ctx, job, run, json_path)


TOOLS: dict[str, Callable[[Node, list[str]], Output]] = {
    "ib_write_bw": run_perftest("ib_write_bw"),
    "ib_read_bw": run_perftest("ib_read_bw"),
    "ib_send_bw": run_perftest("ib_send_bw"),
    "ib_write_lat": run_write_lat,
    "all_gather_perf": run_nccl_tests("all_gather"),
    "all_reduce_perf": run_nccl_tests("all_reduce"),
}

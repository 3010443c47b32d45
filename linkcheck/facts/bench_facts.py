"""Traffic results from the bundle's benchmark captures: per-path Gb/s and the NCCL run."""

from __future__ import annotations

from linkcheck.errors import ParseError
from linkcheck.facts.model import BenchFacts, DataPath, NcclRun, RdmaRun
from linkcheck.model import Capture


def _path_key(cap: Capture, paths: tuple[DataPath, ...]) -> str:
    local, peer = cap.meta.get("local_netdev", "?"), cap.meta.get("peer_netdev", "?")
    a_side, b_side = (local, peer) if cap.node == "a" else (peer, local)
    for path in paths:
        if (path.a.netdev, path.b.netdev) == (a_side, b_side):
            return path.key
    return f"{a_side}<->{b_side}"


def _rdma_run(cap: Capture, paths: tuple[DataPath, ...]) -> RdmaRun:
    from linkcheck.parsers.perftest import parse_perftest

    run = RdmaRun(path_key=_path_key(cap, paths), mode=cap.meta.get("mode", "alone"),
                  direction=cap.meta.get("direction", "a->b"), gbps=None, client_node=cap.node,
                  device=cap.meta.get("local_rdma_dev"))
    if cap.skipped:
        return _with_problem(run, cap.skipped)
    gbits = cap.meta.get("report_gbits")
    try:
        result = parse_perftest(cap.stdout, report_gbits=None if gbits is None else gbits == "true")
    except ParseError as exc:
        return _with_problem(run, exc.reason)
    gbps = result.bw_mean_gbps if len(result.rows) > 1 else result.bw_avg_gbps
    if gbps is None:
        why = result.errors[0] if result.errors else "no result row (wrong GID index -x?)"
        return _with_problem(run, f"exit {cap.exit_status}: {why}")
    return RdmaRun(run.path_key, run.mode, run.direction, gbps, run.client_node, run.device)


def _with_problem(run: RdmaRun, problem: str) -> RdmaRun:
    return RdmaRun(run.path_key, run.mode, run.direction, None, run.client_node, run.device, problem)


def _nccl_run(test_cap: Capture | None, log_cap: Capture | None) -> NcclRun:
    from linkcheck.parsers.nccl_log import parse_nccl_log
    from linkcheck.parsers.nccl_tests import parse_nccl_tests

    problem = None
    busbw = avg = None
    wrong = 0
    if test_cap is not None:
        try:
            result = parse_nccl_tests(test_cap.stdout)
            busbw, avg, wrong = result.max_busbw_gbs, result.avg_busbw_gbs, result.wrong_total
            if not result.rows:
                problem = result.errors[0] if result.errors else "no result rows"
        except ParseError as exc:
            problem = exc.reason
    network: str | None = None
    devices: tuple[str, ...] = ()
    channels: tuple[int, ...] = ()
    socket = False
    if log_cap is not None:
        try:
            log = parse_nccl_log(log_cap.stdout)
            network, devices, channels, socket = log.network, log.ib_devices, log.channel_net_devs, log.uses_socket
        except ParseError as exc:
            problem = problem or f"NCCL log: {exc.reason}"
    return NcclRun(busbw_gbs=busbw, avg_busbw_gbs=avg, wrong=wrong, network=network, ib_devices=tuple(devices),
                   channel_net_devs=tuple(channels), uses_socket=socket, problem=problem)


def build_bench_facts(captures: list[Capture], paths: tuple[DataPath, ...]) -> tuple[BenchFacts, frozenset[str]]:
    """BenchFacts plus which kinds of test ("rdma", "nccl") the bundle holds."""
    rdma = tuple(_rdma_run(c, paths) for c in captures
                 if c.meta.get("kind") == "rdma" and c.meta.get("role") == "client")
    test_cap = next((c for c in captures if c.meta.get("kind") == "nccl" and c.spec != "nccl_log"), None)
    log_cap = next((c for c in captures if c.meta.get("kind") == "nccl" and c.spec == "nccl_log"), None)
    nccl = _nccl_run(test_cap, log_cap) if (test_cap or log_cap) else None
    present = frozenset(k for k, v in (("rdma", rdma), ("nccl", nccl)) if v)
    flapped = tuple(c.meta["subject"] for c in captures if c.meta.get("kind") == "flap" and "subject" in c.meta)
    return BenchFacts(rdma=rdma, nccl=nccl, flapped=flapped), present

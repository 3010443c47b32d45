"""The latency test: ib_write_lat per path and message size, one run at a time, then the small all_reduce; a pair's
and a cluster's alike (a cluster's paths are every cable's, its all_reduce across every node).

Latency must have the link to itself: a bandwidth round or another latency run beside it queues its messages
behind theirs. So each run is one path, one size, one server and one client, started exactly as an ib_write_bw
round's (server first, seen listening, then the client; every process by PID in the run's registry), and the
next run starts only once both have exited. The client writes from node a into node b: a write latency is half
a ping-pong round trip, the same in both directions.

Sizes: 2 B (perftest's default, the published 1.47 us of a GB10 pair) and 48 KiB (49152 B, the ~48 KB payload
of a decode all-reduce, the published 8.8 us; the ~100 per step were four Sparks with speculative steps);
RDMA_LATENCY_HIGH judges both
(docs/advise.md, the latency bands). The all_reduce runs -b 16K -e 64K by factors of 2 (the decode band that
NCCL_ALLREDUCE_LATENCY_HIGH judges) with the all_gather sweep's launcher, HCAs and NCCL INFO log.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping

import msgspec
from msgspec.structs import replace

from linkcheck.bench import remote
from linkcheck.bench.guard import Progress, TrafficResult, run_guarded
from linkcheck.bench.nccl import (
    ClusterNcclPlan,
    NcclOptions,
    cluster_mpirun_script,
    nccl_failure,
    plan_cluster_nccl,
    run_mpirun,
)
from linkcheck.bench.perftest import SERVER_EXIT_S, first_error, refuse_busy_ports, round_failure
from linkcheck.bench.plan import BenchPath, PathEnd
from linkcheck.cluster.facts import ClusterFacts
from linkcheck.errors import BenchError
from linkcheck.model import Capture
from linkcheck.transport.base import Transport

KIND = "latency"  # the captures' `kind`, which facts/latency_facts.py reads
TOOL = "ib_write_lat"
ALLREDUCE = "all_reduce_perf"
SIZES = (2, 49152)
ITERATIONS = 1000  # perftest's default for latency tests: the median of 1000 writes is stable
ALLREDUCE_MIN_BYTES = 16 << 10
ALLREDUCE_MAX_BYTES = 64 << 10
# 200 timed all-reduces per size after 20 warm-up ones: at ~68 us each that is ~15 ms per size, and the median of
# nccl-tests' default 20 would move by a few us with one slow iteration.
ALLREDUCE_ITERS = 200
ALLREDUCE_WARMUP = 20
DIRECTION = "a->b"


class LatencyOptions(msgspec.Struct, frozen=True):
    """What the latency test runs: `sizes` per path, `iterations` writes each, then (`allreduce`) the small
    all_reduce; `allreduce_binary` is all_reduce_perf's path on the nodes (else found on PATH or in
    ~/nccl-tests/build)."""

    sizes: tuple[int, ...] = SIZES
    iterations: int = ITERATIONS
    port_base: int | None = None
    ready_timeout_s: float = 10.0
    run_timeout_s: int = 60
    allreduce: bool = True
    allreduce_binary: str | None = None
    allreduce_timeout_s: int = 120


class LatencyRun(msgspec.Struct, frozen=True):
    """One ib_write_lat run: a path, a size, the server's port."""

    id: str
    path: BenchPath
    size_bytes: int
    port: int

    def ends(self) -> tuple[PathEnd, PathEnd]:
        """(client, server)."""
        return self.path.ends(DIRECTION)


def plan_latency(paths: tuple[BenchPath, ...], options: LatencyOptions) -> list[LatencyRun]:
    """Each path at each size, path by path; every server gets its own port."""
    base = options.port_base or 20000 + secrets.randbelow(2000) * 10
    runs: list[LatencyRun] = []
    for path in paths:
        for size in options.sizes:
            runs.append(LatencyRun(f"lat-{len(runs)}-{size}", path, size, base + len(runs)))
    return runs


def lat_argv(end: PathEnd, port: int, size: int, iterations: int, server_ip: str | None) -> list[str]:
    argv = ["ib_write_lat", "-d", end.rdma_dev, "-i", "1", "-x", str(end.gid_index), "-p", str(port), "-F",
            "-s", str(size), "-n", str(iterations)]
    return argv + ([server_ip] if server_ip else [])


def lat_meta(run: LatencyRun, role: str, run_id: str) -> dict[str, str]:
    client, server = run.ends()
    local, peer = (client, server) if role == "client" else (server, client)
    return {"kind": KIND, "tool": TOOL, "round": run.id, "role": role, "path": run.path.key, "direction": DIRECTION,
            "local_netdev": local.netdev, "local_rdma_dev": local.rdma_dev, "peer_netdev": peer.netdev,
            "peer_rdma_dev": peer.rdma_dev, "gid_index": str(local.gid_index), "size_bytes": str(run.size_bytes),
            "port": str(run.port), "format": "text", "run_id": run_id}


def refuse_busy_latency(transports: dict[str, Transport], runs: list[LatencyRun]) -> None:
    """Refuse to start when a server port is taken on node b, naming who holds it."""
    wanted: dict[str, set[int]] = {}
    for run in runs:
        wanted.setdefault(run.ends()[1].node, set()).add(run.port)
    refuse_busy_ports(transports, wanted)


class _Side(msgspec.Struct):
    """One started process of a run and the capture it will make."""

    template: Capture
    proc: remote.RemoteProcess


def _start(transports: dict[str, Transport], registry: remote.ProcessRegistry, run: LatencyRun, role: str,
           options: LatencyOptions) -> _Side:
    client, server = run.ends()
    end = client if role == "client" else server
    argv = lat_argv(end, run.port, run.size_bytes, options.iterations, server.ip if role == "client" else None)
    template = Capture(end.node, TOOL, " ".join(argv), "", exit_status=None, arg=f"{run.id}.{role}.{end.rdma_dev}",
                       meta=lat_meta(run, role, registry.run_id))
    proc = remote.start(transports[end.node], argv, run_dir=registry.run_dir(end.node),
                        deadline_s=int(options.ready_timeout_s + options.run_timeout_s + SERVER_EXIT_S + 30),
                        label=f"{TOOL} {role} on {end.node}:{end.rdma_dev}")
    registry.add(proc, template)
    return _Side(template, proc)


def _finish(transports: dict[str, Transport], registry: remote.ProcessRegistry, side: _Side, wait_s: float,
            started: float, sink: list[Capture], skipped: str | None = None) -> None:
    """Wait for one process (up to wait_s; past it, end it by PID) and record what it printed."""
    transport = transports[side.proc.node]
    done = skipped is None and remote.wait_exit(transport, side.proc, wait_s)
    elapsed = time.monotonic() - started
    if not registry.claim(side.proc):
        return  # ended by the registry (failure elsewhere, Ctrl-C): it records what the process printed
    if not done:
        remote.kill(transport, side.proc)
    result = remote.collect_output(transport, side.proc)
    why = skipped or (None if done else f"did not finish within {wait_s:.0f} s; ended by PID {side.proc.pgid}")
    meta = {**side.template.meta, "elapsed_s": f"{elapsed:.2f}"}
    if result.ended_at is not None:
        meta["exited_at"] = f"{result.ended_at:.3f}"  # the node's clock: which side failed first
    sink.append(replace(side.template, stdout=result.stdout, stderr=result.stderr,
                                        exit_status=result.exit_status, duration_s=elapsed, skipped=why, meta=meta))


def run_latency_round(transports: dict[str, Transport], registry: remote.ProcessRegistry, run: LatencyRun,
                      options: LatencyOptions, sink: list[Capture]) -> None:
    """One ib_write_lat run into `sink`: the server, seen listening, then the client; both awaited and collected.
    Raises BenchError naming the process that failed first."""
    first = len(sink)
    server = _start(transports, registry, run, "server", options)
    problem = remote.wait_listening(transports[server.proc.node], server.proc, run.port, options.ready_timeout_s)
    if problem:
        if registry.claim(server.proc):
            transport = transports[server.proc.node]
            remote.kill(transport, server.proc)
            result = remote.collect_output(transport, server.proc)
            sink.append(replace(server.template, stdout=result.stdout, stderr=result.stderr,
                                exit_status=result.exit_status, skipped=problem))
            if result.exit_status == NOT_FOUND:
                raise not_found(server.proc.node)
            said = first_error(result)
            problem += f" ({said})" if said else ""
        raise BenchError(f"node {server.proc.node}: {problem}")
    started = time.monotonic()
    client = _start(transports, registry, run, "client", options)
    _finish(transports, registry, client, options.run_timeout_s, started, sink)
    _finish(transports, registry, server, SERVER_EXIT_S, started, sink)
    missing = next((c.node for c in sink[first:] if c.exit_status == NOT_FOUND), None)
    if missing is not None:
        raise not_found(missing)
    failure = round_failure(sink[first:], TOOL)
    if failure:
        raise BenchError(failure)


# The exit status of a program that is not on the node's PATH: `timeout`, which starts every run there, exits 127
# when it cannot find its command (GNU coreutils' timeout(1), as a POSIX shell does for a command not found).
NOT_FOUND = 127


def not_found(node: str) -> BenchError:
    """ib_write_lat is not installed on `node`: said as a missing ib_write_bw is (bench/runner.py)."""
    return BenchError(f"node {node}: {TOOL} not found", fix="sudo apt-get install perftest")


class AllReduceJob(msgspec.Struct, frozen=True):
    """The small all_reduce as it will run: its mpirun script, launched from the template's node (the head: the
    first host), and the capture it will make."""

    script: str
    template: Capture


_ITERATIONS = f" -n {ALLREDUCE_ITERS} -w {ALLREDUCE_WARMUP}"


def _allreduce_meta(hcas: str, run_id: str) -> dict[str, str]:
    return {"kind": KIND, "tool": ALLREDUCE, "min_bytes": str(ALLREDUCE_MIN_BYTES),
            "max_bytes": str(ALLREDUCE_MAX_BYTES), "hcas": hcas, "format": "text", "run_id": run_id}


def cluster_allreduce(plan: ClusterNcclPlan, options: LatencyOptions, run_id: str) -> AllReduceJob:
    """The small all_reduce across every node of a cluster: the ranks, addresses and NCCL settings of the cluster's
    all_gather job (`plan_cluster_nccl`: the ring in cable order, each rank its own cabled HCAs), at the decode
    sizes; the capture (the head's merged output) names the nodes as the all_gather's does."""
    plan = replace(plan, max_bytes=ALLREDUCE_MAX_BYTES)
    script = cluster_mpirun_script(plan, options.allreduce_binary, program=ALLREDUCE, min_bytes=ALLREDUCE_MIN_BYTES,
                                   iterations=_ITERATIONS, json_report=False)
    meta = {**_allreduce_meta(",".join(sorted({r.hca_setting for r in plan.ranks})), run_id),
            "nodes": ",".join(r.node for r in plan.ranks), "layout": plan.layout}
    return AllReduceJob(script, Capture(plan.head, ALLREDUCE, script.splitlines()[-1], "", exit_status=None,
                                        arg="allreduce", meta=meta))


def run_latency(transports: dict[str, Transport], registry: remote.ProcessRegistry, runs: list[LatencyRun],
                options: LatencyOptions, sink: list[Capture], allreduce: AllReduceJob | None) -> None:
    """Every ib_write_lat run one after another, then the all_reduce; stops at the first failure (BenchError). A
    pair's and a cluster's alike: the runs name their nodes, the job its launching node."""
    for run in runs:
        run_latency_round(transports, registry, run, options, sink)
    if allreduce is not None:
        first = len(sink)
        run_mpirun(transports[allreduce.template.node], registry, allreduce.script, allreduce.template,
                   options.allreduce_timeout_s, sink, None)
        failure = nccl_failure(sink[first]) if len(sink) > first else None
        if failure:
            raise BenchError(failure)


def run_cluster_latency(transports: dict[str, Transport], paths: tuple[BenchPath, ...], facts: ClusterFacts,
                        options: LatencyOptions, progress: Progress | None = None,
                        reach: Mapping[str, str] | None = None) -> TrafficResult:
    """A cluster's latency test under one guard: ib_write_lat on every path of every cable (`paths`, keyed by
    cable), one run at a time across the whole cluster as on a pair, then the small all_reduce across every node
    (ranked and reached as the cluster's all_gather: `plan_cluster_nccl`). The first error stops it; every process
    started is ended by PID on every node."""
    shown = progress or Progress()

    def body(registry: remote.ProcessRegistry, out: TrafficResult, flaps: list[str]) -> None:
        runs = plan_latency(paths, options)
        refuse_busy_latency(transports, runs)  # before anything is started
        registry.prepare(60 + latency_budget_s(len(runs), options))
        shown.latency_started(len(runs))
        first = len(out.captures)
        try:
            job = None
            if options.allreduce:  # refused (BenchError) when a node cannot take part: after the runs, never before
                sizes = NcclOptions(max_bytes=ALLREDUCE_MAX_BYTES, binary=options.allreduce_binary)
                plan = plan_cluster_nccl(facts, sizes, reach)
                job = cluster_allreduce(plan, options, registry.run_id)
            run_latency(transports, registry, runs, options, out.captures, job)
        finally:
            shown.latency_done(out.captures[first:])

    return run_guarded(transports, body)


def latency_budget_s(runs: int, options: LatencyOptions) -> float:
    """How long the node-side watchdogs must stay up for the latency test at its longest."""
    per_run = options.ready_timeout_s + options.run_timeout_s + SERVER_EXIT_S + 30
    return runs * per_run + (options.allreduce_timeout_s + 60 if options.allreduce else 0)

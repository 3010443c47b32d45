"""Run one round of ib_write_bw: servers first, readiness detected, clients at once, outputs collected."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from linkcheck.bench import remote
from linkcheck.bench.plan import BenchPath, PathEnd, RdmaOptions, Round
from linkcheck.errors import BenchError
from linkcheck.model import Capture
from linkcheck.transport.base import Transport

JSON_FILE = "perftest.json"


@dataclass(frozen=True)
class ToolInfo:
    """What `ib_write_bw -V` said on a node, and whether its --out_json writes valid JSON (>= 6.20)."""

    version: str | None
    json_valid: bool


def perftest_argv(end: PathEnd, port: int, options: RdmaOptions, tool: ToolInfo,
                  server_ip: str | None) -> list[str]:
    argv = ["ib_write_bw", "-d", end.rdma_dev, "-i", "1", "-x", str(end.gid_index), "-p", str(port), "-F",
            "--report_gbits", "-s", str(options.size_bytes), "-D", str(options.duration_s), "-q", str(options.qps)]
    if tool.json_valid:
        argv += ["--out_json", f"--out_json_file={JSON_FILE}"]
    return argv + ([server_ip] if server_ip else [])


def _meta(rnd: Round, path: BenchPath, role: str, local: PathEnd, peer: PathEnd, port: int,
          options: RdmaOptions, tool: ToolInfo) -> dict[str, str]:
    return {"kind": "rdma", "round": rnd.id, "mode": rnd.mode, "direction": rnd.direction, "role": role,
            "path": path.key, "local_netdev": local.netdev, "local_rdma_dev": local.rdma_dev,
            "peer_netdev": peer.netdev, "peer_rdma_dev": peer.rdma_dev, "gid_index": str(local.gid_index),
            "report_gbits": "true", "duration_s": str(options.duration_s), "port": str(port),
            "perftest_version": tool.version or "unknown", "format": "text"}


@dataclass
class _Started:
    path: BenchPath
    port: int
    server: remote.RemoteProcess
    server_argv: list[str]
    client: remote.RemoteProcess | None = None
    client_argv: list[str] | None = None
    client_started: float = 0.0


def _refuse_busy(transports: dict[str, Transport], rnd: Round) -> None:
    for path, port in zip(rnd.paths, rnd.ports, strict=True):
        _, server = path.ends(rnd.direction)
        owner = remote.port_owner(transports[server.node], port)
        if owner:
            raise BenchError(f"node {server.node}: TCP port {port} is already in use by {owner}; not starting "
                             "a perftest server there", fix="pass --port-base with a free range")


def _start_servers(transports: dict[str, Transport], registry: remote.ProcessRegistry, rnd: Round,
                   options: RdmaOptions, tools: dict[str, ToolInfo], deadline: int) -> list[_Started]:
    started = []
    for path, port in zip(rnd.paths, rnd.ports, strict=True):
        _, server = path.ends(rnd.direction)
        argv = perftest_argv(server, port, options, tools[server.node], None)
        proc = remote.start(transports[server.node], argv, deadline_s=deadline,
                            label=f"ib_write_bw server on {server.node}:{server.rdma_dev}")
        registry.add(proc)
        started.append(_Started(path, port, proc, argv))
    for item in started:
        _, server = item.path.ends(rnd.direction)
        problem = remote.wait_listening(transports[server.node], item.server, item.port, options.ready_timeout_s)
        if problem:
            err = remote.collect_output(transports[server.node], item.server)
            raise BenchError(f"node {server.node}: {problem}" + (f": {err.stderr.strip()[:200]}" if err.stderr else ""))
    return started


def run_round(transports: dict[str, Transport], registry: remote.ProcessRegistry, rnd: Round,
              options: RdmaOptions, tools: dict[str, ToolInfo],
              on_wait: Callable[[float], None] | None = None) -> list[Capture]:
    """Servers, then clients, then outputs; every process is in `registry` until it is collected."""
    _refuse_busy(transports, rnd)
    deadline = int(options.duration_s + options.ready_timeout_s + 30)
    started = _start_servers(transports, registry, rnd, options, tools, deadline)
    for item in started:
        client, server = item.path.ends(rnd.direction)
        item.client_argv = perftest_argv(client, item.port, options, tools[client.node], server.ip)
        item.client = remote.start(transports[client.node], item.client_argv, deadline_s=deadline,
                                   label=f"ib_write_bw client on {client.node}:{client.rdma_dev}")
        item.client_started = time.monotonic()
        registry.add(item.client)
    if on_wait is not None:
        on_wait(options.duration_s)
    # Not a `with` block: on Ctrl-C we must not wait for the workers; the caller kills the processes by
    # PID, which is what lets the workers' waits return.
    pool = ThreadPoolExecutor(max_workers=2 * len(started))
    try:
        finished = list(pool.map(lambda it: _finish(transports, registry, rnd, it, options, tools, deadline),
                                 started))
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    return [cap for caps in finished for cap in caps]


def _finish(transports: dict[str, Transport], registry: remote.ProcessRegistry, rnd: Round, item: _Started,
            options: RdmaOptions, tools: dict[str, ToolInfo], deadline: int) -> list[Capture]:
    client_end, server_end = item.path.ends(rnd.direction)
    assert item.client is not None and item.client_argv is not None
    caps = []
    for role, proc, argv, local, peer, wait_s in (
        ("client", item.client, item.client_argv, client_end, server_end, deadline),
        ("server", item.server, item.server_argv, server_end, client_end, 15),
    ):
        transport = transports[local.node]
        done = remote.wait_exit(transport, proc, wait_s)
        elapsed = time.monotonic() - item.client_started
        if not done:
            remote.kill(transport, proc)
        json_file = JSON_FILE if tools[local.node].json_valid else None
        result = remote.collect_output(transport, proc, json_file) if done else remote.Finished("", "", None)
        registry.discard(proc)
        meta = _meta(rnd, item.path, role, local, peer, item.port, options, tools[local.node])
        meta["elapsed_s"] = f"{elapsed:.2f}"  # from client start to this process's exit, as seen from here
        skipped = None if done else f"did not finish within {wait_s} s; ended by PID {proc.pgid}"
        arg = f"{rnd.id}.{role}.{local.rdma_dev}"
        caps.append(Capture(local.node, "ib_write_bw", " ".join(argv), result.stdout, result.stderr,
                            result.exit_status, elapsed, arg=arg, skipped=skipped, meta=meta))
        if result.extra and result.extra.strip():
            caps.append(Capture(local.node, "ib_write_bw", f"cat {JSON_FILE}", result.extra, "",
                                result.exit_status, 0.0, arg=f"{arg}.json", meta={**meta, "format": "json"}))
    return caps

"""Run one round of ib_write_bw: servers first, readiness detected, clients at once, outputs collected."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import msgspec
from msgspec.structs import replace

from linkcheck.bench import remote
from linkcheck.bench.plan import BenchPath, PathEnd, RdmaOptions, Round
from linkcheck.errors import BenchError
from linkcheck.model import Capture
from linkcheck.transport.base import Transport

JSON_FILE = "perftest.json"
SERVER_EXIT_S = 15  # after its client, a server prints its row and exits at once
# The next round's servers start this long after this round's clients: a starting tool needs the CPU
# (a GB10 has plenty; the lab's two nodes share two), a waiting server does not.
PRESTART_DELAY_S = 0.5
PERFTEST_PAUSE_S = 1  # perftest sleeps 1 s after its TCP connection, before the test (tool-formats 1.2)
# The next round's clients start -D + HANDOVER_GAP_S after this round's: their start, TCP connection and perftest's
# 1 s pause then run during this round's last quarter, which perftest does not measure, and their traffic begins
# about this long after this round's ends (both rounds start up alike). Only where the margin is at least 1 s:
# a jitter of a few tenths of a second then never reaches a measured window (perftest leaves D // 4 out at each end).
HANDOVER_GAP_S = 0.4
ROLES = ("client", "server")


class ToolInfo(msgspec.Struct, frozen=True):
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


def round_meta(rnd: Round, path: BenchPath, role: str, port: int, options: RdmaOptions, tool: ToolInfo,
               run_id: str) -> dict[str, str]:
    client, server = path.ends(rnd.direction)
    local, peer = (client, server) if role == "client" else (server, client)
    return {"kind": "rdma", "round": rnd.id, "mode": rnd.mode, "direction": rnd.direction, "role": role,
            "path": path.key, "local_netdev": local.netdev, "local_rdma_dev": local.rdma_dev,
            "peer_netdev": peer.netdev, "peer_rdma_dev": peer.rdma_dev, "gid_index": str(local.gid_index),
            "report_gbits": "true", "duration_s": str(options.duration_s), "port": str(port),
            "perftest_version": tool.version or "unknown", "format": "text", "run_id": run_id}


class Started(msgspec.Struct):
    path: BenchPath
    port: int
    server_argv: list[str]
    server: remote.RemoteProcess | None = None
    client: remote.RemoteProcess | None = None
    client_argv: list[str] | None = None
    client_started: float = 0.0


class RoundContext(msgspec.Struct, frozen=True):
    """What every step of a round needs; `sink` receives each capture as soon as it exists."""

    transports: dict[str, Transport]
    registry: remote.ProcessRegistry
    rnd: Round
    options: RdmaOptions
    tools: dict[str, ToolInfo]
    sink: list[Capture]

    @property
    def deadline(self) -> int:
        """The remote `timeout` of each process: readiness, the run, and the server's exit after it; a
        server started during the previous round also waits through that round first."""
        return int(self.options.ready_timeout_s + 2 * self.options.duration_s + 60)

    def template(self, item: Started, role: str, argv: list[str]) -> Capture:
        """The capture a process will make, before it has printed anything (kept as is if it must be ended)."""
        client, server = item.path.ends(self.rnd.direction)
        local = client if role == "client" else server
        meta = round_meta(self.rnd, item.path, role, item.port, self.options, self.tools[local.node],
                          self.registry.run_id)
        return Capture(local.node, "ib_write_bw", " ".join(argv), "", exit_status=None,
                       arg=f"{self.rnd.id}.{role}.{local.rdma_dev}", meta=meta)

    def start(self, item: Started, role: str, argv: list[str]) -> remote.RemoteProcess:
        template = self.template(item, role, argv)
        where = f"{template.node}:{template.meta['local_rdma_dev']}"
        proc = remote.start(self.transports[template.node], argv, run_dir=self.registry.run_dir(template.node),
                            deadline_s=self.deadline, label=f"ib_write_bw {role} on {where}")
        self.registry.add(proc, template)
        return proc

    def record(self, template: Capture, result: remote.Finished, elapsed: float, skipped: str | None) -> None:
        meta = {**template.meta, "elapsed_s": f"{elapsed:.2f}"}  # from client start to this process's exit
        if result.ended_at is not None:
            meta["exited_at"] = f"{result.ended_at:.3f}"  # the node's clock
        self.sink.append(replace(template, stdout=result.stdout, stderr=result.stderr,
                                 exit_status=result.exit_status, duration_s=elapsed, skipped=skipped, meta=meta))
        if result.extra and result.extra.strip():
            self.sink.append(Capture(template.node, "ib_write_bw", f"cat {JSON_FILE}", result.extra, "",
                                     result.exit_status, 0.0, arg=f"{template.arg}.json",
                                     meta={**meta, "format": "json"}))


def refuse_busy(transports: dict[str, Transport], rounds: list[Round]) -> None:
    """Refuse to start when a server port is taken on its node, naming who holds it."""
    wanted: dict[str, set[int]] = {}
    for rnd in rounds:
        for path, port in zip(rnd.paths, rnd.ports, strict=True):
            wanted.setdefault(path.ends(rnd.direction)[1].node, set()).add(port)
    refuse_busy_ports(transports, wanted)


def refuse_busy_ports(transports: dict[str, Transport], wanted: dict[str, set[int]]) -> None:
    """Refuse to start when one of the ports a node's servers will take is in use there, naming who holds it."""
    if not wanted:
        return
    found = remote.on_each_node({n: transports[n] for n in sorted(wanted)},
                                lambda node, transport: remote.busy_ports(transport, wanted[node]))
    for node, busy in found.items():
        if busy:
            port = min(busy)
            raise BenchError(f"node {node}: TCP port {port} is already in use by {busy[port]}; not starting "
                             "a perftest server there", fix="pass --port-base with a free range")


def launch_servers(ctx: RoundContext) -> list[Started]:
    """Start the round's servers (each in its own process group); readiness is awaited separately, so the
    next round's servers can start while this round's traffic runs."""
    started = []
    for path, port in zip(ctx.rnd.paths, ctx.rnd.ports, strict=True):
        _, server = path.ends(ctx.rnd.direction)
        argv = perftest_argv(server, port, ctx.options, ctx.tools[server.node], None)
        item = Started(path, port, argv)
        item.server = ctx.start(item, "server", argv)
        started.append(item)
    return started


def await_servers(ctx: RoundContext, started: list[Started]) -> None:
    """Each server listening, or the round fails naming the server and what it said."""
    for item in started:
        _, server = item.path.ends(ctx.rnd.direction)
        transport = ctx.transports[server.node]
        assert item.server is not None
        problem = remote.wait_listening(transport, item.server, item.port, ctx.options.ready_timeout_s)
        if problem:
            said = ""
            if ctx.registry.claim(item.server):
                remote.kill(transport, item.server)
                result = remote.collect_output(transport, item.server)
                ctx.record(ctx.template(item, "server", item.server_argv), result, 0.0, problem)
                said = first_error(result)
            raise BenchError(f"node {server.node}: {problem}" + (f" ({said})" if said else ""))


class Servers(msgspec.Struct):
    """A round's servers once started: `ready` when each was seen listening, else the `problem` found;
    `clients_started` when the round before already started this round's clients (the hand-over)."""

    started: list[Started]
    ready: bool = False
    problem: BenchError | None = None
    clients_started: bool = False


def hands_over(options: RdmaOptions) -> bool:
    """Whether the next round's clients may start during this round's unmeasured last quarter (see HANDOVER_GAP_S)."""
    return options.duration_s // 4 >= 1


def run_round(ctx: RoundContext, on_wait: Callable[[float], None] | None = None, *,
              servers: Servers | None = None, next_round: RoundContext | None = None,
              on_exit: Callable[[], None] | None = None) -> Servers | None:
    """Servers (`servers` if the previous round started them), then clients (unless the previous round started
    them), then, once every process has exited, `on_exit` (the counter snapshot), then outputs into ctx.sink;
    every process is in the registry until collected.

    While this round's clients run, the servers of `next_round` start and are seen listening (they only
    wait in accept(): no traffic); where the margin allows (`hands_over`), its clients start too, -D and
    HANDOVER_GAP_S after this round's, so their set-up and perftest's 1 s pause overlap this round's unmeasured
    end. A server of the next round that fails to listen is that round's failure, raised when it begins.
    """
    servers = servers or Servers(launch_servers(ctx))
    if servers.problem is not None:
        raise servers.problem
    if not servers.ready:
        await_servers(ctx, servers.started)
    if not servers.clients_started:
        _start_clients(ctx, servers.started)
    started_at = min(item.client_started for item in servers.started)
    upcoming = None
    if next_round is not None:
        time.sleep(PRESTART_DELAY_S)
        upcoming = Servers(launch_servers(next_round))
        try:
            await_servers(next_round, upcoming.started)
            upcoming.ready = True
        except BenchError as exc:
            upcoming.problem = exc
    handover = upcoming is not None and upcoming.ready and hands_over(ctx.options)
    end = started_at + ctx.options.duration_s + (HANDOVER_GAP_S if handover else PERFTEST_PAUSE_S)
    if on_wait is not None:  # the processes are waited for from its end on, not polled all along
        on_wait(max(0.0, end - time.monotonic()))
    if handover:
        assert upcoming is not None and next_round is not None
        time.sleep(max(0.0, end - time.monotonic()))
        _start_clients(next_round, upcoming.started)
        upcoming.clients_started = True
    jobs = [(it, role) for it in servers.started for role in ROLES]
    # Not `with` blocks: on Ctrl-C we must not wait for the workers; the caller kills the processes by
    # PID, which is what lets the workers' waits return.
    pool = ThreadPoolExecutor(max_workers=2 * len(servers.started))
    try:
        exited = list(pool.map(lambda job: _wait(ctx, *job), jobs))
        if on_exit is not None:
            on_exit()
        list(pool.map(lambda job, done: _collect(ctx, job[0], job[1], done), jobs, exited))
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    return upcoming


def _start_clients(ctx: RoundContext, started: list[Started]) -> None:
    """Every client of the round at once (concurrent paths start together)."""
    def start(item: Started) -> None:
        client, server = item.path.ends(ctx.rnd.direction)
        item.client_argv = perftest_argv(client, item.port, ctx.options, ctx.tools[client.node], server.ip)
        item.client_started = time.monotonic()
        item.client = ctx.start(item, "client", item.client_argv)

    with ThreadPoolExecutor(max_workers=len(started) or 1, thread_name_prefix="client-start") as pool:
        list(pool.map(start, started))


def _wait_s(ctx: RoundContext, role: str) -> int:
    # The client runs -D seconds after the connection set-up; the server exits right after its client.
    return ctx.options.duration_s + (30 if role == "client" else 30 + SERVER_EXIT_S)


def _wait(ctx: RoundContext, item: Started, role: str) -> tuple[bool, float]:
    """Wait for one process (client and server at once: the time each ends shows which failed first):
    whether it exited in time, and when (seconds from the client's start)."""
    proc = item.client if role == "client" else item.server
    assert proc is not None
    done = remote.wait_exit(ctx.transports[proc.node], proc, _wait_s(ctx, role))
    return done, time.monotonic() - item.client_started


def _collect(ctx: RoundContext, item: Started, role: str, exited: tuple[bool, float]) -> None:
    """Record what one process printed; one past its time is ended by PID, its output kept."""
    done, elapsed = exited
    proc, argv = (item.client, item.client_argv) if role == "client" else (item.server, item.server_argv)
    assert proc is not None and argv is not None
    wait_s = _wait_s(ctx, role)
    transport = ctx.transports[proc.node]
    if not ctx.registry.claim(proc):
        return  # ended by the caller (failure elsewhere, Ctrl-C): it records what the process printed
    if not done:
        remote.kill(transport, proc)
    json_file = JSON_FILE if ctx.tools[proc.node].json_valid else None
    result = remote.collect_output(transport, proc, json_file)
    skipped = None if done else f"did not finish within {wait_s} s; ended by PID {proc.pgid}"
    ctx.record(ctx.template(item, role, argv), result, elapsed, skipped)


_NOISE = ("WARNING: BW peak won't be measured",)
_ERROR_WORDS = ("couldn't", "failed", "unable", "error")


def first_error(result: remote.Finished) -> str:
    """The first line the tool printed on stderr (where perftest reports errors), else the first line of
    stdout that reads as an error (never a banner or table line)."""
    for text, must_say in ((result.stderr, False), (result.stdout, True)):
        for line in text.splitlines():
            line = "".join(c for c in line if c.isprintable()).strip()
            if not line or line.startswith(_NOISE):
                continue
            if not must_say or any(w in line.lower() for w in _ERROR_WORDS):
                return line[:160]
    return ""


# What a perftest side prints when its peer went away: a consequence, not the cause.
_PEER_GONE = ("ethernet_read_keys", "Couldn't read remote address", "Unable to read from socket",
              "Failed to exchange data")


def round_failure(captures: list[Capture], tool: str = "ib_write_bw") -> str | None:
    """One line for the perftest process (`tool`) of the round that failed first (its own error, not the peer's
    reaction to it; then the earliest to exit), else None."""
    runs = [c for c in captures if c.spec == tool and c.meta.get("format") == "text"]
    # The nodes' own exit times when every process has one (clocks in sync), else when we saw each exit.
    clock = "exited_at" if all("exited_at" in c.meta for c in runs) else "elapsed_s"
    failed = []
    for cap in runs:
        if cap.skipped or cap.exit_status != 0:
            said = first_error(remote.Finished(cap.stdout, cap.stderr, cap.exit_status))
            failed.append((any(m in said for m in _PEER_GONE), float(cap.meta.get(clock) or 0), said, cap))
    if not failed:
        return None
    _, _, said, first = min(failed, key=lambda f: f[:2])
    why = first.skipped or f"exited {first.exit_status}"
    return (f"node {first.node}: {tool} {first.meta.get('role')} on {first.node}:"
            f"{first.meta.get('local_rdma_dev')} failed in round {first.meta.get('round')}: {why}"
            + (f": {said}" if said else ""))

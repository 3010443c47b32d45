"""Run the traffic tests in order, with evidence before and after each round, and end what we started.

Any failure, timeout or Ctrl-C ends every process we started (by PID) and keeps what was measured;
the error is recorded so the verdict becomes inconclusive rather than a number that cannot be trusted.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from linkcheck.bench import remote, snapshot
from linkcheck.bench.nccl import NcclOptions, run_nccl
from linkcheck.bench.perftest import ToolInfo, run_round
from linkcheck.bench.plan import BenchPath, RdmaOptions, Round, bench_paths, plan_rounds
from linkcheck.errors import LinkcheckError
from linkcheck.facts.model import LinkFacts
from linkcheck.model import Capture
from linkcheck.transport.base import Transport


class Progress:
    """What the runner reports while it works; the console shows it live, other outputs ignore it."""

    def round_started(self, rnd: Round) -> None: ...

    def live_rate(self, rnd: Round, path_key: str, gbps: float) -> None: ...

    def round_done(self, rnd: Round, captures: list[Capture]) -> None: ...

    def nccl_started(self) -> None: ...

    def nccl_done(self, captures: list[Capture]) -> None: ...


@dataclass
class TrafficResult:
    captures: list[Capture] = field(default_factory=list)
    error: str | None = None
    interrupted: bool = False


def detect_tools(transports: dict[str, Transport]) -> tuple[dict[str, ToolInfo], list[Capture]]:
    """`ib_write_bw -V` on each node (it exits 1 by design); JSON output only where it is valid JSON."""
    from linkcheck.errors import ParseError
    from linkcheck.parsers.perftest import parse_perftest_version

    tools, caps = {}, []
    for name, transport in transports.items():
        result = transport.run("ib_write_bw -V", timeout_s=15)
        caps.append(Capture(name, "perftest_version", "ib_write_bw -V", result.stdout, result.stderr,
                            result.exit_status, result.duration_s, meta={"kind": "version"}))
        if result.exit_status == 127:
            raise LinkcheckError(f"node {name}: ib_write_bw not found", fix="sudo apt-get install perftest")
        try:
            version = parse_perftest_version(result.stdout + result.stderr)
            tools[name] = ToolInfo(version.version, version.json_valid)
        except ParseError:
            tools[name] = ToolInfo(None, False)
    return tools, caps


def _live_rates(transports: dict[str, Transport], rnd: Round, seconds: int, progress: Progress) -> None:
    """Poll the clients' port_xmit_data once a second: the live rate, and proof of which twin moves data."""
    clients = {p.key: p.ends(rnd.direction)[0] for p in rnd.paths}
    last: dict[str, tuple[float, int]] = {}
    stop = time.monotonic() + seconds - 0.5  # by the clock: polls must never delay collecting the results
    while time.monotonic() + 1 < stop:
        time.sleep(1)
        for key, end in clients.items():
            command = snapshot.snapshot_command([end.rdma_dev], [], gid_tables=False)
            dump = transports[end.node].run(command, timeout_s=10).stdout
            count = snapshot.xmit_bytes(dump).get(end.rdma_dev)
            now = time.monotonic()
            if count is not None and key in last:
                t0, c0 = last[key]
                progress.live_rate(rnd, key, (count - c0) * 8 / 1e9 / max(now - t0, 1e-3))
            if count is not None:
                last[key] = (now, count)


def _round(transports: dict[str, Transport], registry: remote.ProcessRegistry, rnd: Round, options: RdmaOptions,
           tools: dict[str, ToolInfo], progress: Progress) -> list[Capture]:
    devs = {n: [e.rdma_dev for p in rnd.paths for e in (p.a, p.b) if e.node == n] for n in transports}
    nets = {n: [e.netdev for p in rnd.paths for e in (p.a, p.b) if e.node == n] for n in transports}
    caps = [snapshot.take(t, devs[n], nets[n], round_id=rnd.id, phase="before") for n, t in transports.items()]
    progress.round_started(rnd)
    wait: Callable[[float], None] = lambda s: _live_rates(transports, rnd, int(s), progress)  # noqa: E731
    caps += run_round(transports, registry, rnd, options, tools, on_wait=wait)
    caps += [snapshot.take(t, devs[n], nets[n], round_id=rnd.id, phase="after") for n, t in transports.items()]
    progress.round_done(rnd, caps)
    return caps


def run_traffic(transports: dict[str, Transport], link: LinkFacts, *, rdma: RdmaOptions | None,
                nccl: NcclOptions | None, progress: Progress | None = None) -> TrafficResult:
    """RDMA rounds, then NCCL; stops at the first error, ending all our processes on every node."""
    progress = progress or Progress()
    registry = remote.ProcessRegistry(dict(transports))
    out = TrafficResult()
    try:
        paths: tuple[BenchPath, ...] = bench_paths(link)
        if rdma is not None:
            tools, caps = detect_tools(transports)
            out.captures += caps
            for rnd in plan_rounds(paths, rdma):
                out.captures += _round(transports, registry, rnd, rdma, tools, progress)
        if nccl is not None:
            progress.nccl_started()
            caps = run_nccl(transports, registry, link, paths, nccl)
            out.captures += caps
            progress.nccl_done(caps)
    except KeyboardInterrupt:
        out.interrupted, out.error = True, "traffic test interrupted (Ctrl-C); every process it started was ended"
    except LinkcheckError as exc:
        out.error = f"traffic test stopped: {exc}"
    finally:
        problems = registry.kill_all()
        if problems:
            out.error = "; ".join(filter(None, [out.error, *problems]))
    return out

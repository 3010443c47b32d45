"""Run the traffic tests in order, with evidence before and after each round, and end what we started.

Any failure, timeout or Ctrl-C ends every process we started (by PID) and keeps what was measured,
the failed round's captures included; the error is recorded so the verdict becomes inconclusive
rather than a number that cannot be trusted. A round during which the link flapped is kept (its
numbers are voided by the facts) and said in the error line; the next rounds still run.
"""

from __future__ import annotations

import re
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import msgspec
from msgspec.structs import replace

from linkcheck.bench import remote, snapshot
from linkcheck.bench.latency import LatencyOptions, latency_budget_s, plan_latency, refuse_busy_latency, run_latency
from linkcheck.bench.nccl import NcclOptions, nccl_failure, run_nccl
from linkcheck.bench.perftest import (
    RoundContext,
    Servers,
    ToolInfo,
    refuse_busy,
    round_failure,
    round_meta,
    run_round,
)
from linkcheck.bench.plan import (
    BenchPath,
    RdmaOptions,
    Round,
    bench_paths,
    follow_ups,
    phases,
    plan_rounds,
    untested_paths,
)
from linkcheck.errors import BenchError, LinkcheckError, ParseError
from linkcheck.facts.bench_facts import build_bench_facts
from linkcheck.facts.model import LinkFacts
from linkcheck.model import Capture
from linkcheck.parsers.identity import parse_perftest_version
from linkcheck.transport.base import Transport


class Schedule(msgspec.Struct, frozen=True):
    """What the traffic test expects to run, once the inspection is in: the data paths, the NCCL sweep's size
    after the memory cap, the RDMA rounds over all repetitions (the quick tier: those it plans first) and the
    seconds each round, the NCCL run and the latency test are expected to take."""

    paths: int
    nccl_max_bytes: int | None
    rounds: int
    round_s: float
    nccl_s: float = 0.0
    latency_s: float = 0.0


class Progress:
    """What the runner reports while it works; the console shows it live, other outputs ignore it."""

    def plan_known(self, schedule: Schedule) -> None: ...

    def note(self, line: str) -> None:
        """A line for the person watching (a cluster's plan, once the inspection has shown its schedule)."""

    def rounds_added(self, count: int) -> None:
        """The quick tier runs `count` alone rounds more (a path was low)."""

    def round_started(self, rnd: Round) -> None: ...

    def live_rate(self, rnd: Round, path_key: str, gbps: float) -> None: ...

    def round_done(self, rnd: Round, captures: list[Capture]) -> None: ...

    def not_run(self, captures: list[Capture]) -> None: ...

    def nccl_started(self) -> None: ...

    def nccl_done(self, captures: list[Capture]) -> None: ...

    def latency_started(self, runs: int) -> None:
        """The latency test begins: `runs` ib_write_lat runs one at a time, then the small all_reduce."""

    def latency_done(self, captures: list[Capture]) -> None: ...


class TrafficResult(msgspec.Struct):
    captures: list[Capture] = msgspec.field(default_factory=list)
    error: str | None = None
    interrupted: bool = False


def detect_tools(transports: dict[str, Transport], run_id: str = "") -> tuple[dict[str, ToolInfo], list[Capture]]:
    """`ib_write_bw -V` on each node (it exits 1 by design); JSON output only where it is valid JSON."""
    answers = remote.on_each_node(transports, lambda name, t: t.run("ib_write_bw -V", timeout_s=15))
    caps = [Capture(name, "perftest_version", "ib_write_bw -V", result.stdout, result.stderr, result.exit_status,
                    result.duration_s, meta={"kind": "version", "run_id": run_id})
            for name, result in answers.items()]
    return {cap.node: tool_info(cap) for cap in caps}, caps


def tool_info(cap: Capture) -> ToolInfo:
    """What one node's `ib_write_bw -V` says: the version, and whether --out_json writes valid JSON there."""
    if cap.exit_status == 127 or (cap.skipped or "").startswith("tool missing"):
        raise LinkcheckError(f"node {cap.node}: ib_write_bw not found", fix="sudo apt-get install perftest")
    try:
        version = parse_perftest_version(cap.stdout + cap.stderr)
        return ToolInfo(version.version, version.json_valid)
    except ParseError:
        return ToolInfo(None, False)


def inspected_tools(captures: list[Capture], nodes: list[str]) -> dict[str, ToolInfo] | None:
    """Each node's perftest as the inspection already read it (`ib_write_bw -V` is one of its commands); None
    when a node's answer is not there, so the traffic test asks again."""
    found = {c.node: c for c in captures if c.spec == "perftest_version" and c.exit_status is not None}
    if any(node not in found for node in nodes):
        return None
    return {node: tool_info(found[node]) for node in nodes}


def _live_rates(transports: dict[str, Transport], rnd: Round, seconds: float, progress: Progress) -> None:
    """Poll the clients' port_xmit_data once a second: the live rate, and proof of which twin moves data."""
    clients = {p.key: p.ends(rnd.direction)[0] for p in rnd.paths}
    last: dict[str, tuple[float, int]] = {}
    stop = time.monotonic() + seconds - 0.5  # by the clock: polls must never delay collecting the results
    while time.monotonic() + 1 < stop:
        time.sleep(1)
        for key, end in clients.items():
            command = snapshot.snapshot_command([end.rdma_dev], [], gid_tables=False)
            dump = remote.run_step(transports[end.node], command, 10, "reading the live rate").stdout
            count = snapshot.xmit_bytes(dump).get(end.rdma_dev)
            now = time.monotonic()
            if count is not None and key in last:
                t0, c0 = last[key]
                progress.live_rate(rnd, key, (count - c0) * 8 / 1e9 / max(now - t0, 1e-3))
            if count is not None:
                last[key] = (now, count)


def _wanted(rnd: Round, phase: str, nodes: list[str]) -> snapshot.Wanted:
    """The snapshot of a round's phase: per node, the devices and netdevs of the round's paths."""
    ends = [e for p in rnd.paths for e in (p.a, p.b)]
    return snapshot.Wanted(rnd.id, phase, {n: [e.rdma_dev for e in ends if e.node == n] for n in nodes},
                           {n: [e.netdev for e in ends if e.node == n] for n in nodes})


class _Carry(msgspec.Struct):
    """What one round hands the next: its snapshot before, and its servers, already started."""

    before: list[Capture]
    servers: Servers | None = None


def _round(ctx: RoundContext, nxt: RoundContext | None, carry: _Carry, progress: Progress,
           flaps: list[str]) -> _Carry | None:
    """One round into ctx.sink: the runs, then one snapshot read that ends this round and opens the next;
    raises on the first failed process."""
    rnd, transports, run_id = ctx.rnd, ctx.transports, ctx.registry.run_id
    nodes = list(transports)
    ctx.sink.extend(carry.before)
    first = len(ctx.sink)
    progress.round_started(rnd)
    wanted = [_wanted(rnd, "after", nodes)] + ([_wanted(nxt.rnd, "before", nodes)] if nxt is not None else [])
    taken: list[Capture] = []
    try:
        wait: Callable[[float], None] = lambda s: _live_rates(transports, rnd, s, progress)  # noqa: E731
        # The snapshot is read as soon as the round's processes have exited, before their outputs are
        # collected: the next round's traffic may already be about to start (the hand-over).
        upcoming = run_round(ctx, on_wait=wait, servers=carry.servers, next_round=nxt,
                             on_exit=lambda: taken.extend(snapshot.take(transports, wanted, run_id=run_id)))
    finally:
        progress.round_done(rnd, ctx.sink[first:])  # also on failure: the console's live table must stop
    after, next_before = taken[:len(nodes)], taken[len(nodes):]
    ctx.sink.extend(after)
    moved = [f"{b.node}: {change}" for b, a in zip(carry.before, after, strict=True)
             for change in snapshot.changes(b, a)]
    if moved:
        flaps.append(f"round {rnd.id} ({', '.join(moved[:3])}{', ...' if len(moved) > 3 else ''})")
    failure = round_failure(ctx.sink[first:])
    if failure:
        raise BenchError(failure)
    return _Carry(next_before, upcoming) if nxt is not None else None


def untested_runs(link: LinkFacts, rdma: RdmaOptions, run_id: str) -> list[Capture]:
    """A client run per path left out and direction, never started, saying why: the diagnosis then names the
    reason on that path while the other paths are measured."""
    out = []
    left_out = untested_paths(link)
    for path in link.paths:
        reason = left_out.get(path.key)
        for direction in rdma.directions if reason else ():
            client, server = (path.a, path.b) if direction == "a->b" else (path.b, path.a)
            meta = {"kind": "rdma", "round": f"untested-{direction.replace('->', '2')}", "mode": "alone",
                    "direction": direction, "role": "client", "path": path.key, "local_netdev": client.netdev,
                    "local_rdma_dev": client.rdma_dev or "", "peer_netdev": server.netdev,
                    "peer_rdma_dev": server.rdma_dev or "", "format": "text", "run_id": run_id}
            out.append(Capture(client.node, "ib_write_bw", "", "", exit_status=None, skipped=reason,
                               arg=f"{meta['round']}.client.{client.netdev}", meta=meta))
    return out


def _budget_s(rounds: list[Round], rdma: RdmaOptions | None, nccl: NcclOptions | None,
              latency: tuple[int, LatencyOptions] | None = None) -> float:
    """How long the node-side watchdogs stay up: every round, the NCCL run and the latency test at their longest."""
    per_round = rdma.ready_timeout_s + rdma.duration_s + 90 if rdma else 0
    return (60 + len(rounds) * per_round + (nccl.timeout_s + 60 if nccl else 0)
            + (latency_budget_s(*latency) if latency else 0))


def repetition_captures(captures: list[Capture], n: int) -> list[Capture]:
    """One repetition's captures with their round ids made its own (`<round>-rep<n>`; the mode stays the id's first
    word), so the facts keep the repetitions apart."""
    return [replace(c, meta={**c.meta, "round": f"{c.meta['round']}-rep{n}"}) if c.meta.get("round") else c
            for c in captures]


_REPETITION = re.compile(r"-rep([0-9]+)$")


def repetition_of(round_id: str) -> int | None:
    """The repetition a round id is of (`repetition_captures`' `-rep<n>`); None for a run that was not repeated."""
    found = _REPETITION.search(round_id)
    return int(found.group(1)) if found else None


def concurrent_rates(captures: list[Capture], link: LinkFacts) -> dict[tuple[str, str], float | None]:
    """(path, direction) -> Gb/s of each concurrent run so far (None: no number), read by the same code that
    builds the diagnosis's facts."""
    bench, _ = build_bench_facts(captures, link.paths)
    return {(r.path_key, r.direction): r.gbps for r in bench.rdma if r.mode == "concurrent"}


def low_paths(rates: dict[tuple[str, str], float | None], rdma: RdmaOptions) -> dict[str, str]:
    """Each path below rdma.low_gbps (or without a number) in a concurrent round -> its lowest direction."""
    low: dict[str, tuple[float, str]] = {}
    for (key, direction), gbps in sorted(rates.items()):
        value = -1.0 if gbps is None else gbps
        if value < rdma.low_gbps and (key not in low or value < low[key][0]):
            low[key] = (value, direction)
    return {key: direction for key, (_, direction) in low.items()}


def not_run(rounds: list[Round], rdma: RdmaOptions, tools: dict[str, ToolInfo], run_id: str,
            rates: dict[tuple[str, str], float | None], ran_alone: dict[str, str]) -> list[Capture]:
    """A client capture per round the quick tier left out, never started, saying why: listed as not run, never
    counted as a result (`plan: skipped` keeps it out of the rates)."""
    out = []
    for rnd in rounds:
        for path, port in zip(rnd.paths, rnd.ports, strict=True):
            client = path.ends(rnd.direction)[0]
            meta = {**round_meta(rnd, path, "client", port, rdma, tools[client.node], run_id), "plan": "skipped"}
            gbps = rates.get((path.key, rnd.direction))
            carried = f"{gbps:.2f} Gb/s" if gbps is not None else "no number"
            if gbps is not None and gbps >= rdma.low_gbps:
                why = (f"not run: with all paths at once this path carried {carried} {rnd.direction} (low is below "
                       f"{rdma.low_gbps:g}), so alone it adds nothing to the two traps; the quick tier runs a path "
                       "alone only where it is low")
            else:
                why = (f"not run: this path ran alone {ran_alone.get(path.key, '?')}, where it was lowest with all "
                       "paths at once; one alone round per low path tells the hot-plug state from a shared PCIe link")
            out.append(Capture(client.node, "ib_write_bw", "", "", exit_status=None, skipped=why,
                               arg=f"{rnd.id}.client.{client.rdma_dev}", meta=meta))
    return out


def _rounds(transports: dict[str, Transport], registry: remote.ProcessRegistry, rounds: list[Round],
            rdma: RdmaOptions, tools: dict[str, ToolInfo], out: TrafficResult, progress: Progress,
            flaps: list[str]) -> None:
    """Rounds one after another, each next round's servers started during the one before."""
    contexts = [RoundContext(transports, registry, rnd, rdma, tools, out.captures) for rnd in rounds]
    carry: _Carry | None = _Carry(snapshot.take(transports, [_wanted(rounds[0], "before", list(transports))],
                                                run_id=registry.run_id))
    for i, ctx in enumerate(contexts):
        assert carry is not None
        carry = _round(ctx, contexts[i + 1] if i + 1 < len(contexts) else None, carry, progress, flaps)


def _run(transports: dict[str, Transport], registry: remote.ProcessRegistry, link: LinkFacts,
         rdma: RdmaOptions | None, nccl: NcclOptions | None, progress: Progress, out: TrafficResult,
         flaps: list[str], tools: dict[str, ToolInfo] | None, latency: LatencyOptions | None) -> None:
    paths: tuple[BenchPath, ...] = bench_paths(link)
    rounds = plan_rounds(paths, rdma) if rdma is not None else []
    if rdma is not None:
        if tools is None:
            tools, caps = detect_tools(transports, registry.run_id)
            out.captures += caps
        out.captures += untested_runs(link, rdma, registry.run_id)
        refuse_busy(transports, rounds)  # before anything is started
    lat_runs = plan_latency(paths, latency) if latency is not None else []
    if lat_runs:
        refuse_busy_latency(transports, lat_runs)
    registry.prepare(_budget_s(rounds, rdma, nccl, (len(lat_runs), latency) if latency is not None else None))
    if rounds:
        assert rdma is not None and tools is not None
        planned, candidates = phases(rounds, rdma)
        _rounds(transports, registry, planned, rdma, tools, out, progress, flaps)
        if candidates:
            rates = concurrent_rates(out.captures, link)
            low = low_paths(rates, rdma)
            again, skipped = follow_ups(candidates, low)
            left_out = not_run(skipped, rdma, tools, registry.run_id, rates, low)
            out.captures += left_out
            if left_out:
                progress.not_run(left_out)
            if again:
                progress.rounds_added(len(again))
                _rounds(transports, registry, again, rdma, tools, out, progress, flaps)
    if nccl is not None:
        _nccl(transports, registry, link, paths, nccl, progress, out)
    if latency is not None:
        # Last, and one run at a time: nothing else of ours is on the link while a latency is measured.
        progress.latency_started(len(lat_runs))
        first = len(out.captures)
        try:
            run_latency(transports, registry, paths, lat_runs, latency, out.captures)
        finally:
            progress.latency_done(out.captures[first:])


def _nccl(transports: dict[str, Transport], registry: remote.ProcessRegistry, link: LinkFacts,
          paths: tuple[BenchPath, ...], nccl: NcclOptions, progress: Progress, out: TrafficResult) -> None:
    progress.nccl_started()
    first = len(out.captures)
    run_nccl(transports, registry, link, paths, nccl, out.captures)
    progress.nccl_done(out.captures[first:])
    failure = nccl_failure(out.captures[first]) if len(out.captures) > first else None
    if failure:
        raise BenchError(failure)


@contextmanager
def _ctrl_c_held() -> Iterator[None]:
    """Cleanup must finish: a second Ctrl-C while it runs would leave processes on the nodes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


Body = Callable[[remote.ProcessRegistry, TrafficResult, list[str]], None]


def _guarded(transports: dict[str, Transport], body: Body) -> TrafficResult:
    """Run `body` with a process registry over `transports`; the first error or Ctrl-C stops it, and every process
    it started is ended on every node, whatever happened. What it measured is kept."""
    registry = remote.ProcessRegistry(dict(transports))
    out = TrafficResult()
    flaps: list[str] = []
    reason = "the traffic test stopped"
    try:
        body(registry, out, flaps)
    except KeyboardInterrupt:
        out.interrupted, reason = True, "Ctrl-C"
        out.error = "traffic test interrupted (Ctrl-C); every process it started was ended"
    except LinkcheckError as exc:
        out.error = f"traffic test stopped: {exc}"
    finally:
        with _ctrl_c_held():
            ended, problems = registry.end_all(reason)
        out.captures += ended
        if problems and out.interrupted:
            out.error = "traffic test interrupted (Ctrl-C)"
        if flaps:
            problems.insert(0, "the link flapped or a GID changed during " + "; ".join(flaps)
                            + ": those numbers are not used")
        if problems:
            out.error = "; ".join(filter(None, [out.error, *problems]))
    return out


def run_guarded(transports: dict[str, Transport], body: Body) -> TrafficResult:
    """`body` with the traffic tests' clean-up around it (a cluster's NCCL run, ...): the first error or Ctrl-C
    stops it, every process it started is ended by PID on every node, and what it measured is kept."""
    return _guarded(transports, body)


def run_traffic(transports: dict[str, Transport], link: LinkFacts, *, rdma: RdmaOptions | None,
                nccl: NcclOptions | None, progress: Progress | None = None,
                tools: dict[str, ToolInfo] | None = None, latency: LatencyOptions | None = None) -> TrafficResult:
    """RDMA rounds, then NCCL, then the latency test; stops at the first error, ending all our processes on every
    node. `tools`: each node's perftest as the inspection read it (else `ib_write_bw -V` runs first)."""
    return _guarded(transports, lambda registry, out, flaps: _run(
        transports, registry, link, rdma, nccl, progress or Progress(), out, flaps, tools, latency))


def run_rounds(transports: dict[str, Transport], rounds: list[Round], rdma: RdmaOptions,
               tools: dict[str, ToolInfo], progress: Progress | None = None) -> TrafficResult:
    """Rounds planned by the caller (a cluster's: several pairs of nodes in one round), one after another, with
    the pair's evidence around each and the same clean-up; stops at the first error."""
    def body(registry: remote.ProcessRegistry, out: TrafficResult, flaps: list[str]) -> None:
        refuse_busy(transports, rounds)  # before anything is started
        registry.prepare(_budget_s(rounds, rdma, None))
        if rounds:
            _rounds(transports, registry, rounds, rdma, tools, out, progress or Progress(), flaps)

    return _guarded(transports, body)

"""The RDMA rounds of a traffic test, with evidence before and after each round: a pair's one cable, or the tests of
a cluster's schedule side by side.

A round's servers start during the round before; one snapshot read ends a round and opens the next. A round during
which the link flapped is kept (its numbers are voided by the facts) and said in the error line; the next rounds
still run. The quick tier runs the concurrent rounds first and a path alone only where it was low.

A cluster's schedule puts a node in at most one test a round (its two cages share its two PCIe x4 links), so the
tests of one round run side by side: in each direction, each twin alone (the first twins of every test at once, then
the second), then both twins at once. Tests of different rounds never overlap. Every run keeps the pair's evidence
(counters around each round, the raw outputs) and its captures name the test's nodes, so each test is judged from
its own.
"""

from __future__ import annotations

import secrets
import time
from collections import defaultdict
from collections.abc import Callable, Sequence

import msgspec
from msgspec.structs import replace

from linkcheck.bench import remote, snapshot
from linkcheck.bench.guard import Progress, TrafficResult, run_guarded
from linkcheck.bench.latency import KIND as LATENCY
from linkcheck.bench.perftest import (
    RoundContext,
    Servers,
    ToolInfo,
    refuse_busy,
    round_failure,
    round_meta,
    run_round,
)
from linkcheck.bench.plan import BenchPath, RdmaOptions, Round, bench_paths, untested_paths
from linkcheck.cluster.cables import FIRST_PASS, CableTest, of_test_round
from linkcheck.errors import BenchError
from linkcheck.facts.bench_facts import build_bench_facts, path_of
from linkcheck.facts.model import DataPath, LinkFacts
from linkcheck.model import Capture
from linkcheck.transport.base import Transport


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


def run_rounds(transports: dict[str, Transport], registry: remote.ProcessRegistry, rounds: list[Round],
            rdma: RdmaOptions, tools: dict[str, ToolInfo], out: TrafficResult, progress: Progress,
            flaps: list[str]) -> None:
    """Rounds one after another into out.captures, each next round's servers started during the one before, with
    the evidence around each (a pair's rounds and a cluster's alike)."""
    contexts = [RoundContext(transports, registry, rnd, rdma, tools, out.captures) for rnd in rounds]
    carry: _Carry | None = _Carry(snapshot.take(transports, [_wanted(rounds[0], "before", list(transports))],
                                                run_id=registry.run_id))
    for i, ctx in enumerate(contexts):
        assert carry is not None
        carry = _round(ctx, contexts[i + 1] if i + 1 < len(contexts) else None, carry, progress, flaps)


def rounds_budget_s(rounds: list[Round], rdma: RdmaOptions) -> float:
    """How long the node-side watchdogs must stay up for `rounds`, each at its longest."""
    return len(rounds) * (rdma.ready_timeout_s + rdma.duration_s + 90)


def untested_runs(link: LinkFacts, rdma: RdmaOptions, run_id: str,
                  key: Callable[[DataPath], str] = lambda path: path.key) -> list[Capture]:
    """A client run per path left out and direction, never started, saying why: the diagnosis then names the
    reason on that path while the other paths are measured. `key`: the path's key in the captures (a cluster's
    names the nodes, `cable_key`)."""
    out = []
    left_out = untested_paths(link)
    for path in link.paths:
        reason = left_out.get(path.key)
        for direction in rdma.directions if reason else ():
            client, server = (path.a, path.b) if direction == "a->b" else (path.b, path.a)
            meta = {"kind": "rdma", "round": f"untested-{direction.replace('->', '2')}", "mode": "alone",
                    "direction": direction, "role": "client", "path": key(path), "local_netdev": client.netdev,
                    "local_rdma_dev": client.rdma_dev or "", "peer_netdev": server.netdev,
                    "peer_rdma_dev": server.rdma_dev or "", "format": "text", "run_id": run_id}
            out.append(Capture(client.node, "ib_write_bw", "", "", exit_status=None, skipped=reason,
                               arg=f"{meta['round']}.client.{client.netdev}", meta=meta))
    return out


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


class Planned(msgspec.Struct, frozen=True):
    """One test ready to run: its paths (keys named by node, `a:netdev<->b:netdev`), or why it cannot run."""

    test: CableTest
    paths: tuple[BenchPath, ...] = ()
    refused: str | None = None

    @property
    def keys(self) -> set[str]:
        """Every path of the test by its cluster key, those left out for want of carrier included."""
        return {cable_key(p) for p in self.test.link.paths}


def cable_key(link_path: DataPath) -> str:
    """A data path's key named by node (`a:netdev<->b:netdev`): unique across the cluster, where twins' names
    repeat on every node."""
    return f"{link_path.a.label}<->{link_path.b.label}"


def plan_test(test: CableTest) -> Planned:
    """The test's paths as ib_write_bw uses them; a test that cannot run (no RDMA device, no GID, no carrier on any
    path) says why, and the other tests still run."""
    try:
        paths = bench_paths(test.link)
    except BenchError as exc:
        return Planned(test, refused=str(exc))
    keys = {p.key: cable_key(p) for p in test.link.paths}
    return Planned(test, tuple(replace(p, key=keys[p.key]) for p in paths))


class _Ports:
    def __init__(self, base: int | None) -> None:
        self.next = base or 20000 + secrets.randbelow(2000) * 10

    def take(self, count: int) -> tuple[int, ...]:
        out = tuple(range(self.next, self.next + count))
        self.next += count
        return out


def _add(rounds: list[Round], ports: _Ports, mode: str, direction: str, number: int,
         paths: Sequence[BenchPath]) -> None:
    if paths:
        rounds.append(Round(f"{mode}-{direction.replace('->', '2')}-c{number}-{len(rounds)}", mode, direction,
                            tuple(paths), ports.take(len(paths))))


def plan_cluster_rounds(planned: Sequence[Planned], options: RdmaOptions, ports: _Ports | None = None,
                        modes: tuple[str, ...] | None = None) -> list[Round]:
    """Per schedule round and direction: each twin alone (every test's i-th path at once), then both at once."""
    ports = ports or _Ports(options.port_base)
    wanted = modes or options.modes
    by_round: dict[int, list[Planned]] = defaultdict(list)
    for p in planned:
        if p.paths:
            by_round[p.test.round].append(p)
    rounds: list[Round] = []
    for number, group in sorted(by_round.items()):
        for direction in options.directions:
            if "alone" in wanted:
                for i in range(max(len(p.paths) for p in group)):
                    _add(rounds, ports, "alone", direction, number, [p.paths[i] for p in group if len(p.paths) > i])
            if "concurrent" in wanted:
                _add(rounds, ports, "concurrent", direction, number,
                     [path for p in group if len(p.paths) > 1 for path in p.paths])
    return rounds


def captures_of(planned: Planned, captures: Sequence[Capture]) -> list[Capture]:
    """The captures of one test: its runs (by path key, in its own schedule round), the counters its two nodes
    gave around those rounds, and of a first-pass test its latency runs (by path key) with the small all_reduce
    across every node (the one latency capture without a path: every cable carries it)."""
    runs = [c for c in captures if c.meta.get("kind") == "rdma" and run_key(c, planned) is not None
            and of_test_round(c, planned.test.round)]
    rounds = {c.meta.get("round") for c in runs}
    snapshots = [c for c in captures if c.meta.get("kind") == "snapshot" and c.node in planned.test.nodes
                 and c.meta.get("round") in rounds]
    latency = [c for c in captures if c.meta.get("kind") == LATENCY and planned.test.pass_no == FIRST_PASS
               and (not c.meta.get("path") or run_key(c, planned) is not None)]
    return runs + snapshots + latency


def run_key(capture: Capture, planned: Planned) -> str | None:
    """The key of the test's path a run is on, None when it is on none of them. A cluster's run names its path by
    node (`a:netdev<->b:netdev`; a netdev holds no `:`, the kernel refuses one); a pair's bundle names it by its twins
    alone (`netdev<->netdev`), or, saved before runs carried a path, not at all: its node and its twins then say
    which of the cable's paths it is, as its own facts read it (facts/bench_facts.py `path_of`)."""
    key = capture.meta.get("path", "")
    if ":" in key:
        return key if key in planned.keys else None
    path = path_of(capture, planned.test.link.paths) if capture.node in planned.test.nodes else None
    return None if path is None else cable_key(path)


def quick_follow_ups(planned: Sequence[Planned], captures: list[Capture], options: RdmaOptions,
                     tools: dict[str, ToolInfo], run_id: str,
                     ports: _Ports | None = None) -> tuple[list[Round], list[Capture]]:
    """The quick tier's alone rounds: a path low with both twins at once runs alone in its lowest direction (paths of
    different tests side by side, two of one test never); the other alone runs are listed as not run."""
    again: dict[tuple[int, str, int], list[BenchPath]] = defaultdict(list)
    skipped: list[Capture] = []
    for p in planned:
        if len(p.paths) < 2:
            continue
        by_key = {f"{b.a.netdev}<->{b.b.netdev}": b for b in p.paths}
        rates = concurrent_rates(captures_of(p, captures), p.test.link)
        low = low_paths(rates, options)
        named = {(by_key[k].key, d): v for (k, d), v in rates.items() if k in by_key}
        ran_alone = {by_key[k].key: d for k, d in low.items() if k in by_key}
        left = [Round(f"alone-{d.replace('->', '2')}-c{p.test.round}-quick", "alone", d, (path,), (0,))
                for path in p.paths for d in options.directions if ran_alone.get(path.key) != d]
        skipped += not_run(left, options, tools, run_id, named, ran_alone)
        for i, path in enumerate(x for x in p.paths if x.key in ran_alone):
            again[(p.test.round, ran_alone[path.key], i)].append(path)
    rounds: list[Round] = []
    taken = ports or _Ports(options.port_base)
    for (number, direction, _), paths in sorted(again.items()):
        _add(rounds, taken, "alone", direction, number, paths)
    return rounds, skipped


def run_cluster_rdma(transports: dict[str, Transport], planned: Sequence[Planned], options: RdmaOptions,
                     tools: dict[str, ToolInfo], progress: Progress | None = None) -> TrafficResult:
    """Every test's rounds in schedule order (the quick tier: concurrent rounds, then the alone rounds of low
    paths) under one guard: the first error stops the run, and every process started is ended on every node."""
    shown = progress or Progress()

    def body(registry: remote.ProcessRegistry, out: TrafficResult, flaps: list[str]) -> None:
        ports = _Ports(options.port_base)
        for p in planned:
            out.captures += untested_runs(p.test.link, options, "", cable_key)
        first_modes = ("concurrent",) if options.adaptive else None
        rounds = plan_cluster_rounds(planned, options, ports, first_modes)
        if options.adaptive:  # a test of one path has no concurrent round: it runs alone at once
            rounds += plan_cluster_rounds([p for p in planned if len(p.paths) == 1], options, ports, ("alone",))
        refuse_busy(transports, rounds)  # before anything is started
        # The watchdogs cover the quick tier's alone rounds too: at most every alone round of the full plan.
        most = rounds + (plan_cluster_rounds(planned, options, _Ports(0), ("alone",)) if options.adaptive else [])
        registry.prepare(60 + rounds_budget_s(most, options))
        if rounds:
            run_rounds(transports, registry, rounds, options, tools, out, shown, flaps)
        if options.adaptive:
            again, skipped = quick_follow_ups(planned, out.captures, options, tools, registry.run_id, ports)
            out.captures += skipped
            if skipped:
                shown.not_run(skipped)
            if again:
                refuse_busy(transports, again)
                shown.rounds_added(len(again))
                run_rounds(transports, registry, again, options, tools, out, shown, flaps)

    return run_guarded(transports, body)

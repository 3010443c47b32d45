"""A cluster's RDMA rounds: the tests of one schedule round measured at once, each as a pair is measured.

The schedule puts a node in at most one test a round (its two cages share its two PCIe x4 links), so the tests of
one round run side by side: in each direction, each twin alone (the first twins of every test at once, then the
second), then both twins at once. Tests of different rounds never overlap. The quick tier runs the concurrent
rounds first and a path alone only where it was low, as for a pair. Every run keeps the pair's evidence (counters
around each round, the raw outputs) and its captures name the test's nodes, so each test is judged from its own.
"""

from __future__ import annotations

import secrets
from collections import defaultdict
from collections.abc import Sequence

import msgspec
from msgspec.structs import replace

from linkcheck.bench.perftest import ToolInfo
from linkcheck.bench.plan import BenchPath, RdmaOptions, Round, bench_paths
from linkcheck.bench.runner import (
    Progress,
    TrafficResult,
    concurrent_rates,
    low_paths,
    not_run,
    run_rounds,
    untested_runs,
)
from linkcheck.cluster.cables import CableTest, of_test_round
from linkcheck.errors import BenchError
from linkcheck.facts.model import DataPath
from linkcheck.model import Capture
from linkcheck.transport.base import Transport


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


def untested(planned: Planned, options: RdmaOptions) -> list[Capture]:
    """A not-run client capture per path of the test without carrier at an end, and direction, keyed by node."""
    keys = {p.key: cable_key(p) for p in planned.test.link.paths}
    return [replace(c, meta={**c.meta, "path": keys.get(c.meta.get("path", ""), c.meta.get("path", ""))})
            for c in untested_runs(planned.test.link, options, "")]


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
    """The captures of one test: its runs (by path key, in its own schedule round), and the counters its two nodes
    gave around those rounds."""
    runs = [c for c in captures if c.meta.get("kind") == "rdma" and c.meta.get("path") in planned.keys
            and of_test_round(c, planned.test.round)]
    rounds = {c.meta.get("round") for c in runs}
    snapshots = [c for c in captures if c.meta.get("kind") == "snapshot" and c.node in planned.test.nodes
                 and c.meta.get("round") in rounds]
    return runs + snapshots


def _follow_ups(planned: Sequence[Planned], captures: list[Capture], options: RdmaOptions, ports: _Ports,
                tools: dict[str, ToolInfo], run_id: str) -> tuple[list[Round], list[Capture]]:
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
    for (number, direction, _), paths in sorted(again.items()):
        _add(rounds, ports, "alone", direction, number, paths)
    return rounds, skipped


def run_cluster_rdma(transports: dict[str, Transport], planned: Sequence[Planned], options: RdmaOptions,
                     tools: dict[str, ToolInfo], progress: Progress | None = None) -> TrafficResult:
    """Every test's rounds in schedule order (the quick tier: concurrent rounds, then the alone rounds of low
    paths); the first error stops the run, and every process started is ended on every node."""
    ports = _Ports(options.port_base)
    captures: list[Capture] = []
    for p in planned:
        captures += untested(p, options)
    first_modes = ("concurrent",) if options.adaptive else None
    rounds = plan_cluster_rounds(planned, options, ports, first_modes)
    if options.adaptive:  # a test of one path has no concurrent round: it runs alone at once
        rounds += plan_cluster_rounds([p for p in planned if len(p.paths) == 1], options, ports, ("alone",))
    result = run_rounds(transports, rounds, options, tools, progress)
    result.captures = captures + result.captures
    if options.adaptive and not result.error and not result.interrupted:
        run_id = next((c.meta.get("run_id", "") for c in result.captures if c.meta.get("run_id")), "")
        again, skipped = _follow_ups(planned, result.captures, options, ports, tools, run_id)
        result.captures += skipped
        if again:
            more = run_rounds(transports, again, options, tools, progress)
            result.captures += more.captures
            result.error, result.interrupted = more.error, more.interrupted
    return result

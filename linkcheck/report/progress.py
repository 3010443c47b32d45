"""Live progress of the traffic tests on the console: each round's paths, their live rate, the result."""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.console import Console
from rich.live import Live
from rich.table import Table

from linkcheck.bench.guard import Progress, Schedule
from linkcheck.bench.plan import Round
from linkcheck.model import Capture
from linkcheck.report.console import as_text

Plan = Callable[[int, "int | None"], str]  # (paths, NCCL bytes) -> the plan line


class ConsoleProgress(Progress):
    """A small live table: one row per path of the running round, with the rate read from the counters; then one
    line per round: `[3/6] ib_write_bw concurrent a->b: done (...; 18 s elapsed, ~14 s left)`."""

    @classmethod
    def on_stderr(cls, plan: Plan | None = None, said: str = "") -> ConsoleProgress:
        """The display on standard error, so that the report on standard output stays clean."""
        return cls(Console(stderr=True), plan, said)

    def __init__(self, console: Console, plan: Plan | None = None, said: str = "") -> None:
        """`plan` turns the inspection's paths and NCCL size into a plan line; `said` is the line said before."""
        self.console = console
        self.plan, self.said = plan, said
        self.live: Live | None = None
        self.rates: dict[str, float] = {}
        self.round: Round | None = None
        self.schedule: Schedule | None = None
        self.total = self.index = 0
        self.started_at: float | None = None

    def _counter(self) -> str:
        return f"[{self.index}/{self.total}] " if self.total else ""

    def _table(self) -> Table:
        assert self.round is not None
        title = f"{self._counter()}ib_write_bw {self.round.mode} {towards(self.round)}"
        table = Table(title=as_text(title), expand=False)
        table.add_column("path")
        table.add_column("live rate (port counters)")
        for path in self.round.paths:
            rate = self.rates.get(path.key)
            table.add_row(as_text(path.key), f"{rate:7.2f} Gb/s" if rate is not None else "starting")
        return table

    def _clock(self) -> str:
        """`18 s elapsed, ~14 s left`: from the first round; what is left by the schedule."""
        if self.started_at is None or self.schedule is None:
            return ""
        elapsed = time.monotonic() - self.started_at
        left = (self.total - self.index) * self.schedule.round_s + self.schedule.nccl_s
        return f"; {elapsed:.0f} s elapsed, ~{left:.0f} s left"

    def plan_known(self, schedule: Schedule) -> None:
        self.schedule, self.total = schedule, schedule.rounds
        line = self.plan(schedule.paths, schedule.nccl_max_bytes) if self.plan is not None else ""
        if line and line != self.said:
            self.console.print(as_text(f"{line}, after the inspection"), highlight=False)

    def note(self, line: str) -> None:
        self.console.print(as_text(line), highlight=False)

    def rounds_added(self, count: int) -> None:
        if self.total:
            self.total += count

    def round_started(self, rnd: Round) -> None:
        self.round, self.rates = rnd, {}
        self.index += 1
        if self.started_at is None:
            self.started_at = time.monotonic()
        self.live = Live(self._table(), console=self.console, transient=True, auto_refresh=False)
        self.live.start()

    def live_rate(self, rnd: Round, path_key: str, gbps: float) -> None:
        self.rates[path_key] = gbps
        if self.live is not None:
            self.live.update(self._table(), refresh=True)

    def round_done(self, rnd: Round, captures: list[Capture]) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None
        rates = ", ".join(f"{k} {v:.1f}" for k, v in self.rates.items())
        live = f"{rates} Gb/s live, from the port counters" if rates else "no live rate"
        how = "done" if _finished_well(captures) else "stopped"
        self.console.print(as_text(f"  {self._counter()}ib_write_bw {rnd.mode} {towards(rnd)}: {how} ({live}"
                                   f"{self._clock()})", "dim"))

    def not_run(self, captures: list[Capture]) -> None:
        for capture in captures:
            run = f"{capture.meta.get('mode')} {capture.meta.get('path')} {capture.meta.get('direction')}"
            why = (capture.skipped or "").removeprefix("not run: ")
            self.console.print(as_text(f"  not run: ib_write_bw {run}: {why}", "dim"))

    def nccl_started(self) -> None:
        expected = f" (~{self.schedule.nccl_s:.0f} s)" if self.schedule and self.schedule.nccl_s else ""
        self.console.print(f"  all_gather_perf across the nodes: running{expected}", style="dim")

    def nccl_done(self, captures: list[Capture]) -> None:
        self.console.print("  all_gather_perf: done", style="dim")

    def latency_started(self, runs: int) -> None:
        expected = f" (~{self.schedule.latency_s:.0f} s)" if self.schedule and self.schedule.latency_s else ""
        self.console.print(f"  latency: {runs} ib_write_lat runs one at a time, then all_reduce_perf 16-64 KiB"
                           f"{expected}", style="dim")

    def latency_done(self, captures: list[Capture]) -> None:
        clients = [c for c in captures if c.spec == "ib_write_lat" and c.meta.get("role") == "client"]
        ok = [c for c in clients if c.exit_status == 0 and not c.skipped]
        self.console.print(as_text(f"  latency: {len(ok)} of {len(clients)} ib_write_lat runs done", "dim"))


def towards(rnd: Round) -> str:
    """The round's direction: a pair's `a->b`; in a cluster's round, each test's by its nodes (`a->b, c->d`), read
    from the paths' keys (`a:netdev<->b:netdev`)."""
    ends = [tuple(end.split(":", 1)[0] for end in p.key.split("<->")) for p in rnd.paths if p.key.count(":") == 2]
    if not ends or len(ends) != len(rnd.paths):
        return rnd.direction
    pairs = dict.fromkeys(f"{a}->{b}" if rnd.direction == "a->b" else f"{b}->{a}" for a, b in ends)
    return ", ".join(pairs)


def _finished_well(captures: list[Capture]) -> bool:
    """Every ib_write_bw process of the round exited 0 by itself (none failed, none was ended by us)."""
    runs = [c for c in captures if c.spec == "ib_write_bw" and c.meta.get("format", "text") == "text"]
    return bool(runs) and all(c.exit_status == 0 and not c.skipped for c in runs)

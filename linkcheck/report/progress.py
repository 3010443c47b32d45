"""Live progress of the traffic tests on the console: each round's paths, their live rate, the result."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.live import Live
from rich.table import Table

from linkcheck.bench.plan import Round
from linkcheck.bench.runner import Progress
from linkcheck.model import Capture
from linkcheck.report.console import as_text

Plan = Callable[[int, "int | None"], str]  # (paths, NCCL bytes) -> the plan line


class ConsoleProgress(Progress):
    """A small live table: one row per path of the running round, with the rate read from the counters."""

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

    def _table(self) -> Table:
        assert self.round is not None
        table = Table(title=as_text(f"ib_write_bw {self.round.mode} {self.round.direction}"), expand=False)
        table.add_column("path")
        table.add_column("live rate")
        for path in self.round.paths:
            rate = self.rates.get(path.key)
            table.add_row(as_text(path.key), f"{rate:7.2f} Gb/s" if rate is not None else "starting")
        return table

    def plan_known(self, paths: int, nccl_max_bytes: int | None) -> None:
        line = self.plan(paths, nccl_max_bytes) if self.plan is not None else ""
        if line and line != self.said:
            self.console.print(as_text(f"{line}, after the inspection"), highlight=False)

    def round_started(self, rnd: Round) -> None:
        self.round, self.rates = rnd, {}
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
        rates = ", ".join(f"{k} {v:.1f}" for k, v in self.rates.items()) or "no live rate"
        how = "done" if _finished_well(captures) else "stopped"
        self.console.print(as_text(f"  ib_write_bw {rnd.mode} {rnd.direction}: {how} ({rates} Gb/s live)", "dim"))

    def not_run(self, captures: list[Capture]) -> None:
        for capture in captures:
            run = f"{capture.meta.get('mode')} {capture.meta.get('path')} {capture.meta.get('direction')}"
            why = (capture.skipped or "").removeprefix("not run: ")
            self.console.print(as_text(f"  not run: ib_write_bw {run}: {why}", "dim"))

    def nccl_started(self) -> None:
        self.console.print("  all_gather_perf across both nodes: running", style="dim")

    def nccl_done(self, captures: list[Capture]) -> None:
        self.console.print("  all_gather_perf: done", style="dim")


def _finished_well(captures: list[Capture]) -> bool:
    """Every ib_write_bw process of the round exited 0 by itself (none failed, none was ended by us)."""
    runs = [c for c in captures if c.spec == "ib_write_bw" and c.meta.get("format", "text") == "text"]
    return bool(runs) and all(c.exit_status == 0 and not c.skipped for c in runs)

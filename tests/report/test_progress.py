"""The console's live traffic-test display says how each round ended."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from linkcheck.bench.guard import Schedule
from linkcheck.bench.plan import RdmaOptions, bench_paths, plan_rounds
from linkcheck.bundle.format import load_bundle
from linkcheck.facts.pair import build_link_facts
from linkcheck.model import Capture
from linkcheck.report.progress import ConsoleProgress

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _run(node: str, role: str, exit_status: int | None, skipped: str | None = None) -> Capture:
    return Capture(node, "ib_write_bw", "ib_write_bw ...", "", exit_status=exit_status, skipped=skipped,
                   meta={"kind": "rdma", "role": role, "format": "text"})


def _line(captures: list[Capture]) -> str:
    out = io.StringIO()
    progress = ConsoleProgress(Console(file=out, width=120, force_terminal=False))
    rnd = plan_rounds(bench_paths(build_link_facts(load_bundle(FIXTURES / "healthy").captures)), RdmaOptions())[0]
    progress.round_started(rnd)
    progress.live_rate(rnd, rnd.paths[0].key, 97.5)
    progress.round_done(rnd, captures)
    return out.getvalue().strip().splitlines()[-1]


def test_a_round_that_finished_says_done_with_its_live_rate() -> None:
    line = _line([_run("a", "client", 0), _run("b", "server", 0)])
    assert "ib_write_bw alone a->b: done" in line and "97.5" in line


def test_a_round_that_failed_or_was_ended_says_stopped() -> None:
    assert ": stopped" in _line([_run("a", "client", 1), _run("b", "server", 1)])
    assert ": stopped" in _line([_run("a", "client", None, "ended by linkcheck: Ctrl-C"), _run("b", "server", 0)])
    assert ": stopped" in _line([])  # nothing ran (a server that never listened is recorded elsewhere)


def test_the_plan_is_said_again_after_the_inspection_only_when_the_nodes_changed_it() -> None:
    from linkcheck.accept.budget import plan_line

    def plan(paths: int, nccl: int | None) -> str:
        return plan_line("accept", paths=paths, duration_s=10, repetitions=3, nccl_max_bytes=nccl or 1 << 34)

    said = plan(2, None)
    out = io.StringIO()
    progress = ConsoleProgress(Console(file=out, width=400, force_terminal=False), plan, said)
    progress.plan_known(Schedule(2, 1 << 34, 18, 10.5))  # as planned: nothing more to say
    assert out.getvalue() == ""
    progress.plan_known(Schedule(2, 1 << 31, 18, 10.5))  # the nodes' free memory caps the NCCL sweep at 2 GiB
    line = out.getvalue().strip()
    assert line.startswith("linkcheck accept: planned wall time ~") and line.endswith(", after the inspection")
    assert "all_gather_perf up to 2 GiB" in line and line != said
    ConsoleProgress(Console(file=io.StringIO())).plan_known(Schedule(1, None, 2, 5.5))  # no plan: says nothing


def test_each_round_line_counts_rounds_and_says_the_time_elapsed_and_left() -> None:
    out = io.StringIO()
    progress = ConsoleProgress(Console(file=out, width=300, force_terminal=False))
    progress.plan_known(Schedule(2, 256 << 20, 2, 5.5, nccl_s=4.0))
    rnds = plan_rounds(bench_paths(build_link_facts(load_bundle(FIXTURES / "healthy").captures)), RdmaOptions())
    done = [_run("a", "client", 0), _run("b", "server", 0)]
    progress.round_started(rnds[2])
    progress.round_done(rnds[2], done)
    progress.rounds_added(1)  # a path was low: it runs alone once more
    progress.round_started(rnds[0])
    progress.live_rate(rnds[0], rnds[0].paths[0].key, 108.2)
    progress.round_done(rnds[0], done)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("  [1/2] ib_write_bw concurrent a->b: done") and "~10 s left)" in lines[0], lines
    assert lines[1].startswith("  [2/3] ib_write_bw alone a->b: done") and "~10 s left)" in lines[1], lines
    assert "s elapsed" in lines[1] and "from the port counters" in lines[1]

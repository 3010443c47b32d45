"""What every traffic test runs inside: the progress it reports, the result it keeps, and the guard that ends every
process it started, whatever happens.

Any failure, timeout or Ctrl-C ends every process we started (by PID) and keeps what was measured; the error is
recorded so the verdict becomes inconclusive rather than a number that cannot be trusted. The RDMA rounds
(bench/rounds.py), the NCCL job (bench/nccl.py) and the latency test all run under `run_guarded`.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import msgspec

from linkcheck.bench import remote
from linkcheck.bench.plan import Round
from linkcheck.errors import LinkcheckError
from linkcheck.model import Capture
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


def run_guarded(transports: dict[str, Transport], body: Body) -> TrafficResult:
    """Run `body` with a process registry over `transports` (the rounds, an NCCL run, ...): the first error or Ctrl-C
    stops it, every process it started is ended by PID on every node, whatever happened, and what it measured is
    kept."""
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

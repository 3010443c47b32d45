"""Planned wall time of a live run, from its rounds, durations and repetitions, said before it starts.

The overheads are lab figures (tests/lab, 2 shared CPUs; a GB10 pair is faster; `benchmarks/tiers.py` measures
them): an inspection with the process start takes ~0.7 s (0.6-0.7 s, 2026-12-03); the first round of a run adds
~1.5 s to its -D (the tools' start, perftest's 1 s pause after connecting, the server's exit; linkcheck's own share, the
counter snapshots and collecting the outputs, is ~0.1 s); each later round adds only the hand-over gap and
our share (~0.5 s) where its margin allows the hand-over (bench/perftest.py), else ~1.5 s again; mpirun and
the ranks' set-up and a 256 MiB sweep take ~1.1 s on the lab (counted as 2 s: a GB10's ranks also start CUDA).
The latency test has no -D: each ib_write_lat run is its start-up, perftest's 1 s pause after connecting and a few
milliseconds of writes (1000 of at most ~30 us), ~1.5 s in all on the lab; its all_reduce is mpirun's start and
three sizes of 220 all-reduces of well under a millisecond, counted as NCCL_START_S.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass

INSPECTION_S = 0.7
ROUND_OVERHEAD_S = 1.5
HANDOVER_OVERHEAD_S = 0.5
NCCL_START_S = 2.0
NCCL_SWEEP_GBS = 40.0  # algbw of a healthy pair at 2 ranks (busbw x 2: 43-47 GB/s), counted a little low
NCCL_ITERATIONS = 2 * 21  # out-of-place and in-place, 20 iterations and a warm-up per size
NCCL_MIN_BYTES = 1 << 20  # the sweep's first size (bench/nccl.py MIN_BYTES)
LATENCY_RUN_S = 1.5
LATENCY_SIZES = 2  # per path: 2 B and 48 KiB (bench/latency.py SIZES)


def rdma_rounds(paths: int, directions: int = 2, *, adaptive: bool = False) -> int:
    """Rounds per repetition: each path alone and, with more than one path, all of them at once, per direction.
    `adaptive` (the quick tier): the concurrent rounds only, as a healthy pair runs them."""
    if adaptive and paths > 1:
        return directions
    return directions * (paths + (1 if paths > 1 else 0))


def rounds_seconds(rounds: int, duration_s: int) -> float:
    """One run of `rounds` rounds one after another: the first starts from nothing, each later one is handed
    over during the one before where -D // 4 >= 1 (bench/perftest.py hands_over)."""
    if rounds <= 0:
        return 0.0
    later = HANDOVER_OVERHEAD_S if duration_s // 4 >= 1 else ROUND_OVERHEAD_S
    return rounds * duration_s + ROUND_OVERHEAD_S + (rounds - 1) * later


def nccl_seconds(max_bytes: int) -> float:
    """mpirun's start-up and the -b 1 MiB .. -e max_bytes sweep (factor 2) at a healthy pair's rate."""
    moved, size = 0, NCCL_MIN_BYTES
    while size <= max(max_bytes, NCCL_MIN_BYTES):
        moved += size
        size *= 2
    return NCCL_START_S + moved * NCCL_ITERATIONS / (NCCL_SWEEP_GBS * 1e9)


def latency_seconds(paths: int, sizes: int = LATENCY_SIZES, allreduce: bool = True) -> float:
    """The latency test: an ib_write_lat run per path and size, one at a time, then the small all_reduce."""
    return paths * sizes * LATENCY_RUN_S + (NCCL_START_S if allreduce else 0.0)


def planned_seconds(*, paths: int = 2, duration_s: int | None = None, repetitions: int = 1,
                    nccl_max_bytes: int | None = None, adaptive: bool = False, latency: bool = False) -> float:
    """Inspection, then (duration_s given) the RDMA rounds `repetitions` times, then (nccl_max_bytes) NCCL once,
    then (latency) the latency test once."""
    total = INSPECTION_S
    if duration_s is not None:
        total += repetitions * rounds_seconds(rdma_rounds(paths, adaptive=adaptive), duration_s)
    if nccl_max_bytes is not None:
        total += nccl_seconds(nccl_max_bytes)
    if latency:
        total += latency_seconds(paths)
    return total


def plan_line(command: str, *, paths: int = 2, duration_s: int | None = None, repetitions: int = 1,
              nccl_max_bytes: int | None = None, traffic_total: bool = False, adaptive: bool = False,
              latency: bool = False) -> str:
    """One line for stderr: the planned wall time and what it is made of; `traffic_total` adds the seconds of
    ib_write_bw traffic and each run's measured window (the quick tier's budget is stated in them)."""
    total = planned_seconds(paths=paths, duration_s=duration_s, repetitions=repetitions,
                            nccl_max_bytes=nccl_max_bytes, adaptive=adaptive, latency=latency)
    parts = ["inspection"]
    if duration_s is not None:
        reps = f" x {repetitions} repetitions" if repetitions > 1 else ""
        rounds = rdma_rounds(paths, adaptive=adaptive)
        traffic = (f" ({repetitions * rounds * duration_s} s of traffic, {measured_window_s(duration_s)} s "
                   "measured per run)") if traffic_total else ""
        shape = " with all paths at once" if adaptive and paths > 1 else ""
        parts.append(f"{rounds} ib_write_bw rounds of {duration_s} s{shape}{reps}{traffic}")
        more = rdma_rounds(paths) - rounds
        if more:
            extra = rounds_seconds(more, duration_s)
            parts.append(f"each path alone only where one is low: up to {more} rounds more, ~{_human(extra)}")
    if nccl_max_bytes is not None:
        parts.append(f"all_gather_perf up to {_size(nccl_max_bytes)} (~{nccl_seconds(nccl_max_bytes):.0f} s)")
    if latency:
        parts.append(latency_part(paths))
    return f"linkcheck {command}: planned wall time ~{_human(total)} ({', '.join(parts)})"


def latency_part(paths: int, across: str = "") -> str:
    """The latency test as a plan line says it, a pair's and a cluster's (`across`: where the all_reduce runs)."""
    return (f"{paths * LATENCY_SIZES} ib_write_lat runs one at a time (2 B and 48 KiB per path) and "
            f"all_reduce_perf 16-64 KiB{across} (~{latency_seconds(paths):.0f} s)")


def cluster_plan_line(command: str, *, tests: int, rounds: int, duration_s: int, repetitions: int = 1,
                      nccl_max_bytes: int | None = None, adaptive: bool = False,
                      latency_paths: int | None = None) -> str:
    """A cluster run's plan, said once the inspection has shown the schedule: `rounds` ib_write_bw rounds per
    repetition (the tests of a schedule round side by side), then NCCL across every node once, then (`latency_paths`:
    the paths of every cable) the latency test once, as a pair's plan says it."""
    total = INSPECTION_S + (repetitions * rounds_seconds(rounds, duration_s) if rounds else 0.0)
    reps = f" x {repetitions} repetitions" if repetitions > 1 else ""
    shape = " (all paths at once; each path alone only where one is low)" if adaptive else ""
    counted = f"{tests} test" + ("s" if tests != 1 else "")  # a pair named by a hostfile is one test
    # No rounds: the latency test alone (`bench latency`, `check --latency` without --quick or --bench).
    parts = [f"{counted} in {rounds} ib_write_bw rounds of {duration_s} s{shape}{reps}"] if rounds else []
    if nccl_max_bytes is not None:
        total += nccl_seconds(nccl_max_bytes)
        parts.append(f"all_gather_perf across every node up to {_size(nccl_max_bytes)} "
                     f"(~{nccl_seconds(nccl_max_bytes):.0f} s)")
    if latency_paths is not None:
        total += latency_seconds(latency_paths)
        parts.append(latency_part(latency_paths, " across every node"))
    return f"linkcheck {command}: planned wall time ~{_human(total)} after the inspection ({', '.join(parts)})"


def measured_window_s(duration_s: int) -> int:
    """The seconds perftest measures of a -D run: it leaves duration / 4 (integer) out at each end."""
    return duration_s - 2 * (duration_s // 4)


def _size(n: int) -> str:
    return f"{n >> 30} GiB" if n >= 1 << 30 and n % (1 << 30) == 0 else f"{n >> 20} MiB"


def _human(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min"

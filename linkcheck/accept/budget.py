"""Planned wall time of a live run, from its rounds, durations and repetitions, said before it starts.

The overheads are lab figures (tests/lab, 2 shared CPUs; a GB10 pair is faster): an inspection takes
well under a second, a round adds ~2 s to its -D (perftest's 1 s pause after connecting, the server's
exit, the counter snapshots), and mpirun with NCCL's set-up ~10 s before the all_gather sweep.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from linkcheck.config import Config

INSPECTION_S = 2.0
ROUND_OVERHEAD_S = 2.0
NCCL_START_S = 10.0
NCCL_SWEEP_GBS = 40.0  # algbw of a healthy pair at 2 ranks (busbw x 2: 43-47 GB/s), counted a little low
NCCL_ITERATIONS = 2 * 21  # out-of-place and in-place, 20 iterations and a warm-up per size
NCCL_MIN_BYTES = 1 << 30


def expected_paths(config: Config) -> int:
    """How many data paths the plan assumes before the inspection: those `init` recorded, else both twins."""
    return len(config.expected_link.paths) if config.expected_link and config.expected_link.paths else 2


def rdma_rounds(paths: int, directions: int = 2) -> int:
    """Rounds per repetition: each path alone and, with more than one path, all of them at once, per direction."""
    return directions * (paths + (1 if paths > 1 else 0))


def nccl_seconds(max_bytes: int) -> float:
    """mpirun's start-up and the -b 1 GiB .. -e max_bytes sweep (factor 2) at a healthy pair's rate."""
    moved, size = 0, NCCL_MIN_BYTES
    while size <= max(max_bytes, NCCL_MIN_BYTES):
        moved += size
        size *= 2
    return NCCL_START_S + moved * NCCL_ITERATIONS / (NCCL_SWEEP_GBS * 1e9)


def planned_seconds(*, paths: int = 2, duration_s: int | None = None, repetitions: int = 1,
                    nccl_max_bytes: int | None = None) -> float:
    """Inspection, then (duration_s given) the RDMA rounds `repetitions` times, then (nccl_max_bytes) NCCL once."""
    total = INSPECTION_S
    if duration_s is not None:
        total += repetitions * rdma_rounds(paths) * (duration_s + ROUND_OVERHEAD_S)
    if nccl_max_bytes is not None:
        total += nccl_seconds(nccl_max_bytes)
    return total


def plan_line(command: str, *, paths: int = 2, duration_s: int | None = None, repetitions: int = 1,
              nccl_max_bytes: int | None = None, traffic_total: bool = False) -> str:
    """One line for stderr: the planned wall time and what it is made of; `traffic_total` adds the seconds of
    ib_write_bw traffic and each run's measured window (the quick tier's budget is stated in them)."""
    total = planned_seconds(paths=paths, duration_s=duration_s, repetitions=repetitions,
                            nccl_max_bytes=nccl_max_bytes)
    parts = ["inspection"]
    if duration_s is not None:
        reps = f" x {repetitions} repetitions" if repetitions > 1 else ""
        rounds = rdma_rounds(paths)
        traffic = (f" ({repetitions * rounds * duration_s} s of traffic, {measured_window_s(duration_s)} s "
                   "measured per run)") if traffic_total else ""
        parts.append(f"{rounds} ib_write_bw rounds of {duration_s} s{reps}{traffic}")
    if nccl_max_bytes is not None:
        parts.append(f"all_gather_perf up to {nccl_max_bytes >> 20} MiB (~{nccl_seconds(nccl_max_bytes):.0f} s)")
    return f"linkcheck {command}: planned wall time ~{_human(total)} ({', '.join(parts)})"


def measured_window_s(duration_s: int) -> int:
    """The seconds perftest measures of a -D run: it leaves duration / 4 (integer) out at each end."""
    return duration_s - 2 * (duration_s // 4)


def _human(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min"

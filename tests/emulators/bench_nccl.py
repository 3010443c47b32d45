"""nccl-tests `all_gather_perf` output (v2.17.x text and -J JSON) for a run of one GPU per node, 2 ranks or more.

Formats from nccl-tests src/util.cu / common.cu (tool-formats.md 2.1-2.5): the version line (>= 2.17.4),
double-space header (>= 2.17.3), getFloatStr() number widths, `# Avg bus bandwidth` = mean of every
busbw value (out-of-place and in-place), exit 7 when #wrong > 0.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

FLOAT_BYTES = 4
NRANKS = 2  # a pair's ranks; a cluster's run has one per host
OUT_IN_PLACE = "           out-of-place                       in-place          \n"


@dataclass(frozen=True)
class NcclTestsRun:
    """One all_gather_perf run, one rank per host; `curve` is (size in bytes, busbw GB/s) per row."""

    hosts: tuple[str, ...]
    curve: tuple[tuple[int, float], ...]
    wrong: int = 0  # out-of-bounds values, reported on the largest size (out-of-place)
    pids: tuple[int, ...] = (412345, 398211)
    version: str = "2.17.6"
    nccl_version: str = "2.28.9"
    gpu_name: str = "NVIDIA GB10"
    gpu_bus: str = "000f:01:00"
    iters: int = 20
    warmup: int = 1
    env: dict[str, str] = field(default_factory=dict)
    collective: str = "all_gather"  # all_gather | all_reduce

    @property
    def nranks(self) -> int:
        return len(self.hosts)

    @property
    def program(self) -> str:
        return f"{self.collective}_perf"

    def count(self, size: int) -> int:
        """Elements per rank for all_gather (the sendcount), of the whole buffer for all_reduce."""
        per = size // FLOAT_BYTES
        return per // self.nranks if self.collective == "all_gather" else per

    def algbw_factor(self) -> float:
        """algbw / busbw: n/(n-1) for all_gather, n/(2(n-1)) for all_reduce (= 1 at 2 ranks)."""
        n = self.nranks
        return n / (n - 1) if self.collective == "all_gather" else n / (2 * (n - 1))


def nccl_code(version: str) -> int:
    """NCCL_VERSION_CODE: 2.28.9 -> 22809."""
    major, minor, patch = (int(x) for x in version.split(".")[:3])
    return major * 10000 + minor * 100 + patch


def float_str(value: float, width: int, last_resort: str) -> str:
    """getFloatStr(): the first of %W.2f, %W.1f, %W.0f that fits the width, else an e-format."""
    for prec in (2, 1, 0):
        text = f"{value:{width}.{prec}f}"
        if len(text) <= width:
            return text
    return f"{value:{width}{last_resort}}"


@dataclass(frozen=True)
class Row:
    size: int
    time_us: tuple[float, float]
    algbw: tuple[float, float]
    busbw: tuple[float, float]
    wrong: tuple[int, int]


def rows(run: NcclTestsRun) -> list[Row]:
    out = []
    last = len(run.curve) - 1
    for i, (size, busbw) in enumerate(run.curve):
        pair = (busbw, busbw * 1.0025)  # in-place is marginally faster on a 2-rank ring
        algbw = tuple(b * run.algbw_factor() for b in pair)
        times = tuple(size / (a * 1e9) * 1e6 if a > 0 else 0.0 for a in algbw)
        wrong = (run.wrong if i == last else 0, 0)
        out.append(Row(size, (times[0], times[1]), (algbw[0], algbw[1]), pair, wrong))
    return out


def row_text(run: NcclTestsRun, r: Row) -> str:
    """One result row: "%12li  %12li  %8s  %6s  %6s" + 2 x "  %7s  %6s  %6s  %6g"."""
    redop = "none" if run.collective == "all_gather" else "sum"
    text = f"{r.size:12d}  {run.count(r.size):12d}  {'float':>8}  {redop:>6}  {'-1':>6}"
    for k in range(2):
        text += (f"  {float_str(r.time_us[k], 7, '.1e')}  {float_str(r.algbw[k], 6, '.0e')}"
                 f"  {float_str(r.busbw[k], 6, '.0e')}  {r.wrong[k]:6g}")
    return text + "\n"


def avg_busbw(run: NcclTestsRun) -> float:
    values = [b for r in rows(run) for b in r.busbw]
    return sum(values) / len(values) if values else 0.0


def _g(value: float) -> str:
    """C's %g (6 significant digits, no trailing zeros)."""
    return f"{value:g}"


def header(run: NcclTestsRun) -> str:
    sizes = [s for s, _ in run.curve]
    code = nccl_code(run.nccl_version)
    text = f"# nccl-tests version {run.version} nccl-headers={code} nccl-library={code}\n"
    text += f"# Collective test starting: {run.program}\n"
    text += (f"# nThread 1 nGpus 1 minBytes {min(sizes)} maxBytes {max(sizes)} step: 2(factor) "
             f"warmup iters: {run.warmup} iters: {run.iters} agg iters: 1 validation: 1 graph: 0\n")
    text += "#\n# Using devices\n"
    for rank in range(run.nranks):
        host = run.hosts[rank].split(".")[0]
        text += (f"#  Rank {rank:2d} Group {0:2d} Pid {run.pids[rank]:6d} on {host:>10} device {0:2d} "
                 f"[{run.gpu_bus}] {run.gpu_name}\n")
    text += "#\n"
    text += f"# {'':>10}  {'':>12}  {'':>8}  {'':>6}  {'':>6}" + OUT_IN_PLACE
    cols = ("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong",
            "time", "algbw", "busbw", "#wrong")
    units = ("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "")
    widths = (10, 12, 8, 6, 6, 7, 6, 6, 6, 7, 6, 6, 6)
    for names in (cols, units):
        text += "# " + "  ".join(f"{n:>{w}}" for n, w in zip(names, widths, strict=True)) + " \n"
    return text


def render_all_gather_perf(run: NcclTestsRun) -> tuple[str, str, int]:
    text = header(run) + "".join(row_text(run, r) for r in rows(run))
    status = "FAILED" if run.wrong else "OK"
    text += f"# Out of bounds values : {run.wrong} {status}\n"
    text += f"# Avg bus bandwidth    : {_g(avg_busbw(run))} \n"
    text += f"#\n# Collective test concluded: {run.program}\n#\n\n"
    if run.wrong:
        text += f" .. {run.hosts[0].split('.')[0]} pid {run.pids[0]}: Test failure common.cu:1152\n"
        return text, "", 7
    return text, "", 0


def render_all_gather_perf_json(run: NcclTestsRun, start: str = "2026-09-22 10:15:02",
                                end: str = "2026-09-22 10:15:41") -> str:
    """The -J file: one line; booleans as strings, root a padded string, doubles %lf (version 1 schema)."""
    sizes = [s for s, _ in run.curve]

    def side(r: Row, k: int) -> dict[str, object]:
        return {"time": float(f"{r.time_us[k]:f}"), "alg_bw": float(f"{r.algbw[k]:f}"),
                "bus_bw": float(f"{r.busbw[k]:f}"), "nwrong": r.wrong[k]}

    doc = {
        "version": 1, "start_time": start,
        "args": [f"./build/{run.program}", "-b", str(min(sizes)), "-e", str(max(sizes)), "-f", "2", "-g", "1",
                 "-J", f"{run.collective}.json"],
        "env": run.env, "nccl_version": nccl_code(run.nccl_version),
        "config": {"nthreads": 1, "ngpus": 1, "minimum_bytes": min(sizes), "maximum_bytes": max(sizes),
                   "step_factor": 2, "warmup_iters": run.warmup, "iterations": run.iters,
                   "aggregated_iterations": 1, "validation": 1, "graph": 0, "blocking_collectives": "false",
                   "parallel_init": "false",
                   "devices": [{"rank": i, "group": 0, "pid": run.pids[i], "hostname": run.hosts[i].split(".")[0],
                                "device": 0, "device_hex": run.gpu_bus, "device_info": run.gpu_name}
                               for i in range(run.nranks)]},
        "results": [{"size": r.size, "count": run.count(r.size), "type": "float",
                     "redop": "none" if run.collective == "all_gather" else "sum",
                     "root": "    -1", "out_of_place": side(r, 0), "in_place": side(r, 1),
                     "actual_iterations": run.iters, "experiment_name": ""} for r in rows(run)],
        "out_of_bounds": {"count": run.wrong, "okay": "false" if run.wrong else "true"},
        "average_bus_bandwidth": {"bandwidth": float(f"{avg_busbw(run):f}"), "okay": "unchecked"},
        "errors": [""], "end_time": end,
    }
    return json.dumps(doc).replace("/", "\\/") + "\n"


def busbw_curve(peak_gbs: float, min_bytes: int = 1 << 20, max_bytes: int = 1 << 34) -> tuple[tuple[int, float], ...]:
    """A saturating curve: latency-bound small sizes rising to `peak_gbs` at the largest sizes."""
    out = []
    size = min_bytes
    while size <= max_bytes:
        half = 8 << 20  # size at which half the peak is reached
        out.append((size, round(peak_gbs * size / (size + half), 2)))
        size *= 2
    return tuple(out)


# all_reduce at decode sizes is bound by latency (spark-link s.10: 8 KiB 35 us, 64 KiB 68 us on a healthy pair): a
# fixed cost plus the bytes at an effective ~1.7 GB/s gives 34.8 us at 8 KiB, 58 us at 48 KB and 68 us at 64 KiB.
ALLREDUCE_BASE_US = 30.0
ALLREDUCE_US_PER_BYTE = 38.0 / 65536


def allreduce_latency_curve(min_bytes: int, max_bytes: int, slowdown: float = 1.0) -> tuple[tuple[int, float], ...]:
    """(size, busbw GB/s) rows whose times follow the latency model above, `slowdown` times slower; at 2 ranks an
    all_reduce's busbw is its algbw, bytes / time."""
    out = []
    size = min_bytes
    while size <= max_bytes:
        time_us = (ALLREDUCE_BASE_US + size * ALLREDUCE_US_PER_BYTE) * slowdown
        out.append((size, size / (time_us * 1e3)))
        size *= 2
    return tuple(out)

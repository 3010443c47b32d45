"""Benchmark: offline `linkcheck diagnose` on the healthy fixture against `python -c "import typer, rich"`.

Target: the diagnosis takes under 2x the bare import baseline. Prints median wall times over N runs.
    python benchmarks/diagnose_startup.py [N]
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def median_s(argv: list[str], runs: int) -> tuple[float, float]:
    """Median wall time and median CPU time (user + sys of the child): CPU time barely moves with load."""
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    baseline = median_s([sys.executable, "-c", "import typer, rich"], runs)
    results = {
        "baseline (import typer, rich)": baseline,
        "linkcheck --help": median_s([sys.executable, "-m", "linkcheck.cli", "--help"], runs),
        "linkcheck diagnose fixtures/healthy": median_s(
            [sys.executable, "-m", "linkcheck.cli", "diagnose", str(ROOT / "fixtures" / "healthy")], runs),
        "linkcheck diagnose -f json fixtures/healthy": median_s(
            [sys.executable, "-m", "linkcheck.cli", "diagnose", "-f", "json", str(ROOT / "fixtures" / "healthy")],
            runs),
    }
    base_wall, base_cpu = baseline
    print(f"{'':46} {'wall':>9}  {'x base':>6}   {'cpu':>9}  {'x base':>6}")
    for name, (wall, cpu) in results.items():
        print(f"{name:<46} {wall * 1000:7.1f}ms  {wall / base_wall:5.2f}x   "
              f"{cpu * 1000:7.1f}ms  {cpu / base_cpu:5.2f}x")


if __name__ == "__main__":
    main()

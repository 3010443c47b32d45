"""Benchmark: offline `linkcheck diagnose` on the healthy fixture against `python -c "import typer, rich"`.

Target: the diagnosis takes under 2x the bare import baseline. Prints median wall times over N runs.
    python benchmarks/diagnose_startup.py [N]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def median_s(argv: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


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
    for name, seconds in results.items():
        print(f"{name:<46} {seconds * 1000:8.1f} ms   {seconds / baseline:5.2f}x baseline")


if __name__ == "__main__":
    main()

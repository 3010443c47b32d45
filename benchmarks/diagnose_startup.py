"""Benchmark: offline `linkcheck diagnose` on the healthy fixture against `python -c "import typer, rich"`.

Target: the diagnosis takes under 3x the bare import baseline. Prints median wall and CPU times over N runs;
the commands take turns, so a change in the machine's load hits them all alike.
    python benchmarks/diagnose_startup.py [N] [--bytecode]
--bytecode loads every module from bytecode, as an installed copy does (a fresh pycache prefix, filled by one
warm-up run of each command). Without it, PYTHONDONTWRITEBYTECODE=1 in the environment makes linkcheck compile
from source on every run while typer and rich load the bytecode pip wrote at install time.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def medians(commands: dict[str, list[str]], runs: int, env: dict[str, str]) -> dict[str, tuple[float, float]]:
    """Median wall time and median CPU time (user + sys of the child) per command: CPU time barely moves with load."""
    walls: dict[str, list[float]] = {name: [] for name in commands}
    cpus: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
            walls[name].append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus[name].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return {name: (statistics.median(walls[name]), statistics.median(cpus[name])) for name in commands}


def bytecode_env(commands: dict[str, list[str]], prefix: str) -> dict[str, str]:
    """An environment whose runs load every module, stdlib included, from bytecode under `prefix`."""
    env = {**os.environ, "PYTHONPYCACHEPREFIX": prefix}
    warm_up = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for argv in commands.values():
        subprocess.run(argv, env=warm_up, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="?", type=int, default=15)
    parser.add_argument("--bytecode", action="store_true", help="load every module from bytecode")
    args = parser.parse_args()
    healthy = str(ROOT / "fixtures" / "healthy")
    commands = {
        "baseline (import typer, rich)": [sys.executable, "-c", "import typer, rich"],
        "linkcheck --help": [sys.executable, "-m", "linkcheck.cli", "--help"],
        "linkcheck diagnose fixtures/healthy": [sys.executable, "-m", "linkcheck.cli", "diagnose", healthy],
        "linkcheck diagnose -f json fixtures/healthy": [
            sys.executable, "-m", "linkcheck.cli", "diagnose", "-f", "json", healthy],
    }
    prefix = tempfile.mkdtemp(prefix="linkcheck-pyc-") if args.bytecode else None
    try:
        env = bytecode_env(commands, prefix) if prefix else dict(os.environ)
        results = medians(commands, args.runs, env)
    finally:
        if prefix:
            shutil.rmtree(prefix, ignore_errors=True)
    if not args.bytecode and os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print("note: PYTHONDONTWRITEBYTECODE is set: linkcheck may compile from source on every run while typer "
              "and rich load bytecode; --bytecode compares like with like")
    base_wall, base_cpu = results["baseline (import typer, rich)"]
    print(f"{'':46} {'wall':>9}  {'x base':>6}   {'cpu':>9}  {'x base':>6}")
    for name, (wall, cpu) in results.items():
        print(f"{name:<46} {wall * 1000:7.1f}ms  {wall / base_wall:5.2f}x   "
              f"{cpu * 1000:7.1f}ms  {cpu / base_cpu:5.2f}x")


if __name__ == "__main__":
    main()

"""Benchmark: offline `linkcheck diagnose` on the healthy fixture against `python -c "import typer, rich"`.

A guard, not a target: a JSON diagnosis stays within 3x the bare import baseline, which a heavy import on
the start-up path would break. Prints median wall and CPU times over N runs;
the commands take turns, so a change in the machine's load hits them all alike, and beside each ratio of the
medians the median of the per-round ratios (each run against the baseline of its own round).
    python benchmarks/diagnose_startup.py [N] [--bytecode] [--against DIR]...
--bytecode loads every module from bytecode, as an installed copy does (a fresh pycache prefix, filled by one
warm-up run of each command). Without it, PYTHONDONTWRITEBYTECODE=1 in the environment makes linkcheck compile
from source on every run while typer and rich load the bytecode pip wrote at install time.
--against DIR (repeatable) also times both diagnoses run from the linkcheck package in DIR, in the same rounds,
so a change is measured against the code before it under the same load; e.g. DIR from
`mkdir DIR && git archive HEAD~1 linkcheck | tar -x -C DIR`.
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


Command = tuple[list[str], dict[str, str]]  # argv, and what it adds to the environment


def timings(commands: dict[str, Command], runs: int, env: dict[str, str],
            cwd: str) -> dict[str, tuple[list[float], list[float]]]:
    """Per command, the wall time and the CPU time (user + sys of the child) of each round, in round order."""
    times: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in commands}
    for _ in range(runs):
        for name, (argv, extra) in commands.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run(argv, env={**env, **extra}, cwd=cwd, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=False)
            times[name][0].append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            times[name][1].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return times


def paired(these: list[float], base: list[float]) -> float:
    """The median of the per-round ratios: a slow moment of the machine slows a round's baseline too."""
    return statistics.median(t / b for t, b in zip(these, base, strict=True))


def bytecode_env(commands: dict[str, Command], prefix: str, cwd: str) -> dict[str, str]:
    """An environment whose runs load every module, stdlib included, from bytecode under `prefix`."""
    env = {**os.environ, "PYTHONPYCACHEPREFIX": prefix}
    warm_up = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for argv, extra in commands.values():
        subprocess.run(argv, env={**warm_up, **extra}, cwd=cwd, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=False)
    return env


BASELINE = "baseline (import typer, rich)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="?", type=int, default=15)
    parser.add_argument("--bytecode", action="store_true", help="load every module from bytecode")
    parser.add_argument("--against", action="append", type=Path, default=[], metavar="DIR",
                        help="also time the diagnoses run from the linkcheck package in DIR (e.g. a `git archive`"
                        " of the code before a change), in the same rounds; repeatable")
    args = parser.parse_args()
    healthy = str(ROOT / "fixtures" / "healthy")
    # Every command starts in an empty folder and finds linkcheck through PYTHONPATH: from the repository root
    # `-m` would find this checkout first whatever PYTHONPATH says, and the editable install's finder comes
    # after PYTHONPATH, so each copy of the code is looked up the same way.
    here = {"PYTHONPATH": str(ROOT)}
    linkcheck = [sys.executable, "-m", "linkcheck.cli"]
    diagnoses = {"diagnose": [*linkcheck, "diagnose", healthy],
                 "diagnose -f json": [*linkcheck, "diagnose", "-f", "json", healthy]}
    commands: dict[str, Command] = {
        BASELINE: ([sys.executable, "-c", "import typer, rich"], here),
        "linkcheck --help": ([*linkcheck, "--help"], here),
        **{f"linkcheck {name} fixtures/healthy": (argv, here) for name, argv in diagnoses.items()},
    }
    for other in args.against:
        code = {"PYTHONPATH": str(other.resolve())}
        commands.update({f"  from {other}: {name}": (argv, code) for name, argv in diagnoses.items()})
    prefix = tempfile.mkdtemp(prefix="linkcheck-pyc-") if args.bytecode else None
    cwd = tempfile.mkdtemp(prefix="linkcheck-bench-")
    try:
        env = bytecode_env(commands, prefix, cwd) if prefix else dict(os.environ)
        results = timings(commands, args.runs, env, cwd)
    finally:
        for folder in (prefix, cwd):
            if folder:
                shutil.rmtree(folder, ignore_errors=True)
    if not args.bytecode and os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print("note: PYTHONDONTWRITEBYTECODE is set: linkcheck may compile from source on every run while typer "
              "and rich load bytecode; --bytecode compares like with like")
    base_walls, base_cpus = results[BASELINE]
    base_wall, base_cpu = statistics.median(base_walls), statistics.median(base_cpus)
    print(f"{'':46} {'wall':>9}  {'x base':>6}  {'paired':>6}   {'cpu':>9}  {'x base':>6}")
    for name, (walls, cpus) in results.items():
        wall, cpu = statistics.median(walls), statistics.median(cpus)
        print(f"{name:<46} {wall * 1000:7.1f}ms  {wall / base_wall:5.2f}x  {paired(walls, base_walls):5.2f}x   "
              f"{cpu * 1000:7.1f}ms  {cpu / base_cpu:5.2f}x")


if __name__ == "__main__":
    main()

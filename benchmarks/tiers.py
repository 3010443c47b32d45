"""Benchmark: each tier's wall time on the healthy two-node lab, beside the wall time it plans.

Tiers: `check` (inspection only), `check --quick` (inspection, ib_write_bw -D 4 with both paths at once in each
direction; a path alone only where it is low, which on the healthy lab is never), `check --quick --nccl` (plus
the 256 MiB transport proof) and `accept` with the shipped dgx-spark-pair profile (inspection, the six rounds
of 10 s three times, all_gather_perf). Beside each tier's wall time: its plan and how far off it is, the seconds
of ib_write_bw traffic (-D per round run) and of the NCCL run in its saved bundle, the share of the wall time
outside both, and that time per round once the inspection tier's wall time is taken out.

The full accept takes minutes; `--accept-duration S` and
`--accept-repetitions N` run it on a copy of the profile with shorter rounds or fewer repetitions, and the
output says so. Each tier runs `--runs` times (median and range shown); every run is one `linkcheck`
process, start-up included, against one lab built once. Needs root (the lab); run it with no other lab
running (they share the CPUs), from the repository root:

    python benchmarks/tiers.py [--runs N] [--accept-duration S] [--accept-repetitions N] [--no-accept]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from linkcheck.accept.budget import planned_seconds  # noqa: E402 - after the path set-up above
from linkcheck.accept.profile import BUILTIN_DIR, load_profile_file  # noqa: E402
from linkcheck.bench.nccl import TRANSPORT_PROOF_BYTES  # noqa: E402
from linkcheck.bench.plan import QUICK_DURATION_S  # noqa: E402
from tests.lab import Lab  # noqa: E402
from tests.lab.pytest_plugin import lab_skip_reason  # noqa: E402
from tests.lab.scenario import specs_for_scenario  # noqa: E402

PLAN_RE = re.compile(r"planned wall time ~([\d.]+) (s|min)")


@dataclass
class Tier:
    name: str
    args: list[str]
    planned_s: float
    note: str = ""


def _profile(work: Path, duration: int | None) -> tuple[Path, int, int]:
    """The profile accept runs: the shipped one, or a copy with shorter rounds; with its -D and NCCL size."""
    shipped = BUILTIN_DIR / "dgx-spark-pair.yaml"
    prof = load_profile_file(shipped)
    if duration is None:
        return shipped, prof.test.duration_s, prof.test.nccl_max_bytes
    text = shipped.read_text(encoding="utf-8")
    short = text.replace(f"rdma: {{duration_s: {prof.test.duration_s},", f"rdma: {{duration_s: {duration},")
    if short == text:
        raise SystemExit("cannot shorten the profile: its test.rdma line changed; update benchmarks/tiers.py")
    path = work / "reduced-profile.yaml"
    path.write_text(short, encoding="utf-8")
    return path, duration, prof.test.nccl_max_bytes


def _tiers(work: Path, config: Path, options: argparse.Namespace) -> list[Tier]:
    common = ["-c", str(config)]
    quick = planned_seconds(duration_s=QUICK_DURATION_S, adaptive=True)
    tiers = [Tier("check", ["check", *common], planned_seconds()),
             Tier("check --quick", ["check", "--quick", *common], quick),
             Tier("check --quick --nccl", ["check", "--quick", "--nccl", *common],
                  planned_seconds(duration_s=QUICK_DURATION_S, adaptive=True, nccl_max_bytes=TRANSPORT_PROOF_BYTES))]
    if options.accept:
        shipped = load_profile_file(BUILTIN_DIR / "dgx-spark-pair.yaml").test
        path, duration, nccl = _profile(work, options.accept_duration)
        reps = options.accept_repetitions or shipped.repetitions
        args = ["accept", "--profile", str(path), "--repetitions", str(reps), *common]
        reduced = [f"-D {duration} instead of the profile's {shipped.duration_s}"] if options.accept_duration else []
        reduced += [f"{reps} repetition(s) instead of {shipped.repetitions}"] if options.accept_repetitions else []
        note = ("REDUCED: " + ", ".join(reduced)) if reduced else "the shipped dgx-spark-pair profile as it is"
        tiers.append(Tier("accept", args, planned_seconds(duration_s=duration, repetitions=reps,
                                                           nccl_max_bytes=nccl), note))
    return tiers


def _said_plan(stderr: str) -> float | None:
    """The planned wall time the run itself printed last on stderr, in seconds: the one said once the inspection
    found the paths and the NCCL size (else the first; `check` prints none off a terminal)."""
    found = [m for m in map(PLAN_RE.search, stderr.splitlines()) if m]
    if not found:
        return None
    value, unit = float(found[-1].group(1)), found[-1].group(2)
    return value * 60 if unit == "min" else value


@dataclass
class Spent:
    """What one run's saved bundle says it spent: rounds of ib_write_bw and their -D, the NCCL run."""

    rounds: int = 0
    traffic_s: float = 0.0
    nccl_s: float = 0.0


def _spent(save: Path) -> Spent:
    try:
        captures = json.loads((save / "manifest.json").read_text(encoding="utf-8"))["captures"]
    except (OSError, ValueError, KeyError):
        return Spent()
    rounds = {c["meta"]["round"]: float(c["meta"].get("duration_s") or 0) for c in captures
              if c["meta"].get("kind") == "rdma" and c["meta"].get("role") == "client"
              and c["meta"].get("plan") != "skipped" and c["command"] and c["meta"].get("round")}
    nccl = sum(float(c.get("duration_s") or 0) for c in captures if c["meta"].get("kind") == "nccl"
               and c["spec"] == "all_gather_perf" and c["command"].startswith("exec"))
    return Spent(len(rounds), sum(rounds.values()), nccl)


def _run(tier: Tier, work: Path, env: dict[str, str], n: int) -> tuple[float, int, str, Spent]:
    save = work / f"saved-{tier.name.replace(' ', '').replace('-', '')}-{n}"
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "linkcheck.cli", *tier.args, "--save", str(save)],
                          capture_output=True, text=True, env=env, check=False, stdin=subprocess.DEVNULL)
    return time.perf_counter() - start, proc.returncode, proc.stderr, _spent(save)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs per tier (accept: once unless --accept-runs)")
    parser.add_argument("--accept-runs", type=int, default=1)
    parser.add_argument("--accept-duration", type=int, default=None, help="-D of accept's rounds (reduced run)")
    parser.add_argument("--accept-repetitions", type=int, default=None, help="accept's repetitions (reduced run)")
    parser.add_argument("--no-accept", dest="accept", action="store_false")
    options = parser.parse_args()
    reason = lab_skip_reason()
    if reason:
        raise SystemExit(f"cannot run: {reason}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="lc-tiers-") as tmp:
        work = Path(tmp)
        with Lab(specs_for_scenario("healthy", work / "models"), work / "lab") as lab:
            for node in ("a", "b"):  # the emulated sweep takes its real time, so the NCCL plan can be checked
                lab.set_fault(node, "all_gather_perf", "real-time")
            config = work / "linkcheck.yaml"
            config.write_text(f"nodes: {{a: {{target: a}}, b: {{target: b}}}}\n"
                              f"ssh: {{config: {lab.ssh_config}, known_hosts: {lab.known_hosts}}}\n")
            # Bytecode for every module, as an installed copy has (a warm-up run writes it).
            env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONPYCACHEPREFIX": str(work / "pyc"),
                   "XDG_DATA_HOME": str(work / "xdg")}
            warm = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
            subprocess.run([sys.executable, "-c", "import linkcheck.cli, linkcheck.bench.runner, "
                            "linkcheck.app.offline, "
                            "linkcheck.app.accept, linkcheck.accept.judge"], env=warm, check=False)
            subprocess.run([sys.executable, "-m", "linkcheck.cli", "collect", "-c", str(config),
                            "--save", str(work / "warm-up")], capture_output=True, env=warm, check=False)
            for tier in _tiers(work, config, options):
                runs = options.accept_runs if tier.name == "accept" else options.runs
                walls: list[float] = []
                codes: set[int] = set()
                said: float | None = None
                spent = Spent()
                for n in range(runs):
                    wall, code, stderr, spent = _run(tier, work, env, n)
                    walls.append(wall)
                    codes.add(code)
                    said = _said_plan(stderr)
                    if code not in (0, 1):
                        print(f"{tier.name}: exit {code}: {stderr.strip()[-1500:]}", file=sys.stderr)
                rows.append((tier, walls, codes, said, spent))
    _print(rows)


def _off(planned: float | None, wall: float) -> str:
    return "-" if planned is None else f"{100 * (planned - wall) / wall:+.0f}%"


def _print(rows: list[tuple[Tier, list[float], set[int], float | None, Spent]]) -> None:
    print(f"healthy lab (tests/lab, 2 paths), {os.cpu_count()} CPUs; wall time of one linkcheck process, "
          "start-up included")
    print(f"{'tier':<21} {'planned':>8} {'said':>7} {'measured':>9} {'min-max':>12} {'off':>9} "
          f"{'rounds':>6} {'-D sum':>7} {'NCCL':>6} {'outside':>7} {'per round':>9}  runs exit")
    inspection = statistics.median(rows[0][1]) if rows and rows[0][0].name == "check" else 0.0
    for tier, walls, codes, said, spent in rows:
        wall = statistics.median(walls)
        outside = wall - spent.traffic_s - spent.nccl_s
        per_round = (outside - inspection) / spent.rounds if spent.rounds else None
        shown = "-" if said is None else f"{said:.0f} s"
        print(f"{tier.name:<21} {tier.planned_s:>6.1f} s {shown:>7} {wall:>7.1f} s "
              f"{f'{min(walls):.1f}-{max(walls):.1f} s':>12} {_off(tier.planned_s, wall):>4}/{_off(said, wall):>4} "
              f"{spent.rounds:>6} {spent.traffic_s:>5.0f} s {spent.nccl_s:>4.1f} s {100 * outside / wall:>6.1f}% "
              f"{'-' if per_round is None else f'{per_round:.2f} s':>9}  {len(walls):>4} "
              f"{','.join(map(str, sorted(codes)))}")
        if tier.note:
            print(f"  {tier.name}: {tier.note}")
    print("planned: linkcheck/accept/budget.py from the profile and the expected paths; said: the plan the run "
          "said last on stderr (once the inspection found the paths and the NCCL size the memory allows; `check` "
          "says none off a terminal); off: (planned - measured) / measured, for each; -D sum: the seconds of "
          "ib_write_bw traffic the bundle's rounds asked for (last run); NCCL: its all_gather_perf run (mpirun "
          "included); outside: the share of the wall time outside both; per round: that time, less the `check` "
          "tier's wall time (start-up and inspection), per round run")


if __name__ == "__main__":
    main()

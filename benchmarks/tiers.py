"""Benchmark: each tier's wall time on the healthy lab, beside the wall time it plans and the floor of its traffic.

Layouts (`--layout`, repeatable; all four by default), each a healthy lab built once: `pair` (two nodes on one
cable, tests.emulators.scenarios `healthy`, named by linkcheck.yaml's `nodes:`), `cable` (the same pair named by a
hostfile: the cluster of its one cable), `ring3` (NVIDIA's ring of three) and `switch4` (four nodes on a switch), the
last two tests/lab/cluster.py's CLUSTER_SCENARIOS, run over `--node` as a user names them.

Tiers: `check` (inspection only), `check --quick` (inspection, ib_write_bw -D 4 with both paths at once in each
direction; a path alone only where it is low, which on a healthy lab is never; on a cluster, per schedule round with
the tests of a round side by side), and on the pair also `check --quick --nccl` (plus the 256 MiB transport proof)
and `accept` with the shipped dgx-spark-pair profile (inspection, the six rounds of 10 s three times,
all_gather_perf). Beside each tier's wall time: its plan and the plan the run said, the seconds of ib_write_bw
traffic (-D per round run) and of the NCCL run in its saved bundle, the share of the wall time outside both, that
time per round once the inspection tier's wall time is taken out, and the tier's floor: the layout's inspection
(its `check` tier's median wall time) plus the traffic and NCCL seconds its bundles record. The targets checked
(`!` beside a figure that misses): a traffic tier within 1.25x of its floor and within 10 % of the plan it said.

The full accept takes minutes; `--accept-duration S` and
`--accept-repetitions N` run it on a copy of the profile with shorter rounds or fewer repetitions, and the
output says so. Each tier runs `--runs` times (median and range shown); every run is one `linkcheck`
process, start-up included. Needs root (the lab); run it with no other lab
running (they share the CPUs), from the repository root:

    python benchmarks/tiers.py [--layout pair|cable|ring3|switch4]... [--runs N] [--accept-duration S]
        [--accept-repetitions N] [--no-accept] [--keep DIR]

`--keep DIR` works in DIR (a new directory) and leaves every run's saved bundle there
(DIR/<layout>/saved-<layout>-<tier>-<n>), to read where the time went.
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
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from linkcheck.accept.budget import planned_seconds  # noqa: E402 - after the path set-up above
from linkcheck.accept.profile import BUILTIN_DIR, load_profile_file  # noqa: E402
from linkcheck.bench.nccl import TRANSPORT_PROOF_BYTES  # noqa: E402
from linkcheck.bench.plan import QUICK_DURATION_S  # noqa: E402
from linkcheck.facts.bench_facts import JOB_KINDS  # noqa: E402
from tests.lab import Lab  # noqa: E402
from tests.lab.pytest_plugin import lab_skip_reason  # noqa: E402
from tests.lab.scenario import specs_for_scenario  # noqa: E402

PLAN_RE = re.compile(r"planned wall time ~([\d.]+) (s|min)")
# Layout -> the lab scenario it is built from.
LAYOUTS = {"pair": "healthy", "cable": "healthy", "ring3": "ring3", "switch4": "switch4"}
FLOOR_RATIO = 1.25  # a traffic tier's wall time within 1.25x of its floor
PLAN_TOLERANCE = 0.10  # and within 10 % of the plan it said


@dataclass
class Tier:
    name: str
    args: list[str]
    planned_s: float | None  # from the profile before the inspection; None where only the run can say (a cluster)
    note: str = ""


@dataclass
class Spent:
    """What one run's saved bundle says it spent: rounds of ib_write_bw and their -D, the NCCL run."""

    rounds: int = 0
    traffic_s: float = 0.0
    nccl_s: float = 0.0


@dataclass
class Row:
    layout: str
    tier: Tier
    walls: list[float] = field(default_factory=list)
    codes: set[int] = field(default_factory=set)
    said: float | None = None
    spent: list[Spent] = field(default_factory=list)


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


def _tiers(work: Path, common: list[str], pair: bool, options: argparse.Namespace) -> list[Tier]:
    """The layout's tiers, `check` first (its wall time is the layout's inspection)."""
    quick = planned_seconds(duration_s=QUICK_DURATION_S, adaptive=True) if pair else None
    tiers = [Tier("check", ["check", *common], planned_seconds() if pair else None),
             Tier("check --quick", ["check", "--quick", *common], quick)]
    if not pair:
        return tiers
    tiers.append(Tier("check --quick --nccl", ["check", "--quick", "--nccl", *common],
                      planned_seconds(duration_s=QUICK_DURATION_S, adaptive=True,
                                      nccl_max_bytes=TRANSPORT_PROOF_BYTES)))
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
    found the paths and the NCCL size (a cluster's, once it has shown the schedule; else the first; `check` prints
    none off a terminal)."""
    found = [m for m in map(PLAN_RE.search, stderr.splitlines()) if m]
    if not found:
        return None
    value, unit = float(found[-1].group(1)), found[-1].group(2)
    return value * 60 if unit == "min" else value


def _spent(save: Path) -> Spent:
    """The bundle's own run records: each ib_write_bw round run (a client capture that was not skipped) with the -D
    it asked for, a round once however many tests and paths ran side by side in it; the all_gather_perf run."""
    try:
        captures = json.loads((save / "manifest.json").read_text(encoding="utf-8"))["captures"]
    except (OSError, ValueError, KeyError):
        return Spent()
    rounds = {c["meta"]["round"]: float(c["meta"].get("duration_s") or 0) for c in captures
              if c["meta"].get("kind") == "rdma" and c["meta"].get("role") == "client"
              and c["meta"].get("plan") != "skipped" and c["command"] and c["meta"].get("round")}
    nccl = sum(float(c.get("duration_s") or 0) for c in captures if c["meta"].get("kind") in JOB_KINDS
               and c["spec"] == "all_gather_perf" and c["command"].startswith("exec"))
    return Spent(len(rounds), sum(rounds.values()), nccl)


def _run(tier: Tier, layout: str, work: Path, env: dict[str, str], n: int) -> tuple[float, int, str, Spent]:
    save = work / f"saved-{layout}-{tier.name.replace(' ', '').replace('-', '')}-{n}"
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "linkcheck.cli", *tier.args, "--save", str(save)],
                          capture_output=True, text=True, env=env, check=False, stdin=subprocess.DEVNULL)
    return time.perf_counter() - start, proc.returncode, proc.stderr, _spent(save)


def _layout(layout: str, work: Path, env: dict[str, str], options: argparse.Namespace) -> list[Row]:
    """One lab of the layout, built once; its tiers, each `--runs` times (accept `--accept-runs`)."""
    pair = layout == "pair"
    with Lab(specs_for_scenario(LAYOUTS[layout], work / "models"), work / "lab") as lab:
        names = sorted(lab.nodes)
        if pair:  # the emulated sweep takes its real time, so the NCCL plan can be checked
            for node in names:
                lab.set_fault(node, "all_gather_perf", "real-time")
        config = work / "linkcheck.yaml"
        nodes = "" if not pair else "nodes: {a: {target: a}, b: {target: b}}\n"
        config.write_text(f"{nodes}ssh: {{config: {lab.ssh_config}, known_hosts: {lab.known_hosts}}}\n",
                          encoding="utf-8")
        # A pair's nodes come from linkcheck.yaml; a cluster's are named as a user names them, one --node each; the
        # cluster of one cable's by a hostfile (two --node are the pair's).
        hostfile = work / "hosts"
        hostfile.write_text("".join(f"{n}\n" for n in names), encoding="utf-8")
        common = ["-c", str(config)] + ([] if pair else ["--hostfile", str(hostfile)] if layout == "cable"
                                        else [f"--node={n}" for n in names])
        # A first inspection of this lab, not timed: every node's sshd and first answers warmed up, the bytecode of
        # every module the layout's check loads written.
        warm = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
        subprocess.run([sys.executable, "-m", "linkcheck.cli", "check", *common, "--save", str(work / "warm-up")],
                       capture_output=True, env=warm, check=False, stdin=subprocess.DEVNULL)
        rows = []
        for tier in _tiers(work, common, pair, options):
            row = Row(layout, tier)
            for n in range(options.accept_runs if tier.name == "accept" else options.runs):
                wall, code, stderr, spent = _run(tier, layout, work, env, n)
                row.walls.append(wall)
                row.codes.add(code)
                row.spent.append(spent)
                row.said = _said_plan(stderr)
                if code not in (0, 1):
                    print(f"{layout} {tier.name}: exit {code}: {stderr.strip()[-1500:]}", file=sys.stderr)
            rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layout", action="append", choices=list(LAYOUTS),
                        help="a layout to measure (repeatable; default: all four, one after another)")
    parser.add_argument("--runs", type=int, default=3, help="runs per tier (accept: once unless --accept-runs)")
    parser.add_argument("--accept-runs", type=int, default=1)
    parser.add_argument("--accept-duration", type=int, default=None, help="-D of accept's rounds (reduced run)")
    parser.add_argument("--accept-repetitions", type=int, default=None, help="accept's repetitions (reduced run)")
    parser.add_argument("--no-accept", dest="accept", action="store_false")
    parser.add_argument("--keep", type=Path, default=None, metavar="DIR",
                        help="work in DIR, a new directory, and leave every run's saved bundle there")
    options = parser.parse_args()
    reason = lab_skip_reason()
    if reason:
        raise SystemExit(f"cannot run: {reason}")
    if options.keep is not None:
        try:
            options.keep.mkdir(parents=True)  # a new directory: never runs over what is there
        except OSError as exc:
            raise SystemExit(f"--keep {options.keep}: {exc.strerror or exc}; name a new directory") from exc
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="lc-tiers-") as tmp:
        work = options.keep.resolve() if options.keep is not None else Path(tmp)
        # Bytecode for every module, as an installed copy has (the warm-up import writes it).
        env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONPYCACHEPREFIX": str(work / "pyc"),
               "XDG_DATA_HOME": str(work / "xdg")}
        warm = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
        subprocess.run([sys.executable, "-c", "import linkcheck.cli, linkcheck.bench.runner, linkcheck.app.offline, "
                        "linkcheck.app.accept, linkcheck.accept.judge, linkcheck.app.live, linkcheck.bench.rounds"],
                       env=warm, check=False)
        for layout in dict.fromkeys(options.layout or LAYOUTS):
            (work / layout).mkdir()
            rows += _layout(layout, work / layout, env, options)
    _print(rows)


def _flag(value: float, bad: bool) -> str:
    return f"{value:.2f}{'!' if bad else ' '}"


def _s(seconds: float | None, digits: int) -> str:
    return "-" if seconds is None else f"{seconds:.{digits}f} s"


def _print(rows: list[Row]) -> None:
    print(f"healthy labs (tests/lab), {os.cpu_count()} CPUs; wall time of one linkcheck process, start-up included")
    print(f"{'layout':<7} {'tier':<21} {'runs':>4} {'exit':>4} {'measured':>8} {'min-max':>11} {'planned':>7} "
          f"{'said':>6} {'floor':>6} {'w/floor':>7} {'w/said':>6} {'rounds':>6} {'-D sum':>6} {'NCCL':>5} "
          f"{'outside':>7} {'per round':>9}")
    inspection: dict[str, float] = {r.layout: statistics.median(r.walls) for r in rows if r.tier.name == "check"}
    for row in rows:
        wall = statistics.median(row.walls)
        last = row.spent[-1]
        traffic = statistics.median(s.traffic_s + s.nccl_s for s in row.spent)
        insp = inspection.get(row.layout, 0.0)
        floor = insp + traffic if traffic else None
        outside = wall - last.traffic_s - last.nccl_s
        per_round = (outside - insp) / last.rounds if last.rounds else None
        w_floor = "-" if floor is None else _flag(wall / floor, wall / floor > FLOOR_RATIO)
        w_said = "-" if row.said is None else _flag(wall / row.said, abs(wall / row.said - 1) > PLAN_TOLERANCE)
        print(f"{row.layout:<7} {row.tier.name:<21} {len(row.walls):>4} {','.join(map(str, sorted(row.codes))):>4} "
              f"{wall:>6.1f} s {f'{min(row.walls):.1f}-{max(row.walls):.1f} s':>11} {_s(row.tier.planned_s, 1):>7} "
              f"{_s(row.said, 0):>6} {_s(floor, 1):>6} {w_floor:>7} {w_said:>6} {last.rounds:>6} "
              f"{last.traffic_s:>4.0f} s {last.nccl_s:>3.1f} s {100 * outside / wall:>6.1f}% {_s(per_round, 2):>9}")
        if row.tier.note:
            print(f"  {row.tier.name}: {row.tier.note}")
    print("planned: linkcheck/accept/budget.py from the profile and the expected paths (a pair's; a cluster's plan is "
          "known only once its inspection has shown the schedule); said: the plan the run said last on stderr; "
          "floor: the layout's inspection (its `check` median) plus the -D seconds of the ib_write_bw rounds its "
          f"bundles record and their NCCL run (median of the runs); w/floor: wall / floor, `!` above {FLOOR_RATIO}; "
          f"w/said: wall / said, `!` more than {100 * PLAN_TOLERANCE:.0f} % off; rounds, -D sum, NCCL: the last "
          "run's bundle (a round once however many tests ran side by side in it; NCCL: its all_gather_perf run, "
          "mpirun included); outside: the share of the wall time outside both; per round: that time, less the "
          "layout's `check` wall time (start-up and inspection), per round run")


if __name__ == "__main__":
    main()

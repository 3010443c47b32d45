"""Benchmark: `linkcheck check` against the two-node lab vs. two parallel bare OpenSSH logins.

Target: `linkcheck check` (both nodes, one round trip each, diagnosis included) takes under 2x the time of
`ssh -F <lab ssh_config> a true` and `... b true` run in parallel. Prints the medians over N runs and the
ratio, plus where the time goes: the same inspection script piped through bare OpenSSH (what any SSH
tool would pay for that work on these nodes) and each node's command time from the saved bundle. The
three are measured round after round (interleaved), each after 0.3 s of quiet (--settle: a command started
the moment the previous one's SSH sessions end shares the machine with their teardown), and linkcheck loads
its modules from bytecode, as an installed copy does. The default scenario `plain` runs the nodes' real
tools only; the emulator scenarios (`healthy`, ...) start a Python process per emulated tool call, which no
real node pays.
Needs root (the lab: network namespaces, sshd). Run from the repository root:

    python benchmarks/check_vs_ssh.py [N] [--settle S] [--scenario plain|healthy|...] [--against DIR]...

--against DIR (repeatable) also times `linkcheck check` run from the linkcheck package in DIR, in the same
rounds, so a change is measured against the code before it under the same load; e.g. DIR from
`mkdir DIR && git archive HEAD~1 linkcheck | tar -x -C DIR`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.lab import Lab  # noqa: E402 - after the path set-up above
from tests.lab.pytest_plugin import lab_skip_reason  # noqa: E402
from tests.lab.scenario import specs_for_scenario  # noqa: E402

TARGET_RATIO = 2.0  # against two bare logins
SCRIPT_TARGET_RATIO = 1.5  # against the same inspection script over two bare logins


KEPT: list[Path] = []  # every saved bundle, in order; removed with the work folder after the timings
PYCACHE = tempfile.mkdtemp(prefix="lc-bench-pyc-")  # bytecode for every module, as an installed copy has


def _env(*, write_bytecode: bool = False, code: Path = ROOT) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SSH_AUTH_SOCK", "SSH_AGENT_PID")}
    env["PYTHONPATH"] = str(code)
    # pip compiles an installed package; a checkout run with PYTHONDONTWRITEBYTECODE=1 would instead
    # recompile linkcheck's modules on every run. One warm-up run writes the bytecode here; the timed
    # runs only read it.
    env["PYTHONPYCACHEPREFIX"] = PYCACHE
    if write_bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def parallel(argvs: Sequence[Sequence[str]], stdin: str | None = None) -> float:
    """Wall time of running every argv at once; each must succeed."""
    start = time.perf_counter()
    procs = [subprocess.Popen(list(a), stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=_env())
             for a in argvs]
    with ThreadPoolExecutor(len(procs)) as pool:  # feed and drain them all at once, not one after another
        errors = list(pool.map(lambda p: p.communicate(stdin)[1], procs))
    elapsed = time.perf_counter() - start
    for p, err, argv in zip(procs, errors, argvs, strict=True):
        if p.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed ({p.returncode}): {err.strip()}")
    return elapsed


def interleaved(runs: int, measures: Sequence[Callable[[], float]], settle_s: float) -> list[list[float]]:
    """Every measure once per round, round after round: a busy moment of a shared machine hits them all.

    Each command starts after `settle_s` of quiet, so the previous command's aftermath (sshd ending its
    sessions, the nodes removing their scratch files) is not billed to the next one."""
    times: list[list[float]] = [[] for _ in measures]
    for _ in range(runs):
        for once, into in zip(measures, times, strict=True):
            time.sleep(settle_s)
            into.append(once())
    return times


def linkcheck_once(config: Path, saved: Path, *, warm_up: bool = False, code: Path = ROOT) -> float:
    """One timed `linkcheck check` saving to `saved`; the bundle is then moved aside under a name of its own
    and every bundle is removed only after the last timing (`KEPT`): on an ext4 mounted with `discard` a
    removal's cost lands at the next journal commit, i.e. inside a later timing, not in the one removing.
    `code` is the folder whose `linkcheck` package runs (this checkout unless --against names another)."""
    argv = [sys.executable, "-m", "linkcheck.cli", "check", "-n", "a=a", "-n", "b=b", "-c", str(config),
            "--save", str(saved), "-f", "json"]
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=code,
                          env=_env(write_bytecode=warm_up, code=code), check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1, 2, 3) or not (saved / "manifest.json").is_file():
        raise SystemExit(f"linkcheck check failed ({proc.returncode}): {proc.stderr.strip()}")
    kept = saved.with_name(f"{saved.name}.{len(KEPT)}")
    saved.rename(kept)
    KEPT.append(kept)
    return elapsed


def command_seconds(saved: Path) -> dict[str, float]:
    """Per node, the sum of the remote commands' own durations in the last saved bundle."""
    manifest = json.loads((saved / "manifest.json").read_text(encoding="utf-8"))
    totals: dict[str, float] = {}
    for cap in manifest["captures"]:
        totals[cap["node"]] = totals.get(cap["node"], 0.0) + float(cap.get("duration_s") or 0.0)
    return totals


def inspection_script() -> str:
    from linkcheck.collect.script import build_inspection_script, new_token
    from linkcheck.collect.specs import SPECS

    return build_inspection_script(SPECS, token=new_token(), per_command_timeout_s=20)


def measure(lab: Lab, runs: int, work: Path, settle_s: float, against: Sequence[Path] = ()) -> None:
    config = work / "linkcheck.yaml"
    config.write_text(f"ssh:\n  config: {json.dumps(str(lab.ssh_config))}\n"
                      f"  known_hosts: {json.dumps(str(lab.known_hosts))}\n", encoding="utf-8")
    logins = [lab.ssh_argv(n, "true") for n in ("a", "b")]
    scripted = [["ssh", "-F", str(lab.ssh_config), n, "sh -s"] for n in ("a", "b")]
    saved = work / "saved"
    parallel(logins)  # warm-up: page cache, sshd's first fork
    linkcheck_once(config, saved, warm_up=True)  # writes the bytecode
    for other in against:
        linkcheck_once(config, saved, warm_up=True, code=other)
    script = inspection_script()
    others = [lambda other=other: linkcheck_once(config, saved, code=other) for other in against]
    ssh_all, script_all, check_all, *others_all = interleaved(runs, [
        lambda: parallel(logins),
        lambda: parallel(scripted, stdin=script),
        lambda: linkcheck_once(config, saved),
        *others,
    ], settle_s)
    ssh_s, script_s, check_s = (statistics.median(t) for t in (ssh_all, script_all, check_all))
    rows = [
        ("2 x `ssh -F cfg node true` in parallel", ssh_s, ssh_all),
        ("2 x bare ssh running linkcheck's inspection script", script_s, script_all),
        ("linkcheck check (both nodes, diagnosis, JSON)", check_s, check_all),
    ]
    rows += [(f"linkcheck check from {other}", statistics.median(t), t)
             for other, t in zip(against, others_all, strict=True)]
    for name, median, every in rows:
        spread = ", ".join(f"{t * 1000:.0f}" for t in every)
        print(f"{name:<52} median {median * 1000:8.1f} ms   ({spread})")
    per_round = statistics.median(c / s for c, s in zip(check_all, ssh_all, strict=True))
    print(f"per-round ratio check / logins: median {per_round:.2f}x")
    ratio = check_s / ssh_s
    verdict = "meets" if ratio < TARGET_RATIO else "misses"
    print(f"ratio check / parallel logins: {ratio:.2f}x ({verdict} the {TARGET_RATIO}x target)")
    over_script = check_s / script_s
    verdict = "meets" if over_script <= SCRIPT_TARGET_RATIO else "misses"
    print(f"ratio check / same script over bare ssh: {over_script:.2f}x ({verdict} the {SCRIPT_TARGET_RATIO}x"
          f" target; linkcheck's own overhead: {(check_s - script_s) * 1000:.0f} ms)")
    last = command_seconds(KEPT[-1])
    per_node = ", ".join(f"{n} {s:.2f} s" for n, s in sorted(last.items()))
    print(f"remote command time per node in the last bundle: {per_node}")


@contextlib.contextmanager
def _removed(path: str) -> Iterator[None]:
    try:
        yield
    finally:
        shutil.rmtree(path, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="?", type=int, default=20, help="runs per measurement (median; default 20)")
    parser.add_argument("--settle", type=float, default=0.3, metavar="S",
                        help="seconds of quiet before each timed command (default 0.3)")
    parser.add_argument("--scenario", default="plain",
                        help="lab scenario (default plain: real tools only; healthy etc. add the Python emulators)")
    parser.add_argument("--against", action="append", type=Path, default=[], metavar="DIR",
                        help="also time `linkcheck check` run from the linkcheck package in DIR (e.g. a"
                        " `git archive` of the code before a change), in the same rounds; repeatable")
    args = parser.parse_args(argv)
    reason = lab_skip_reason()
    if reason:
        print(f"cannot run the benchmark: {reason}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="lc-bench-") as tmp, _removed(PYCACHE):
        work = Path(tmp)
        specs = specs_for_scenario(args.scenario, work / "models")
        with Lab(specs, work / "lab") as lab:
            print(f"lab {args.scenario}: nodes a={lab.node('a').mgmt_ip} b={lab.node('b').mgmt_ip}, "
                  f"{args.runs} runs each, {args.settle} s apart, {os.cpu_count()} CPUs")
            measure(lab, args.runs, work, args.settle, [p.resolve() for p in args.against])
    return 0


if __name__ == "__main__":
    sys.exit(main())

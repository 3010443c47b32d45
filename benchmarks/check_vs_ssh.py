"""Benchmark: `linkcheck check` against the healthy two-node lab vs. two parallel bare OpenSSH logins.

Target: `linkcheck check` (both nodes, one round trip each, diagnosis included) takes under 1.5x the time of
`ssh -F <lab ssh_config> a true` and `... b true` run in parallel. Prints the medians over N runs and the
ratio, plus where the time goes: the same inspection script piped through bare OpenSSH (what any SSH
tool would pay for that work on these nodes) and each node's command time from the saved bundle.
Needs root (the lab: network namespaces, sshd). Run from the repository root:

    python benchmarks/check_vs_ssh.py [N] [--scenario healthy|plain|...]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.lab import Lab  # noqa: E402 - after the path set-up above
from tests.lab.pytest_plugin import lab_skip_reason  # noqa: E402
from tests.lab.scenario import specs_for_scenario  # noqa: E402

TARGET_RATIO = 1.5


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SSH_AUTH_SOCK", "SSH_AGENT_PID")}
    env["PYTHONPATH"] = str(ROOT)
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


def median_of(runs: int, once: Callable[[], float]) -> tuple[float, list[float]]:
    times = [once() for _ in range(runs)]
    return statistics.median(times), times


def linkcheck_once(config: Path, saved: Path) -> float:
    shutil.rmtree(saved, ignore_errors=True)
    argv = [sys.executable, "-m", "linkcheck.cli", "check", "-n", "a=a", "-n", "b=b", "-c", str(config),
            "--save", str(saved), "-f", "json"]
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env=_env(), check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1, 2, 3) or not (saved / "manifest.json").is_file():
        raise SystemExit(f"linkcheck check failed ({proc.returncode}): {proc.stderr.strip()}")
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


def measure(lab: Lab, runs: int, work: Path) -> None:
    config = work / "linkcheck.yaml"
    config.write_text(f"ssh:\n  config: {json.dumps(str(lab.ssh_config))}\n"
                      f"  known_hosts: {json.dumps(str(lab.known_hosts))}\n", encoding="utf-8")
    logins = [lab.ssh_argv(n, "true") for n in ("a", "b")]
    scripted = [["ssh", "-F", str(lab.ssh_config), n, "sh -s"] for n in ("a", "b")]
    saved = work / "saved"
    parallel(logins)  # warm-up: page cache, sshd's first fork, python's .pyc files
    linkcheck_once(config, saved)
    ssh_s, ssh_all = median_of(runs, lambda: parallel(logins))
    script_s, script_all = median_of(runs, lambda: parallel(scripted, stdin=inspection_script()))
    check_s, check_all = median_of(runs, lambda: linkcheck_once(config, saved))
    rows = [
        ("2 x `ssh -F cfg node true` in parallel", ssh_s, ssh_all),
        ("2 x bare ssh running linkcheck's inspection script", script_s, script_all),
        ("linkcheck check (both nodes, diagnosis, JSON)", check_s, check_all),
    ]
    for name, median, every in rows:
        spread = ", ".join(f"{t * 1000:.0f}" for t in every)
        print(f"{name:<52} median {median * 1000:8.1f} ms   ({spread})")
    ratio = check_s / ssh_s
    verdict = "meets" if ratio < TARGET_RATIO else "misses"
    print(f"ratio check / parallel logins: {ratio:.2f}x ({verdict} the {TARGET_RATIO}x target)")
    print(f"ratio check / same script over bare ssh: {check_s / script_s:.2f}x "
          f"(linkcheck's own overhead: {(check_s - script_s) * 1000:.0f} ms)")
    per_node = ", ".join(f"{n} {s:.2f} s" for n, s in sorted(command_seconds(saved).items()))
    print(f"remote command time per node in the last bundle: {per_node}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="?", type=int, default=5, help="runs per measurement (median)")
    parser.add_argument("--scenario", default="healthy", help="lab scenario (default healthy; plain: no emulators)")
    args = parser.parse_args(argv)
    reason = lab_skip_reason()
    if reason:
        print(f"cannot run the benchmark: {reason}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="lc-bench-") as tmp:
        work = Path(tmp)
        specs = specs_for_scenario(args.scenario, work / "models")
        with Lab(specs, work / "lab") as lab:
            print(f"lab {args.scenario}: nodes a={lab.node('a').mgmt_ip} b={lab.node('b').mgmt_ip}, "
                  f"{args.runs} runs each, {os.cpu_count()} CPUs")
            measure(lab, args.runs, work)
    return 0


if __name__ == "__main__":
    sys.exit(main())

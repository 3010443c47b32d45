"""Benchmark: wall time of `linkcheck bench rdma` against the sum of the configured ib_write_bw durations.

Target: overhead (wall time minus the test time the user asked for) under 15% of that test time. Runs
against the healthy two-node lab (2 paths: each alone and both at once, both directions = 6 rounds)
and prints the rounds' own timing from the saved bundle, so the perftest start-up share is visible.
Needs root (the lab). Run from the repository root:

    python benchmarks/bench_overhead.py [DURATION_S]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.lab import Lab  # noqa: E402 - after the path set-up above
from tests.lab.pytest_plugin import lab_skip_reason  # noqa: E402
from tests.lab.scenario import specs_for_scenario  # noqa: E402

TARGET = 0.15


def main() -> None:
    duration = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    reason = lab_skip_reason()
    if reason:
        raise SystemExit(f"cannot run: {reason}")
    with tempfile.TemporaryDirectory(prefix="lc-bench-") as tmp:
        work = Path(tmp)
        with Lab(specs_for_scenario("healthy", work / "models"), work / "lab") as lab:
            config = work / "linkcheck.yaml"
            config.write_text(f"nodes: {{a: {{target: a}}, b: {{target: b}}}}\n"
                              f"ssh: {{config: {lab.ssh_config}, known_hosts: {lab.known_hosts}}}\n")
            saved = work / "saved"
            # Bytecode for every module, as an installed copy has: written by a warm-up run (a checkout
            # under PYTHONDONTWRITEBYTECODE=1 would otherwise recompile linkcheck on every run).
            env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONPYCACHEPREFIX": str(work / "pyc")}
            warm = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
            subprocess.run([sys.executable, "-m", "linkcheck.cli", "collect", "-c", str(config),
                            "--save", str(work / "warm-up")], capture_output=True, env=warm, check=False)
            subprocess.run([sys.executable, "-c", "import linkcheck.bench.runner, linkcheck.app.offline"],
                           env=warm, check=False)
            start = time.perf_counter()
            proc = subprocess.run([sys.executable, "-m", "linkcheck.cli", "bench", "rdma", "-c", str(config),
                                   "--duration", str(duration), "--save", str(saved), "-f", "json"],
                                  capture_output=True, text=True, env=env, check=False)
            wall = time.perf_counter() - start
            if not proc.stdout.strip():
                raise SystemExit(f"linkcheck failed (exit {proc.returncode}): {proc.stderr.strip()[-2000:]}")
            report = json.loads(proc.stdout)
            rounds = len({(r["mode"], r["direction"], r["path_key"] if r["mode"] == "alone" else "")
                          for r in report["bench"]["rdma"]})
            captures = json.loads((saved / "manifest.json").read_text())["captures"]
            # The inspection alone, as `bench rdma` runs it first: one `linkcheck collect` on the same lab.
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "linkcheck.cli", "collect", "-c", str(config),
                            "--save", str(work / "collected")], capture_output=True, env=env, check=False)
            inspect_s = time.perf_counter() - start
            # The tool's own time per round: the slowest client, from its start to its exit.
            per_round: dict[str, float] = {}
            for c in captures:
                if c["meta"].get("kind") == "rdma" and c["meta"].get("role") == "client":
                    rid = c["meta"]["round"]
                    per_round[rid] = max(per_round.get(rid, 0.0), float(c["meta"].get("elapsed_s", 0)))
    asked = rounds * duration
    print(f"verdict {report['verdict']} (exit {proc.returncode}), {rounds} rounds of {duration} s")
    print(f"wall time                 {wall:7.1f} s")
    print(f"configured test time      {asked:7.1f} s")
    print(f"overhead                  {wall - asked:7.1f} s = {100 * (wall - asked) / asked:5.1f}% "
          f"(target under {100 * TARGET:.0f}%)")
    tool = sum(per_round.values())
    print(f"  ib_write_bw runs themselves (slowest client per round, start to exit): {tool:.1f} s, i.e. "
          f"{tool - asked:.1f} s beyond -D: perftest's 1 s pause after connecting ({rounds:.0f} s), the rest the "
          "emulator's Python start-up and hand-shake")
    print(f"  inspection before the test (a separate `linkcheck collect`, start-up included): {inspect_s:.1f} s")
    print(f"  linkcheck's own orchestration between and around the rounds: {wall - tool - inspect_s:.1f} s "
          f"= {100 * (wall - tool - inspect_s) / asked:.1f}% of the test time")


if __name__ == "__main__":
    main()

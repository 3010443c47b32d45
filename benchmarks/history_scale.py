"""`linkcheck history` at a year of a 5-minute timer: RUNS records (default 100,000) in one pair's history, then the
wall time and peak memory (the child's max RSS) of each way of reading it, and of appending with rotation;
`linkcheck --version` first, for the start-up every command pays.

Usage: python benchmarks/history_scale.py [RUNS]   (needs the [trend] extra for --trend)

The records are one record of a real run (fixtures/healthy-latency-lab diagnosed, as `diagnose --baseline` records
it) repeated every 5 minutes, one run in twelve with its traffic rates (the boot or an asked-for --quick) drifting
down slowly, the others inspection-only, as the service writes them. A measurement, not a timed test.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from linkcheck.app.offline import diagnose_bundle  # noqa: E402
from linkcheck.baseline.history import ROTATE_BYTES, append_line, run_record  # noqa: E402


def make_history(folder: Path, runs: int) -> Path:
    template = run_record(diagnose_bundle(ROOT / "fixtures" / "healthy-latency-lab"), "check --quick", "good")
    quiet = {**template, "command": "check", "rdma_gbps": {}, "concurrent_total_gbps": {}, "nccl_busbw_gbs": None,
             "duration_s": None, "repetitions": None}
    start = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    path = folder / "linkcheck" / "history" / f"{template['pair']}.jsonl"
    path.parent.mkdir(parents=True)
    with path.open("w", encoding="utf-8") as out:
        for n in range(runs):
            when = (start + dt.timedelta(minutes=5 * n)).isoformat()
            record = dict(template if n % 12 == 0 else quiet, time=when, bundle_created=when)
            if n % 12 == 0:  # 2 % lower over the year
                scale = 1 - 0.02 * n / runs
                record["rdma_gbps"] = {k: round(v * scale, 2) for k, v in template["rdma_gbps"].items()}
                record["concurrent_total_gbps"] = {k: round(v * scale, 2)
                                                   for k, v in template["concurrent_total_gbps"].items()}
            out.write(json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n")
    return path


def measure(args: list[str], data_home: Path) -> tuple[float, float, int]:
    """(seconds, peak MiB of that child, bytes of output) of `linkcheck ARGS`."""
    env = {**os.environ, "XDG_DATA_HOME": str(data_home), "COLUMNS": "120"}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        child = subprocess.Popen([sys.executable, "-m", "linkcheck.cli", *args], stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(child.pid, 0)
        elapsed = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            err.seek(0)
            raise SystemExit(f"linkcheck {' '.join(args)}: exit {child.returncode}: {err.read().decode()[-500:]}")
        return elapsed, usage.ru_maxrss / 1024, out.tell()


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    with tempfile.TemporaryDirectory() as tmp:
        data_home = Path(tmp)
        path = make_history(data_home, runs)
        print(f"{runs} runs, {path.stat().st_size / 2**20:.1f} MiB (rotation at {ROTATE_BYTES >> 20} MiB)")
        for args in (["--version"], ["history"], ["history", "--last", "1000"], ["history", "--since", "2026-12-01"],
                     ["history", "-f", "csv"], ["history", "-f", "json", "--last", "0"], ["-q", "history"],
                     ["history", "--trend"]):
            seconds, mib, size = measure(args, data_home)
            print(f"linkcheck {' '.join(args):<40} {seconds:6.2f} s  peak {mib:6.0f} MiB  {size / 1024:8.0f} KiB out")
        record = json.loads(path.read_text(encoding="utf-8").splitlines()[-1])
        start = time.perf_counter()
        for _ in range(1000):
            append_line(path, record)
        per = (time.perf_counter() - start) / 1000
        files = sorted(p.name for p in path.parent.iterdir())
        sizes = [round(p.stat().st_size / 2**20, 1) for p in sorted(path.parent.iterdir())]
        print(f"append: {per * 1e3:.2f} ms per record; files {files} MiB {sizes}")


if __name__ == "__main__":
    main()

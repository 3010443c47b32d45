"""Regenerate fixtures/healthy-latency-lab: `linkcheck check --quick --latency` run against the two-node lab.

The emulator-made fixtures healthy-latency and hotplug-latency render the latency captures as the latency test is
meant to write them; this one is what the test wrote: the bundle `check --quick --latency` saved against the lab
of scenario `healthy` (ib_write_lat per path at 2 B and 48 KiB, one run at a time, and all_reduce_perf 16-64 KiB
under real Open MPI), plus expected.yaml (origin: synthetic) and PROVENANCE.md.

    healthy-latency-lab  lab scenario `healthy`  verdict pass, exit 0; advise --model-gib 60 --concurrency 16:
                         two residents, every ib_write_lat figure measured

The verdict, findings, skips, figures and the advice below are stated here, not read from the run: a run that
disagrees writes nothing and says what differed. Building a lab needs root, so run it as root, from the repository
root, holding the lab lock:

    flock /tmp/linkcheck-lab.lock .venv/bin/python scripts/make_latency_fixtures.py

The bundle holds what `check` saves and nothing of the lab's own files: no host key, client key, ssh_config or
known_hosts (checked after the run). Addresses are the lab's (198.18.0.0/15), names the scenario model's.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from make_accept_fixtures import _config, _linkcheck, check_filed, replace_fixture  # noqa: E402

from tests.emulators.scenarios import SCENARIOS  # noqa: E402
from tests.lab import Lab  # noqa: E402
from tests.lab.scenario import specs_for_scenario  # noqa: E402

NAME = "healthy-latency-lab"
SCENARIO = "healthy"
ARGS = ("check", "--quick", "--latency")
# The quick tier runs no NCCL test, so both NCCL rules skip; the latency rules pass on every path and size.
STATED: dict[str, Any] = {
    "verdict": "pass", "findings": {}, "subjects": {}, "skips": ["NCCL_BUSBW_LOW", "NCCL_SOCKET_FALLBACK"],
    "figures": {"latency_runs": 4, "allreduce_64k_us": 68.0},
    "latency_passed": 5,  # RDMA_LATENCY_HIGH on 2 paths x 2 sizes, NCCL_ALLREDUCE_LATENCY_HIGH once
    "advice": {"args": ("--model-gib", "60", "--concurrency", "16"), "headline": "two residents",
               "measured_ib_write_lat": 4},
}


def _run(work: Path) -> Path:
    saved = work / "saved"
    with Lab(specs_for_scenario(SCENARIO, work / "models"), work / "lab") as lab:
        proc = _linkcheck(*ARGS, "-c", str(_config(lab, work)), "--save", str(saved), "-f", "json")
    if proc.returncode != 0:
        raise SystemExit(f"{NAME}: {' '.join(ARGS)} exit {proc.returncode}, expected 0\n{proc.stderr}")
    return saved


def _check(bundle: Path) -> None:
    """The run is what STATED says, verifies, and holds nothing of the lab's keys and SSH files."""
    report = json.loads(_linkcheck("diagnose", str(bundle), "-f", "json").stdout)
    findings = {f["id"]: f["status"] for f in report["findings"] if f["status"] in ("warn", "fail")}
    skips = sorted({f["id"] for f in report["findings"] if f["status"] == "skip"})
    got = (report["verdict"], findings, skips)
    if got != (STATED["verdict"], STATED["findings"], STATED["skips"]):
        raise SystemExit(f"{NAME}: the run's diagnosis {got} is not the stated one")
    passed = [f for f in report["findings"] if f["id"] in ("RDMA_LATENCY_HIGH", "NCCL_ALLREDUCE_LATENCY_HIGH")
              and f["status"] == "pass"]
    if len(passed) != STATED["latency_passed"]:
        raise SystemExit(f"{NAME}: {len(passed)} latency findings passed, stated {STATED['latency_passed']}")
    want = STATED["advice"]
    advice = json.loads(_linkcheck("advise", str(bundle), *want["args"], "-f", "json").stdout)
    measured = [f for f in advice["figures"] if f["kind"] == "measured" and f["name"].startswith("ib_write_lat ")]
    if advice["headline"] != want["headline"] or len(measured) != want["measured_ib_write_lat"]:
        raise SystemExit(f"{NAME}: advise says {advice['headline']!r} with {len(measured)} measured ib_write_lat "
                         f"figures, stated {want}")
    check_filed(NAME, bundle)


def _write(saved: Path) -> Path:
    target = replace_fixture(NAME, saved)
    scenario = SCENARIOS[SCENARIO]
    expected = {
        "scenario": NAME, "origin": "synthetic",
        "description": f"`linkcheck {' '.join(ARGS)}` against the two-node lab, scenario {scenario.name}: "
                       f"{scenario.description} The quick tier's ib_write_bw rounds, then the latency test: "
                       "ib_write_lat 1.47 us at 2 B and 8.80 us at 48 KiB per path, all_reduce 16-64 KiB in "
                       "39.5-68 us.",
        "verdict": STATED["verdict"], "findings": STATED["findings"], "subjects": STATED["subjects"],
        "skips": STATED["skips"], "figures": STATED["figures"],
    }
    (target / "expected.yaml").write_text(yaml.safe_dump(expected, sort_keys=False, width=100))
    manifest = json.loads((target / "manifest.json").read_text(encoding="utf-8"))
    (target / "PROVENANCE.md").write_text(
        f"# {NAME}: provenance\n\n"
        f"Made by `scripts/make_latency_fixtures.py` on {dt.date.today().isoformat()} (bundle created "
        f"{manifest.get('created')}, linkcheck {manifest.get('tool_version')}): `linkcheck {' '.join(ARGS)}` "
        f"against the two-node lab (tests/lab) built from the GB10 emulator's scenario `{scenario.name}`, saved as "
        "`check` saves it. The tools that need the hardware are the emulators of tests/emulators: ib_write_bw runs "
        "its -D seconds for real, ib_write_lat its TCP handshake and perftest's 1 s pause with the scenario's "
        "latencies (1.47 us + the bytes at 53.64 Gb/s), all_reduce_perf runs under real Open MPI with the "
        "latency model of 30 us + the bytes at ~1.7 GB/s. Hostnames, MACs, serials and the rest of the node "
        "model are the scenario's; addresses are mapped into 198.18.0.0/15 (tests/lab/README.md). What the model "
        "leaves to the machine that ran the lab is that machine's: the kernel release and os-release (the lab "
        "answers them from the host). Nothing is anonymised: no name or address here belongs to a deployed pair, "
        "and the bundle holds none of the lab's keys or SSH files (the script checks).\n", encoding="utf-8")
    return target


def main() -> None:
    if os.geteuid() != 0:
        raise SystemExit("the lab needs root")
    with tempfile.TemporaryDirectory(prefix=f"lc-{NAME}-") as tmp:
        saved = _run(Path(tmp))
        _check(saved)
        print(f"{NAME}: {_write(saved)}")


if __name__ == "__main__":
    main()

"""Regenerate fixtures/accept-pass and fixtures/accept-fail: `linkcheck accept` run against the two-node lab.

Each fixture is the bundle `accept` saved (its captures, acceptance.json and acceptance-profile.yaml, all in the
manifest), plus expected.yaml (origin: synthetic) and PROVENANCE.md (how and when it was made). The runs are
short on purpose (`--duration 4 --repetitions 2`), so both records are NON-STANDARD and say so:

    accept-pass  lab scenario `healthy`           acceptance PASS, exit 0
    accept-fail  lab scenario `hotplug-degraded`  acceptance FAIL, exit 2 (each path ~13 Gb/s)

The findings, the acceptance verdicts and the failing checks below are stated here, not read from the run: a run
that disagrees writes nothing and says what differed. Building a lab needs root, and labs share this machine's
lab lock, so run it as root, from the repository root, holding the lock:

    flock /tmp/linkcheck-lab.lock .venv/bin/python scripts/make_accept_fixtures.py [accept-pass|accept-fail ...]

The bundles hold what `accept` saves and nothing of the lab's own files: no host key, client key, ssh_config or
known_hosts (checked after each run). Addresses are the lab's (198.18.0.0/15), names the scenario models'.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.emulators.scenarios import SCENARIOS  # noqa: E402
from tests.lab import Lab  # noqa: E402
from tests.lab.scenario import specs_for_scenario  # noqa: E402
from tests.lab.sshd import ssh_config  # noqa: E402

DURATION_S = 4
REPETITIONS = 2
ARGS = ("--duration", str(DURATION_S), "--repetitions", str(REPETITIONS))
# name -> lab scenario, exit code, the diagnosis' verdict and findings (rule -> status, subjects), the acceptance
# verdict and the checks that must not pass (check -> status).
FIXTURES: dict[str, dict[str, Any]] = {
    "accept-pass": {
        "scenario": "healthy", "exit": 0, "verdict": "pass", "findings": {}, "subjects": {}, "skips": [],
        "acceptance": {"verdict": "PASS", "not_passed": {}},
    },
    "accept-fail": {
        "scenario": "hotplug-degraded", "exit": 2, "verdict": "fail",
        # The hot-plug state (~13 Gb/s per path), and NCCL's bus bandwidth low under it (the lab's all_gather reads
        # 3.02 GB/s in this scenario).
        "findings": {"LINK_HOTPLUG_DEGRADED": "fail", "NCCL_BUSBW_LOW": "fail"},
        "subjects": {"LINK_HOTPLUG_DEGRADED": ["enP2p1s0f1np1<->enP2p1s0f1np1", "enp1s0f1np1<->enp1s0f1np1"],
                     "NCCL_BUSBW_LOW": ["nccl"]},
        "skips": [],
        "acceptance": {"verdict": "FAIL", "not_passed": {"rdma_alone_gbps": "FAIL", "rdma_concurrent_gbps": "FAIL",
                                                         "rdma_concurrent_total_gbps": "FAIL",
                                                         "nccl_busbw_gbs": "FAIL"}},
    },
}
# What must never reach a fixture from the lab's work folder.
SECRETS = ("PRIVATE KEY", "ssh-ed25519 ", "client_ed25519", "ssh_host_", "known_hosts", "ssh_config")


def _config(lab: Lab, work: Path) -> Path:
    """linkcheck.yaml aiming linkcheck at the lab (it has no option for another ssh_config), each node named by its
    hostname, as a site names its pair (the lab's own ssh_config calls them `a` and `b`, which no anonymisation
    can tell from the text around them)."""
    hosts = {node.spec.host_name: (node.mgmt_ip, 22) for node in lab.nodes.values()}
    config = work / "ssh_config"
    config.write_text(ssh_config(hosts, identity=lab.client_key, known_hosts=lab.known_hosts), encoding="utf-8")
    lines = ["version: 1", "nodes:", *(f"  {name}: {{target: {json.dumps(node.spec.host_name)}}}"
                                       for name, node in sorted(lab.nodes.items())),
             "ssh:", f"  config: {json.dumps(str(config))}", f"  known_hosts: {json.dumps(str(lab.known_hosts))}"]
    path = work / "linkcheck.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _linkcheck(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "linkcheck.cli", *args], capture_output=True, text=True, env=env,
                          timeout=timeout, cwd=ROOT)


def _run(name: str, work: Path) -> Path:
    """`linkcheck accept` against the lab of the fixture's scenario; the saved bundle."""
    want = FIXTURES[name]
    saved = work / "saved"
    with Lab(specs_for_scenario(want["scenario"], work / "models"), work / "lab") as lab:
        proc = _linkcheck("accept", *ARGS, "-c", str(_config(lab, work)), "--save", str(saved), "-f", "json")
    if proc.returncode != want["exit"]:
        raise SystemExit(f"{name}: accept exit {proc.returncode}, expected {want['exit']}\n{proc.stderr}")
    return saved


def _check(name: str, bundle: Path) -> None:
    """The run is what FIXTURES states, verifies, and holds nothing of the lab's keys and SSH files."""
    _check_report(name, json.loads(_linkcheck("diagnose", str(bundle), "-f", "json").stdout))
    check_filed(name, bundle)


def check_filed(name: str, bundle: Path) -> None:
    """The bundle verifies and holds nothing of the lab's keys and SSH files: what every lab-made fixture must."""
    verify = _linkcheck("verify", str(bundle))
    if verify.returncode != 0:
        raise SystemExit(f"{name}: verify: {verify.stdout}{verify.stderr}")
    for path in sorted(p for p in bundle.rglob("*") if p.is_file()):
        text = path.read_text(encoding="utf-8", errors="replace")
        found = [s for s in SECRETS if s in text]
        if found:
            raise SystemExit(f"{name}: {path.relative_to(bundle)} holds {found}: not a fixture")


def replace_fixture(name: str, saved: Path) -> Path:
    """fixtures/NAME replaced by a copy of the saved bundle; returns it."""
    target = ROOT / "fixtures" / name
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(saved, target)
    return target


def _check_report(name: str, report: dict[str, Any]) -> None:
    """The diagnosis and the acceptance are what FIXTURES states, and the record says NON-STANDARD."""
    want = FIXTURES[name]
    findings: dict[str, str] = {}
    subjects: dict[str, set[str]] = {}
    for f in report["findings"]:
        if f["status"] in ("warn", "fail"):
            findings[f["id"]] = "fail" if "fail" in (f["status"], findings.get(f["id"])) else "warn"
            subjects.setdefault(f["id"], set()).add(f["subject"])
    skips = sorted({f["id"] for f in report["findings"] if f["status"] == "skip"})
    got = (report["verdict"], findings, {k: sorted(v) for k, v in subjects.items()}, skips)
    stated = (want["verdict"], want["findings"], want["subjects"], want["skips"])
    if got != stated:
        raise SystemExit(f"{name}: the run's diagnosis {got} is not the stated {stated}")
    acceptance = report["acceptance"]
    not_passed: dict[str, str] = {}
    for c in acceptance["checks"]:
        if c["status"] != "PASS":
            not_passed[c["id"]] = c["status"] if not_passed.get(c["id"]) in (None, c["status"]) else "mixed"
    if (acceptance["verdict"], not_passed) != (want["acceptance"]["verdict"], want["acceptance"]["not_passed"]):
        raise SystemExit(f"{name}: acceptance {acceptance['verdict']} {not_passed}, stated {want['acceptance']}")
    if not acceptance["standard"]["non_standard"]:
        raise SystemExit(f"{name}: a short run must be NON-STANDARD")


def _write(name: str, saved: Path) -> Path:
    want = FIXTURES[name]
    target = replace_fixture(name, saved)
    scenario = SCENARIOS[want["scenario"]]
    expected = {
        "scenario": name,
        "origin": "synthetic",
        "description": f"`linkcheck accept {' '.join(ARGS)}` against the two-node lab, scenario {scenario.name}: "
                       f"{scenario.description} A short run, so its record is NON-STANDARD.",
        "verdict": want["verdict"],
        "findings": want["findings"],
        "subjects": want["subjects"],
        "skips": want["skips"],
        "acceptance": want["acceptance"],
    }
    (target / "expected.yaml").write_text(yaml.safe_dump(expected, sort_keys=False, width=100))
    manifest = json.loads((target / "manifest.json").read_text(encoding="utf-8"))
    (target / "PROVENANCE.md").write_text(
        f"# {name}: provenance\n\n"
        f"Made by `scripts/make_accept_fixtures.py` on {dt.date.today().isoformat()} (bundle created "
        f"{manifest.get('created')}, linkcheck {manifest.get('tool_version')}): `linkcheck accept {' '.join(ARGS)}` "
        f"against the two-node lab (tests/lab) built from the GB10 emulator's scenario `{scenario.name}`, saved as "
        "`accept` saves it. The tools that need the hardware are the emulators of tests/emulators (ib_write_bw runs "
        "its -D seconds for real; all_gather_perf runs under real Open MPI), so the rates are the scenario's, with "
        "the lab's timing jitter. Hostnames, MACs, serials and the rest of the node models are the scenario's; "
        "addresses are mapped into 198.18.0.0/15 (tests/lab/README.md). What the models leave to the machine that "
        "ran the lab is that machine's: the kernel release and os-release (the lab answers them from the host), "
        "and the path of all_gather_perf, in the lab's work folder. Nothing is anonymised: no name or address here "
        "belongs to a deployed pair, and the bundle holds none of the lab's keys or SSH files (the script checks).\n",
        encoding="utf-8")
    return target


def main(names: list[str]) -> None:
    if os.geteuid() != 0:
        raise SystemExit("the lab needs root")
    for name in names or list(FIXTURES):
        if name not in FIXTURES:
            raise SystemExit(f"unknown fixture {name!r}; known: {', '.join(FIXTURES)}")
        with tempfile.TemporaryDirectory(prefix=f"lc-{name}-") as tmp:
            saved = _run(name, Path(tmp))
            _check(name, saved)
            print(f"{name}: {_write(name, saved)}")


if __name__ == "__main__":
    main(sys.argv[1:])

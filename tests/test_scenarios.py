"""Each shipped fixture names exactly its expected rule ids (no miss, no extra) and the stated verdict."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from linkcheck.model import Status
from linkcheck.pipeline import diagnose_bundle

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SCENARIOS = sorted(p.name for p in FIXTURES.iterdir() if (p / "expected.yaml").is_file()) if FIXTURES.is_dir() else []
EXIT = {"pass": 0, "warn": 1, "fail": 2, "inconclusive": 3}


def _expected(name: str) -> dict[str, object]:
    data = yaml.safe_load((FIXTURES / name / "expected.yaml").read_text())
    assert isinstance(data, dict)
    return data


def test_the_issue_scenarios_are_shipped() -> None:
    assert {"healthy", "gid-stale", "hotplug-degraded", "single-pcie-path", "twins-same-subnet", "mtu-mismatch",
            "nccl-socket-fallback", "unapproved-cable", "degraded-collection"} <= set(SCENARIOS)


@pytest.mark.parametrize("name", SCENARIOS)
def test_fixture_names_exactly_its_findings(name: str) -> None:
    expected = _expected(name)
    outcome = diagnose_bundle(FIXTURES / name)
    got: dict[str, str] = {}
    for f in outcome.diagnosis.findings:
        if f.status in (Status.WARN, Status.FAIL):
            # A rule that fails on one subject and warns on none is "fail"; fail outranks warn.
            got[f.rule_id] = "fail" if f.status is Status.FAIL or got.get(f.rule_id) == "fail" else "warn"
    assert got == expected["findings"], [f.message for f in outcome.diagnosis.findings if f.status is not Status.PASS]
    assert outcome.diagnosis.verdict.value == expected["verdict"]


@pytest.mark.parametrize("name", SCENARIOS)
def test_cli_json_matches_and_exit_code(name: str) -> None:
    expected = _expected(name)
    proc = subprocess.run([sys.executable, "-m", "linkcheck.cli", "diagnose", str(FIXTURES / name), "-f", "json"],
                          capture_output=True, text=True, timeout=60)
    doc = json.loads(proc.stdout)
    assert proc.returncode == EXIT[str(expected["verdict"])] == doc["exit_code"]
    assert doc["schema"] == "linkcheck-report" and doc["verdict"] == expected["verdict"]
    fired = {f["id"] for f in doc["findings"] if f["status"] in ("warn", "fail")}
    assert fired == set(expected["findings"])  # type: ignore[arg-type]
    for finding in doc["findings"]:
        assert {"id", "status", "severity", "subject", "evidence", "fix"} <= set(finding)

"""Each shipped fixture names exactly its expected rule ids, subjects and skips (no miss, no extra), the stated
verdict and, where expected.yaml states them, the measured figures. Real-output fixtures carry PROVENANCE.md."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from linkcheck.app.offline import diagnose_bundle
from linkcheck.baseline.store import read_baseline
from linkcheck.config import load_config
from linkcheck.diagnose.playbook import load_playbooks
from linkcheck.model import Severity, Status
from linkcheck.outcome import Outcome
from tests.conftest import run_cli
from tests.fixture_bundles import PAIR_BUNDLES

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
# A pair's fixtures; a cluster's are judged by test_cluster_fixtures.py.
SCENARIOS = sorted(p.name for p in PAIR_BUNDLES if (p / "expected.yaml").is_file())
EXIT = {"pass": 0, "warn": 1, "fail": 2, "inconclusive": 3}


def _expected(name: str) -> dict[str, object]:
    data = yaml.safe_load((FIXTURES / name / "expected.yaml").read_text())
    assert isinstance(data, dict)
    return data


def _config_args(name: str) -> list[str]:
    """A fixture may ship the linkcheck.yaml it is diagnosed with (`config:` in expected.yaml)."""
    config = _expected(name).get("config")
    return ["--config", str(FIXTURES / name / str(config))] if config else []


def _baseline_args(name: str) -> list[str]:
    """A fixture may ship the baseline it is compared with (`baseline:` in expected.yaml, a baseline JSON file)."""
    baseline = _expected(name).get("baseline")
    return ["--baseline", str(FIXTURES / name / str(baseline))] if baseline else []


def _diagnose(name: str) -> Outcome:
    args = _config_args(name)
    baseline = _baseline_args(name)
    return diagnose_bundle(FIXTURES / name, config=load_config(Path(args[1])) if args else None,
                           baseline=read_baseline(Path(baseline[1])) if baseline else None)


def test_the_issue_scenarios_are_shipped() -> None:
    assert {"healthy", "gid-stale", "hotplug-degraded", "single-pcie-path", "twins-same-subnet", "mtu-mismatch",
            "nccl-socket-fallback", "unapproved-cable", "degraded-collection", "link-down", "link-below-nominal",
            "gid-empty-pin"} <= set(SCENARIOS)
    assert len([n for n in SCENARIOS if _expected(n).get("origin") == "real"]) >= 5


def test_every_rule_warns_or_fails_in_some_fixture() -> None:
    """A rule that is only ever a note (severity info) has nothing to warn or fail."""
    fired = {rule for name in SCENARIOS for rule in _expected(name)["findings"]}  # type: ignore[attr-defined]
    # A note (severity info) never warns: it passes with its message.
    assert {r.id for r in load_playbooks() if r.severity is not Severity.INFO} <= fired


@pytest.mark.parametrize("name", SCENARIOS)
def test_expected_yaml_schema_and_provenance(name: str) -> None:
    expected = _expected(name)
    assert expected["scenario"] == name
    assert expected["origin"] in ("real", "synthetic")
    assert expected["verdict"] in EXIT
    findings, subjects = expected["findings"], expected["subjects"]
    assert isinstance(findings, dict) and isinstance(subjects, dict) and isinstance(expected["skips"], list)
    assert set(subjects) == set(findings), "subjects are required for every rule in findings, and only those"
    assert set(findings.values()) <= {"warn", "fail"}
    if expected["origin"] == "real":
        assert name.startswith("real-") and (FIXTURES / name / "PROVENANCE.md").is_file()
    else:
        assert not name.startswith("real-")


@pytest.mark.parametrize("name", SCENARIOS)
def test_fixture_names_exactly_its_findings(name: str) -> None:
    expected = _expected(name)
    outcome = _diagnose(name)
    got: dict[str, str] = {}
    for f in outcome.diagnosis.findings:
        if f.status in (Status.WARN, Status.FAIL):
            # A rule that fails on one subject and warns on none is "fail"; fail outranks warn.
            got[f.rule_id] = "fail" if f.status is Status.FAIL or got.get(f.rule_id) == "fail" else "warn"
    assert got == expected["findings"], [f.message for f in outcome.diagnosis.findings if f.status is not Status.PASS]
    subjects: dict[str, list[str]] = {}
    for f in outcome.diagnosis.findings:
        if f.status in (Status.WARN, Status.FAIL):
            subjects.setdefault(f.rule_id, []).append(f.subject)
    assert {k: sorted(set(v)) for k, v in subjects.items()} == {
        k: sorted(v) for k, v in expected["subjects"].items()}  # type: ignore[attr-defined]
    skips = {f.rule_id for f in outcome.diagnosis.findings if f.status is Status.SKIP}
    assert skips == set(expected["skips"])  # type: ignore[arg-type]
    assert outcome.diagnosis.verdict.value == expected["verdict"]


@pytest.mark.parametrize("name", [n for n in SCENARIOS if "figures" in _expected(n)])
def test_fixture_figures(name: str) -> None:
    figures = _expected(name)["figures"]
    assert isinstance(figures, dict)
    bench = _diagnose(name).link.bench
    if "rdma_runs" in figures:
        assert len(bench.rdma) == figures["rdma_runs"], bench.rdma
    if "rdma_concurrent_total_gbps" in figures:
        totals: dict[str, float] = {}
        for run in bench.rdma:
            if run.mode == "concurrent" and run.gbps is not None:
                totals[run.direction] = totals.get(run.direction, 0.0) + run.gbps
        want = figures["rdma_concurrent_total_gbps"]
        assert set(totals) == set(want), (totals, want)
        for direction, total in want.items():
            assert totals[direction] == pytest.approx(total, abs=0.01), (direction, totals)
    if "latency_runs" in figures:
        assert len([r for r in bench.latency if r.typical_us is not None]) == figures["latency_runs"], bench.latency
    if "allreduce_64k_us" in figures:
        assert bench.allreduce is not None
        assert bench.allreduce.time_at(65536) == (pytest.approx(figures["allreduce_64k_us"], abs=0.01),
                                                  "measured at 64 KiB")
    if "nccl_busbw_gbs" in figures:
        assert bench.nccl is not None
        assert bench.nccl.busbw_gbs == pytest.approx(figures["nccl_busbw_gbs"], abs=0.01)


@pytest.mark.parametrize("name", SCENARIOS)
def test_cli_json_matches_and_exit_code(name: str) -> None:
    expected = _expected(name)
    proc = run_cli("diagnose", str(FIXTURES / name), "-f", "json", *_config_args(name), *_baseline_args(name),
                   timeout=60)
    doc = json.loads(proc.stdout)
    assert proc.returncode == EXIT[str(expected["verdict"])] == doc["exit_code"]
    assert doc["schema"] == "linkcheck-report" and doc["verdict"] == expected["verdict"]
    fired = {f["id"] for f in doc["findings"] if f["status"] in ("warn", "fail")}
    assert fired == set(expected["findings"])  # type: ignore[arg-type]
    for finding in doc["findings"]:
        assert {"id", "status", "severity", "subject", "evidence", "fix"} <= set(finding)

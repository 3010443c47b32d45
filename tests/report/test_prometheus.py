"""The node_exporter textfile: parsed back with prometheus_client's own parser, written atomically."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from msgspec.structs import replace
from prometheus_client.parser import text_string_to_metric_families

from linkcheck.app.offline import diagnose_bundle
from linkcheck.baseline.store import read_baseline
from linkcheck.outcome import Outcome
from linkcheck.report import exposition
from linkcheck.report.prometheus import render_prometheus, write_textfile
from tests.conftest import CliResult, run_cli

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
NAME_RE = re.compile(r"^linkcheck_[a-z_]+$")


def samples(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        assert family.type == "gauge" and NAME_RE.match(family.name), family
        for s in family.samples:
            out.setdefault(s.name, []).append((dict(s.labels), s.value))
    return out


def test_the_healthy_pair_parses_with_base_units_and_a_one_hot_verdict() -> None:
    outcome = diagnose_bundle(FIXTURES / "healthy")
    text = render_prometheus(outcome)
    assert text.endswith("\n") and not text.endswith("\n\n")
    got = samples(text)
    assert {lab["verdict"]: v for lab, v in got["linkcheck_verdict"]} == {
        "pass": 1, "warn": 0, "fail": 0, "inconclusive": 0}
    rdma = {(lab["node"], lab["hca"], lab["direction"], lab["mode"]): v
            for lab, v in got["linkcheck_rdma_bandwidth_bytes_per_second"]}
    assert len(rdma) == 8
    assert rdma[("a", "roceP2p1s0f1", "a->b", "concurrent")] == pytest.approx(98.04e9 / 8)
    totals = {lab["direction"]: v for lab, v in got["linkcheck_rdma_concurrent_total_bytes_per_second"]}
    assert totals["a->b"] == pytest.approx(196.07e9 / 8, rel=1e-4)
    assert got["linkcheck_nccl_busbw_bytes_per_second"][0][1] == pytest.approx(23.79e9)
    assert got["linkcheck_info"] == [({"layout": "pair", "supported": "yes", "nodes": "dgx-spark-1,dgx-spark-2",
                                       "tool_version": "0.1.0", "node_a": "dgx-spark-1", "node_b": "dgx-spark-2"},
                                      1.0)]
    assert {lab["state"]: v for lab, v in got["linkcheck_cable_state"]} == {"pass": 1, "slow": 0, "inconclusive": 0}
    assert {lab["cable"] for lab, _ in got["linkcheck_finding"]} == {"a:p1<->b:p1"}  # the one cable
    assert got["linkcheck_last_run_timestamp_seconds"][0][1] == 1795953600  # 2026-11-29T12:00:00Z, the bundle's
    assert {lab["rule"] for lab, v in got["linkcheck_finding"] if v == 0} >= {"LINK_DOWN", "GID_INDEX_STALE"}
    assert "linkcheck_baseline_ratio" not in got  # no baseline given


def test_no_ip_address_or_gid_is_a_label() -> None:
    text = render_prometheus(diagnose_bundle(FIXTURES / "healthy"))
    labels = " ".join(re.findall(r"\{([^}]*)\}", text))
    assert not re.search(r"\d+\.\d+\.\d+\.\d+|fe80|::ffff|[0-9a-f]{4}:[0-9a-f]{4}:", labels), labels


def test_findings_and_baseline_ratios_of_a_drifted_run() -> None:
    name = "drift-cable-swap"
    outcome = diagnose_bundle(FIXTURES / name, baseline=read_baseline(FIXTURES / name / "baseline.json"))
    got = samples(render_prometheus(outcome))
    assert {lab["verdict"] for lab, v in got["linkcheck_verdict"] if v == 1} == {"fail"}
    findings = {(lab["rule"], lab["severity"]): v for lab, v in got["linkcheck_finding"]}
    assert findings[("DRIFT_THROUGHPUT", "error")] == 1 and findings[("DRIFT_THROUGHPUT", "warning")] == 1
    assert findings[("DRIFT_IDENTITY", "error")] == 1 and findings[("LINK_DOWN", "error")] == 0
    ratios = {lab["subject"]: v for lab, v in got["linkcheck_baseline_ratio"]}
    assert ratios["enP2p1s0f1np1<->enP2p1s0f1np1 concurrent a->b"] == pytest.approx(0.88, abs=0.001)
    assert ratios["enp1s0f1np1<->enp1s0f1np1 concurrent a->b"] == pytest.approx(1.0)
    assert {lab["baseline"] for lab, _ in got["linkcheck_baseline_ratio"]} == {"healthy-pair"}


@pytest.mark.parametrize("hostname", ['spark "one"', "back\\slash", "new\nline", "x} 1\nlinkcheck_evil 2"])
def test_label_values_are_escaped(hostname: str) -> None:
    outcome = diagnose_bundle(FIXTURES / "healthy")
    odd = replace(outcome, link=replace(outcome.link, a=replace(outcome.link.a, hostname=hostname)))
    assert isinstance(odd, Outcome)
    got = samples(render_prometheus(odd))
    assert got["linkcheck_info"][0][0]["node_a"] == hostname
    assert "linkcheck_evil" not in got


def test_written_atomically_beside_the_target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "linkcheck.prom"
    target.write_text("old\n")
    renames: list[tuple[str, str]] = []
    real = os.replace

    def recording(src: str, dst: str) -> None:
        renames.append((str(src), str(dst)))
        assert target.read_text() == "old\n"  # the reader still sees the old file until the rename
        real(src, dst)

    monkeypatch.setattr(os, "replace", recording)
    outcome = diagnose_bundle(FIXTURES / "healthy")
    write_textfile(target, outcome)
    assert len(renames) == 1 and Path(renames[0][0]).parent == tmp_path and renames[0][1] == str(target)
    assert target.read_text() == render_prometheus(outcome)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["linkcheck.prom"]
    assert exposition.escape('a"b') == 'a\\"b'


def run(*args: str) -> CliResult:
    """linkcheck in process: these tests judge the textfile it writes and its exit code, not the process."""
    return run_cli(*args, cwd=ROOT)


def test_diagnose_writes_the_textfile_and_keeps_its_exit_code(tmp_path: Path) -> None:
    target = tmp_path / "gid.prom"
    proc = run("diagnose", str(FIXTURES / "gid-stale"), "-f", "json", "--prometheus-textfile", str(target))
    assert proc.returncode == 2, proc.stderr
    got = samples(target.read_text())
    assert {lab["verdict"] for lab, v in got["linkcheck_verdict"] if v == 1} == {"fail"}
    assert got["linkcheck_exit_code"][0][1] == 2
    assert ("GID_INDEX_STALE", 1.0) in [(lab["rule"], v) for lab, v in got["linkcheck_finding"]]
    report = run("report", str(FIXTURES / "gid-stale"), "--format", "prometheus")
    assert report.stdout == target.read_text()


def test_a_missing_folder_is_refused_before_any_work(tmp_path: Path) -> None:
    proc = run("diagnose", str(FIXTURES / "healthy"), "--prometheus-textfile", str(tmp_path / "no" / "x.prom"))
    assert proc.returncode == 4 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "--prometheus-textfile" in proc.stderr

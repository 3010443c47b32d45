"""The DRIFT_* rules: a bundle against the pair's baseline (the issue's acceptance), and nothing without one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from msgspec.structs import replace

from linkcheck.app.baseline import save_baseline
from linkcheck.app.offline import diagnose_bundle
from linkcheck.baseline.store import BaselineError, resolve
from linkcheck.bundle.format import load_bundle, write_bundle
from linkcheck.model import Finding, Severity, Status
from tests.baseline.baseline_helpers import derived_bundle, is_client
from tests.conftest import CliResult, run_cli

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
SLOW_PATH = is_client("roceP2p1s0f1", "concurrent", "a->b")


@pytest.fixture(autouse=True)
def healthy_baseline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    save_baseline("healthy", FIXTURES / "healthy", force=False)
    return "healthy"


def run(*args: str) -> CliResult:
    """linkcheck in process: these tests judge the drift it reports, not the process."""
    return run_cli(*args, cwd=ROOT)


def drift(bundle: Path, rule: str | None = None) -> list[Finding]:
    outcome = diagnose_bundle(bundle, baseline=resolve("healthy"))
    return [f for f in outcome.diagnosis.findings if f.rule_id.startswith("DRIFT_") and rule in (None, f.rule_id)]


def test_the_moved_gid_index_of_gid_stale_is_named_through_the_cli() -> None:
    proc = run("diagnose", str(FIXTURES / "gid-stale"), "--baseline", "healthy", "-f", "json")
    doc = json.loads(proc.stdout)
    assert proc.returncode == 2
    moved = [f for f in doc["findings"] if f["id"] == "DRIFT_GID_INDEX" and f["status"] != "pass"]
    assert [(f["subject"], f["status"]) for f in moved] == [("b:roceP2p1s0f1", "fail")]
    assert "index 3 in baseline healthy, 4 now" in moved[0]["message"]
    assert {"fact": "RoCE v2 IPv4 GID index of b:roceP2p1s0f1", "value": {"baseline": 3, "now": 4},
            "source": "baseline healthy"} in moved[0]["evidence"]


def test_an_unpinned_move_is_a_note_that_passes(tmp_path: Path) -> None:
    bundle = load_bundle(FIXTURES / "gid-stale")
    unpinned = [replace(c, stdout="") if c.spec == "nccl_conf" else c for c in bundle.captures]
    write_bundle(replace(bundle, captures=unpinned, path=None), tmp_path / "unpinned")
    outcome = diagnose_bundle(tmp_path / "unpinned", baseline=resolve("healthy"))
    moved = [f for f in outcome.diagnosis.findings if f.rule_id == "DRIFT_GID_INDEX" and f.message != "ok"]
    assert [(f.subject, f.status, f.severity) for f in moved] == [("b:roceP2p1s0f1", Status.PASS, Severity.INFO)]
    assert "nothing pins NCCL_IB_GID_INDEX" in moved[0].message
    assert any(n.startswith("DRIFT_GID_INDEX (b:roceP2p1s0f1)") for n in outcome.diagnosis.notes)
    assert outcome.diagnosis.verdict.value == "pass"  # unpinned, GID_INDEX_DIFFERS is a note as well


@pytest.mark.parametrize(("factor", "status"), [(0.90 - 1e-3, Status.FAIL), (0.93, Status.WARN),
                                                (0.96, Status.PASS)])
def test_one_path_slower_than_the_baseline(tmp_path: Path, factor: float, status: Status) -> None:
    bundle = derived_bundle(FIXTURES / "healthy", tmp_path / "slow", factor=factor, which=SLOW_PATH)
    path = [f for f in drift(bundle, "DRIFT_THROUGHPUT")
            if f.subject == "enP2p1s0f1np1<->enP2p1s0f1np1 concurrent a->b"]
    assert [f.status for f in path] == [status]
    if status is not Status.PASS:
        assert f"{round(98.04 * factor, 2)} Gb/s now, 98.04 Gb/s in baseline healthy" in path[0].message
    others = [f for f in drift(bundle, "DRIFT_THROUGHPUT") if "enP2p1s0f1np1" in f.subject and f not in path]
    assert {f.status for f in others} == {Status.PASS}  # the other runs of that path did not move


def test_exactly_ninety_percent_fails_through_the_cli(tmp_path: Path) -> None:
    bundle = derived_bundle(FIXTURES / "healthy", tmp_path / "slow", factor=0.89, which=SLOW_PATH)
    proc = run("diagnose", str(bundle), "--baseline", "healthy", "-f", "json")
    assert proc.returncode == 2
    statuses = {f["subject"]: f["status"] for f in json.loads(proc.stdout)["findings"]
                if f["id"] == "DRIFT_THROUGHPUT"}
    assert statuses["enP2p1s0f1np1<->enP2p1s0f1np1 concurrent a->b"] == "fail"
    assert statuses["concurrent total a->b"] == "warn"  # (98.03 + 87.26) / 196.07 = 0.945
    assert statuses["enp1s0f1np1<->enp1s0f1np1 concurrent a->b"] == "pass"


def test_other_test_parameters_skip_naming_the_parameter(tmp_path: Path) -> None:
    bundle = load_bundle(FIXTURES / "healthy")
    captures = [replace(c, command=c.command.replace("-s 1048576", "-s 65536")) for c in bundle.captures]
    write_bundle(replace(bundle, captures=captures, path=None), tmp_path / "small")
    found = drift(tmp_path / "small", "DRIFT_THROUGHPUT")
    rdma = [f for f in found if f.subject == "rdma"]
    assert [f.status for f in rdma] == [Status.SKIP]
    assert "size_bytes 1048576 in the baseline, 65536 now" in str(rdma[0].skip_reason)
    assert [f.status for f in found if f.subject == "nccl all_gather busbw"] == [Status.PASS]


def test_the_same_bundle_drifts_nowhere() -> None:
    found = drift(FIXTURES / "healthy")
    assert {f.rule_id for f in found} == {"DRIFT_IDENTITY", "DRIFT_CONFIG", "DRIFT_GID_INDEX", "DRIFT_THROUGHPUT"}
    assert {f.status for f in found} == {Status.PASS}


def test_without_a_baseline_the_drift_rules_add_no_finding() -> None:
    outcome = diagnose_bundle(FIXTURES / "healthy")
    assert not [f for f in outcome.diagnosis.findings if f.rule_id.startswith("DRIFT_")]


def test_a_changed_mac_and_mtu_are_identity_and_config_drift(tmp_path: Path) -> None:
    bundle = load_bundle(FIXTURES / "healthy")
    old, new = "3c:6d:66:cc:b3:bb", "3c:6d:66:cc:b3:ff"
    mac = next(c.stdout for c in bundle.captures if c.node == "a" and c.spec == "sysfs_net")
    assert old in mac
    captures = [replace(c, stdout=c.stdout.replace(old, new)) if c.node == "a" and not c.meta else c
                for c in bundle.captures]
    write_bundle(replace(bundle, captures=captures, path=None), tmp_path / "nic")
    identity = drift(tmp_path / "nic", "DRIFT_IDENTITY")
    assert [f.status for f in identity] == [Status.FAIL]
    assert f"{old} -> {new}" in identity[0].message
    changed = {e.fact for e in identity[0].evidence}
    assert any(fact.endswith(".mac") for fact in changed) and any(fact.endswith(".peer_mac") for fact in changed)


def test_a_baseline_of_another_pair_compares_nothing() -> None:
    with pytest.raises(BaselineError, match="another pair: a hostname dgx-spark-1 -> gx10-a"):
        diagnose_bundle(FIXTURES / "real-healthy-gx10", baseline=resolve("healthy"))
    proc = run("diagnose", str(FIXTURES / "real-healthy-gx10"), "--baseline", "healthy")
    assert proc.returncode == 4 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "another pair" in lines[0] and "b hostname dgx-spark-2 -> gx10-b" in lines[0]

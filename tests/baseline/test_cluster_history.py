"""A cluster's run in the history: each test it scheduled (a cable, or a pair through the switch) is one record in
the history of its two nodes, beside their pair runs; `linkcheck history` shows which test a row is."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from msgspec.structs import replace

from linkcheck.app.history import history_rows, history_text
from linkcheck.app.runs import RunRecord, finish_run
from linkcheck.baseline.history import append_cluster_run, history_dir, read_records
from linkcheck.bundle.format import Bundle
from linkcheck.outcome import ClusterCheck
from tests.cluster.cluster_checks import checked, slow_node, switch
from tests.conftest import InProcessCli
from tests.lab.cluster import ring3

FIRST = "a:p0<->b:p1"  # ring3's first cable
CREATED = "2026-12-03T08:00:00+00:00"
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


@pytest.fixture(autouse=True)
def data_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "xdg-data"
    monkeypatch.setenv("XDG_DATA_HOME", str(home))
    return home


def _hot_ring() -> ClusterCheck:
    """A ring of three whose cable a:p0<->b:p1 is in the hot-plug state (13.3 Gb/s per path)."""
    return checked(ring3(), lambda test: (13.3, 13.3) if test.label == FIRST else (98.01, 98.01))


def _saved(check: ClusterCheck, folder: Path) -> ClusterCheck:
    """The check as judged from a bundle saved in `folder`, collected at CREATED."""
    return replace(check, bundle=Bundle(captures=[], created=CREATED, path=folder))


def test_each_cable_of_a_ring_is_a_record_in_its_pairs_history(tmp_path: Path) -> None:
    check = _saved(_hot_ring(), tmp_path / "bundle")
    written = append_cluster_run(check, "check --quick")
    assert len(written) == 3 and len(set(written)) == 3  # a ring of three: three pairs of nodes, a file each
    records = {r["cable"]: r for path in written for r in read_records(path)}
    assert set(records) == {r.test.label for r in check.cables}
    hot = records[FIRST]
    assert (hot["verdict"], hot["exit_code"], hot["command"], hot["cluster_nodes"]) == ("fail", 2, "check --quick", 3)
    assert "LINK_HOTPLUG_DEGRADED:fail" in hot["findings"]
    assert set(hot["rdma_gbps"].values()) == {13.3}
    assert hot["bundle"] == str(tmp_path / "bundle") and hot["bundle_created"] == CREATED
    others = [r for label, r in records.items() if label != FIRST]
    assert [r["verdict"] for r in others] == ["pass", "pass"] and all(not r["findings"] for r in others)


def test_the_log_names_the_test_of_each_row(tmp_path: Path) -> None:
    append_cluster_run(_saved(_hot_ring(), tmp_path / "bundle"), "check --quick")
    rows = history_rows()
    assert sorted(r["cable"] for r in rows) == sorted(r.test.label for r in _hot_ring().cables)
    hot = next(r for r in rows if r["cable"] == FIRST)
    assert set(hot["path_min_gbps"].values()) == {13.3} and hot["verdict"] == "fail"
    table = history_text(width=200)
    assert f"check --quick ({FIRST})" in table
    csv_head = history_text(fmt="csv").splitlines()[0]
    assert '"command","cable"' in csv_head
    assert {r["cable"] for r in json.loads(history_text(fmt="json"))} == {r["cable"] for r in rows}


def test_a_switch_records_each_pair_it_measured_second_passes_included(tmp_path: Path) -> None:
    check = switch("abcd", slow_node("c"))
    assert any(r.test.pass_no > 1 for r in check.cables)  # c met again with other partners
    append_cluster_run(_saved(check, tmp_path / "bundle"), "check")
    rows = history_rows()
    assert len(rows) == len([r for r in check.cables if r.test.round > 0]) >= 4
    assert all("<->" in str(r["cable"]) for r in rows)


def test_a_placeholder_for_a_node_not_inspected_is_no_pairs_run(tmp_path: Path) -> None:
    check = _hot_ring()
    first = check.cables[0]
    placeholder = replace(first, test=replace(first.test, label="a:p1<->?", round=0, b="?"))
    append_cluster_run(_saved(replace(check, cables=(*check.cables, placeholder)), tmp_path / "b"), "check")
    assert "a:p1<->?" not in {r["cable"] for r in history_rows()} and len(history_rows()) == 3


def test_a_check_without_a_saved_bundle_is_no_run_of_the_history(tmp_path: Path) -> None:
    check = _hot_ring()
    assert check.bundle is None and append_cluster_run(check, "check") == []
    unsaved = replace(check, bundle=Bundle(captures=[], created=CREATED))  # collected, never saved
    assert append_cluster_run(unsaved, "check") == [] and not history_dir().exists()


def test_a_history_that_cannot_be_written_is_said_and_the_run_stands(tmp_path: Path, data_home: Path) -> None:
    data_home.mkdir(parents=True)
    (data_home / "linkcheck").write_text("a file where the data folder should be", encoding="utf-8")
    lines = finish_run(_saved(_hot_ring(), tmp_path / "bundle"), RunRecord("check"))
    assert len(lines) == 1 and lines[0].startswith("the run history was not recorded"), lines
    assert not history_dir().is_dir()


def test_diagnose_record_of_a_cluster_bundle_records_each_test_once(tmp_path: Path, cli: InProcessCli) -> None:
    """An offline diagnosis of a cluster's bundle records nothing unless --record says so; with it, each test of
    the bundle goes into its pair's history under the bundle's date, as its live run would have; a second --record
    of the same bundle is the same run and adds nothing."""
    bundle = tmp_path / "ring"
    shutil.copytree(FIXTURES / "cluster-ring3-hotplug", bundle)
    assert cli("diagnose", str(bundle)).returncode == 2 and history_rows() == []
    for _ in range(2):
        result = cli("diagnose", str(bundle), "--record", "-f", "json")
        assert result.returncode == 2, result.stderr
        rows = history_rows()
        assert len(rows) == 3, rows  # a ring of three: three tests, recorded once
    assert {r["command"] for r in rows} == {"diagnose"}
    created = json.loads((bundle / "manifest.json").read_text())["created"]
    assert {r["bundle_created"] for r in read_records_all()} == {created}
    hot = [r for r in rows if r["verdict"] == "fail"]
    assert len(hot) == 1 and all(v < 20.0 for v in hot[0]["path_min_gbps"].values())  # the hot-plugged cable


def test_a_cluster_run_judged_against_a_baseline_names_it_in_each_record(tmp_path: Path, cli: InProcessCli) -> None:
    assert cli("baseline", "save", "ring", str(FIXTURES / "cluster-ring3-healthy")).returncode == 0
    bundle = tmp_path / "ring"
    shutil.copytree(FIXTURES / "cluster-ring3-hotplug", bundle)
    result = cli("diagnose", str(bundle), "--baseline", "ring", "--record", "-f", "json")
    assert result.returncode == 2, result.stderr
    records = read_records_all()
    assert len(records) == 3 and {r["baseline"] for r in records} == {"ring"}, records
    assert {r["bundle"] for r in records} == {str(bundle)}


def read_records_all() -> list[dict[str, object]]:
    return [r for path in sorted(history_dir().glob("*.jsonl")) for r in read_records(path)]

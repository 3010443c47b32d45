"""`linkcheck baseline save | list | show | delete`: a passing run stored as plain JSON under XDG_DATA_HOME."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from linkcheck.baseline.store import BaselineError, read_baseline
from linkcheck.facts.snapshot_model import SCHEMA, SCHEMA_VERSION

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"


@pytest.fixture(autouse=True)
def data_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "xdg-data"
    monkeypatch.setenv("XDG_DATA_HOME", str(home))
    return home


def run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "linkcheck.cli", *args], capture_output=True, text=True,
                          timeout=60, cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT)})


def one_line(proc: subprocess.CompletedProcess[str], code: int, *needles: str) -> str:
    assert proc.returncode == code, (proc.stdout, proc.stderr)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def saved_file(data_home: Path, name: str) -> Path:
    files = list((data_home / "linkcheck" / "baselines").glob(f"*/{name}.json"))
    assert len(files) == 1, files
    return files[0]


def test_save_stores_every_kind_of_field_keyed_by_the_pair(data_home: Path) -> None:
    proc = run("baseline", "save", "good", str(FIXTURES / "healthy"))
    assert proc.returncode == 0, proc.stderr
    path = saved_file(data_home, "good")
    assert path.parent.name.startswith("dgx-spark-1+dgx-spark-2-")
    doc = json.loads(path.read_text())
    assert doc["schema"] == SCHEMA and doc["schema_version"] == SCHEMA_VERSION and doc["source"]["verdict"] == "pass"
    assert doc["pair"]["a_hostname"] == "dgx-spark-1" and len(doc["pair"]["b_macs"]) == 4
    assert doc["pair"]["cable_sn"] == "APF25090012345"
    identity, config = doc["identity"], doc["configuration"]
    assert identity["a:enp1s0f1np1.pci"] == "0000:01:00.1" and identity["a:enp1s0f1np1.cage"] == "p1"
    assert identity["a:enp1s0f1np1.peer_mac"] == identity["b:enp1s0f1np1.mac"]
    assert identity["cable.b.part_number"] == "NJAAKK-N911" and identity["cable.b.serial"] == "APF25090012345"
    assert identity["pairing"] == "a:enP2p1s0f1np1<->b:enP2p1s0f1np1; a:enp1s0f1np1<->b:enp1s0f1np1"
    assert config["a:enp1s0f1np1.mtu"] == "9000" and config["a:enp1s0f1np1.pcie"] == "32 GT/s x4"
    assert config["a:enp1s0f1np1.firmware"] == "28.45.4028" and config["a.kernel"] == "6.17.0-1008-nvidia"
    assert config["a.os"] == "Ubuntu 24.04.3 LTS" and config["a.nccl.NCCL_IB_HCA"]
    assert doc["recorded"]["gid_index"] == {"a:roceP2p1s0f1": 3, "a:rocep1s0f1": 3, "b:roceP2p1s0f1": 3,
                                            "b:rocep1s0f1": 3}
    perf = doc["performance"]
    assert perf["rdma_parameters"] == {"duration_s": "10", "qps": "1", "size_bytes": "1048576"}
    assert perf["rdma_gbps"]["enP2p1s0f1np1<->enP2p1s0f1np1|concurrent|a->b"] == pytest.approx(98.04)
    assert sum(perf["concurrent_total_gbps"].values()) == pytest.approx(196.07 + 196.05, abs=0.02)
    assert perf["nccl_busbw_gbs"] == pytest.approx(23.79) and perf["nccl_parameters"]["min_bytes"] == "1073741824"
    assert read_baseline(path).snapshot.identity == identity  # what is written reads back the same


def test_a_failing_run_is_refused_unless_forced(data_home: Path) -> None:
    one_line(run("baseline", "save", "stale", str(FIXTURES / "gid-stale")), 4, "verdict is fail", "--force")
    assert not (data_home / "linkcheck" / "baselines").exists() or not list(data_home.rglob("*.json"))
    assert run("baseline", "save", "stale", str(FIXTURES / "gid-stale"), "--force").returncode == 0
    doc = json.loads(saved_file(data_home, "stale").read_text())
    assert doc["source"] == {**doc["source"], "verdict": "fail", "forced": True}


def test_an_inconclusive_run_is_refused(data_home: Path) -> None:
    one_line(run("baseline", "save", "x", str(FIXTURES / "degraded-collection")), 4, "inconclusive")


def test_without_a_bundle_the_newest_linkcheck_folder_here_is_used(tmp_path: Path, data_home: Path) -> None:
    shutil.copytree(FIXTURES / "gid-stale", tmp_path / "linkcheck-20260101-000000")
    time.sleep(0.01)
    shutil.copytree(FIXTURES / "healthy", tmp_path / "linkcheck-20260102-000000")
    os.utime(tmp_path / "linkcheck-20260101-000000" / "manifest.json", (1, 1))
    proc = run("baseline", "save", "latest", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(saved_file(data_home, "latest").read_text())["source"]["bundle"].endswith(
        "linkcheck-20260102-000000")
    one_line(run("baseline", "save", "none", cwd=FIXTURES), 4,
             "no bundle folder linkcheck-*")


def test_list_show_delete(data_home: Path) -> None:
    assert run("baseline", "save", "one", str(FIXTURES / "healthy")).returncode == 0
    listing = run("baseline", "list")
    assert listing.returncode == 0 and "one" in listing.stdout and "dgx-spark-1 + dgx-spark-2" in listing.stdout
    shown = run("baseline", "show", "one")
    assert shown.returncode == 0
    assert json.loads(shown.stdout.split("\n", 1)[1])["name"] == "one"
    one_line(run("baseline", "save", "one", str(FIXTURES / "healthy")), 4, "exists", "--force")
    assert run("baseline", "delete", "one").returncode == 0
    one_line(run("baseline", "show", "one"), 4, "no baseline named 'one'")
    one_line(run("baseline", "delete", "one"), 4, "no baseline named 'one'")
    assert "no baselines" in run("baseline", "list").stdout


@pytest.mark.parametrize("name", ["../escape", ".hidden", "a/b", "x" * 65, ""])
def test_unsafe_names_are_refused(name: str, data_home: Path) -> None:
    one_line(run("baseline", "save", name, str(FIXTURES / "healthy")), 4)
    assert not list(data_home.rglob("*.json"))


@pytest.mark.parametrize(("text", "needle"), [
    ("{", "not valid JSON"),
    ('{"schema": "linkcheck-baseline", "schema_version": 2}', "schema version 2 is newer"),
    ('{"schema": "something-else"}', "not a linkcheck baseline"),
    ('{"schema": "linkcheck-baseline", "schema_version": 1, "source": {"verdict": "pass", "forced": false}}',
     "'pair' must be an object"),
    ("\xff\xfe", "cannot read"),
])
def test_a_corrupt_or_future_baseline_is_one_line_with_its_path(tmp_path: Path, data_home: Path, text: str,
                                                                 needle: str) -> None:
    assert run("baseline", "save", "good", str(FIXTURES / "healthy")).returncode == 0
    path = saved_file(data_home, "good")
    path.write_bytes(text.encode("latin-1"))
    for args in (["baseline", "show", "good"], ["diagnose", str(FIXTURES / "healthy"), "--baseline", "good"],
                 ["baseline", "list"]):
        one_line(run(*args), 4, str(path), needle)
    assert path.read_bytes() == text.encode("latin-1")  # nothing overwritten


def test_read_baseline_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "b.json"
    path.write_text("[]")
    with pytest.raises(BaselineError, match=str(path)):
        read_baseline(path)

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
from tests.conftest import CliResult, run_cli

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"


@pytest.fixture(autouse=True)
def data_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "xdg-data"
    monkeypatch.setenv("XDG_DATA_HOME", str(home))
    return home


def run(*args: str, cwd: Path = ROOT) -> CliResult:
    """linkcheck in process: what it says, saves and exits with; two processes at once stay real processes."""
    return run_cli(*args, cwd=cwd)


def one_line(proc: CliResult | subprocess.CompletedProcess[str], code: int, *needles: str) -> str:
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


@pytest.mark.parametrize("odd", ["folder", "fifo", "corrupt"])
def test_one_unreadable_entry_does_not_hide_the_others(data_home: Path, odd: str) -> None:
    assert run("baseline", "save", "good", str(FIXTURES / "healthy")).returncode == 0
    bad = saved_file(data_home, "good").parent / "odd.json"
    if odd == "folder":
        bad.mkdir()
    elif odd == "fifo":
        os.mkfifo(bad)
    else:
        bad.write_text("{", encoding="utf-8")
    listing = run("baseline", "list")
    line = one_line(listing, 4, str(bad))
    assert "good" in listing.stdout and "dgx-spark-1 + dgx-spark-2" in listing.stdout, listing.stdout
    assert "odd" not in listing.stdout and line.startswith("linkcheck: ")
    assert (bad.is_dir() if odd == "folder" else bad.exists())  # left as it was


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


# --- the store under stress: races, other pairs, a data folder that cannot take a file, hostile values ---------


@pytest.mark.parametrize("name", ["good\n", "a\nb", "tab\tname", "bell\x07", "esc\x1b[31m", "cr\r", "del\x7f"])
def test_names_with_control_characters_are_refused(name: str, data_home: Path) -> None:
    from linkcheck.accept.profile import NAME_RE as PROFILE_NAME

    one_line(run("baseline", "save", name, str(FIXTURES / "healthy")), 4, "baseline name")
    assert not data_home.exists() or not list(data_home.rglob("*.json"))
    assert not PROFILE_NAME.fullmatch(name.lower())


def test_profile_name_with_a_newline_is_refused(tmp_path: Path) -> None:
    good = (ROOT / "linkcheck" / "profiles" / "dgx-spark-pair.yaml").read_text(encoding="utf-8")
    bad = tmp_path / "p.yaml"
    bad.write_text(good.replace("profile: dgx-spark-pair", 'profile: "site\\n"', 1), encoding="utf-8")
    one_line(run("profiles", "validate", str(bad)), 4, str(bad))


def _snapshot_baseline(name: str) -> object:
    from linkcheck.app.offline import diagnose_bundle
    from linkcheck.baseline.store import new_baseline
    from linkcheck.facts.snapshot import snapshot_of

    outcome = diagnose_bundle(FIXTURES / "healthy")
    return new_baseline(name, snapshot_of(outcome.bundle, outcome.link, "pass"), None, "", False)


def test_two_saves_of_one_name_at_once_exactly_one_wins(data_home: Path) -> None:
    import threading

    from linkcheck.baseline import store
    from linkcheck.errors import UsageError

    baseline = _snapshot_baseline("raced")
    barrier = threading.Barrier(8)
    results: list[object] = []
    real_find = store.find_path

    def slow_find(name: str) -> Path | None:  # every thread passes the "exists?" check before any writes
        found = real_find(name)
        barrier.wait(timeout=10)
        return found

    def save() -> None:
        try:
            results.append(store.save(baseline, "pair", overwrite=False))  # type: ignore[arg-type]
        except UsageError as exc:
            results.append(exc)

    store.find_path = slow_find  # type: ignore[assignment]
    try:
        threads = [threading.Thread(target=save) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
    finally:
        store.find_path = real_find  # type: ignore[assignment]
    wins = [r for r in results if isinstance(r, Path)]
    losses = [r for r in results if isinstance(r, UsageError)]
    assert len(wins) == 1 and len(losses) == 7, results
    assert all(loss.exit_code == 4 and "meanwhile" in str(loss) for loss in losses)
    folder = data_home / "linkcheck" / "baselines" / "pair"
    assert sorted(p.name for p in folder.iterdir()) == ["raced.json"]  # no temporary file left


def test_two_processes_saving_one_name(data_home: Path) -> None:
    procs = [subprocess.Popen([sys.executable, "-m", "linkcheck.cli", "baseline", "save", "twin",
                               str(FIXTURES / "healthy")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}) for _ in range(3)]
    codes = sorted(p.wait(timeout=90) for p in procs)
    for p in procs:
        assert "Traceback" not in (p.stderr.read() if p.stderr else "")
    assert codes == [0, 4, 4]
    saved_file(data_home, "twin")
    assert not [p for p in data_home.rglob("*") if p.name.endswith(".tmp")]


def test_force_never_deletes_another_pairs_baseline(data_home: Path) -> None:
    assert run("baseline", "save", "site", str(FIXTURES / "healthy")).returncode == 0
    theirs = saved_file(data_home, "site")
    other = FIXTURES / "drift-cable-swap"
    for args in (("baseline", "save", "site", str(other)), ("baseline", "save", "site", str(other), "--force")):
        proc = run(*args)
        if proc.returncode == 0:  # the same pair after all: replaced in place, in its own folder
            assert saved_file(data_home, "site") == theirs
            return
        one_line(proc, 4, "site")
        assert theirs.is_file()


@pytest.mark.parametrize("how", ["file", "file-parent"])
def test_data_folder_that_is_a_file(tmp_path: Path, how: str) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    home = blocker if how == "file" else blocker / "deeper"
    env = {"XDG_DATA_HOME": str(home)}
    proc = run_cli("baseline", "save", "b", str(FIXTURES / "healthy"), cwd=ROOT, env=env)
    one_line(proc, 74, "cannot write the baseline")
    assert blocker.read_text() == "x" and not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]
    diagnosed = run_cli("diagnose", str(FIXTURES / "healthy"), "--baseline", BASELINE_FILE, "--record", cwd=ROOT,
                        env=env)
    assert diagnosed.returncode in (0, 1, 2) and "history" in diagnosed.stderr and "Traceback" not in diagnosed.stderr


BASELINE_FILE = str(FIXTURES / "drift-cable-swap" / "baseline.json")


@pytest.mark.parametrize("errno_value", ["ENOSPC", "EDQUOT", "EIO"])
def test_full_disk_while_saving_leaves_nothing(data_home: Path, monkeypatch: pytest.MonkeyPatch,
                                               errno_value: str) -> None:
    import errno

    from linkcheck.baseline import store

    real_write = os.write
    calls = []

    def full(fd: int, data: bytes) -> int:
        calls.append(fd)
        raise OSError(getattr(errno, errno_value), os.strerror(getattr(errno, errno_value)))

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(store.StoreWriteError) as caught:
        store.save(_snapshot_baseline("full"), "pair", overwrite=False)  # type: ignore[arg-type]
    monkeypatch.setattr(os, "write", real_write)
    assert caught.value.exit_code == 74 and calls
    assert not [p for p in data_home.rglob("*") if p.is_file()]


@pytest.mark.parametrize(("patch", "needle"), [
    ('"nccl_busbw_gbs": 1e999', "nccl_busbw_gbs"),
    ('"nccl_busbw_gbs": ' + "9" * 5000, "not valid JSON"),
    ('"nccl_busbw_gbs": "fast"', "nccl_busbw_gbs"),
    ('"nccl_busbw_gbs": -1e400', "nccl_busbw_gbs"),
])
def test_overflowing_numbers_in_a_baseline_are_bad_input(tmp_path: Path, patch: str, needle: str) -> None:
    text = (FIXTURES / "drift-cable-swap" / "baseline.json").read_text(encoding="utf-8")
    import re

    forged = tmp_path / "forged.json"
    forged.write_text(re.sub(r'"nccl_busbw_gbs": [^,\n}]+', patch, text, count=1), encoding="utf-8")
    for args in (("baseline", "show", str(forged)), ("diagnose", str(FIXTURES / "healthy"), "--baseline", str(forged))):
        one_line(run(*args), 4, str(forged), needle)


def test_overflowing_rate_in_a_baseline_is_bad_input(tmp_path: Path) -> None:
    data = json.loads((FIXTURES / "drift-cable-swap" / "baseline.json").read_text(encoding="utf-8"))
    data["performance"]["rdma_gbps"] = {"p|alone|a->b": "HUGE"}
    forged = tmp_path / "forged.json"
    for value in ("1e999", "-1e999", "1" + "0" * 400):
        forged.write_text(json.dumps(data).replace('"HUGE"', value), encoding="utf-8")
        one_line(run("baseline", "show", str(forged)), 4, str(forged), "rdma_gbps")

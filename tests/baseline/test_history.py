"""The per-pair run history: appended by every check, bench and diagnose-with-baseline run, read by `history`."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from msgspec.structs import replace

from linkcheck.app.offline import diagnose_bundle
from linkcheck.baseline.history import append_line, read_records, run_record
from linkcheck.bundle.format import load_bundle, write_bundle
from tests.baseline.baseline_helpers import derived_bundle, is_client
from tests.conftest import CliResult, run_cli

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
BASELINE = str(FIXTURES / "drift-cable-swap" / "baseline.json")


@pytest.fixture(autouse=True)
def data_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "xdg-data"
    monkeypatch.setenv("XDG_DATA_HOME", str(home))
    return home


def run(*args: str) -> CliResult:
    """linkcheck in process: these tests judge the history it records and shows, not the process."""
    return run_cli(*args, cwd=ROOT)


def dated(source: Path, target: Path, created: str, factor: float = 1.0) -> Path:
    slow = derived_bundle(source, target.with_name(target.name + "-tmp"), factor=factor,
                          which=is_client("roceP2p1s0f1", "concurrent", "a->b"))
    write_bundle(replace(load_bundle(slow), created=created, path=None), target)
    return target


def history_file(data_home: Path) -> Path:
    files = list((data_home / "linkcheck" / "history").glob("*.jsonl"))
    assert len(files) == 1, files
    return files[0]


def test_three_runs_show_the_trend(tmp_path: Path, data_home: Path) -> None:
    runs = [dated(FIXTURES / "healthy", tmp_path / "r1", "2026-11-01T08:00:00+00:00"),
            dated(FIXTURES / "healthy", tmp_path / "r2", "2026-11-08T08:00:00+00:00", 0.93),
            dated(FIXTURES / "healthy", tmp_path / "r3", "2026-11-15T08:00:00+00:00", 0.89)]
    for bundle, code in zip(runs, (0, 1, 2), strict=True):
        assert run("diagnose", str(bundle), "--baseline", BASELINE, "--record", "-f", "json").returncode == code
    assert run("diagnose", str(FIXTURES / "healthy"), "-f", "json").returncode == 0  # no baseline: not recorded
    records = read_records(history_file(data_home))
    assert [r["verdict"] for r in records] == ["pass", "warn", "fail"]
    assert all(r["baseline"] == "healthy-pair" and r["command"] == "diagnose" for r in records)
    shown = run("history", "-f", "csv")
    assert shown.returncode == 0, shown.stderr
    rows = list(csv.DictReader(io.StringIO(shown.stdout)))
    assert [r["time"][:10] for r in rows] == ["2026-11-01", "2026-11-08", "2026-11-15"]
    assert [r["verdict"] for r in rows] == ["pass", "warn", "fail"]
    slow_path = [float(r["min_gbps enP2p1s0f1np1<->enP2p1s0f1np1"]) for r in rows]
    assert slow_path == pytest.approx([97.99, 98.04 * 0.93, 98.04 * 0.89], abs=0.02)  # b->a 97.99 is the lower
    assert all(r["nccl_busbw_gbs"] == "23.79" for r in rows)
    since = run("history", "--since", "2026-11-05", "--pair", "dgx-spark-1", "-f", "json")
    assert since.returncode == 0 and len(json.loads(since.stdout)) == 2


def test_the_log_has_one_row_per_run_and_fits_80_columns(tmp_path: Path) -> None:
    long_name = tmp_path / ("linkcheck-2026-11-01T08-00-00-dgx-spark-1-dgx-spark-2-" + "x" * 40)
    bundle = dated(FIXTURES / "healthy", long_name, "2026-11-01T08:00:00+00:00")
    assert run("diagnose", str(bundle), "--baseline", BASELINE, "--record", "-f", "json").returncode == 0
    shown = run_cli("history", cwd=ROOT, env={"COLUMNS": "80"})
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.rstrip("\n").splitlines()
    assert max(map(len, lines)) <= 80, shown.stdout
    heads = " ".join(lines[:2])
    for head in ("time", "command", "-D", "reps", "per path", "min Gb/s", "total", "NCCL", "verdict", "bundle"):
        assert head in heads, (head, heads)
    body = "\n".join(lines[2:])
    assert "2026-11-01 08:00" in body and "diagnose" in body and "10s x1" in body and "196.05" in body
    assert "97.99 98.03" in body.replace("\n", " ") or "97.99" in body
    assert "23.79" in body and "pass" in body and "linkcheck-2026" in body


def test_history_formats_and_quiet(tmp_path: Path) -> None:
    bundle = dated(FIXTURES / "healthy", tmp_path / "r1", "2026-11-01T08:00:00+00:00")
    assert run("diagnose", str(bundle), "--baseline", BASELINE, "--record", "-f", "json").returncode == 0
    rows = json.loads(run("history", "--format", "json").stdout)
    assert len(rows) == 1 and rows[0]["command"] == "diagnose" and rows[0]["verdict"] == "pass"
    assert rows[0]["duration_s"] == "10" and rows[0]["repetitions"] == 1 and rows[0]["total_gbps"] == 196.05
    assert rows[0]["path_min_gbps"] == {"enP2p1s0f1np1<->enP2p1s0f1np1": 97.99, "enp1s0f1np1<->enp1s0f1np1": 98.03}
    assert rows[0]["bundle"].endswith("r1")
    table = list(csv.reader(io.StringIO(run("history", "-f", "csv").stdout)))
    assert table[0][:6] == ["time", "pair", "command", "cable", "duration_s", "repetitions"] and len(table) == 2
    quiet = run("-q", "history")
    assert quiet.returncode == 0 and quiet.stdout == "" and "1 runs" in quiet.stderr and "PASS" in quiet.stderr
    assert run("history", "-f", "yaml").returncode != 0


def test_diagnosing_a_recorded_bundle_again_is_not_recorded_twice(tmp_path: Path, data_home: Path) -> None:
    bundle = dated(FIXTURES / "healthy", tmp_path / "r1", "2026-11-01T08:00:00+00:00")
    for _ in range(2):
        assert run("diagnose", str(bundle), "--baseline", BASELINE, "--record", "-f", "json").returncode == 0
    assert len(read_records(history_file(data_home))) == 1
    other = dated(FIXTURES / "healthy", tmp_path / "r2", "2026-11-02T08:00:00+00:00")
    assert run("diagnose", str(other), "--baseline", BASELINE, "--record", "-f", "json").returncode == 0
    assert len(read_records(history_file(data_home))) == 2


def test_bad_history_options_are_refused() -> None:
    assert "no runs" in run("history").stdout
    proc = run("history", "--since", "last tuesday")
    assert proc.returncode == 4 and "--since" in proc.stderr
    assert run("history", "--pair", "nope").returncode == 4


def test_a_corrupt_line_is_named_file_colon_line(data_home: Path) -> None:
    assert run("diagnose", str(FIXTURES / "healthy"), "--baseline", BASELINE, "--record", "-f", "json").returncode == 0
    path = history_file(data_home)
    good = path.read_text()
    path.write_text(good + '{"truncated": \n' + good)
    proc = run("history")
    assert proc.returncode == 4 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{path}:2:" in lines[0]
    assert path.read_text() == good + '{"truncated": \n' + good  # nothing rewritten


APPENDER = """
import sys
from pathlib import Path
from linkcheck.baseline.history import append_line
path, tag, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
for i in range(count):
    append_line(path, {"schema": "linkcheck-history", "schema_version": 1, "time": "2026-01-01T00:00:00+00:00",
                       "verdict": "pass", "writer": tag, "n": i, "pad": tag * 3000})
"""


def test_two_processes_appending_at_once_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "h" / "pair.jsonl"
    procs = [subprocess.Popen([sys.executable, "-c", APPENDER, str(path), tag, "400"], cwd=ROOT)
             for tag in ("x", "y")]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    records = read_records(path)  # every line parses: no torn or interleaved write
    assert len(records) == 800
    for tag in ("x", "y"):
        assert sorted(r["n"] for r in records if r["writer"] == tag) == list(range(400))


def test_one_line_per_record(tmp_path: Path) -> None:
    path = tmp_path / "one.jsonl"
    append_line(path, {"schema": "linkcheck-history", "text": "two\nlines"})
    assert path.read_text().count("\n") == 1 and json.loads(path.read_text())["text"] == "two\nlines"


# --- a history cut short, forged or overflowing: whole records or nothing, bad lines named, never exit 70 ----------

RECORD = {"schema": "linkcheck-history", "schema_version": 1, "time": "2026-01-01T00:00:00+00:00",
          "bundle_created": "2026-01-01T00:00:00+00:00", "command": "check", "bundle": "b", "pair": "p",
          "hosts": ["a", "b"], "verdict": "pass", "exit_code": 0, "baseline": None,
          "rdma_gbps": {"p1|concurrent|a->b": 96.5}, "concurrent_total_gbps": {"a->b": 193.0},
          "nccl_busbw_gbs": 21.5, "findings": []}


def _history_file(data_home: Path, lines: list[str]) -> Path:
    path = data_home / "linkcheck" / "history" / "p.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(lines), encoding="utf-8")
    return path


@pytest.mark.parametrize("cut", [1, 17, 120])
def test_full_disk_mid_append_takes_the_line_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cut: int) -> None:
    import errno

    path = tmp_path / "h.jsonl"
    append_line(path, RECORD)
    before = path.read_bytes()
    real_write = os.write

    def short(fd: int, data: bytes) -> int:  # the disk takes `cut` bytes, then is full
        return real_write(fd, bytes(data)[:cut])

    monkeypatch.setattr(os, "write", short)
    with pytest.raises(OSError):
        append_line(path, RECORD)

    def enospc(fd: int, data: bytes) -> int:
        real_write(fd, bytes(data)[:cut])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", enospc)
    with pytest.raises(OSError):
        append_line(path, RECORD)
    monkeypatch.setattr(os, "write", real_write)
    assert path.read_bytes() == before  # whole records or nothing
    append_line(path, RECORD)
    assert len(read_records(path)) == 2


def test_a_torn_last_line_is_skipped_with_a_warning(data_home: Path) -> None:
    whole = json.dumps(RECORD) + "\n"
    path = _history_file(data_home, [whole, whole, whole[: len(whole) // 2]])
    warnings: list[str] = []
    assert len(read_records(path, warnings.append)) == 2
    assert len(warnings) == 1 and f"{path}:3" in warnings[0] and "torn" in warnings[0]
    proc = run("history")
    assert proc.returncode == 0 and "torn" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stdout.count("check") == 2
    # a torn line that is not the last is no crash: it is named, as any corrupt line
    path.write_text(whole[:30] + "\n" + whole, encoding="utf-8")
    bad = run("history")
    assert bad.returncode == 4 and f"{path}:1" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(("field", "raw"), [
    ("nccl_busbw_gbs", "1e999"), ("nccl_busbw_gbs", "-1e999"), ("nccl_busbw_gbs", "9" * 5000),
    ("nccl_busbw_gbs", '"fast"'), ("nccl_busbw_gbs", "true"), ("exit_code", "9" * 5000), ("exit_code", '"0"'),
    ("rdma_gbps", '{"p1|alone|a->b": 1e999}'), ("rdma_gbps", '{"p1|alone|a->b": "x"}'), ("rdma_gbps", "[1]"),
    ("rdma_gbps", '{"p1|alone|a->b": ' + "1" * 400 + "}"), ("concurrent_total_gbps", '{"a->b": null}'),
    ("findings", '"LINK_DOWN"'), ("findings", "[1, 2]"), ("hosts", "{}"), ("verdict", "1"), ("time", "[]"),
    ("command", "7"), ("schema_version", "9" * 5000), ("nccl_busbw_gbs", "-3.5"),
    ("rdma_gbps", '{"p1|alone|a->b": -97.2}'), ("concurrent_total_gbps", '{"a->b": -1}'),
    ("cable", "[]"), ("cable", "3"), ("cluster_nodes", '"3"'), ("cluster_nodes", "-1"), ("cluster_nodes", "9" * 5000),
])
def test_forged_or_overflowing_history_fields_are_bad_input(data_home: Path, field: str, raw: str) -> None:
    good = json.dumps(RECORD)
    forged = json.dumps({**RECORD, field: "@@"}).replace('"@@"', raw)
    path = _history_file(data_home, [good + "\n", forged + "\n"])
    proc = run("history")
    assert proc.returncode == 4, (proc.returncode, proc.stderr)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and f"{path}:2" in lines[0] and "Traceback" not in proc.stderr, proc.stderr
    assert len(lines[0]) < 600


@pytest.mark.parametrize(("fixture", "repetitions"), [
    ("accept-pass", 2),  # six rounds, twice: `<round>-rep1` and `-rep2`
    ("healthy-latency-lab", 1),  # the quick tier's two concurrent rounds, once
    ("healthy", 1),  # runs without round ids
])
def test_the_history_counts_repetitions_not_rounds(fixture: str, repetitions: int) -> None:
    outcome = diagnose_bundle(FIXTURES / fixture, [], None)
    assert run_record(outcome, "check", None)["repetitions"] == repetitions


def test_an_offline_diagnosis_records_nothing_unless_asked(data_home: Path) -> None:
    """Diagnosing an old bundle against a baseline is no new run under that bundle's date: only --record adds it."""
    assert run("diagnose", str(FIXTURES / "healthy"), "--baseline", BASELINE, "-f", "json").returncode == 0
    folder = data_home / "linkcheck" / "history"
    assert not folder.exists() or not any(folder.iterdir())
    assert run("diagnose", str(FIXTURES / "healthy"), "--baseline", BASELINE, "--record", "-f", "json").returncode == 0
    assert len(read_records(history_file(data_home))) == 1


def test_an_accept_run_keeps_its_verdict_beside_the_diagnosis(data_home: Path) -> None:
    from linkcheck.app.runs import RunRecord, finish_run

    outcome = diagnose_bundle(FIXTURES / "accept-fail")
    assert finish_run(outcome, RunRecord("accept", acceptance="FAIL")) == []
    [record] = read_records(history_file(data_home))
    assert record["command"] == "accept" and record["acceptance"] == "FAIL" and record["verdict"] == "fail"
    table = run("history")
    assert table.returncode == 0 and "fail (accept FAIL)" in table.stdout, table.stdout
    assert json.loads(run("history", "-f", "json").stdout)[0]["acceptance"] == "FAIL"

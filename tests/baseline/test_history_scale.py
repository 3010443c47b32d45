"""A history that grows for years: rotation keeps a pair's files bounded and loses no record to a writer that waited
on the lock; `--last` reads only the end of the file (its line numbers still right), `--since` streams it; `--trend`
gives each link's months with pandas, and says in one line which extra to install without it."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from linkcheck.baseline.history import append_line, generations, read_records, recent_records

if TYPE_CHECKING:
    from tests.conftest import InProcessCli

START = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


@pytest.fixture
def data_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "xdg-data"
    monkeypatch.setenv("XDG_DATA_HOME", str(home))
    return home


def _record(n: int, gbps: float | None = 98.0, days: float = 1.0) -> dict[str, Any]:
    when = (START + dt.timedelta(days=days * n)).isoformat()
    rates = {} if gbps is None else {"enp1s0f1np1<->enp1s0f1np1|concurrent|a->b": gbps,
                                     "enp1s0f1np1<->enp1s0f1np1|concurrent|b->a": gbps + 1}
    return {"schema": "linkcheck-history", "schema_version": 1, "time": when, "bundle_created": when,
            "command": "check --quick" if gbps is not None else "check", "pair": "p", "verdict": "pass",
            "rdma_gbps": rates, "concurrent_total_gbps": {"a->b": 2 * gbps} if gbps is not None else {},
            "findings": [], "n": n}


def test_rotation_keeps_two_bounded_files_and_every_record_of_the_newest(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    size = len(json.dumps(_record(0), separators=(",", ":"))) + 1
    for n in range(100):
        append_line(path, _record(n), rotate_bytes=size * 30)
    assert [p.name for p in generations(path)] == ["p.jsonl.1", "p.jsonl"]
    assert all(p.stat().st_size <= size * 30 for p in generations(path))
    kept = [r["n"] for g in generations(path) for r in read_records(g)]
    assert kept == list(range(kept[0], 100)) and len(kept) >= 30  # the newest, in order, none twice
    current = len(read_records(path))
    assert [r["n"] for r in recent_records(path, current + 5, None)] == kept[-(current + 5):]  # across both files


def test_a_writer_that_waited_on_the_lock_writes_into_the_new_file(tmp_path: Path) -> None:
    """Two processes appending at once through rotations: every record written is in one of the two files once."""
    path = tmp_path / "p.jsonl"
    script = ("import sys; from linkcheck.baseline.history import append_line\n"
              "for n in range(int(sys.argv[2]), int(sys.argv[2]) + 300):\n"
              "    append_line(__import__('pathlib').Path(sys.argv[1]), {'schema': 'linkcheck-history', "
              "'schema_version': 1, 'time': '2026-01-01T00:00:00+00:00', 'verdict': 'pass', 'n': n}, "
              "rotate_bytes=40000)\n")
    writers = [subprocess.Popen([sys.executable, "-c", script, str(path), str(base)]) for base in (0, 1000)]
    assert [w.wait(timeout=120) for w in writers] == [0, 0]
    kept = [r["n"] for g in generations(path) for r in read_records(g)]
    assert len(kept) == len(set(kept))  # none twice, none torn (each line parsed)
    newest = [r["n"] for r in read_records(path)]
    assert max(newest) in (299, 1299)  # the last appended landed in the current file


def test_last_reads_the_end_and_names_a_bad_line_by_its_number(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    lines = [json.dumps(_record(n)) for n in range(50)]
    lines[47] = "{not json"
    path.write_text("\n".join(lines) + "\n")
    assert [r["n"] for r in read_records(path, last=2)] == [48, 49]  # the bad line is not read
    with pytest.raises(Exception, match=f"{path}:48"):
        read_records(path, last=3)


def test_history_last_and_the_tables_bound(cli: InProcessCli, data_home: Path) -> None:
    path = data_home / "linkcheck" / "history" / "p.jsonl"
    for n in range(150):
        append_line(path, _record(n, days=0.01))
    table = cli("history")
    assert table.returncode == 0
    assert table.stdout.splitlines()[-1] == "the last 100 runs; --last N for more, --last 0 for all"
    assert len(json.loads(cli("history", "-f", "json").stdout)) == 150  # for scripts: all
    assert len(json.loads(cli("history", "-f", "json", "--last", "7").stdout)) == 7
    since = json.loads(cli("history", "-f", "json", "--since", (START + dt.timedelta(days=1.2)).isoformat()).stdout)
    assert len(since) == 30 and since[0]["time"] == "2026-01-02T04:48:00+00:00"
    assert "--last N" not in cli("history", "--last", "0").stdout
    assert cli("history", "--last", "-1").returncode == 4
    assert "history: 150 runs, the last PASS" in cli("-q", "history").stderr


def test_trend_gives_each_links_months_and_their_drift(cli: InProcessCli, data_home: Path) -> None:
    pytest.importorskip("pandas")
    path = data_home / "linkcheck" / "history" / "p.jsonl"
    for n in range(120):  # four months, one run a day; from day 90 the path runs at 93 Gb/s instead of 98
        append_line(path, _record(n, 98.0 if n < 90 else 93.0))
        append_line(path, {**_record(n, None), "time": _record(n)["time"]})  # an inspection between: no rate
    rows = json.loads(cli("history", "--trend", "-f", "json").stdout)
    path_rows = [r for r in rows if r["link"] == "path enp1s0f1np1<->enp1s0f1np1"]
    assert [r["month"] for r in path_rows] == ["2026-01", "2026-02", "2026-03", "2026-04"]
    assert [r["runs"] for r in path_rows] == [31, 28, 31, 30]  # the inspection-only runs measured nothing
    assert [r["median_gbps"] for r in path_rows] == [98.0, 98.0, 98.0, 93.0]
    assert path_rows[-1]["drift_pct"] == pytest.approx(-5.1, abs=0.05) and path_rows[-1]["band"] == "warn"
    assert [r["band"] for r in path_rows[:3]] == ["ok", "ok", "ok"]
    assert path_rows[-2]["rolling_median_gbps"] == 98.0  # one week's window ends before the drop
    total = [r for r in rows if r["link"] == "both paths at once"][-1]
    assert total["median_gbps"] == 186.0 and total["band"] == "warn"
    table = cli("history", "--trend", "--window", "30D")
    assert table.returncode == 0 and "rolling_median_gbps" in table.stdout
    assert cli("history", "--trend", "--window", "soon").returncode == 4


def test_trend_without_pandas_says_which_extra_in_one_line(data_home: Path) -> None:
    """pandas made unimportable, as on an install without the extra."""
    probe = ("import sys; sys.modules['pandas'] = None\n"
             "import importlib.util; importlib.util.find_spec = lambda name, *a: None\n"
             "sys.argv = ['linkcheck', 'history', '--trend']\n"
             "from linkcheck import cli; cli.main()\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 4
    assert done.stderr.strip().splitlines() == [
        "linkcheck: history --trend needs pandas (fix: pip install 'linkcheck[trend]')"]


def test_history_without_trend_never_imports_pandas(data_home: Path) -> None:
    probe = ("import sys; sys.argv = ['linkcheck', 'history', '-f', 'json']\nfrom linkcheck import cli\n"
             "try:\n    cli.main()\nexcept SystemExit:\n    pass\nprint('pandas' in sys.modules, file=sys.stderr)\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stderr.strip().splitlines()[-1] == "False"

"""The pair's history is a file anyone on the machine can append to: `linkcheck history` shows each text of it as
text. In CSV no cell starts a spreadsheet formula and every cell reads back as written; in the table no text is
rich markup and no control character reaches the terminal; a line that is not UTF-8, or a record of odd times, is
one line naming file:line, never an internal error."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from linkcheck.app.history import cell, history_text
from tests.adversarial.adversarial_helpers import assert_no_raw_controls, one_line_error
from tests.conftest import InProcessCli

# What OWASP's CSV injection guidance lists as a formula's start, and what some spreadsheets also read as one.
FORMULAS = ["=HYPERLINK(\"http://evil.example\",\"x\")", "+1+1", "-2+3", "@SUM(A1)", "\t=1+1", "\r=1+1",
            "\n=1+1", " =1+1", "=cmd|' /C calc'!A0", "|calc", "%x", "\uff1d1+1", "-", "@"]
STARTS = tuple("=+-@|%\t\r\n\uff1d\uff0b\uff0d\uff20")
MARKUP = ["x[/]y", "[/]", "[bold red]unbalanced", "[link=http://evil.example]click[/link]", ":thumbs_up:"]
CONTROLS = ["\x1b]2;owned\x07", "\x1b[2J", "\x9b31m", "a\rb", "a\x08b", "nul\x00x", "\u202eevil", "a\nb\"c"]


def _record(n: int = 0, **fields: Any) -> dict[str, Any]:
    return {"schema": "linkcheck-history", "schema_version": 1, "time": f"2026-01-01T00:00:{n:02d}+00:00",
            "verdict": "pass", **fields}


def _write(data_home: Path, records: list[dict[str, Any]], name: str = "spark-a-spark-b") -> Path:
    folder = data_home / "linkcheck" / "history"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _env(data_home: Path) -> dict[str, str | None]:
    return {"XDG_DATA_HOME": str(data_home), "COLUMNS": "100"}


def _path(text: str) -> str:
    return text.replace("|", "!")  # `|` parts a rate's key (path|mode|direction)


def _rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def _read_back(value: str) -> str:
    """What a reader of the CSV takes the cell for: the text after the leading `'` that marks it as text."""
    return value[1:] if value.startswith("'") else value


@pytest.mark.parametrize("text", FORMULAS)
def test_no_csv_cell_starts_a_formula(tmp_path: Path, cli: InProcessCli, text: str) -> None:
    _write(tmp_path, [_record(command=text, verdict=text, bundle=text, duration_s=text, findings=[text],
                              rdma_gbps={f"{_path(text)}|concurrent|a->b": 98.0})], name="=pair")
    proc = cli("history", "-f", "csv", env=_env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    head, row = _rows(proc.stdout)
    for value in head + row:
        assert not value.startswith(STARTS), value
    fields = dict(zip(head, row, strict=True))
    shown_text = text.replace("\r", "\\r")  # the terminal gets no raw carriage return, in a cell or not
    assert fields["pair"] == "'=pair"
    assert fields[f"min_gbps {_path(shown_text)}"] == "98.0"  # a rate stays a number
    for key in ("command", "verdict", "bundle", "findings", "duration_s"):
        assert _read_back(fields[key]) == shown_text, key


@settings(max_examples=80, deadline=None)
@given(st.text(max_size=40))
def test_any_text_round_trips_through_csv_and_never_starts_a_formula(tmp_path_factory: pytest.TempPathFactory,
                                                                     text: str) -> None:
    data_home = tmp_path_factory.mktemp("history")
    _write(data_home, [_record(command=text, bundle=text)])
    with mock.patch.dict(os.environ, {"XDG_DATA_HOME": str(data_home)}):
        out = history_text(fmt="csv")
    head, row = _rows(out)
    fields = dict(zip(head, row, strict=True))
    for key in ("command", "bundle"):
        assert not fields[key].startswith(STARTS)
        assert _read_back(fields[key]) == text


@pytest.mark.parametrize("value", [98.5, -1.5, 0, None, "plain", "spark-a"])
def test_cell_leaves_numbers_and_plain_text_alone(value: object) -> None:
    assert cell(value) == value


@pytest.mark.parametrize("text", MARKUP + CONTROLS)
def test_table_shows_record_text_as_text(tmp_path: Path, cli: InProcessCli, text: str) -> None:
    _write(tmp_path, [_record(0, command=text, verdict=text), _record(1, command="check")], name="p")
    _write(tmp_path, [_record(2, command="bench")], name=f"pair{text.replace('/', '_').replace(chr(0), '')}")
    proc = cli("history", env=_env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    assert_no_raw_controls(proc.stdout)
    assert "\u202e" not in proc.stdout
    assert max(map(len, proc.stdout.splitlines())) <= 100  # laid out as shown, so escapes do not overflow it
    if text.startswith("["):
        assert text in proc.stdout.replace("\n", "") or text[:8] in proc.stdout  # brackets printed, perhaps wrapped


@pytest.mark.parametrize("text", MARKUP + CONTROLS)
def test_quiet_line_shows_a_hostile_verdict_as_text(tmp_path: Path, cli: InProcessCli, text: str) -> None:
    _write(tmp_path, [_record(verdict=text)])
    proc = cli("history", "-q", env=_env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert_no_raw_controls(proc.stderr)
    assert "history: 1 runs" in proc.stderr


def test_json_keeps_record_text_as_json_strings(tmp_path: Path, cli: InProcessCli) -> None:
    _write(tmp_path, [_record(n, command=text) for n, text in enumerate(MARKUP + CONTROLS + FORMULAS)])
    proc = cli("history", "-f", "json", env=_env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert [r["command"] for r in json.loads(proc.stdout)] == MARKUP + CONTROLS + FORMULAS
    assert_no_raw_controls(proc.stdout)


@pytest.mark.parametrize("line", [b"\xff\xfe{\"schema\": 1}",
                                  b"{\"schema\":\"linkcheck-history\",\"time\":\"\xed\xa0\x80\"}"])
def test_a_line_that_is_not_utf8_is_one_line_naming_file_and_line(tmp_path: Path, cli: InProcessCli,
                                                                    line: bytes) -> None:
    path = _write(tmp_path, [_record()])
    path.write_bytes(path.read_bytes() + line + b"\n" + path.read_bytes())
    one_line_error(cli("history", env=_env(tmp_path)), 4, f"{path}:2", "not UTF-8")


def test_a_torn_last_line_that_is_not_utf8_is_skipped(tmp_path: Path, cli: InProcessCli) -> None:
    path = _write(tmp_path, [_record()])
    path.write_bytes(path.read_bytes() + b"{\"schema\":\"linkcheck-history\",\"time\":\"x\xff")
    proc = cli("history", "-f", "json", env=_env(tmp_path))
    assert proc.returncode == 0 and len(json.loads(proc.stdout)) == 1
    assert f"{path}:2: a torn last line" in proc.stderr


def test_runs_are_ordered_by_instant_whatever_their_offset(tmp_path: Path, cli: InProcessCli) -> None:
    later = {**_record(command="later"), "time": "2026-01-01T06:00:00+00:00"}
    earlier = {**_record(command="earlier"), "time": "2026-01-01T10:00:00+12:00"}  # 2025-12-31 22:00 UTC
    _write(tmp_path, [later, earlier])
    proc = cli("history", "-f", "json", env=_env(tmp_path))
    assert [r["command"] for r in json.loads(proc.stdout)] == ["earlier", "later"]


@pytest.mark.parametrize("since", ["x", "\x1b]2;owned\x07", "99999-01-01", "2026-01-01T00:00:00+99:00", "[/]"])
def test_a_bad_since_is_one_line(tmp_path: Path, cli: InProcessCli, since: str) -> None:
    _write(tmp_path, [_record()])
    one_line_error(cli("history", "--since", since, env=_env(tmp_path)), 4, "--since", "is not a date")


@pytest.mark.parametrize("pair", ["[/]", "\x1b]2;owned\x07", "nope"])
def test_an_unknown_pair_is_one_line(tmp_path: Path, cli: InProcessCli, pair: str) -> None:
    _write(tmp_path, [_record()])
    one_line_error(cli("history", "--pair", pair, env=_env(tmp_path)), 4, "no history for pair")

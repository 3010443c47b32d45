"""`linkcheck history`: the recorded runs as a log, one row per run (per test of a cluster's run): when, which
command, how long and how often ib_write_bw ran, each path's lowest rate, the concurrent total, the NCCL bus
bandwidth, the verdict and the bundle.

As a table it fits the terminal (long cells wrap inside their column); as CSV or JSON it is for scripts. Every text
in a record (the pair, the command, the bundle's folder) came from a file anyone can append to: the table shows it
as text, never as rich markup, and CSV never lets a spreadsheet read it as a formula."""

from __future__ import annotations

import csv
import importlib.util
import io
import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from linkcheck.baseline.history import (
    generations,
    history_files,
    iter_records,
    path_minimums,
    recent_records,
    since_time,
    when_of,
)
from linkcheck.errors import UsageError
from linkcheck.report.safe_text import shown
from linkcheck.values import number

FORMATS = ("table", "csv", "json")


def history_rows(pair: str | None = None, since: str | None = None, last: int | None = None) -> list[dict[str, Any]]:
    """The runs, oldest first, as plain values (JSON's and CSV's rows): from `since` on, the last `last` of them
    (None: all), each file read as far as that needs."""
    start = since_time(since)
    rows: list[dict[str, Any]] = []
    for path in history_files(pair):
        for record in recent_records(path, last, start):
            when = when_of(record)
            totals = record.get("concurrent_total_gbps") or {}
            rows.append({
                "when": when, "time": when.isoformat(timespec="seconds"), "pair": path.stem,
                "command": record.get("command"), "cable": record.get("cable"),
                "duration_s": record.get("duration_s"), "repetitions": record.get("repetitions"),
                "path_min_gbps": path_minimums(record),
                "total_gbps": min(totals.values()) if totals else None,
                "nccl_busbw_gbs": record.get("nccl_busbw_gbs"), "verdict": record["verdict"],
                "acceptance": record.get("acceptance"),  # an `accept` run's verdict, beside the diagnosis's
                "findings": list(record.get("findings") or []), "bundle": record.get("bundle") or None})
    rows.sort(key=lambda r: r["when"])  # by the instant: times of other offsets do not sort as text
    for row in rows:
        del row["when"]
    return rows if last is None else rows[-last:] if last else []


def history_count(pair: str | None = None, since: str | None = None) -> tuple[int, dict[str, Any] | None]:
    """How many runs (from `since` on), and the newest as a row (its time and verdict); streamed, holding one."""
    start = since_time(since)
    count, newest = 0, None
    for path in history_files(pair):
        for generation in generations(path):
            for record in iter_records(generation):
                when = when_of(record)
                if start is None or when >= start:
                    count += 1
                    if newest is None or when >= newest[0]:
                        newest = (when, record)
    if newest is None:
        return 0, None
    return count, {"time": newest[0].isoformat(timespec="seconds"), "verdict": newest[1]["verdict"]}


def _command(row: dict[str, Any]) -> str:
    """The command, and for a cluster's run the test the row is of: `check --quick (a:p0<->b:p1)`."""
    command = "-" if row["command"] is None else str(row["command"])
    return command if row["cable"] is None else f"{command} ({row['cable']})"


def _run_length(row: dict[str, Any]) -> str:
    if row["duration_s"] is None and row["repetitions"] is None:
        return "-"
    return f"{row['duration_s'] or '?'}s x{row['repetitions'] or 1}"


# (head, right-aligned, may wrap): the heads are two short lines, so that the log fits 80 columns.
_COLUMNS = [("time", False, False), ("pair", False, True), ("command", False, True), ("-D\nx reps", False, False),
            ("per path\nmin Gb/s", True, True), ("total\nGb/s", True, False), ("NCCL\nGB/s", True, False),
            ("verdict", False, False), ("bundle", False, True)]


def _table(rows: list[dict[str, Any]], width: int | None) -> str:
    several = len({r["pair"] for r in rows}) > 1
    table = Table(box=None, pad_edge=False, padding=(0, 1, 0, 0), header_style="bold")
    for head, right, wraps in _COLUMNS:
        if head != "pair" or several:
            table.add_column(head, justify="right" if right else "left", overflow="fold", no_wrap=not wraps,
                             min_width=8 if head == "bundle" else None)
    for row in rows:
        cells = [row["time"][:16].replace("T", " "), *([row["pair"]] if several else []),
                 _command(row),
                 _run_length(row), " ".join(number(v) for v in row["path_min_gbps"].values()) or "-",
                 "-" if row["total_gbps"] is None else number(row["total_gbps"]),
                 "-" if row["nccl_busbw_gbs"] is None else number(row["nccl_busbw_gbs"]),
                 row["verdict"] + (f" (accept {row['acceptance']})" if row["acceptance"] else ""),
                 Path(row["bundle"]).name if row["bundle"] else "-"]
        table.add_row(*(Text(shown(cell)) for cell in cells))  # laid out as shown, never parsed as markup
    out = io.StringIO()
    Console(file=out, width=width, color_system=None, soft_wrap=False).print(table)
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines())


# What makes a spreadsheet read a cell as a formula or a DDE call (OWASP's CSV injection list, `|` and `%` that some
# read too, and the full-width forms that some locales' input turns into them), also after leading blanks, which an
# import may trim.
_FORMULA_START = frozenset("=+-@|%\t\r\n\uff1d\uff0b\uff0d\uff20")


def cell(value: object) -> object:
    """A CSV cell that a spreadsheet shows as the text it is: a text that could start a formula gets a leading `'`
    (which spreadsheets take as "text follows" and do not show), as does a text that starts with `'`, so that every
    text reads back as written once one leading `'` is dropped. Numbers stay numbers."""
    if isinstance(value, str) and value and (value[0] in _FORMULA_START or value.lstrip()[:1] in _FORMULA_START
                                             or value[0] == "'"):  # a `'` of its own is kept: a spreadsheet eats one
        return "'" + value
    return value


def _csv(rows: list[dict[str, Any]]) -> str:
    paths = sorted({p for r in rows for p in r["path_min_gbps"]})
    out = io.StringIO()
    # Every text quoted, as OWASP advises: a reader splits no cell at a carriage return it holds; rates stay numbers.
    writer = csv.writer(out, lineterminator="\n", quoting=csv.QUOTE_NONNUMERIC)
    head = ["time", "pair", "command", "cable", "duration_s", "repetitions", *(f"min_gbps {p}" for p in paths),
            "total_gbps", "nccl_busbw_gbs", "verdict", "acceptance", "findings", "bundle"]
    writer.writerow(map(cell, head))
    for r in rows:
        writer.writerow(map(cell, [r["time"], r["pair"], r["command"], r["cable"] or "", r["duration_s"] or "",
                                   r["repetitions"] or "", *(r["path_min_gbps"].get(p, "") for p in paths),
                                   "" if r["total_gbps"] is None else r["total_gbps"],
                                   "" if r["nccl_busbw_gbs"] is None else r["nccl_busbw_gbs"], r["verdict"],
                                   r["acceptance"] or "", " ".join(r["findings"]), r["bundle"] or ""]))
    return out.getvalue().rstrip("\n")


TABLE_LAST = 100  # the table's runs unless --last says otherwise: a year of a 5-minute timer is ~105,000


def history_text(pair: str | None = None, since: str | None = None, fmt: str = "table",
                 width: int | None = None, last: int | None = None) -> str:
    """The runs in `fmt` (table, csv or json); a table `width` characters wide at most (the terminal's). `last`:
    only the last so many runs (0: all); by default the table shows the last TABLE_LAST, CSV and JSON all."""
    if fmt not in FORMATS:
        raise UsageError(f"unknown history format {fmt!r}; choose one of: {', '.join(FORMATS)}")
    if last is not None and last < 0:
        raise UsageError(f"--last {last} is not a count of runs (0 or more; 0: all)")
    wanted = (TABLE_LAST if fmt == "table" else None) if last is None else (last or None)
    rows = history_rows(pair, since, None if wanted is None else wanted + 1)  # one more: was anything left out?
    cut = wanted is not None and len(rows) > wanted
    rows = rows[-wanted:] if wanted is not None else rows
    if fmt == "json":
        return json.dumps(rows, indent=2)
    if fmt == "csv":
        return _csv(rows)
    if not rows:
        return "no runs in the history" + (f" since {since}" if since else "")
    note = f"\nthe last {wanted} runs; --last N for more, --last 0 for all" if cut else ""
    return _table(rows, width) + note


def history_table(pair: str | None = None, since: str | None = None) -> str:
    """The log as a table for the terminal."""
    return history_text(pair, since)


def history_trend(pair: str | None, since: str | None, fmt: str, window: str) -> str:
    """`history --trend`, which needs pandas (the `trend` extra): without it, one line saying which to install."""
    if fmt not in FORMATS:
        raise UsageError(f"unknown history format {fmt!r}; choose one of: {', '.join(FORMATS)}")
    if importlib.util.find_spec("pandas") is None:
        raise UsageError("history --trend needs pandas", fix="pip install 'linkcheck[trend]'")
    from linkcheck.app.trend import trend_text  # pandas: only for --trend

    return trend_text(pair, since, fmt, window)

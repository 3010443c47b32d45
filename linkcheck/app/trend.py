"""`linkcheck history --trend`: each link's rates over months, from a history of up to ~100,000 runs a year.

The history is read in chunks of CHUNK validated records (the same reader as `linkcheck history`), each chunk a
small long-format frame (time, pair, link, Gb/s) of the runs that measured traffic; pandas then gives, per pair and
link (each path's lowest direction, both paths at once, NCCL): a rolling median over a time window (one slow run
does not move it), and per calendar month the runs, median, 5th percentile, the rolling median at the month's end
and the drift of the month's median from the first month's, in per cent, with DRIFT_THROUGHPUT's bands (below 0.95
of the first month warns, below 0.90 fails: playbooks/drift.yaml).

pandas is the optional `trend` extra: this module is imported only by `--trend`, never on an offline path.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import pandas as pd

from linkcheck.baseline.history import (
    generations,
    history_files,
    iter_records,
    path_minimums,
    since_time,
    when_of,
)
from linkcheck.errors import UsageError
from linkcheck.report.safe_text import shown

CHUNK = 20_000  # records per frame: memory stays flat whatever the history's length
WARN_BELOW, FAIL_BELOW = 0.95, 0.90  # DRIFT_THROUGHPUT's warn_below_ratio and fail_below_ratio
COLUMNS = ["pair", "link", "month", "runs", "median_gbps", "p05_gbps", "rolling_median_gbps", "drift_pct", "band"]


def _points(record: dict[str, Any], pair: str) -> Iterator[tuple[Any, str, str, float]]:
    when = when_of(record)
    for path, gbps in path_minimums(record).items():
        yield when, pair, f"path {path}", gbps
    totals = record.get("concurrent_total_gbps") or {}
    if totals:
        yield when, pair, "both paths at once", float(min(totals.values()))
    busbw = record.get("nccl_busbw_gbs")
    if isinstance(busbw, (int, float)):
        yield when, pair, "NCCL busbw (GB/s)", float(busbw)


def _chunks(pair: str | None, since: str | None) -> Iterator[pd.DataFrame]:
    start = since_time(since)
    buffer: list[tuple[Any, str, str, float]] = []
    for path in history_files(pair):
        for generation in generations(path):
            for record in iter_records(generation):
                if start is None or when_of(record) >= start:
                    buffer.extend(_points(record, path.stem))
                if len(buffer) >= CHUNK:
                    yield pd.DataFrame(buffer, columns=["when", "pair", "link", "gbps"])
                    buffer = []
    if buffer:
        yield pd.DataFrame(buffer, columns=["when", "pair", "link", "gbps"])


def _window(value: str) -> pd.Timedelta:
    try:
        window = pd.Timedelta(value)
    except ValueError:
        raise UsageError(f"--window {value!r} is not a time span", fix="e.g. 7D, 36h, 30D") from None
    if window <= pd.Timedelta(0):
        raise UsageError(f"--window {value!r} must be longer than nothing", fix="e.g. 7D")
    return window


def _band(ratio: float) -> str:
    return "fail" if ratio < FAIL_BELOW else "warn" if ratio < WARN_BELOW else "ok"


def trend_frame(pair: str | None = None, since: str | None = None, window: str = "7D") -> pd.DataFrame:
    """Per pair, link and month: the runs, median, 5th percentile, rolling median at the month's end, and the
    drift of the month's median from the first month's (per cent) with its band."""
    span = _window(window)
    frames = list(_chunks(pair, since))
    if not frames:
        return pd.DataFrame(columns=COLUMNS)
    data = pd.concat(frames, ignore_index=True)
    data["when"] = pd.to_datetime(data["when"], utc=True)
    data = data.sort_values("when")
    out = []
    for (pair_name, link), group in data.groupby(["pair", "link"], sort=True):
        series = group.set_index("when")["gbps"]
        rolling = series.rolling(span).median()
        month = series.index.tz_localize(None).to_period("M")
        monthly = series.groupby(month).agg(["count", "median", lambda s: s.quantile(0.05)])
        monthly.columns = ["runs", "median_gbps", "p05_gbps"]
        monthly["rolling_median_gbps"] = rolling.groupby(month).last()
        first = float(monthly["median_gbps"].iloc[0])
        ratio = monthly["median_gbps"] / first if first > 0 else monthly["median_gbps"] * 0 + 1
        monthly["drift_pct"] = (ratio - 1) * 100
        monthly["band"] = ratio.map(_band)
        monthly = monthly.reset_index(names="month")
        monthly["month"] = monthly["month"].astype(str)
        monthly.insert(0, "link", link)
        monthly.insert(0, "pair", pair_name)
        out.append(monthly)
    result = pd.concat(out, ignore_index=True)[COLUMNS]
    return result.round({"median_gbps": 2, "p05_gbps": 2, "rolling_median_gbps": 2, "drift_pct": 1})


def trend_text(pair: str | None = None, since: str | None = None, fmt: str = "table", window: str = "7D") -> str:
    """The trend as a table, CSV or JSON (the rows of `trend_frame`)."""
    frame = trend_frame(pair, since, window)
    if fmt == "json":
        return json.dumps(frame.to_dict(orient="records"), indent=2)
    if fmt == "csv":
        out = io.StringIO()
        frame.to_csv(out, index=False, lineterminator="\n")
        return out.getvalue().rstrip("\n")
    if frame.empty:
        return "no measured runs in the history" + (f" since {since}" if since else "")
    return shown(frame.to_string(index=False), multiline=True)

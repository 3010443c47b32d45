"""`linkcheck history`: the recorded runs of a pair (or of all pairs) as one table over time.

The one module that imports pandas, so no other command loads it."""

from __future__ import annotations

from typing import Any

import pandas as pd

from linkcheck.baseline.history import history_files, read_records, since_time, when_of


def _path_rates(record: dict[str, Any]) -> dict[str, float]:
    """Per path, the concurrent rate of its slower direction (alone when the run had no concurrent round)."""
    out: dict[str, dict[str, float]] = {}
    for key, gbps in record.get("rdma_gbps", {}).items():
        path, _, rest = str(key).partition("|")
        mode = rest.partition("|")[0]
        out.setdefault(path, {})[mode] = min(float(gbps), out.get(path, {}).get(mode, float(gbps)))
    return {f"{p} Gb/s": modes.get("concurrent", modes.get("alone", 0.0)) for p, modes in sorted(out.items())}


def history_table(pair: str | None = None, since: str | None = None) -> str:
    """The runs over time: each path's rate, the concurrent total, the NCCL bus bandwidth and the verdict."""
    start = since_time(since)
    rows: list[dict[str, Any]] = []
    for path in history_files(pair):
        for record in read_records(path):
            when = when_of(record)
            if start is not None and when < start:
                continue
            totals = record.get("concurrent_total_gbps") or {}
            rows.append({"collected": when, "pair": path.stem, "command": record.get("command"),
                         "verdict": record["verdict"], **_path_rates(record),
                         "total Gb/s": min(totals.values()) if totals else None,
                         "busbw GB/s": record.get("nccl_busbw_gbs"),
                         "findings": " ".join(record.get("findings") or []) or "-"})
    if not rows:
        return "no runs in the history" + (f" since {since}" if since else "")
    frame = pd.DataFrame(rows).sort_values("collected", kind="stable")
    if frame["pair"].nunique() == 1:
        frame = frame.drop(columns="pair")
    frame["collected"] = frame["collected"].map(lambda t: t.strftime("%Y-%m-%d %H:%M:%S"))
    return str(frame.to_string(index=False, na_rep="-", float_format=lambda v: f"{v:.2f}"))

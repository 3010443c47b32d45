"""The HTML report's plots, drawn by matplotlib as inline SVG (the optional extra `linkcheck[html]`).

matplotlib is imported here only, when a page is rendered; without it `svg_plots` returns no plots and the
page keeps its tables. Labels are node-derived text: `$` is escaped so that it is never read as mathtext.
The SVG's XML prolog, DOCTYPE (a remote DTD URL) and metadata are dropped, so the page names no remote
resource.
"""

from __future__ import annotations

import importlib.util
import io
import re
from typing import Any

import matplotlib
from matplotlib.figure import Figure

from linkcheck.baseline.history import HistoryError, history_dir, read_records, when_of
from linkcheck.errors import ParseError
from linkcheck.facts.snapshot import pair_id, pair_key
from linkcheck.outcome import Outcome
from linkcheck.parsers.nccl_tests import NcclTestRow, parse_nccl_tests
from linkcheck.report.safe_text import shown
from linkcheck.report.tables import threshold

_PROLOG = re.compile(r"^.*?(?=<svg)", re.DOTALL)
_METADATA = re.compile(r"<metadata>.*?</metadata>\s*", re.DOTALL)
_ID = re.compile(r'\bid="([^"]*)"')
_REF = re.compile(r'(url\(#|href="#)([^)"]*)')


def scoped_ids(svg: str, prefix: str) -> str:
    """Every id of one SVG, and every reference to it (`url(#id)`, `href="#id"`), prefixed: matplotlib names
    its clip paths and glyphs alike in every figure (`p1234abcd`, `patch_1`, `DejaVuSans-30`), and ids must be
    unique across the page, or one plot's clip-path or glyph would be drawn with another's."""
    ids = set(_ID.findall(svg))
    svg = _ID.sub(lambda m: f'id="{prefix}{m.group(1)}"', svg)
    return _REF.sub(lambda m: m.group(1) + (prefix if m.group(2) in ids else "") + m.group(2), svg)


def have_matplotlib() -> bool:
    return importlib.util.find_spec("matplotlib") is not None


def _label(value: object) -> str:
    return shown(value).replace("$", r"\$")


def _svg(figure: Any) -> str:
    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "linkcheck", "text.usetex": False}):
        figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    return _METADATA.sub("", _PROLOG.sub("", buffer.getvalue(), count=1))


def throughput_svg(outcome: Outcome) -> str | None:
    """Per path and mode the Gb/s in both directions, against the playbook's nominal and hot-plug thresholds."""
    runs = outcome.link.bench.rdma
    if not runs:
        return None
    keys = sorted({(r.mode != "alone", r.mode, r.path_key, r.round_id) for r in runs})
    figure = Figure(figsize=(8, 3.6))
    axes = figure.add_subplot()
    width = 0.38
    for offset, direction, colour in ((-width / 2, "a->b", "#3b6ea5"), (width / 2, "b->a", "#e0892b")):
        values = [next((r.gbps or 0.0 for r in runs if (r.mode, r.path_key, r.round_id) == k[1:]
                        and r.direction == direction), 0.0) for k in keys]
        axes.bar([i + offset for i in range(len(keys))], values, width, label=direction, color=colour)
    nominal = threshold(outcome, "LINK_BELOW_NOMINAL", "nominal_min_gbps")
    hotplug = threshold(outcome, "LINK_HOTPLUG_DEGRADED", "degraded_max_gbps")
    if nominal is not None:
        axes.axhline(nominal, color="#2e7d32", linestyle="--", label=f"nominal floor {nominal:g} Gb/s")
    if hotplug is not None:
        axes.axhspan(0, hotplug, color="#c62828", alpha=0.12, label=f"hot-plug state <= {hotplug:g} Gb/s")
    axes.set_xticks(range(len(keys)), [f"{_label(k[2])}\n{_label(f'{k[1]} {k[3]}'.strip())}" for k in keys],
                    fontsize=7, rotation=12, ha="right")
    axes.set_ylabel("Gb/s")
    axes.set_title("ib_write_bw per path (alone and concurrent)")
    axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _svg(figure)


def _nccl_rows(outcome: Outcome) -> tuple[NcclTestRow, ...]:
    capture = next((c for c in outcome.bundle.captures if c.meta.get("kind") == "nccl" and c.spec != "nccl_log"
                    and c.meta.get("format") != "json" and c.ok), None)
    if capture is None:
        return ()
    try:
        return parse_nccl_tests(capture.stdout).rows
    except ParseError:
        return ()


def nccl_svg(outcome: Outcome) -> str | None:
    """all_gather bus bandwidth by message size, against NCCL_BUSBW_LOW's warn and fail thresholds."""
    rows = [r for r in _nccl_rows(outcome) if r.size_bytes > 0 and r.oop_busbw_gbs is not None]
    if not rows:
        return None
    figure = Figure(figsize=(8, 3.2))
    axes = figure.add_subplot()
    axes.plot([r.size_bytes for r in rows], [r.oop_busbw_gbs or 0.0 for r in rows], marker="o", color="#3b6ea5",
              label="bus bandwidth (out of place)")
    for name, colour, text in (("min_busbw_gbs", "#2e7d32", "pass from"), ("fail_below_busbw_gbs", "#c62828",
                                                                           "fail below")):
        value = threshold(outcome, "NCCL_BUSBW_LOW", name)
        if value is not None:
            axes.axhline(value, color=colour, linestyle="--", label=f"{text} {value:g} GB/s")
    axes.axvline(1 << 30, color="#777777", linestyle=":", label="1 GiB: judged from here")
    axes.set_xscale("log", base=2)
    axes.set_ylim(bottom=0)
    axes.set_xlabel("message size (bytes)")
    axes.set_ylabel("GB/s")
    axes.set_title("NCCL all_gather bus bandwidth by size")
    axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _svg(figure)


def _history(outcome: Outcome) -> list[tuple[Any, float | None, float | None, str]]:
    """(when, lowest concurrent total Gb/s, NCCL GB/s, verdict) per run of this pair's history, oldest first."""
    path = history_dir() / f"{pair_id(pair_key(outcome.link))}.jsonl"
    if not path.is_file():
        return []
    try:
        records = read_records(path)
    except HistoryError:
        return []  # `linkcheck history` names the bad line; the report keeps its other plots
    out = []
    for record in records:
        totals = [float(t) for t in (record.get("concurrent_total_gbps") or {}).values()]
        busbw = record.get("nccl_busbw_gbs")
        out.append((when_of(record), min(totals) if totals else None,
                    float(busbw) if isinstance(busbw, (int, float)) else None, str(record.get("verdict"))))
    return sorted(out, key=lambda r: r[0])


def trend_svg(outcome: Outcome) -> str | None:
    """The pair's history: both paths' concurrent total and the NCCL bus bandwidth over time, with verdicts."""
    runs = _history(outcome)
    if len(runs) < 2:
        return None
    figure = Figure(figsize=(8, 3.2))
    axes = figure.add_subplot()
    rdma = [(w, t) for w, t, _, _ in runs if t is not None]
    if rdma:
        axes.plot([w for w, _ in rdma], [t for _, t in rdma], marker="o", color="#3b6ea5",
                  label="both paths at once, Gb/s (lowest direction)")
    nccl = [(w, b) for w, _, b, _ in runs if b is not None]
    if nccl:
        second = axes.twinx()
        second.plot([w for w, _ in nccl], [b for _, b in nccl], marker="s", color="#e0892b", label="NCCL busbw, GB/s")
        second.set_ylabel("GB/s")
        second.set_ylim(bottom=0)
        second.legend(fontsize=7, loc="lower right")
    for when, total, _, verdict in runs:
        if total is not None and verdict != "pass":
            axes.annotate(_label(verdict), (when, total), fontsize=7, color="#c62828")
    axes.set_ylim(bottom=0)
    axes.set_ylabel("Gb/s")
    axes.set_title("This pair over time (linkcheck history)")
    axes.legend(fontsize=7, loc="lower left")
    figure.autofmt_xdate()
    return _svg(figure)


def svg_plots(outcome: Outcome) -> list[tuple[str, str]]:
    """(caption, inline SVG) per plot; none without matplotlib. The trend appears once the pair has a history."""
    if not have_matplotlib():
        return []
    plots = [("Throughput per path", throughput_svg(outcome)), ("NCCL bus bandwidth", nccl_svg(outcome)),
             ("Trend", trend_svg(outcome))]
    return [(caption, scoped_ids(svg, f"plot{n}-")) for n, (caption, svg) in enumerate(plots, 1) if svg]

"""The HTML report's plots, drawn by matplotlib as inline SVG (the optional extra `linkcheck[html]`).

matplotlib is imported here only, when a page is rendered; without it `svg_plots` returns no plots and the
page keeps its tables. Labels are node-derived text: `$` is escaped so that it is never read as mathtext.
The SVG's XML prolog, DOCTYPE (a remote DTD URL) and metadata are dropped, so the page names no remote
resource.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import io
import re
import statistics
from typing import Any

import matplotlib
import msgspec
from matplotlib.figure import Figure

from linkcheck.accept.text import deciding_line
from linkcheck.baseline.history import HistoryError, history_dir, read_records, when_of
from linkcheck.errors import ParseError
from linkcheck.facts.bench_facts import pair_job
from linkcheck.facts.snapshot import pair_id, pair_key
from linkcheck.model import Status
from linkcheck.outcome import Outcome
from linkcheck.parsers.nccl_tests import NcclTestRow, parse_nccl_tests
from linkcheck.report.acceptance import acceptance
from linkcheck.report.published import PUBLISHED_PATH_GBPS, PUBLISHED_TOTAL_GBPS
from linkcheck.report.safe_text import shown
from linkcheck.report.tables import threshold
from linkcheck.values import number

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


_DIRECTIONS = (("a->b", "#3b6ea5"), ("b->a", "#e0892b"))
_MODES = ("alone", "concurrent")
# Acceptance checks by the group they judge.
_CHECK_OF = {"alone": "rdma_alone_gbps", "concurrent": "rdma_concurrent_gbps", "total": "rdma_concurrent_total_gbps"}


class _Group(msgspec.Struct, frozen=True):
    """One cluster of bars: a path alone or concurrent, or both paths' total; per direction the samples (one per
    repetition) and how many runs had no number."""

    label: str
    kind: str  # alone | concurrent | total
    samples: dict[str, list[float]]
    missing: dict[str, int]


def _path_label(key: str) -> str:
    """The path as a tick label: its netdev once when both ends have the same name, else both ends on two lines."""
    a, _, b = key.partition("<->")
    return _label(a) if a == b else f"{_label(a)}\n<->{_label(b)}"


def _groups(outcome: Outcome) -> list[_Group]:
    bench = outcome.link.bench
    keys = sorted({r.path_key for r in bench.rdma})
    groups = []
    for key in keys:
        for mode in _MODES:
            runs = [r for r in bench.rdma if r.path_key == key and r.mode == mode]
            if runs:
                groups.append(_Group(f"{_path_label(key)}\n{mode}", mode,
                                     {d: [r.gbps for r in runs if r.direction == d and r.gbps is not None]
                                      for d, _ in _DIRECTIONS},
                                     {d: sum(1 for r in runs if r.direction == d and r.gbps is None)
                                      for d, _ in _DIRECTIONS}))
    totals = bench.round_totals("concurrent")
    if totals and len(keys) > 1:
        groups.append(_Group("both paths\nat once (total)", "total",
                             {d: [t for t in totals.get(d, []) if t is not None] for d, _ in _DIRECTIONS},
                             {d: sum(1 for t in totals.get(d, []) if t is None) for d, _ in _DIRECTIONS}))
    return groups


def _judged_by(check: dict[str, Any]) -> tuple[float, str] | None:
    """The line that decided an acceptance check's status (accept/text.py deciding_line), labelled; None when its
    lines are not numeric."""
    line = deciding_line(check)
    if line is None:
        return None
    value = float(line["value"])
    word = "fail" if line.get("on_miss") == "FAIL" else "degraded"
    return value, f"{check.get('id')}: {word} below {value:g}"


def _floors(outcome: Outcome) -> tuple[str, dict[str, list[tuple[float, str]]]]:
    """(whose thresholds, per group kind the floors the verdict used with their labels): for a bundle that holds an
    acceptance, the line that decided each of its checks (the fail line a FAIL missed, never a warning line beside
    it), else the throughput rules' own."""
    doc = acceptance(outcome)
    if doc is not None and "problem" not in doc:
        profile = (doc.get("profile") or {}).get("name") or "?"
        floors: dict[str, list[tuple[float, str]]] = {}
        for kind, check_id in _CHECK_OF.items():
            for check in (c for c in doc.get("checks", []) if isinstance(c, dict) and c.get("id") == check_id):
                floor = _judged_by(check)
                if floor is not None and floor not in floors.get(kind, []):
                    floors.setdefault(kind, []).append(floor)
        return f"acceptance ({_label(profile)})", floors  # the record's text: never mathtext or a control
    nominal = threshold(outcome, "LINK_BELOW_NOMINAL", "nominal_min_gbps")
    per_path = [] if nominal is None else [(nominal, f"LINK_BELOW_NOMINAL: a path's best below {nominal:g}")]
    return "rules", {"alone": per_path, "concurrent": per_path}


def _label_bar(axes: Any, x: float, samples: list[float], missing: int, top: float) -> None:
    if not samples:
        axes.text(x, top * 0.01, "no\nnumber" if missing else "not\nrun", ha="center", va="bottom", fontsize=6,
                  color="#c62828")
        return
    low, high = number(min(samples), 1), number(max(samples), 1)
    text = number(statistics.median(samples), 1) + ("" if low == high else f"\n{low}-{high}")
    axes.text(x, max(samples) + top * 0.01, text, ha="center", va="bottom", fontsize=6.5, linespacing=1.1)


def _bars(axes: Any, groups: list[_Group], top: float) -> None:
    """Per group and direction a bar at the median, whiskers to the min and max, and the label."""
    width = 0.36
    for i, group in enumerate(groups):
        for j, (direction, colour) in enumerate(_DIRECTIONS):
            x = i + (j - 0.5) * width
            samples = group.samples[direction]
            if samples:
                median = statistics.median(samples)
                axes.bar(x, median, width * 0.95, color=colour, zorder=2, label=direction if i == 0 else None)
                if len(samples) > 1:
                    axes.errorbar(x, median, yerr=[[median - min(samples)], [max(samples) - median]], fmt="none",
                                  ecolor="#333333", elinewidth=0.8, capsize=2.5, zorder=3)
            _label_bar(axes, x, samples, group.missing[direction], top)


def _lines(axes: Any, groups: list[_Group], floors: dict[str, list[tuple[float, str]]]) -> None:
    """Over each group, the published figure (both paths at once) and the floors that judged it."""
    drawn: set[str] = set()
    for i, group in enumerate(groups):
        lines = [(value, text, "#b26a00" if "degraded" in text else "#c62828", "--")
                 for value, text in floors.get(group.kind, [])]
        if group.kind == "total":
            lines.append((PUBLISHED_TOTAL_GBPS, f"published {PUBLISHED_TOTAL_GBPS:g} Gb/s total", "#2e7d32", ":"))
        elif group.kind == "concurrent":  # the published figures are both paths at once
            lines.append((PUBLISHED_PATH_GBPS, f"published {PUBLISHED_PATH_GBPS:g} Gb/s per path at once", "#2e7d32",
                          ":"))
        for value, text, colour, style in lines:
            axes.hlines(value, i - 0.46, i + 0.46, colors=colour, linestyles=style, linewidth=1.4, zorder=4,
                        label="_nolegend_" if text in drawn else text)
            drawn.add(text)


def _rule_bands(axes: Any, groups: list[_Group], outcome: Outcome) -> None:
    """Without an acceptance, the rules' bands behind the bars: the hot-plug state per path, one PCIe path in total."""
    band = threshold(outcome, "LINK_HOTPLUG_DEGRADED", "degraded_max_gbps")
    low = threshold(outcome, "LINK_HOTPLUG_DEGRADED", "degraded_min_gbps") or 0.0
    paths = [i for i, g in enumerate(groups) if g.kind != "total"]
    if band is not None and paths:
        axes.fill_between([min(paths) - 0.5, max(paths) + 0.5], low, band, color="#c62828", alpha=0.08, zorder=0,
                          linewidth=0, label=f"LINK_HOTPLUG_DEGRADED: {low:g}-{band:g} per path")
    one_low = threshold(outcome, "SINGLE_PCIE_PATH", "single_path_total_min_gbps")
    one_high = threshold(outcome, "SINGLE_PCIE_PATH", "single_path_total_max_gbps")
    total = next((i for i, g in enumerate(groups) if g.kind == "total"), None)
    if one_low is not None and one_high is not None and total is not None:
        axes.fill_between([total - 0.5, total + 0.5], one_low, one_high, color="#c62828", alpha=0.08, zorder=0,
                          linewidth=0, label=f"SINGLE_PCIE_PATH: {one_low:g}-{one_high:g} in total")


def throughput_svg(outcome: Outcome) -> str | None:
    """Per path a->b and b->a, alone and with both paths at once, and the concurrent total: bars at the median of
    the repetitions with min-max whiskers, each labelled with its value; against the floors the verdict used (the
    acceptance's checks, or the throughput rules') and the published ~98 / ~196 Gb/s."""
    groups = _groups(outcome)
    if not groups:
        return None
    highest = max((v for g in groups for vs in g.samples.values() for v in vs), default=0.0)
    top = max(PUBLISHED_TOTAL_GBPS if any(g.kind == "total" for g in groups) else 120.0, highest) * 1.12
    figure = Figure(figsize=(max(6.5, 1.45 * len(groups) + 2.5), 4.4))
    axes = figure.add_subplot()
    _bars(axes, groups, top)
    whose, floors = _floors(outcome)
    _lines(axes, groups, floors)
    if whose == "rules":
        _rule_bands(axes, groups, outcome)
    axes.set_xticks(range(len(groups)), [g.label for g in groups], fontsize=7)  # each part made safe
    axes.set_xlim(-0.6, len(groups) - 0.4)
    axes.set_ylim(0, top)
    axes.set_ylabel("Gb/s")
    reps = max((len(vs) for g in groups if g.kind != "total" for vs in g.samples.values()), default=1)
    axes.set_title("ib_write_bw per path and both paths at once" + (
        f" (median of {reps} repetitions, whiskers min-max)" if reps > 1 else ""), fontsize=9)
    axes.grid(axis="y", color="#e5e5e5", zorder=0)
    axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), title=f"floors: {whose}",
                title_fontsize=7)
    return _svg(figure)


def _nccl_rows(outcome: Outcome) -> tuple[NcclTestRow, ...]:
    capture = next((c for c in outcome.bundle.captures if pair_job(c) and c.spec != "nccl_log"
                    and c.meta.get("format") != "json" and c.ok), None)
    if capture is None:
        return ()
    try:
        return parse_nccl_tests(capture.stdout).rows
    except ParseError:
        return ()


def _nccl_floor(outcome: Outcome) -> tuple[float, str] | None:
    """The line that judged the collective's bus bandwidth, labelled: the acceptance's nccl_busbw_gbs check's
    deciding line, else NCCL_BUSBW_LOW's: its fail line when it failed, else its warning line (the one a pass
    cleared and a warning missed)."""
    doc = acceptance(outcome)
    if doc is not None and "problem" not in doc:
        check = next((c for c in doc.get("checks", []) if isinstance(c, dict) and c.get("id") == "nccl_busbw_gbs"),
                     None)
        return None if check is None else _judged_by(check)
    finding = next((f for f in outcome.diagnosis.findings if f.rule_id == "NCCL_BUSBW_LOW"), None)
    failed = finding is not None and finding.status is Status.FAIL
    value = threshold(outcome, "NCCL_BUSBW_LOW", "fail_below_busbw_gbs" if failed else "min_busbw_gbs")
    if value is None:
        return None
    return value, f"NCCL_BUSBW_LOW: {'fail' if failed else 'warn'} below {value:g}"


def nccl_svg(outcome: Outcome) -> str | None:
    """all_gather bus bandwidth by message size, against the line that judged it (`_nccl_floor`)."""
    rows = [r for r in _nccl_rows(outcome) if r.size_bytes > 0 and r.oop_busbw_gbs is not None]
    if not rows:
        return None
    figure = Figure(figsize=(8, 3.2))
    axes = figure.add_subplot()
    axes.plot([r.size_bytes for r in rows], [r.oop_busbw_gbs or 0.0 for r in rows], marker="o", color="#3b6ea5",
              label="bus bandwidth (out of place)")
    floor = _nccl_floor(outcome)
    if floor is not None:
        value, text = floor
        axes.axhline(value, color="#c62828" if ": fail " in text else "#b26a00", linestyle="--",
                     label=f"{_label(text)} GB/s")
    axes.axvline(1 << 30, color="#777777", linestyle=":", label="1 GiB: judged from here")
    axes.set_xscale("log", base=2)
    axes.set_ylim(bottom=0)
    axes.set_xlabel("message size (bytes)")
    axes.set_ylabel("GB/s")
    axes.set_title("NCCL all_gather bus bandwidth by size")
    axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _svg(figure)


def _until(outcome: Outcome) -> dt.datetime | None:
    """When the report's own bundle was collected: the trend ends there (a report of an old run shows no later
    ones); None when the bundle does not say."""
    try:
        created = dt.datetime.fromisoformat(outcome.bundle.created)
    except ValueError:
        return None
    return created if created.tzinfo else created.replace(tzinfo=dt.timezone.utc)


# The times a trend plots: a record may claim any date (year 1, year 9999), and matplotlib refuses an axis whose
# margins reach past its years 1-9999; no run predates the epoch.
_PLOTTED = (dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc), dt.datetime(9000, 1, 1, tzinfo=dt.timezone.utc))


TREND_RUNS = 2000  # the newest runs a trend plots: a year of a 5-minute timer is ~105,000, unreadable as points


def _history(outcome: Outcome) -> list[tuple[Any, float | None, float | None, str]]:
    """(when, lowest concurrent total Gb/s, NCCL GB/s, verdict) per run of this pair's history up to the report's
    own run, oldest first."""
    path = history_dir() / f"{pair_id(pair_key(outcome.link))}.jsonl"
    if not path.is_file():
        return []
    try:
        records = read_records(path, last=TREND_RUNS)
    except HistoryError:
        return []  # `linkcheck history` names the bad line; the report keeps its other plots
    out = []
    until = _until(outcome)
    for record in records:
        when = when_of(record)
        if (until is not None and when > until) or not _PLOTTED[0] <= when < _PLOTTED[1]:
            continue
        totals = [float(t) for t in (record.get("concurrent_total_gbps") or {}).values()]
        busbw = record.get("nccl_busbw_gbs")
        out.append((when, min(totals) if totals else None,
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
    axes.set_ylim(0, max([PUBLISHED_TOTAL_GBPS, *(t for _, t in rdma)]) * 1.1)  # the top points not cut in half
    axes.set_ylabel("Gb/s")
    axes.set_title("This pair over time (linkcheck history, up to this report's run)")
    if rdma:  # a legend with no labelled line is an empty box, and matplotlib warns on stderr
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

"""The throughput plot tells the 200G story: per path a->b and b->a, alone and with both paths at once, and the
concurrent total, each bar labelled, against the floors the verdict used and the published 98.01 / 196.02 Gb/s;
repetitions drawn as one bar (median) with min-max whiskers; the trend ends at the report's own run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from linkcheck.app.offline import diagnose_bundle
from linkcheck.baseline.history import append_run
from tests.baseline.test_history import dated

pytest.importorskip("matplotlib")

from linkcheck.report.html_plots import throughput_svg  # needs matplotlib: after importorskip

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"


def _texts(svg: str) -> list[str]:
    return [t.replace("&gt;", ">") for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg)]


def test_the_plot_has_the_total_bar_and_the_published_lines() -> None:
    texts = _texts(throughput_svg(diagnose_bundle(FIXTURES / "healthy")) or "")
    assert "at once (total)" in texts and texts.count("196.1") == 2  # the total bars, labelled, both directions
    assert "published 98.01 Gb/s per path at once" in texts and "published 196.02 Gb/s total" in texts
    assert {"98.0", "98.1", "108.9", "109.3"} <= set(texts)  # each path's bars, alone and concurrent
    assert texts.count("alone") == 2 and texts.count("concurrent") == 2
    # Without an acceptance the floors are the rules' that judged the bundle, named.
    assert "floors: rules" in texts and "LINK_BELOW_NOMINAL: a path's best below 80" in texts


def test_a_single_pcie_path_total_sits_far_below_196() -> None:
    texts = _texts(throughput_svg(diagnose_bundle(FIXTURES / "single-pcie-path")) or "")
    assert "95.3" in texts and "SINGLE_PCIE_PATH: 85-120 in total" in texts and "published 196.02 Gb/s total" in texts


def test_an_acceptance_draws_its_own_floors_and_repetitions_as_one_bar() -> None:
    outcome = diagnose_bundle(FIXTURES / "accept-pass")
    reps = {r.round_id for r in outcome.link.bench.rdma}
    assert len(reps) > 6  # a live bundle: each round and repetition apart
    texts = _texts(throughput_svg(outcome) or "")
    assert "floors: acceptance (dgx-spark-pair)" in texts
    assert {"rdma_alone_gbps: fail below 92", "rdma_concurrent_gbps: fail below 90",
            "rdma_concurrent_total_gbps: fail below 185"} <= set(texts)
    assert not any("LINK_BELOW_NOMINAL" in t for t in texts)  # not what judged this run
    assert texts.count("alone") == 2 and texts.count("concurrent") == 2 and texts.count("at once (total)") == 1
    assert any("median of 2 repetitions" in t for t in texts)


def test_the_failed_acceptance_shows_13_gbps_against_its_floors() -> None:
    texts = _texts(throughput_svg(diagnose_bundle(FIXTURES / "accept-fail")) or "")
    labels = [float(t.split()[0]) for t in texts if re.fullmatch(r"\d+\.\d", t)]
    assert labels and all(12 < v < 14 for v in labels if v < 20) and any(25 < v < 28 for v in labels)
    assert "rdma_concurrent_total_gbps: fail below 185" in texts


def test_the_trend_stops_at_the_reports_own_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from linkcheck.report.html import render_html

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    bundles = []
    for n, (created, factor) in enumerate((("2026-11-01T08:00:00+00:00", 1.0), ("2026-11-08T08:00:00+00:00", 0.93),
                                           ("2026-11-15T08:00:00+00:00", 0.89))):
        bundles.append(dated(FIXTURES / "healthy", tmp_path / f"r{n}", created, factor))
        append_run(diagnose_bundle(bundles[-1]), "check", None)
    first, second, last = (render_html(diagnose_bundle(b)) for b in bundles)
    assert "This pair over time" not in first  # no run before it: nothing to trend
    assert "This pair over time" in second and "This pair over time" in last

    def points(page: str) -> list[int]:
        """The markers of each series (the data, drawn clipped to the axes; ticks are not)."""
        start = page.index("This pair over time")
        svg = page[page.rindex("<svg", 0, start):page.index("</svg>", start)]
        return [g.count("<use") for g in re.findall(r'<g clip-path="url\(#[^)]*\)">(.*?)</g>', svg, re.S)]

    assert points(second) == [2, 2] and points(last) == [3, 3]  # the runs after the report's own are left out


def _nccl_texts(name: str) -> list[str]:
    from linkcheck.report.html_plots import nccl_svg

    return _texts(nccl_svg(diagnose_bundle(FIXTURES / name)) or "")


def test_the_nccl_plot_draws_the_line_that_judged_not_the_warning_line_beside_it() -> None:
    # 3.02 GB/s missed the fail line (8): that line is drawn, not the warning line (21.65) above it.
    texts = _nccl_texts("accept-fail")
    assert "nccl_busbw_gbs: fail below 8 GB/s" in texts and not any("21.65" in t for t in texts)
    # A pass cleared the tightest line, the warning line: that one is drawn.
    texts = _nccl_texts("accept-pass")
    assert "nccl_busbw_gbs: degraded below 21.65 GB/s" in texts and not any("below 8 " in t for t in texts)
    # Without an acceptance the rule's lines: the fail line where NCCL_BUSBW_LOW failed, else its warning line.
    texts = _nccl_texts("nccl-socket-fallback")
    assert any(t.startswith("NCCL_BUSBW_LOW: fail below ") for t in texts), texts
    texts = _nccl_texts("healthy")
    assert any(t.startswith("NCCL_BUSBW_LOW: warn below ") for t in texts), texts

"""The HTML report plots the pair's trend once its history holds runs, and leaves it out before."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from linkcheck.app.offline import diagnose_bundle
from linkcheck.baseline.history import append_run
from linkcheck.bundle.format import load_bundle
from tests.baseline.test_history import FIXTURES, dated

pytest.importorskip("matplotlib")


@pytest.fixture(autouse=True)
def data_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "xdg-data"
    monkeypatch.setenv("XDG_DATA_HOME", str(home))
    return home


def _html(bundle: Path) -> str:
    from linkcheck.report.html import render_html

    return render_html(diagnose_bundle(bundle))


def test_no_history_no_trend() -> None:
    assert "This pair over time" not in _html(FIXTURES / "healthy")


def test_three_runs_of_the_pair_draw_the_trend(tmp_path: Path) -> None:
    for n, (created, factor) in enumerate((("2026-11-01T08:00:00+00:00", 1.0), ("2026-11-08T08:00:00+00:00", 0.93),
                                           ("2026-11-15T08:00:00+00:00", 0.89))):
        bundle = dated(FIXTURES / "healthy", tmp_path / f"r{n}", created, factor)
        assert load_bundle(bundle).created == created
        append_run(diagnose_bundle(bundle), "check", None)
    page = _html(FIXTURES / "healthy")
    start = page.index("This pair over time")
    svg = page[page.rindex("<svg", 0, start):page.index("</svg>", start)]
    assert svg.count("<path") > 3  # the two series and their markers, not an empty frame
    assert "<script" not in page


def test_a_history_without_traffic_draws_no_empty_legend(tmp_path: Path) -> None:
    """Runs that sent no traffic (an inspection) give no line to label: no legend, and no warning on stderr."""
    for n, created in enumerate(("2026-11-01T08:00:00+00:00", "2026-11-08T08:00:00+00:00")):
        bundle = dated(FIXTURES / "containers-lab", tmp_path / f"r{n}", created, 1.0)
        append_run(diagnose_bundle(bundle), "check", None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        page = _html(FIXTURES / "containers-lab")
    assert "This pair over time" in page

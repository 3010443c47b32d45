"""The latency section of the Markdown and HTML reports: only where the bundle has latency runs, every figure
labelled measured beside the published healthy one."""

from __future__ import annotations

from pathlib import Path

import pytest

from linkcheck.app.offline import diagnose_bundle
from linkcheck.report.html import render_html
from linkcheck.report.markdown import render_markdown

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def test_a_bundle_with_latency_runs_shows_each_measured_figure_beside_the_published_one() -> None:
    outcome = diagnose_bundle(FIXTURES / "healthy-latency")
    text = render_markdown(outcome)
    section = text.split("## Latency", 1)[1].split("## Findings", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "measured" in line]
    assert len(rows) == 4 + 3, section  # 2 paths x 2 sizes, 3 all_reduce sizes
    assert all("measured: this bundle" in row for row in rows)
    assert "| 8\\.8 us (99%: 9\\.33 us) |" in section and "68 us (NVIDIA/dgx-spark-playbooks#103)" in section
    page = render_html(outcome)
    assert "<h2>Latency</h2>" in page and page.count("measured: this bundle") == 7


def test_the_hotplug_states_slow_figures_show_as_measured() -> None:
    outcome = diagnose_bundle(FIXTURES / "hotplug-latency")
    section = render_markdown(outcome).split("## Latency", 1)[1]
    assert "30\\.9 us" in section and "129\\.2 us" in section, section


@pytest.mark.parametrize("fixture", ["healthy", "hotplug-degraded", "accept-pass"])
def test_a_bundle_without_latency_runs_has_no_latency_section(fixture: str) -> None:
    outcome = diagnose_bundle(FIXTURES / fixture)
    assert "## Latency" not in render_markdown(outcome)
    assert "<h2>Latency</h2>" not in render_html(outcome)

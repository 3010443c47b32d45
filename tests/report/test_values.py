"""Values as engineers write them: every fixture in every human format holds no Python repr, no None/True/False
for a missing or yes/no value, no float noise; Prometheus samples are exact."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from linkcheck.app.offline import diagnose_bundle
from linkcheck.config import load_config
from linkcheck.model import Evidence
from linkcheck.outcome import Outcome
from linkcheck.report.console import print_report
from linkcheck.report.formats import renderer
from linkcheck.report.prometheus import render_prometheus
from linkcheck.values import evidence_line, number, plain_number, signed, text
from tests.fixture_bundles import PAIR_BUNDLES

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = PAIR_BUNDLES

BAD = {
    "dict repr": re.compile(r"\{'"),
    "list repr": re.compile(r"\['"),
    "None": re.compile(r"\bNone\b"),
    "True/False": re.compile(r"\b(True|False)\b"),
    "float noise": re.compile(r"\d\.\d{5,}"),
    "quoted repr": re.compile(r"= '[^']*'"),
}
FEC_NONE = re.compile(r"FEC\b.*\bNone\b")  # ethtool's own word for FEC off: `active FEC ... = None`, `FEC None`
# The HTML page's inline SVG plots and CSS are drawn coordinates and styles, not values.
HTML_NOT_TEXT = re.compile(r"<svg.*?</svg>|<style>.*?</style>", re.S)


def _outcome(fixture: Path) -> Outcome:
    config = fixture / "linkcheck.yaml"
    return diagnose_bundle(fixture, None, load_config(config) if config.is_file() else None)


def _console(outcome: Outcome) -> str:
    out = io.StringIO()
    print_report(outcome, Console(file=out, width=80, color_system=None), show_all=True)
    return out.getvalue()


def _problems(rendered: str) -> list[str]:
    found = []
    for line in rendered.splitlines():
        for what, pattern in BAD.items():
            if pattern.search(line) and not (what == "None" and FEC_NONE.search(line)):
                found.append(f"{what}: {line.strip()}")
    return found


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda p: p.name)
def test_no_repr_no_none_no_noise_in_any_human_format(fixture: Path) -> None:
    outcome = _outcome(fixture)
    rendered = {"console": _console(outcome), "markdown": renderer("markdown")(outcome),
                "html": HTML_NOT_TEXT.sub("", renderer("html")(outcome)), "junit": renderer("junit")(outcome)}
    problems = {name: _problems(text) for name, text in rendered.items()}
    assert not any(problems.values()), problems


def test_values_read_as_an_engineer_writes_them() -> None:
    assert evidence_line(Evidence("concurrent a->b path 0", 48.10002661376001, "ib_write_bw")) == \
        "concurrent a->b path 0 = 48.10 Gb/s  [ib_write_bw]"
    assert evidence_line(Evidence("ib_write_bw alone a->b", 108.87, "Gb/s")) == "ib_write_bw alone a->b = 108.87 Gb/s"
    assert evidence_line(Evidence("PCIe", ["32.0 GT/s x4", "32.0 GT/s x4"], "sysfs")) == \
        "PCIe = 32 GT/s x4 (both)  [sysfs]"
    assert evidence_line(Evidence("link speed", [200000, 200000], "ethtool Mb/s")) == \
        "link speed = 200 Gb/s (both)  [ethtool]"
    assert evidence_line(Evidence("GID index", {"baseline": 3, "now": 4}, "baseline b")) == \
        "GID index = 3 -> 4  [baseline b]"
    assert evidence_line(Evidence("NCCL_IB_GID_INDEX", None, "not set")) == "NCCL_IB_GID_INDEX = unset"
    assert evidence_line(Evidence("active FEC of a:x", "RS", "ethtool --show-fec")) == \
        "active FEC of a:x = RS  [ethtool --show-fec]"
    assert evidence_line(Evidence("largest message", 17179869184, "bytes")) == "largest message = 16 GiB"
    assert evidence_line(Evidence("x carrier", True, "sysfs")) == "x carrier = yes  [sysfs]"
    assert text(["a", "b"]) == "a, b" and text([]) == "(none)" and text("") == '""'
    assert plain_number(26.560000000000002) == "26.56" and number(26.560000000000002) == "26.56"
    assert signed(-0.25) == "-0.25" and signed(1.5) == "+1.5" and signed(3) == "+3"


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda p: p.name)
def test_prometheus_samples_are_exact(fixture: Path) -> None:
    """Each sample reads back as the same float, and a rate written with two decimals in Gb/s is a whole number of
    bytes per second (26.56 Gb/s: 3320000000, never 3320000000.0000005)."""
    for line in render_prometheus(_outcome(fixture)).splitlines():
        if line.startswith("linkcheck_") and not line.endswith(("NaN", "Inf")):
            value = line.rsplit(" ", 1)[1]
            assert value in (repr(float(value)), str(int(float(value)))), line


def test_a_concurrent_total_in_prometheus_has_no_float_noise() -> None:
    text = render_prometheus(_outcome(ROOT / "fixtures" / "hotplug-degraded"))
    totals = [line for line in text.splitlines() if line.startswith("linkcheck_rdma_concurrent_total")]
    assert totals and all(re.search(r" \d+$", line) for line in totals), totals

"""The HTML report: self-contained (no script, no remote URL), node text escaped, and it renders in Chromium."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest
from msgspec.structs import replace

from linkcheck.app.offline import diagnose_bundle
from linkcheck.bundle.format import load_bundle, write_bundle
from linkcheck.outcome import Outcome
from linkcheck.report import html_plots
from linkcheck.report.html import render_html
from tests.fixture_bundles import PAIR_BUNDLES

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = PAIR_BUNDLES
HOSTILE = '<script>alert(1)</script>"\'&<img src=https://evil.example/x.png onerror=alert(2)>$x^2$'
_URL_ATTRS = {"src", "href", "xlink:href", "action", "poster", "data", "srcset", "background"}


class _Tags(HTMLParser):
    """Every element and attribute the browser would see (escaped text stays text)."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))


def _self_contained(page: str) -> None:
    parser = _Tags()
    parser.feed(page)
    names = {tag for tag, _ in parser.tags}
    assert not names & {"script", "link", "iframe", "object", "embed", "img"}, names
    for tag, attrs in parser.tags:
        for name, value in attrs:
            assert not name.startswith("on"), (tag, name)
            if name in _URL_ATTRS:
                assert (value or "").startswith("#"), (tag, name, value)
            assert not re.search(r"url\(\s*['\"]?(?!#)", value or ""), (tag, name, value)
    styles = re.findall(r"<style>(.*?)</style>", page, re.S)
    assert styles and not any("url(" in css or "@import" in css for css in styles)


def _hostile_bundle(tmp_path: Path) -> Path:
    bundle = load_bundle(ROOT / "fixtures" / "healthy")
    captures = []
    for cap in bundle.captures:
        if cap.spec == "hostname" and cap.node == "a":
            cap = replace(cap, stdout=HOSTILE + "\n")
        elif cap.spec == "ethtool_m" and "Amphenol" in cap.stdout:
            cap = replace(cap, stdout=cap.stdout.replace("Amphenol", HOSTILE))
        captures.append(cap)
    target = tmp_path / "hostile"
    write_bundle(replace(bundle, captures=captures, created="", path=None), target)
    return target


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda p: p.name)
def test_every_fixture_renders_self_contained(fixture: Path) -> None:
    page = render_html(diagnose_bundle(fixture))
    _self_contained(page)
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")


def test_node_text_is_escaped(tmp_path: Path) -> None:
    outcome = diagnose_bundle(_hostile_bundle(tmp_path))
    assert outcome.link.a.hostname == HOSTILE
    page = render_html(outcome)
    _self_contained(page)
    assert "evil.example" in page  # shown, as text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#x27;&amp;&lt;img src=https://evil.example" in page
    assert page.count("&lt;script&gt;alert(1)") >= 2  # the hostname and the cable vendor


@pytest.mark.skipif(not html_plots.have_matplotlib(), reason="matplotlib (linkcheck[html]) is not installed")
def test_plots_are_inline_svg() -> None:
    outcome = diagnose_bundle(ROOT / "fixtures" / "healthy")
    page = render_html(outcome)
    assert page.count("<svg") == 2 and "<?xml" not in page and "<!DOCTYPE svg" not in page
    assert "ib_write_bw per path" in page and "NCCL all_gather bus bandwidth by size" in page
    assert "LINK_BELOW_NOMINAL: a path's best below 80" in page and "NCCL_BUSBW_LOW: warn below 21.65 GB/s" in page


def test_without_matplotlib_the_page_has_tables_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(html_plots, "have_matplotlib", lambda: False)
    page = render_html(diagnose_bundle(ROOT / "fixtures" / "healthy"))
    assert "<svg" not in page and "pip install linkcheck[html]" in page and "<table>" in page
    _self_contained(page)


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("chromium-headless-shell")


def _screenshot(browser: str, page: Path, png: Path) -> bytes:
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--window-size=1200,1600", f"--screenshot={png}", page.as_uri()],
                   capture_output=True, timeout=120, check=False)
    assert png.is_file(), "chromium wrote no screenshot"
    return png.read_bytes()


def _pixel_bytes(png: bytes) -> bytes:
    """The PNG's decompressed image data (scanline filter bytes included), from its IDAT chunks."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    data, offset = b"", 8
    while offset < len(png):
        (length,), kind = struct.unpack(">I", png[offset:offset + 4]), png[offset + 4:offset + 8]
        if kind == b"IDAT":
            data += png[offset + 8:offset + 8 + length]
        offset += 12 + length
    return zlib.decompress(data)


@pytest.mark.skipif(_chromium() is None, reason="chromium is not installed (Debian: apt-get install chromium)")
def test_renders_in_headless_chromium(tmp_path: Path) -> None:
    browser = _chromium()
    assert browser is not None
    outcome: Outcome = diagnose_bundle(ROOT / "fixtures" / "single-pcie-path")
    page = tmp_path / "report.html"
    page.write_text(render_html(outcome), encoding="utf-8")
    blank = tmp_path / "blank.html"
    blank.write_text("<!DOCTYPE html><html><body></body></html>", encoding="utf-8")
    shot = _screenshot(browser, page, tmp_path / "report.png")
    empty = _screenshot(browser, blank, tmp_path / "blank.png")
    shutil.copy(tmp_path / "report.png", Path("/tmp") / "linkcheck-report-screenshot.png")
    # A blank page is one colour: its image data holds a handful of byte values and compresses to almost nothing.
    assert len(set(_pixel_bytes(empty))) <= 4
    assert len(set(_pixel_bytes(shot))) > 64
    assert len(shot) > 10 * len(empty)

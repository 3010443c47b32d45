"""The HTML reports as a browser lays them out (headless Chromium, 1280 x 900, the first screen): the summary box
opens the page, and where the bundle names a cause, the cause with its fix lies within the first screen. Each page's
screenshot is kept beside the test's files (`first-screen.png`), to look at. The test adds a measuring script to its
own copy of the page (the report has none); Chromium runs it and the DOM it dumps carries the measures."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from linkcheck.app.offline import diagnose_bundle
from linkcheck.report.html import render_html
from tests.cluster import cluster_checks as cc
from tests.lab.cluster import ring3

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
SCREEN = (1280, 900)
MEASURE = """<script>
const box = (el) => el ? el.getBoundingClientRect() : null;
const summary = box(document.querySelector("section.summary"));
const fix = box(document.querySelector("section.summary .cause pre.fix"));
const cause = box(document.querySelector("section.summary .cause"));
const out = document.createElement("pre"); out.id = "measure"; out.hidden = true;  // the screen stays the page's
out.textContent = JSON.stringify({summary_top: summary && summary.top, summary_bottom: summary && summary.bottom,
  cause_top: cause && cause.top, fix_bottom: fix && fix.bottom, height: document.documentElement.scrollHeight});
document.body.appendChild(out);
</script>"""

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")


def _chromium(*args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           f"--window-size={SCREEN[0]},{SCREEN[1]}", *args], capture_output=True, text=True,
                          timeout=120, check=False)


def _measured(page: str, folder: Path) -> dict[str, float | None]:
    """Lay the page out in Chromium: its screenshot kept in `folder`, the measures of the summary box returned.
    One start of Chromium takes both (a start costs seconds); the measures are hidden, so the screen is the page's."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "measured.html").write_text(page.replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    dumped = _chromium(f"--screenshot={folder / 'first-screen.png'}", "--dump-dom", "--virtual-time-budget=2000",
                       (folder / "measured.html").as_uri())
    assert (folder / "first-screen.png").stat().st_size > 0, dumped.stderr[-2000:]
    found = re.search(r'<pre id="measure"[^>]*>(.*?)</pre>', dumped.stdout, flags=re.S)
    assert found is not None, dumped.stderr[-2000:]
    return json.loads(found.group(1).replace("&quot;", '"'))


def _pair(name: str) -> str:
    return render_html(diagnose_bundle(ROOT / "fixtures" / name))


@pytest.mark.parametrize("name", ["accept-fail", "hotplug-degraded"])
def test_the_cause_and_its_fix_are_on_the_first_screen(name: str, tmp_path: Path) -> None:
    got = _measured(_pair(name), tmp_path / name)
    assert got["summary_top"] is not None and got["fix_bottom"] is not None, got
    assert got["summary_top"] < 300 and got["fix_bottom"] <= SCREEN[1], got
    page = _pair(name)
    assert "LINK_HOTPLUG_DEGRADED" in page[:page.index("</section>")]
    assert "sudo systemctl reboot --no-block" in page[:page.index("</section>")]


def test_a_healthy_page_opens_with_its_summary(tmp_path: Path) -> None:
    got = _measured(_pair("healthy"), tmp_path / "healthy")
    assert got["summary_top"] is not None and got["summary_bottom"] is not None, got
    assert got["summary_bottom"] <= SCREEN[1] and got["cause_top"] is None, got


def test_a_clusters_page_opens_with_its_summary(tmp_path: Path) -> None:
    check = cc.checked(ring3(), lambda t: cc.HOTPLUG if t.label == "a:p0<->b:p1" else cc.HEALTHY)
    got = _measured(render_html(check), tmp_path / "cluster")
    assert got["summary_top"] is not None and got["summary_top"] < 300, got
    assert got["cause_top"] is not None and got["cause_top"] < SCREEN[1], got


def test_the_printed_first_page_holds_the_cause_and_its_fix(tmp_path: Path) -> None:
    """`report fixtures/accept-fail -f html` printed to PDF by Chromium: page 1 names the cause and carries its fix."""
    pypdf = pytest.importorskip("pypdf")
    page = tmp_path / "report.html"
    page.write_text(_pair("accept-fail"), encoding="utf-8")
    pdf = tmp_path / "report.pdf"
    printed = _chromium(f"--print-to-pdf={pdf}", "--no-pdf-header-footer", page.as_uri())
    assert pdf.is_file() and pdf.stat().st_size > 0, printed.stderr[-2000:]
    reader = pypdf.PdfReader(pdf)
    first = " ".join(reader.pages[0].extract_text().split())
    assert len(reader.pages) > 1  # the whole report does not fit one page: page 1 is what was chosen for it
    assert "LINK_HOTPLUG_DEGRADED" in first and "sudo systemctl reboot --no-block" in first, first[:3000]
    assert "linkcheck check --bench" in first and "ACCEPTANCE: FAIL" in first, first[:3000]

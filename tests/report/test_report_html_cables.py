"""A cluster check's HTML page: self-contained, the N x N heatmap coloured by what each total means (healthy, the
hot-plug state, one shared PCIe link told apart), a legend, empty cells for pairs no test joined, and node text
escaped whatever the names hold."""

from __future__ import annotations

import re
from html import unescape
from html.parser import HTMLParser

import pytest
from msgspec.structs import replace

from linkcheck.cluster.cables import cable_tests
from linkcheck.cluster.schedule import schedule
from linkcheck.report.html import HEALTHY, HOTPLUG, LEGEND, LOW, NOMINAL, NOTHING, ONE_PCIE, band, render_html
from tests.cluster import cluster_checks as cc
from tests.lab.cluster import ring4, switch_by_cage
from tests.report.test_report_html import _self_contained

# Markup, a script, quotes, an ampersand, an OSC title, a C1 control, a bidi override and an isolate.
HOSTILE = ['<script>alert(1)</script>', 'x"onmouseover="alert(2)', "a'b&amp;c<img src=https://evil.example/i.png>",
           "t\x1b]2;owned\x07\x9b31m", "\u202eevil\u2066iso\u2069"]
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


class _Cells(HTMLParser):
    """The heatmap's cells, row by row: (class, text)."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[tuple[str, str]]] = []
        self._in_map = False
        self._cell: list[str] | None = None
        self._class = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table" and ("class", "heatmap") in attrs:
            self._in_map = True
        elif self._in_map and tag == "tr":
            self.rows.append([])
        elif self._in_map and tag == "td":
            self._cell, self._class = [], dict(attrs).get("class") or ""

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._in_map = False
        elif tag == "td" and self._cell is not None:
            self.rows[-1].append((self._class, "".join(self._cell)))
            self._cell = None


def heatmap(page: str) -> list[list[tuple[str, str]]]:
    parser = _Cells()
    parser.feed(page)
    return [row for row in parser.rows if row]


def test_the_bands_tell_the_healthy_total_the_hot_plug_state_and_one_pcie_link_apart() -> None:
    assert band(196.02) is HEALTHY and band(180.0) is HEALTHY
    assert band(170.0) is NOMINAL
    assert band(95.2) is ONE_PCIE and band(140.0) is LOW and band(70.0) is LOW
    assert band(26.6) is HOTPLUG and band(30.0) is HOTPLUG  # 13-15 Gb/s per twin, both at once
    assert band(3.0) is NOTHING and band(0.0) is NOTHING
    colours = {b.background for b in (HEALTHY, ONE_PCIE, HOTPLUG, LOW)}
    assert len(colours) == 4


def test_a_healthy_switch_of_four_is_all_green_with_the_diagonal_marked() -> None:
    page = render_html(cc.switch())
    _self_contained(page)
    rows = heatmap(page)
    assert len(rows) == 4 and all(len(r) == 4 for r in rows)
    for i, row in enumerate(rows):
        for j, (cls, text) in enumerate(row):
            assert (cls, text) == ("self", "-") if i == j else (cls, text) == ("cell healthy", "196.02")
    assert 'class="verdict pass"' in page and "PASS, exit 0" in page
    for b in LEGEND:  # every colour is explained
        assert f'<span class="swatch {b.css}">' in page and b.meaning.replace("'", "&#x27;") in page


def test_node_c_slow_with_every_partner_lights_its_row_and_column_and_is_named() -> None:
    page = render_html(cc.switch(rates=cc.slow_node("c")))
    rows = dict(zip("abcd", heatmap(page), strict=True))
    for src, row in rows.items():
        for dst, (cls, text) in zip("abcd", row, strict=True):
            if src == dst:
                assert cls == "self"
            elif "c" in (src, dst):
                assert (cls, text) == ("cell hotplug", "26.60")
            else:
                assert cls == "cell healthy"
    assert "NODE_SLOW_WITH_EVERY_PARTNER</code> node c" in page
    # The tests c was in say why they are slow, and point at the node's fix instead of rebooting each partner.
    assert page.count("Explained by <code>NODE_SLOW_WITH_EVERY_PARTNER</code> (node c)") == 4
    assert "4 (2nd pass)" in page
    assert 'class="verdict fail"' in page


def test_one_pcie_link_and_the_hot_plug_state_have_their_own_colours_in_one_page() -> None:
    rates = {frozenset("ab"): cc.ONE_PCIE, frozenset("cd"): cc.HOTPLUG}
    page = render_html(cc.switch(rates=lambda t: rates.get(frozenset(t.nodes), (98.01, 98.01))))
    rows = dict(zip("abcd", heatmap(page), strict=True))
    assert rows["a"][1] == ("cell one-pcie", "95.20") and rows["b"][0] == ("cell one-pcie", "95.20")
    assert rows["c"][3] == ("cell hotplug", "26.60") and rows["d"][2] == ("cell hotplug", "26.60")
    assert rows["a"][2] == ("cell healthy", "196.02")
    # The table of tests colours each direction as the matrix does and names the rule that fired.
    assert re.search(r'class="cell one-pcie"[^>]*>a-&gt;b: 95.20 Gb/s', page)
    assert "SINGLE_PCIE_PATH" in page and "LINK_HOTPLUG_DEGRADED" in page


def test_pairs_no_test_joined_are_empty_and_an_unmeasured_test_is_not() -> None:
    # A ring of four: a and c (b and d) share no cable, so no test joins them.
    page = render_html(cc.checked(ring4()))
    rows = dict(zip("abcd", heatmap(page), strict=True))
    assert rows["a"][2] == ("untested", "") and rows["c"][0] == ("untested", "")
    assert rows["b"][3] == ("untested", "") and rows["a"][1][0] == "cell healthy"
    # A test that could not be run is tested-but-no-number, never an empty cell or a colour of a rate.
    facts = cc.facts_of(ring4())
    tests = cable_tests(facts, schedule(facts.topology))
    results = [cc.not_measured(t, "node b was not inspected: timed out") if t.label == "a:p0<->b:p1"
               else cc.measured(t, 98.01, 98.01) for t in tests]
    page = render_html(cc.judged(facts, results, errors={"b": "timed out"}))
    rows = dict(zip("abcd", heatmap(page), strict=True))
    assert rows["a"][1] == ("cell no-number", "inconclusive") and rows["b"][0] == ("cell no-number", "inconclusive")
    assert "node b was not inspected: timed out" in page and 'class="verdict inconclusive"' in page


@pytest.mark.parametrize("hostile", HOSTILE)
def test_hostile_node_names_stay_text(hostile: str) -> None:
    names = {"a": "p1", hostile: "p1", "c": "p1", "d": "p1"}
    check = cc.checked(switch_by_cage(names), cc.slow_node(hostile))
    page = render_html(check)
    _self_contained(page)
    assert not RAW.search(page), repr(RAW.search(page))
    assert "<script>" not in page.split("<style>")[0] + page.split("</style>")[1]
    # The name is shown (its controls as visible escapes), in the matrix's heads, the table and the finding.
    visible = unescape(page)
    shown = hostile.translate({0x1b: "\\x1b", 0x07: "\\x07", 0x9b: "\\x9b", 0x202e: "\\u202e", 0x2066: "\\u2066",
                               0x2069: "\\u2069"})
    assert visible.count(shown) >= 8
    heads = re.findall(r"<th>(.*?)</th>", page.split('<table class="heatmap">')[1].split("</table>")[0])
    assert [unescape(x) for x in heads[1:5]] == ["a", shown, "c", "d"]
    assert f"NODE_SLOW_WITH_EVERY_PARTNER</code> node {shown}" in visible


def test_a_check_without_traffic_has_layout_and_findings_but_no_matrix() -> None:
    page = render_html(replace(cc.switch(), cables=()))
    _self_contained(page)
    assert 'class="heatmap"' not in page and "<h2>Layout</h2>" in page and "<h2>Cluster findings</h2>" in page

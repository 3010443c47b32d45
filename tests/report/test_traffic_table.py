"""The traffic table reads at a glance: one row per path, mode and direction over the repetitions (min / median / max
and the run count), the threshold beside the value with its source once under the table, the statistic that missed
the line marked, paths in the node table's order."""

from __future__ import annotations

import io
import re
from pathlib import Path

from rich.console import Console

from linkcheck.app.offline import diagnose_bundle
from linkcheck.report.console import bench_table
from linkcheck.report.html import render_html
from linkcheck.report.markdown import render_markdown
from linkcheck.report.tables import traffic_rows
from tests.accept.test_accept import _accept, _repeated

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def test_repetitions_are_one_row_with_min_median_max_and_the_line_that_judged(tmp_path: Path) -> None:
    outcome, doc = _accept(_repeated(tmp_path, {("alone.a->b.rocep1s0f1", 1): 80.0}))
    rows = traffic_rows(outcome, doc)
    keys = [(r.path, r.mode, r.direction) for r in rows]
    assert len(keys) == len(set(keys)) == 10  # 2 paths x 2 modes x 2 directions, then a total per direction
    slow = rows[0]
    assert (slow.path, slow.mode, slow.direction) == ("enp1s0f1np1<->enp1s0f1np1", "alone", "a->b")
    assert (slow.low, slow.median, slow.high, slow.runs) == ("80.00", "109.29", "109.29", "3")
    # The acceptance judged the lowest against 92: that cell is the one marked, the margin is against that line.
    assert (slow.threshold, slow.margin, slow.missed) == (">= 92 Gb/s", "-12", "min")
    assert slow.sources and all(r.missed is None for r in rows[1:])
    assert [r.mode for r in rows[-2:]] == ["total", "total"] and rows[-1].threshold == ">= 185 Gb/s"


def test_without_an_acceptance_the_row_is_read_against_the_rules_floor(tmp_path: Path) -> None:
    outcome, _ = _accept(_repeated(tmp_path, {("alone.a->b.rocep1s0f1", 1): 80.0}))
    slow = traffic_rows(outcome, None)[0]
    # LINK_BELOW_NOMINAL judges a path's best rate against nominal_min_gbps (playbooks/throughput.yaml): 80.
    assert slow.threshold == "best >= 80 Gb/s" and slow.margin == "+29.29"
    assert slow.missed is None and slow.sources and slow.sources[0].startswith("LINK_BELOW_NOMINAL: ")


def test_paths_follow_the_node_tables_slots_not_the_interface_names() -> None:
    outcome = diagnose_bundle(FIXTURES / "accept-fail")
    paths = list(dict.fromkeys(r.path for r in traffic_rows(outcome, None) if r.mode != "total"))
    # p1 / 0000 (enp1s0f1np1) before p1 / 0002 (enP2p1s0f1np1), as the Nodes table lists them; by name the upper
    # case P of enP2 would sort first.
    assert paths == ["enp1s0f1np1<->enp1s0f1np1", "enP2p1s0f1np1<->enP2p1s0f1np1"]
    assert sorted(paths) != paths


def test_every_writer_marks_the_missed_cell_and_lists_each_source_once() -> None:
    outcome = diagnose_bundle(FIXTURES / "accept-fail")
    markdown = render_markdown(outcome).split("## Traffic: ib_write_bw (Gb/s)")[1].split("\n## ")[0]
    table = [line for line in markdown.splitlines() if line.startswith("| ")]
    assert table[0] == "| path | mode | direction | min | median | max | runs | threshold | margin |"
    assert len(table) == 2 + 10 and all(re.search(r"\| \*\*\d+\\\.\d+\*\* \|", row) for row in table[2:])
    sources = re.findall(r"^\d+\. (.*)$", markdown.split("### Traffic threshold sources")[1], re.M)
    assert len(sources) == len(set(sources)) == 3 and "(#traffic-threshold-sources)" in table[2]

    page = render_html(outcome).split("<h2>Traffic: ib_write_bw (Gb/s)</h2>")[1].split("<h2>")[0]
    assert page.count('class="num miss"') == 10 and page.count('<li id="traffic-src-') == 3
    assert '<a href="#traffic-src-1">[1]</a>' in page

    out = io.StringIO()
    table_view = bench_table(outcome, None)
    assert table_view is not None
    Console(file=out, width=200, color_system=None).print(table_view)
    text = out.getvalue()
    # The console writes a path once for its rows and leaves the unit to the title.
    assert text.count("enp1s0f1np1 <-> enp1s0f1np1") == 1 and text.count("best >= 80 [1]") == 8
    assert "concurrent b->a" in text and "[1] LINK_BELOW_NOMINAL: spark-link" in text

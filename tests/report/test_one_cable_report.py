"""A pair checked as the cluster of its one cable (fixtures/cluster-pair-hotplug, two nodes named by a hostfile):
its reports are the pair's (fixtures/hotplug-degraded, the same fault): its paths' traffic and its findings, and no
N x N matrix or heatmap, which between two nodes would only repeat the cable's two directions; a ring of three keeps
them, with its tests. Every layout's Markdown and HTML reports have the nodes table, a column per node."""

from __future__ import annotations

from html import unescape
from typing import TYPE_CHECKING

import pytest

from tests.fixture_bundles import FIXTURE_DIR

if TYPE_CHECKING:
    from tests.conftest import InProcessCli

PAIR = FIXTURE_DIR / "cluster-pair-hotplug"
OWN = FIXTURE_DIR / "hotplug-degraded"  # the same pair, saved by its own run
RING = FIXTURE_DIR / "cluster-ring3-hotplug"
# What marks the matrix in each format, and what marks the per-test table.
MARKS = {"console": ("matrix (Gb/s", "tests (Gb/s"), "markdown": ("## Matrix", "## Tests"),
         "html": ('class="heatmap"', "LINK_HOTPLUG_DEGRADED")}


def _report(cli: InProcessCli, bundle: object, fmt: str) -> str:
    args = ("diagnose", str(bundle)) if fmt == "console" else ("report", str(bundle), "-f", fmt)
    run = cli(*args)
    assert run.returncode == 2, run.stdout + run.stderr  # both fail: a cable at the hot-plug rate
    return unescape(run.stdout).replace("\\", "")  # the label as written, whatever the format escapes


@pytest.mark.parametrize("fmt", sorted(MARKS))
def test_one_cable_has_the_pairs_report_and_no_matrix_while_a_ring_has_both(cli: InProcessCli, fmt: str) -> None:
    matrix, test = MARKS[fmt]
    pair, own, ring = _report(cli, PAIR, fmt), _report(cli, OWN, fmt), _report(cli, RING, fmt)
    assert matrix not in pair and "LINK_HOTPLUG_DEGRADED" in pair and "enP2p1s0f1np1<->enP2p1s0f1np1" in pair
    # The pair's own sections, in its order (the nodes' hostnames and the bundle's path aside).
    heads = ("Nodes", "Findings") if fmt != "console" else ("Nodes", "verdict: FAIL")
    for text in (pair, own):
        assert [text.index(h) for h in heads] == sorted(text.index(h) for h in heads)
    assert test in ring and matrix in ring


@pytest.mark.parametrize("fmt", ["markdown", "html"])
def test_a_clusters_report_has_the_pairs_nodes_table_a_column_per_node(cli: InProcessCli, fmt: str) -> None:
    """The nodes table a pair's report has, written once for N nodes: a column per node in the cluster's order, its
    identity, each twin slot, and every cable of its cabled cages (a ring's node has two, named by cage)."""
    ring, pair = _report(cli, RING, fmt), _report(cli, PAIR, fmt)
    heading = "## Nodes" if fmt == "markdown" else "<h2>Nodes</h2>"
    for text, heads in ((ring, ("a: spark-a", "b: spark-b", "c: spark-c")),
                        (pair, ("a: dgx-spark-1", "b: dgx-spark-2"))):
        table = text[text.index(heading):]
        assert [table.index(head) for head in heads] == sorted(table.index(head) for head in heads), heads
        assert "cage / domain" in table and "NCCL_IB_HCA" in table and "p1 / 0002" in table
    cables = ring[ring.index(heading):]
    assert "p0: Amphenol NJAAKK-N911 SN APF25090786480" in cables and "p1: Amphenol" in cables
    assert "p0: " not in pair[pair.index(heading):]  # one cabled cage: its cable alone, as a pair's report says it


def test_a_clusters_console_report_has_each_nodes_facts_a_block_per_node(cli: InProcessCli) -> None:
    """The console gives the same nodes table as one block per node (N columns would not fit a terminal), before
    the tests: each node's identity, each twin slot with its netdev and state, its cable and NCCL_IB_HCA. A pair's
    two columns fit: its table is the pair's (a column per node)."""
    ring, pair = _report(cli, RING, "console"), _report(cli, PAIR, "console")
    heads = ("a: spark-a", "b: spark-b", "c: spark-c")
    section = ring[ring.index("\nnodes:\n"):ring.index("tests (Gb/s")]
    starts = [section.index(f"\n{head}\n") for head in heads]
    assert starts == sorted(starts), heads
    for start, end in zip(starts, [*starts[1:], len(section)], strict=True):
        block = section[start:end]
        assert "  p1 / 0002" in block and "enP2p1s0f1np1 / roceP2p1s0f1" in block
        assert "  cable" in block and "  NCCL_IB_HCA" in block
    table = pair[pair.index("Nodes"):]
    assert table.index("a: dgx-spark-1") < table.index("b: dgx-spark-2") and "p1 / 0002" in table

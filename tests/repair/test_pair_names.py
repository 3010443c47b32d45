"""A pair's plan whatever its nodes are named: two nodes named `--node spark-1=...` or by a hostfile are the pair of
their one cable (judged_view gives its Outcome), and `fix` plans them as it plans nodes a and b: the same steps on the
same files, each step, finding, reason and note naming the node as the pair names it. A plan that named a and b
would be applied to nodes that are not there, and one that read files under a and b would find none."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from linkcheck.app.offline import cluster_bundle, configured_rules, diagnose_bundle
from linkcheck.outcome import Outcome, judged_view
from linkcheck.repair.saved import plan_for
from tests.fixture_bundles import FIXTURE_DIR, OTHER_NAMES, renamed_pair

NAMES = OTHER_NAMES


def _as_named(text: str) -> str:
    """The pair's words with its nodes as the renamed pair names them (`node a`, `a:enp1s0f0np0`)."""
    text = re.sub(r"(?<![\w-])node ([ab])(?![\w-])", lambda m: f"node {NAMES[m.group(1)]}", text)
    return re.sub(r"(?<![\w-])([ab]):(?=[\w])", lambda m: f"{NAMES[m.group(1)]}:", text)


@pytest.mark.parametrize("fixture", ["twins-same-subnet", "mtu-mismatch", "netplan-not-applied",
                                     "nm-profile-runtime-only", "fec-off", "gid-stale"])
def test_two_nodes_named_otherwise_are_planned_as_the_pair(fixture: str, tmp_path: Path) -> None:
    pair = plan_for(diagnose_bundle(FIXTURE_DIR / fixture))
    judged = judged_view(cluster_bundle(renamed_pair(FIXTURE_DIR / fixture, tmp_path / "b"),
                                        configured_rules([], None, kind="all")))
    assert isinstance(judged, Outcome)
    named = plan_for(judged)
    assert pair.steps, "each fixture's trap has a planned repair"
    assert [s.node for s in named.steps] == [NAMES[s.node] for s in pair.steps]
    assert [(s.runtime, s.persistent, s.verify, s.touches) for s in named.steps] == \
        [(s.runtime, s.persistent, s.verify, s.touches) for s in pair.steps]  # the same files read, the same edits
    assert [s.finding for s in named.steps] == [_as_named(s.finding) for s in pair.steps]
    assert [(n.finding, n.reason) for n in named.not_planned] == \
        [(_as_named(n.finding), _as_named(n.reason)) for n in pair.not_planned]
    assert list(named.notes) == [_as_named(n) for n in pair.notes]

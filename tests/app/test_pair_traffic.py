"""A pair's traffic runs as a cluster's of one cable (app/live.py `check_cluster`): one test in schedule round 1.
What it cannot measure is said in the bundle's `bench` error, and no node is asked to send anything."""

from __future__ import annotations

from pathlib import Path

import pytest
from msgspec.structs import replace

from linkcheck.app.live import NOTHING_TO_MEASURE, TrafficRequest, check_cluster
from linkcheck.app.offline import configured_rules
from linkcheck.bench.plan import quick_options
from linkcheck.bench.rounds import plan_test
from linkcheck.cluster.cables import CableTest
from linkcheck.config import SshOptions
from linkcheck.facts.pair import build_link_facts
from linkcheck.model import Capture
from linkcheck.outcome import Outcome, judged_view
from tests.app.stand_in import PAIR, answer_with, inspection
from tests.fixture_bundles import FIXTURE_DIR


def _readdressed(captures: list[Capture], node: str) -> list[Capture]:
    """`node`'s CX-7 ports moved to other subnets (as a netplan typo leaves them): no twin faces a twin any more."""
    return [replace(c, stdout=c.stdout.replace("192.168.10", "10.77.10")) if c.node == node else c
            for c in captures]


def test_a_pair_with_no_path_to_measure_says_the_traffic_test_was_not_run_and_why(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    captures = _readdressed(inspection(FIXTURE_DIR / "healthy"), "b")
    assert captures != inspection(FIXTURE_DIR / "healthy")
    answer_with(monkeypatch, captures)  # no transport at all: a node asked to send would fail the run
    check, bundle, doc = check_cluster(PAIR, SshOptions(), configured_rules([], None, kind="all"),
                                       TrafficRequest(rdma=quick_options()), save=tmp_path / "saved")
    assert bundle.captures == captures  # nothing sent, nothing added
    assert bundle.collection_errors["bench"] == f"traffic test not run: {NOTHING_TO_MEASURE}"
    judged = judged_view(check)
    assert isinstance(judged, Outcome) and judged.link.paths == ()
    assert judged.exit_code == check.exit_code and int(check.exit_code) in (2, 3)


def test_a_pair_with_one_twin_down_is_planned_on_the_other() -> None:
    link = build_link_facts(inspection(FIXTURE_DIR / "link-down"))
    planned = plan_test(CableTest("a<->b", 1, "a", "b", link))
    assert planned.refused is None and len(planned.paths) == 1

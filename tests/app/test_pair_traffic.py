"""A pair's traffic runs as a cluster's of one cable (app/live.py `_send`): one test in schedule round 1. What it
cannot measure is said in the bundle's `bench` error, and no node is asked to send anything."""

from __future__ import annotations

from msgspec.structs import replace

from linkcheck.app.live import TrafficRequest, _traffic
from linkcheck.bench.plan import quick_options
from linkcheck.bench.rounds import plan_test
from linkcheck.bundle.format import Bundle, load_bundle
from linkcheck.cluster.cables import CableTest
from linkcheck.facts.model import LinkFacts
from linkcheck.facts.pair import build_link_facts
from tests.fixture_bundles import FIXTURE_DIR


def _inspected(fixture: str) -> tuple[Bundle, LinkFacts]:
    bundle = load_bundle(FIXTURE_DIR / fixture)
    inspected = replace(bundle, captures=[c for c in bundle.captures if not c.meta], collection_errors={})
    return inspected, build_link_facts(inspected.captures)


def test_a_pair_with_no_path_to_measure_says_the_traffic_test_was_not_run_and_why() -> None:
    bundle, link = _inspected("healthy")
    unaddressed = replace(link, paths=())
    # No transport at all: a refused test contacts no node (a call would fail on the empty mapping).
    out, stopped = _traffic({}, bundle, unaddressed, TrafficRequest(rdma=quick_options()), None, {})
    assert not stopped and out.captures == bundle.captures
    assert out.collection_errors["bench"].startswith("traffic test not run: no data path between the nodes")


def test_a_pair_with_one_twin_down_is_planned_on_the_other() -> None:
    _, link = _inspected("link-down")
    planned = plan_test(CableTest("a<->b", 1, "a", "b", link))
    assert planned.refused is None and len(planned.paths) == 1

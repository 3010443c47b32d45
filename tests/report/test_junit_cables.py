"""A cluster check's JUnit XML: a suite per kind (the cluster's rules, each node, each cable test), each slow test a
failure, a node slow with every partner a failure on the node, an unmeasured test an error, a test the interrupted
run never reached skipped; the tallies add up, and node text stays text."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from linkcheck.app.offline import cluster_bundle
from linkcheck.cluster.cables import cable_tests
from linkcheck.cluster.schedule import schedule
from linkcheck.diagnose.playbook import load_playbooks
from linkcheck.report.junit import render_junit
from tests.cluster import cluster_checks as cc
from tests.fixture_bundles import FIXTURE_DIR
from tests.lab.cluster import ring3, switch_by_cage

ELEMENTS = {"testsuites", "testsuite", "properties", "property", "testcase", "failure", "error", "skipped",
            "system-out", "system-err"}
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
HOSTILE = ['<script>alert(1)</script>', 'x"/><testcase name="fake', "a'b&amp;c]]><!--", "t\x1b]2;owned\x07\x9b31m",
           "\u202eevil\u2066iso\u2069"]


def parsed(text: str) -> ET.Element:
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>\n') and text.endswith("\n")
    root = ET.fromstring(text)
    assert {e.tag for e in root.iter()} <= ELEMENTS
    return root


def tallies(element: ET.Element) -> tuple[int, int, int, int]:
    tests, failures, errors, skipped = (int(element.get(k, "-1")) for k in ("tests", "failures", "errors", "skipped"))
    return tests, failures, errors, skipped


def counted(suite: ET.Element) -> tuple[int, int, int, int]:
    """What the suite's testcases hold, counted from the cases themselves."""
    cases = suite.findall("testcase")
    return (len(cases), sum(c.find("failure") is not None for c in cases),
            sum(c.find("error") is not None for c in cases), sum(c.find("skipped") is not None for c in cases))


def suites(root: ET.Element) -> dict[str, ET.Element]:
    out = {s.get("name", ""): s for s in root.findall("testsuite")}
    assert list(out) == ["linkcheck.cluster", "linkcheck.cluster.nodes", "linkcheck.cluster.tests"]
    for suite in out.values():
        assert tallies(suite) == counted(suite), suite.get("name")
    total = [sum(x) for x in zip(*(tallies(s) for s in out.values()), strict=True)]
    assert list(tallies(root)) == total
    return out


def cases(suite: ET.Element) -> dict[str, ET.Element]:
    names = [c.get("name", "") for c in suite.findall("testcase")]
    assert len(names) == len(set(names)), names  # GitLab drops a repeated name
    return dict(zip(names, suite.findall("testcase"), strict=True))


def test_a_healthy_switch_of_four_passes_every_node_and_each_of_its_six_tests() -> None:
    root = parsed(render_junit(cc.switch()))
    by = suites(root)
    assert tallies(by["linkcheck.cluster.nodes"]) == (4, 0, 0, 0)
    assert tallies(by["linkcheck.cluster.tests"]) == (6, 0, 0, 0)
    assert tallies(root)[1:] == (0, 0, 0)
    props = {p.get("name"): p.get("value") for p in by["linkcheck.cluster"].iter("property")}
    assert props["verdict"] == "pass" and props["exit_code"] == "0" and props["layout"] == "switch"
    tests = cases(by["linkcheck.cluster.tests"])
    assert "test a<->d round 1" in tests
    case_props = {p.get("name"): p.get("value") for p in tests["test a<->d round 1"].iter("property")}
    assert case_props["a->d"] == "196.02 Gb/s" and case_props["state"] == "pass"


def test_a_node_slow_with_every_partner_fails_its_node_case_and_each_test_it_was_in() -> None:
    root = parsed(render_junit(cc.switch(rates=cc.slow_node("c"))))
    by = suites(root)
    nodes = cases(by["linkcheck.cluster.nodes"])
    assert list(nodes) == ["node a", "node b", "node c", "node d"]
    failure = nodes["node c"].find("failure")
    assert failure is not None and failure.get("type") == "error"
    assert "NODE_SLOW_WITH_EVERY_PARTNER" in (failure.get("message") or "")
    assert "node c is slow with every partner" in (failure.text or "") and "fix: on node c: reboot" in failure.text
    assert all(nodes[n].find("failure") is None for n in ("node a", "node b", "node d"))
    tests = cases(by["linkcheck.cluster.tests"])
    slow = {name for name, c in tests.items() if c.find("failure") is not None}
    assert slow == {"test b<->c round 1", "test a<->c round 2", "test c<->d round 3", "test c<->a round 4 (2nd pass)"}
    failure = tests["test b<->c round 1"].find("failure")
    assert failure is not None and failure.get("type") == "error"
    assert failure.get("message") == ("slow: LINK_HOTPLUG_DEGRADED (b->c 26.60 Gb/s, c->b 26.60 Gb/s, lowest run "
                                      "13.30 Gb/s)")
    assert (failure.text or "").startswith("explained by NODE_SLOW_WITH_EVERY_PARTNER (node c)")
    assert "best 13.3 Gb/s" in (failure.text or "")
    assert tallies(root) == (tallies(root)[0], 5, 0, 0)


def test_a_hot_plugged_ring_cable_fails_that_test_alone() -> None:
    check = cc.checked(ring3(), lambda t: cc.HOTPLUG if t.label == "a:p0<->b:p1" else cc.HEALTHY)
    by = suites(parsed(render_junit(check)))
    tests = cases(by["linkcheck.cluster.tests"])
    assert {n for n, c in tests.items() if c.find("failure") is not None} == {"test a:p0<->b:p1 round 1"}
    failure = tests["test a:p0<->b:p1 round 1"].find("failure")
    assert failure is not None and "fix: with the cable attached, reboot both nodes" in (failure.text or "")
    assert tallies(by["linkcheck.cluster.nodes"]) == (3, 0, 0, 0)


def test_an_unmeasured_test_is_an_error_and_one_the_interrupted_run_never_reached_is_skipped() -> None:
    facts = cc.facts_of(switch_by_cage(dict.fromkeys("abcd", "p1")))
    tests = cable_tests(facts, schedule(facts.topology))
    results = [cc.not_measured(t, "node b was not inspected: timed out") if "b" in t.nodes
               else cc.measured(t, *cc.HEALTHY) for t in tests]
    by = suites(parsed(render_junit(cc.judged(facts, results, errors={"b": "timed out"}))))
    error = cases(by["linkcheck.cluster.tests"])["test a<->b round 3"].find("error")
    assert error is not None and error.get("type") == "inconclusive"
    assert error.get("message") == "inconclusive: node b was not inspected: timed out"
    node_b = cases(by["linkcheck.cluster.nodes"])["node b"].find("error")
    assert node_b is not None and node_b.get("message") == "inconclusive: not inspected: timed out"
    assert tallies(by["linkcheck.cluster.tests"]) == (6, 0, 3, 0)
    assert tallies(by["linkcheck.cluster.nodes"]) == (4, 0, 1, 0)
    props = {p.get("name"): p.get("value") for p in by["linkcheck.cluster"].iter("property")}
    assert props["verdict"] == "inconclusive" and props["exit_code"] == "3"
    assert "node b not inspected: timed out" in (by["linkcheck.cluster"].findtext("system-err") or "")
    # The run stopped after round 2: the two tests of round 3 were never run.
    stopped = [r if r.test.round <= 2 else cc.not_measured(r.test, "not run: the run was interrupted")
               for r in (cc.measured(t, *cc.HEALTHY) for t in tests)]
    by = suites(parsed(render_junit(cc.judged(facts, stopped, traffic_error="interrupted", interrupted=True))))
    assert tallies(by["linkcheck.cluster.tests"]) == (6, 0, 0, 2)
    skipped = cases(by["linkcheck.cluster.tests"])["test a<->b round 3"].find("skipped")
    assert skipped is not None and skipped.get("message") == "not run: the run was interrupted"


@pytest.mark.parametrize("hostile", HOSTILE)
def test_hostile_node_names_stay_text(hostile: str) -> None:
    check = cc.checked(switch_by_cage({"a": "p1", hostile: "p1", "c": "p1", "d": "p1"}), cc.slow_node(hostile))
    text = render_junit(check)
    assert not RAW.search(text), repr(RAW.search(text))
    root = parsed(text)
    by = suites(root)
    shown = hostile.translate({0x1b: "\\x1b", 0x07: "\\x07", 0x9b: "\\x9b", 0x202e: "\\u202e", 0x2066: "\\u2066",
                               0x2069: "\\u2069"})
    nodes = cases(by["linkcheck.cluster.nodes"])
    assert list(nodes) == ["node a", f"node {shown}", "node c", "node d"]
    assert nodes[f"node {shown}"].find("failure") is not None
    assert tallies(by["linkcheck.cluster.tests"])[:2] == (7, 4)  # three tests and the second pass, nothing more


def test_each_test_of_a_saved_ring_carries_the_seconds_its_runs_took() -> None:
    """fixtures/cluster-ring3-hotplug: each testcase's `time` is its own client runs' recorded `duration_s`, each
    round's longest (as a pair's testcases are timed, report/timing.py). Summed by hand from its manifest.json: the
    hot-plugged cable ran both directions alone and concurrent (5.311 + 5.223 + 5.187 + 5.269), the other two only
    concurrent (their alone runs were skipped: 0 s): 5.253 + 5.210 and 5.263 + 5.338. The suite is their sum."""
    check = cluster_bundle(FIXTURE_DIR / "cluster-ring3-hotplug", load_playbooks(kind="all"))
    tests = suites(parsed(render_junit(check)))["linkcheck.cluster.tests"]
    assert {c.get("name"): c.get("time") for c in tests.findall("testcase")} == {
        "test a:p0<->b:p1 round 1": "20.990", "test b:p0<->c:p1 round 2": "10.463",
        "test a:p1<->c:p0 round 3": "10.601"}
    assert tests.get("time") == "42.054"

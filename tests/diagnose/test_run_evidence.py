"""Throughput evidence names each run: with repetitions, the same mode and direction ran more than once, and a list
of identical-looking lines would not say which value came from which run."""

from __future__ import annotations

from pathlib import Path

from linkcheck.app.offline import diagnose_bundle
from linkcheck.diagnose.checks.bench import run_evidence
from linkcheck.diagnose.checks.path import SinglePathValues, single_pcie_path
from linkcheck.facts.model import BenchFacts, LinkFacts, NodeFacts, RdmaRun

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _run(mode: str, direction: str, gbps: float) -> RdmaRun:
    return RdmaRun("p", mode, direction, gbps, "a", "rocep1s0f1")


PAIR = LinkFacts(a=NodeFacts(name="a"), b=NodeFacts(name="b"))


def test_a_single_run_keeps_its_plain_name() -> None:
    [line] = run_evidence([_run("alone", "a->b", 98.1)], PAIR)
    assert (line.fact, line.value, line.source) == ("ib_write_bw alone a->b", 98.1, "Gb/s")


def test_a_cluster_tests_runs_are_named_by_its_nodes() -> None:
    # A test b<->c of a ring: its pair view's a->b is b->c; never "a", a node of the ring that is not in this test.
    cable = LinkFacts(a=NodeFacts(name="b"), b=NodeFacts(name="c"))
    lines = run_evidence([_run("alone", "a->b", 98.1), _run("concurrent", "b->a", 97.0)], cable)
    assert [e.fact for e in lines] == ["ib_write_bw alone b->c", "ib_write_bw concurrent c->b"]


def test_repeated_runs_say_which_run_each_is() -> None:
    lines = run_evidence([_run("alone", "a->b", 98.1), _run("concurrent", "a->b", 97.0),
                          _run("alone", "a->b", 96.5), _run("alone", "b->a", 98.0)], PAIR)
    assert [e.fact for e in lines] == ["ib_write_bw alone a->b (run 1 of 2)", "ib_write_bw concurrent a->b",
                                       "ib_write_bw alone a->b (run 2 of 2)", "ib_write_bw alone b->a"]
    assert [e.value for e in lines] == [98.1, 97.0, 96.5, 98.0]


def test_an_accept_bundle_s_hot_plug_evidence_has_no_two_lines_alike() -> None:
    outcome = diagnose_bundle(FIXTURES / "accept-fail")
    fired = [f for f in outcome.diagnosis.findings if f.rule_id == "LINK_HOTPLUG_DEGRADED" and f.status.value == "fail"]
    assert fired
    for finding in fired:
        facts = [e.fact for e in finding.evidence if e.fact.startswith("ib_write_bw")]
        assert len(facts) == 8 and len(set(facts)) == len(facts), facts


def test_one_pcie_path_on_a_cluster_test_names_the_node_that_sent() -> None:
    # Both twins at once from c to b total one x4 link: the fix is c's (the test's second node), never node "a".
    runs = (RdmaRun("p0", "concurrent", "b->a", 47.0, "c", "rocep1s0f1"),
            RdmaRun("p1", "concurrent", "b->a", 48.0, "c", "roceP2p1s0f1"))
    cable = LinkFacts(a=NodeFacts(name="b"), b=NodeFacts(name="c"), bench=BenchFacts(rdma=runs))
    thresholds = {"single_path_total_min_gbps": 85, "single_path_total_max_gbps": 120, "idle_path_max_gbps": 5}
    [found] = single_pcie_path(cable, thresholds)
    assert found.fired and found.subject == "rdma c->b concurrent"
    assert isinstance(found.values, SinglePathValues) and found.values.node == "c"
    assert "in direction c->b" in found.values.what
    assert [e.fact for e in found.evidence] == ["concurrent c->b path 0", "concurrent c->b path 1"]

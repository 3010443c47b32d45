"""A cluster's traffic, offline: the tests of the schedule as pair views, the RDMA rounds planned from them (no node
in two tests at once), the second pass on a switch, and the cluster rules that read the tests' outcomes
(NODE_SLOW_WITH_EVERY_PARTNER, CABLE_SLOW). The nodes are the lab's cluster models rendered into captures, as
`linkcheck check` over a cluster builds them."""

from __future__ import annotations

import ipaddress
import itertools
from collections import Counter

import pytest
from msgspec.structs import replace

from linkcheck.app.topology import cluster_facts
from linkcheck.bench.plan import RdmaOptions
from linkcheck.bench.rounds import captures_of, plan_cluster_rounds, plan_test
from linkcheck.cluster.cables import SECOND_PASS, cable_tests, second_pass
from linkcheck.cluster.facts import ClusterFacts, TrafficOutcome, partners
from linkcheck.cluster.schedule import schedule
from linkcheck.collect.specs import CLUSTER_SPECS, SPECS
from linkcheck.diagnose.engine import diagnose
from linkcheck.diagnose.playbook import load_playbooks
from linkcheck.model import Capture, Status, Verdict
from tests.cluster.cluster_checks import checked, judged, slow_node, switch
from tests.emulators.captures import node_captures
from tests.lab.cluster import CLUSTER_SCENARIOS, cluster_models, switch4_hca_copied, switch_by_cage

RULES = load_playbooks(kind="cluster")


def _facts(name: str) -> ClusterFacts:
    cluster = switch_by_cage(dict.fromkeys("abcdefgh", "p1")) if name == "switch8" else CLUSTER_SCENARIOS[name]()
    models = cluster_models(cluster)
    captures = [c for n, m in models.items() for c in node_captures(n, m, SPECS + CLUSTER_SPECS)]
    return cluster_facts(list(models), captures, {})


@pytest.mark.parametrize("name", ["ring3", "ring4", "switch4", "switch8", "mixed"])
def test_the_rounds_never_put_one_node_in_two_tests_at_once(name: str) -> None:
    facts = _facts(name)
    tests = cable_tests(facts, schedule(facts.topology))
    planned = [plan_test(t) for t in tests]
    assert all(p.refused is None and len(p.paths) == 2 for p in planned)
    owner = {path.key: p.test for p in planned for path in p.paths}
    for options in (RdmaOptions(), RdmaOptions(adaptive=True)):
        rounds = plan_cluster_rounds(planned, options)
        for rnd in rounds:
            by_node: dict[str, set[str]] = {}
            for path in rnd.paths:
                for node in (path.a.node, path.b.node):
                    by_node.setdefault(node, set()).add(owner[path.key].label)
            assert all(len(labels) == 1 for labels in by_node.values()), (rnd.id, by_node)
            assert len(set(rnd.ports)) == len(rnd.ports)
        # Every test in each direction: each twin alone once, both twins at once once.
        seen = Counter((owner[p.key].label, rnd.mode, rnd.direction) for rnd in rounds for p in rnd.paths)
        for test, direction in itertools.product(tests, ("a->b", "b->a")):
            assert seen[(test.label, "alone", direction)] == 2
            assert seen[(test.label, "concurrent", direction)] == 2
    # The whole cluster is covered: every cable (ring) or every pair of nodes (switch) once.
    if name.startswith("switch"):
        assert {frozenset(t.nodes) for t in tests} == {frozenset(p) for p in itertools.combinations(facts.nodes, 2)}
    else:
        assert {t.label for t in tests} >= {c.key for c in facts.topology.cables}


def test_a_tests_pair_view_holds_only_its_own_cables_paths() -> None:
    facts = _facts("ring3")
    for test in cable_tests(facts, schedule(facts.topology)):
        cable = next(c for c in facts.topology.cables if c.key == test.label)
        assert {p.subnet for p in test.link.paths} == {p.subnet for p in cable.paths}
        # The twins' names repeat on every node; the test's paths are keyed by node, so no two tests share a key.
        assert all(p.a.node == test.a and p.b.node == test.b for p in test.link.paths)
        assert all(ipaddress.ip_network(p.subnet) for p in test.link.paths)
    keys = [path.key for t in cable_tests(facts, schedule(facts.topology)) for path in plan_test(t).paths]
    assert len(keys) == len(set(keys))


def _outcomes(facts: ClusterFacts, slow: set[frozenset[str]], traps: tuple[str, ...] = ("LINK_HOTPLUG_DEGRADED",),
              pass_no: int = 1) -> tuple[TrafficOutcome, ...]:
    tests = cable_tests(facts, schedule(facts.topology))
    return tuple(TrafficOutcome(t.label, t.a, t.b, "slow" if frozenset(t.nodes) in slow else "pass",
                             13.3 if frozenset(t.nodes) in slow else 98.0,
                             traps if frozenset(t.nodes) in slow else (), pass_no, t.switched) for t in tests)


def _firing(facts: ClusterFacts) -> set[tuple[str, str]]:
    return {(f.rule_id, f.subject) for f in diagnose(facts, RULES).findings
            if f.status in (Status.FAIL, Status.WARN)}


def test_a_node_slow_with_every_partner_is_named_and_a_slow_pair_alone_is_not() -> None:
    facts = _facts("switch4")
    with_c = {frozenset(("c", n)) for n in "abd"}
    slow_c = replace(facts, tests=_outcomes(facts, with_c))
    assert ("NODE_SLOW_WITH_EVERY_PARTNER", "node c") in _firing(slow_c)
    assert {s for r, s in _firing(slow_c) if r == "NODE_SLOW_WITH_EVERY_PARTNER"} == {"node c"}
    met = partners(slow_c, "c")
    assert met is not None and sorted(met.slow) == ["a", "b", "d"] and met.slow_everywhere
    # One slow pair: neither node is slow with every partner.
    one = replace(facts, tests=_outcomes(facts, {frozenset("ab")}))
    assert not any(r == "NODE_SLOW_WITH_EVERY_PARTNER" for r, _ in _firing(one))
    # Every test slow: nothing passed anywhere, so no node can be told from the others.
    everything = replace(facts, tests=_outcomes(facts, {frozenset(p) for p in itertools.combinations("abcd", 2)}))
    assert not any(r == "NODE_SLOW_WITH_EVERY_PARTNER" for r, _ in _firing(everything))
    # No traffic: the rule says nothing at all.
    assert not any(f.rule_id == "NODE_SLOW_WITH_EVERY_PARTNER" for f in diagnose(facts, RULES).findings
                   if f.status is not Status.PASS)


def test_the_second_pass_measures_the_all_slow_node_again_and_a_pass_there_clears_it() -> None:
    facts = _facts("switch4")
    first = cable_tests(facts, schedule(facts.topology))
    slow = {t.label for t in first if "c" in t.nodes}
    again = second_pass(facts, first, slow)
    assert [(t.a, t.pass_no) for t in again] == [("c", SECOND_PASS)]
    assert again[0].b in "abd" and again[0].round > max(t.round for t in first)
    assert second_pass(facts, first, set()) == []
    ring = _facts("ring3")
    ring_tests = cable_tests(ring, schedule(ring.topology))
    assert second_pass(ring, ring_tests, {ring_tests[0].label}) == []
    # c slow with all three in the first pass, but it passes with a in the second: a one-off, no node named.
    base = _outcomes(facts, {frozenset(("c", n)) for n in "abd"})
    cleared = (*base, TrafficOutcome("c<->a", "c", "a", "pass", 98.0, (), SECOND_PASS, True))
    assert not any(r == "NODE_SLOW_WITH_EVERY_PARTNER" for r, _ in _firing(replace(facts, tests=cleared)))
    confirmed = (*base, TrafficOutcome("c<->a", "c", "a", "slow", 13.3, ("LINK_HOTPLUG_DEGRADED",), SECOND_PASS, True))
    assert ("NODE_SLOW_WITH_EVERY_PARTNER", "node c") in _firing(replace(facts, tests=confirmed))


def test_a_slow_ring_cable_without_a_named_trap_asks_for_a_swap_with_a_good_cable() -> None:
    facts = _facts("ring3")
    slow = replace(facts, tests=_outcomes(facts, {frozenset("ab")}, traps=("LINK_BELOW_NOMINAL",)))
    findings = {f.subject: f for f in diagnose(slow, RULES).findings
                if f.rule_id == "CABLE_SLOW" and f.status is Status.FAIL}
    assert list(findings) == ["cable a:p0<->b:p1"]
    finding = findings["cable a:p0<->b:p1"]
    assert "only a swap tells which" in finding.message.lower()
    assert any("swap it with cable" in step and ("a:p1<->c:p0" in step or "b:p0<->c:p1" in step)
               for step in finding.fix)
    # A named trap (the hot-plug state) has its own fix: no swap asked.
    hotplug = replace(facts, tests=_outcomes(facts, {frozenset("ab")}))
    assert not any(r == "CABLE_SLOW" for r, _ in _firing(hotplug))
    # Two cables slow at node a: a is not cleared by another cable, and with two partners slow, a is named.
    two = replace(facts, tests=_outcomes(facts, {frozenset("ab"), frozenset("ac")}, traps=("LINK_BELOW_NOMINAL",)))
    assert ("NODE_SLOW_WITH_EVERY_PARTNER", "node a") in _firing(two)
    assert not any(r == "CABLE_SLOW" for r, _ in _firing(two))


def test_a_second_pass_over_the_same_two_nodes_is_judged_on_its_own_rounds_only() -> None:
    """On a switch the second pass can meet the first pass's two nodes again, over the same path keys: each test
    takes the runs of its own schedule round (and every repetition of it), never the other pass's."""
    facts = _facts("switch4")
    first = cable_tests(facts, schedule(facts.topology))
    slow = {t.label for t in first if "a" in t.nodes}
    again = second_pass(facts, first, slow)[0]
    twin = next(t for t in first if set(t.nodes) == set(again.nodes))
    assert twin.round != again.round
    planned = [plan_test(twin), plan_test(replace(again, a=twin.a, b=twin.b, link=twin.link))]
    assert planned[0].keys == planned[1].keys, "the same two nodes over the same paths"
    key = next(iter(planned[0].keys))

    def run(number: int, suffix: str = "") -> Capture:
        return Capture(twin.a, "ib_write_bw", "ib_write_bw", "", meta={
            "kind": "rdma", "path": key, "mode": "concurrent", "direction": "a->b",
            "round": f"concurrent-a2b-c{number}-{number}{suffix}"})

    runs = [run(twin.round), run(twin.round, "-rep2"), run(again.round), run(again.round, "-quick")]
    untested = Capture(twin.a, "ib_write_bw", "", "", meta={"kind": "rdma", "path": key, "round": "untested-a2b"})
    first_pass, second = (captures_of(p, [*runs, untested]) for p in planned)
    assert [c.meta["round"] for c in first_pass] == [r.meta["round"] for r in runs[:2]] + ["untested-a2b"]
    assert [c.meta["round"] for c in second] == [r.meta["round"] for r in runs[2:]] + ["untested-a2b"]


def test_a_copied_nccl_ib_hca_at_full_rate_is_a_configuration_finding_not_a_slow_node() -> None:
    # b's NCCL_IB_HCA is the head's (a cabled by p0, b by p1), and every test measured 98 + 98 Gb/s: ib_write_bw does
    # not read NCCL_IB_HCA, so no test is slow and b is not "slow with every partner"; the copy is named on b.
    check = checked(switch4_hca_copied())
    assert {r.state for r in check.cables} == {"pass"}
    firing = {(f.rule_id, f.subject) for f in check.view.diagnosis.findings if f.status in (Status.FAIL, Status.WARN)}
    assert firing == {("NCCL_IB_HCA_COPIED", "node b")}
    # The same node in the hot-plug state is slow with every partner, copied setting or not.
    hot = checked(switch4_hca_copied(), slow_node("b"))
    assert {r.state for r in hot.cables if "b" in r.test.nodes} == {"slow"}
    assert ("NODE_SLOW_WITH_EVERY_PARTNER", "node b") in {(f.rule_id, f.subject) for f in hot.view.diagnosis.findings
                                                          if f.status is Status.FAIL}


def test_a_healthy_switch_of_eight_passes() -> None:
    # nvidia/multi-sparks-through-switch: "will work for any number of DGX Spark devices connected with a switch".
    check = switch("abcdefgh")
    assert check.verdict is Verdict.PASS and check.view.topology.flags == ()
    assert len(check.cables) == 28 and {r.state for r in check.cables} == {"pass"}


def test_a_healthy_ring_of_eight_is_named_only_as_a_layout_nvidia_does_not_document() -> None:
    # Its owner sets NCCL_ALGO=Ring and NVIDIA's ring settings, and keeps NCCL's sockets where NCCL picks them (not
    # set): transit nodes are notes that say what is assumed, never a failure; every cable measured healthy.
    check = checked(CLUSTER_SCENARIOS["ring8"]())
    assert {r.state for r in check.cables} == {"pass"} and len(check.cables) == 8
    shown = {(f.rule_id, f.subject) for f in check.view.diagnosis.findings if f.status in (Status.FAIL, Status.WARN)}
    assert shown == {("CLUSTER_LAYOUT_UNSUPPORTED", "cluster")}
    assert check.verdict is Verdict.WARN


@pytest.mark.parametrize(("scenario", "off"), [("ring3", "c"), ("ring4", "d"), ("switch4", "b")])
def test_a_node_that_was_not_inspected_leaves_the_layout_unknown_never_a_cabling_fault(scenario: str,
                                                                                        off: str) -> None:
    models = cluster_models(CLUSTER_SCENARIOS[scenario]())
    captures = [c for n, m in models.items() if n != off for c in node_captures(n, m, SPECS + CLUSTER_SPECS)]
    facts = cluster_facts(list(models), captures, {off: "ssh: connect timed out"})
    check = judged(facts, [], errors={off: "ssh: connect timed out"})
    assert facts.topology.layout == "unknown" and check.verdict is Verdict.INCONCLUSIVE
    shown = [f for f in check.view.diagnosis.findings if f.status in (Status.FAIL, Status.WARN)]
    assert shown == []
    (layout,) = [f for f in check.view.diagnosis.findings if f.rule_id == "CLUSTER_LAYOUT_UNSUPPORTED"]
    assert layout.status is Status.SKIP and f"node {off} was not inspected" in (layout.skip_reason or "")
    # Who lies between whom is not known either: no transit or route finding on the nodes that answered.
    judged_transit = [f for f in check.view.diagnosis.findings if f.rule_id in ("TRANSIT_FORWARDING_OFF",
                      "NO_ROUTE_TO_NON_NEIGHBOUR") and f.status is not Status.SKIP]
    assert judged_transit == []

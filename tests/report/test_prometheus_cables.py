"""A cluster check's node_exporter textfile, parsed back with prometheus_client's own parser: series per test and
direction in bytes per second, each test's state, each node's findings, the verdict; no series twice, and node text
in labels escaped, never raw."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from prometheus_client.parser import text_string_to_metric_families

from linkcheck.cluster.cables import cable_tests
from linkcheck.cluster.schedule import schedule
from linkcheck.report.prometheus import render_prometheus
from tests.cluster import cluster_checks as cc
from tests.lab.cluster import switch_by_cage

if TYPE_CHECKING:
    from tests.conftest import InProcessCli

NAME_RE = re.compile(r"^linkcheck_[a-z_]+$")
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
HOSTILE = ['<script>alert(1)</script>', 'x"} 1\nlinkcheck_fake 1', "back\\slash", "t\x1b]2;owned\x07\x9b31m",
           "\u202eevil\u2066iso\u2069"]
Samples = dict[str, list[tuple[dict[str, str], float]]]


def samples(text: str) -> Samples:
    assert text.endswith("\n") and not text.endswith("\n\n")
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        assert family.type == "gauge" and NAME_RE.match(family.name), family
        keys = [tuple(sorted(s.labels.items())) for s in family.samples]
        assert len(keys) == len(set(keys)), family.name  # no series written twice
        for s in family.samples:
            out.setdefault(s.name, []).append((dict(s.labels), s.value))
    return out


def one_hot(got: Samples, name: str, label: str) -> str:
    hot = [labels[label] for labels, v in got[name] if v == 1]
    assert len(hot) == 1 and all(v in (0, 1) for _, v in got[name])
    return hot[0]


def test_a_healthy_switch_of_four_writes_every_test_both_ways_in_bytes_per_second() -> None:
    got = samples(render_prometheus(cc.switch()))
    assert one_hot(got, "linkcheck_cluster_verdict", "verdict") == "pass"
    assert got["linkcheck_cluster_exit_code"] == [({}, 0)]
    assert got["linkcheck_cluster_info"][0][0]["layout"] == "switch"
    totals = {(lab["test"], lab["from"], lab["to"]): v for lab, v in
              got["linkcheck_cluster_test_bandwidth_bytes_per_second"]}
    assert len(totals) == 12 and set(totals.values()) == {196.02e9 / 8}
    assert totals[("a<->d", "a", "d")] == 24_502_500_000  # exactly, from the rates as written
    # Every (from, to) of four nodes once: the N x N matrix without its diagonal.
    assert {(f, t) for _, f, t in totals} == {(f, t) for f in "abcd" for t in "abcd" if f != t}
    paths = got["linkcheck_cluster_path_bandwidth_bytes_per_second"]
    assert len(paths) == 6 * 2 * 2 * 2  # tests x directions x HCAs x (alone, concurrent)
    assert {lab["hca"] for lab, _ in paths} == {"rocep1s0f1", "roceP2p1s0f1"}
    states = {lab["test"]: lab["state"] for lab, v in got["linkcheck_cluster_test_state"] if v == 1}
    assert len(states) == 6 and set(states.values()) == {"pass"}
    assert all(v == 0 for _, v in got["linkcheck_cluster_node_finding"])
    assert {lab["node"] for lab, v in got["linkcheck_cluster_node_inspected"] if v == 1} == set("abcd")


def test_node_c_slow_with_every_partner_shows_in_its_tests_and_its_node_series() -> None:
    got = samples(render_prometheus(cc.switch(rates=cc.slow_node("c"))))
    assert one_hot(got, "linkcheck_cluster_verdict", "verdict") == "fail"
    states = {(lab["test"], lab["pass"]): lab["state"] for lab, v in got["linkcheck_cluster_test_state"] if v == 1}
    assert {k for k, s in states.items() if s == "slow"} == {("b<->c", "1"), ("a<->c", "1"), ("c<->d", "1"),
                                                              ("c<->a", "2")}
    slow = [(lab["from"], lab["to"]) for lab, v in got["linkcheck_cluster_test_bandwidth_bytes_per_second"]
            if v == 26.6e9 / 8]
    assert all("c" in pair for pair in slow) and len(slow) == 8  # 3 partners both ways, and the second pass
    node = {(lab["node"], lab["rule"]): v for lab, v in got["linkcheck_cluster_node_finding"]}
    assert node[("c", "NODE_SLOW_WITH_EVERY_PARTNER")] == 1 and node[("a", "NODE_SLOW_WITH_EVERY_PARTNER")] == 0
    per_test = {(lab["test"], lab["rule"]): v for lab, v in got["linkcheck_cluster_test_finding"]}
    assert per_test[("b<->c", "LINK_HOTPLUG_DEGRADED")] == 2 and per_test[("a<->d", "LINK_HOTPLUG_DEGRADED")] == 0


def test_an_unmeasured_test_is_inconclusive_with_no_rate() -> None:
    facts = cc.facts_of(switch_by_cage(dict.fromkeys("abcd", "p1")))
    tests = cable_tests(facts, schedule(facts.topology))
    results = [cc.not_measured(t, "node b was not inspected: timed out") if "b" in t.nodes
               else cc.measured(t, *cc.HEALTHY) for t in tests]
    got = samples(render_prometheus(cc.judged(facts, results, errors={"b": "timed out"})))
    assert one_hot(got, "linkcheck_cluster_verdict", "verdict") == "inconclusive"
    assert got["linkcheck_cluster_exit_code"] == [({}, 3)]
    states = {lab["test"]: lab["state"] for lab, v in got["linkcheck_cluster_test_state"] if v == 1}
    assert {t for t, s in states.items() if s == "inconclusive"} == {t.label for t in tests if "b" in t.nodes}
    rated = {lab["test"] for lab, _ in got["linkcheck_cluster_test_bandwidth_bytes_per_second"]}
    assert not rated & {t.label for t in tests if "b" in t.nodes}
    assert {lab["node"]: v for lab, v in got["linkcheck_cluster_node_inspected"]}["b"] == 0


@pytest.mark.parametrize("hostile", HOSTILE)
def test_hostile_node_names_are_escaped_label_values(hostile: str) -> None:
    check = cc.checked(switch_by_cage({"a": "p1", hostile: "p1", "c": "p1", "d": "p1"}), cc.slow_node(hostile))
    text = render_prometheus(check)
    assert not RAW.search(text), repr(RAW.search(text))
    assert "linkcheck_fake" not in [line.split("{")[0].split(" ")[0] for line in text.splitlines()]
    got = samples(text)
    shown = hostile.translate({0x1b: "\\x1b", 0x07: "\\x07", 0x9b: "\\x9b", 0x202e: "\\u202e", 0x2066: "\\u2066",
                               0x2069: "\\u2069"})  # a newline is the format's own escape: read back as itself
    inspected = {lab["node"] for lab, _ in got["linkcheck_cluster_node_inspected"]}
    assert inspected == {"a", shown, "c", "d"}
    node = {(lab["node"], lab["rule"]): v for lab, v in got["linkcheck_cluster_node_finding"]}
    assert node[(shown, "NODE_SLOW_WITH_EVERY_PARTNER")] == 1
    ends = {lab["from"] for lab, _ in got["linkcheck_cluster_test_bandwidth_bytes_per_second"]}
    assert shown in ends


def test_a_cluster_bundle_diagnosed_with_a_textfile_writes_the_clusters_series(tmp_path: Path,
                                                                                cli: InProcessCli) -> None:
    bundle = cc.saved_bundle(tmp_path / "ring")
    prom = tmp_path / "collector" / "linkcheck.prom"
    prom.parent.mkdir()
    run = cli("diagnose", str(bundle), "--prometheus-textfile", str(prom), "-f", "json")
    got = samples(prom.read_text(encoding="utf-8"))
    assert got["linkcheck_cluster_exit_code"] == [({}, run.returncode)], run.stderr
    assert json.loads(run.stdout)["verdict"] == one_hot(got, "linkcheck_cluster_verdict", "verdict")
    assert {lab["node"] for lab, v in got["linkcheck_cluster_node_inspected"] if v == 1} == {"a", "b", "c"}
    assert [p.name for p in prom.parent.iterdir()] == ["linkcheck.prom"]  # renamed into place, nothing left beside


def test_a_textfile_whose_folder_is_missing_is_refused_before_any_work(tmp_path: Path, cli: InProcessCli) -> None:
    bundle = cc.saved_bundle(tmp_path / "ring")
    run = cli("diagnose", str(bundle), "--prometheus-textfile", str(tmp_path / "absent" / "linkcheck.prom"))
    lines = [ln for ln in run.stderr.splitlines() if ln.strip()]
    assert run.returncode == 4 and len(lines) == 1 and "--prometheus-textfile" in lines[0], run.stderr
    assert run.stdout == "" and not (tmp_path / "absent").exists()


def test_a_ring_and_a_pair_write_one_set_of_names_with_cable_and_node_labels(cli: InProcessCli) -> None:
    """`report RING -f prometheus` and a pair's textfile: the same metric names, each rate with its `cable` and its
    sending `node`; the cluster's older names still written, as aliases with the same values, for one release."""
    fixtures = Path(__file__).resolve().parents[2] / "fixtures"
    ring_run = cli("report", str(fixtures / "cluster-ring3-hotplug"), "-f", "prometheus")
    pair_run = cli("report", str(fixtures / "hotplug-degraded"), "-f", "prometheus")
    assert ring_run.returncode == pair_run.returncode == 2
    ring, pair = samples(ring_run.stdout), samples(pair_run.stdout)
    shared = {"linkcheck_info", "linkcheck_verdict", "linkcheck_exit_code", "linkcheck_diagnosis_verdict",
              "linkcheck_node_inspected", "linkcheck_rdma_bandwidth_bytes_per_second",
              "linkcheck_rdma_concurrent_total_bytes_per_second", "linkcheck_finding"}
    assert shared <= set(ring) and shared <= set(pair)
    for got in (ring, pair):
        rates = got["linkcheck_rdma_bandwidth_bytes_per_second"]
        assert rates and all({"cable", "node", "hca", "direction", "mode"} <= set(lab) for lab, _ in rates)
        assert all("cable" in lab for lab, _ in got["linkcheck_rdma_concurrent_total_bytes_per_second"])
    assert {lab["cable"] for lab, _ in pair["linkcheck_rdma_bandwidth_bytes_per_second"]} == {"a:p1<->b:p1"}
    slow = {(lab["cable"], lab["direction"]): v for lab, v in ring["linkcheck_rdma_concurrent_total_bytes_per_second"]}
    assert slow[("a:p0<->b:p1", "a->b")] == 26.6e9 / 8 and slow[("b:p0<->c:p1", "c->b")] == 196e9 / 8
    fired = {lab.get("cable") for lab, v in ring["linkcheck_finding"] if lab["rule"] == "LINK_HOTPLUG_DEGRADED" and v}
    assert fired == {"a:p0<->b:p1"}
    assert one_hot(ring, "linkcheck_verdict", "verdict") == one_hot(ring, "linkcheck_cluster_verdict", "verdict")
    old = {(lab["test"], lab["from"], lab["to"]): v for lab, v in
           ring["linkcheck_cluster_test_bandwidth_bytes_per_second"]}
    assert old[("a:p0<->b:p1", "a", "b")] == slow[("a:p0<->b:p1", "a->b")]
    assert "Deprecated alias of linkcheck_verdict" in ring_run.stdout


def test_a_family_has_one_help_whichever_layout_wrote_it(cli: InProcessCli) -> None:
    """A pair's textfile and a cluster's say each shared family's HELP alike: Prometheus keeps a family's metadata
    per distinct HELP, and node_exporter 1.5's textfile collector drops the series of a family whose HELP differs
    between two files of its folder ("has help ... but should have ...", client_golang's registry)."""
    fixtures = Path(__file__).resolve().parents[2] / "fixtures"
    helps: dict[str, set[str]] = {}
    for name in ("healthy", "hotplug-degraded", "accept-pass", "cluster-pair-hotplug", "cluster-ring3-hotplug",
                 "cluster-switch4-slow-node"):
        run = cli("report", str(fixtures / name), "-f", "prometheus")
        assert run.returncode in (0, 1, 2), run.stderr
        for line in run.stdout.splitlines():
            if line.startswith("# HELP "):
                family, _, text = line.removeprefix("# HELP ").partition(" ")
                helps.setdefault(family, set()).add(text)
    assert {"linkcheck_rdma_bandwidth_bytes_per_second", "linkcheck_finding", "linkcheck_node_inspected"} <= set(helps)
    assert {family: texts for family, texts in helps.items() if len(texts) > 1} == {}

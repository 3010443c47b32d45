"""One rule per trap: a pair and a cluster caught in the same trap are told by the same rule id, each judged by the
rule's own layout; a former cluster id (NCCL_CLUSTER_BUSBW_LOW, ...) still names its rule for one release, in a
linkcheck.yaml, a playbook and a profile, and whoever uses it is told the new id."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from msgspec.structs import replace

from linkcheck.accept.profile import ProfileError, parse_profile
from linkcheck.app.offline import configured_rules, diagnose_bundle
from linkcheck.app.topology import cluster_facts
from linkcheck.cluster.facts import ExpectedCluster
from linkcheck.collect.specs import CLUSTER_SPECS, SPECS
from linkcheck.config import load_config
from linkcheck.diagnose.engine import diagnose
from linkcheck.diagnose.facts_schema import CLUSTER_SCOPES
from linkcheck.diagnose.playbook import load_playbooks, parse_playbook
from linkcheck.errors import PlaybookError
from linkcheck.model import Status
from tests.cluster.test_cluster_nccl import P1, _facts, _judge, _rank, _run_capture
from tests.emulators.captures import node_captures
from tests.lab.cluster import CLUSTER_SCENARIOS, Node, cluster_models, with_function

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
FORMER = {"NCCL_CLUSTER_SOCKET_FALLBACK": "NCCL_SOCKET_FALLBACK",
          "NCCL_CLUSTER_NOT_IB_EVERY_CHANNEL": "NCCL_SOCKET_FALLBACK",
          "NCCL_CLUSTER_BUSBW_LOW": "NCCL_BUSBW_LOW", "CLUSTER_NODES_DIFFER": "NODES_DIFFER",
          "CLUSTER_LINK_CHANGED": "LINK_CHANGED", "CLUSTER_DRIFT_NODE_SETTINGS": "DRIFT_CONFIG",
          "CLUSTER_DRIFT_CABLING": "DRIFT_IDENTITY", "CLUSTER_NCCL_BUILD_DIFFERS": "NCCL_BUILD_DIFFERS",
          "CLUSTER_CONTAINER_NCCL_SETTINGS_CONTRADICT_HOST": "CONTAINER_NCCL_SETTINGS_CONTRADICT_HOST",
          "CLUSTER_CONTAINER_NOT_READ": "CONTAINER_NOT_READ", "CLUSTER_NCCL_KNOWN_BAD": "NCCL_KNOWN_BAD",
          "CLUSTER_GPU_WAITING_IN_COLLECTIVE": "GPU_WAITING_IN_COLLECTIVE"}


def _pair_firing(fixture: str) -> set[str]:
    config = FIXTURES / fixture / "linkcheck.yaml"
    outcome = diagnose_bundle(FIXTURES / fixture, config=load_config(config) if config.exists() else None)
    return {f.rule_id for f in outcome.diagnosis.findings if f.status in (Status.WARN, Status.FAIL)}


def _ring(change: dict[str, Node] | None = None, expected: ExpectedCluster | None = None) -> set[str]:
    models = {**cluster_models(CLUSTER_SCENARIOS["ring3"]()), **(change or {})}
    captures = [c for n, m in models.items() for c in node_captures(n, m, SPECS + CLUSTER_SPECS)]
    facts = cluster_facts(list(models), captures, {})
    if expected is not None:
        facts = replace(facts, expected=expected)
    return {f.rule_id for f in diagnose(facts, load_playbooks(kind="cluster")).findings
            if f.status in (Status.WARN, Status.FAIL)}


def _ring_node(name: str) -> Node:
    return cluster_models(CLUSTER_SCENARIOS["ring3"]())[name]


def test_every_former_cluster_id_names_one_rule_that_judges_both_layouts() -> None:
    rules = load_playbooks(kind="all")
    for old, new in FORMER.items():
        layouts = [r for r in rules if r.id == new]
        assert {r.scope in CLUSTER_SCOPES for r in layouts} == {False, True}, new
        assert all(old in r.aliases for r in layouts) and not [r for r in rules if r.id == old]
        # One table of thresholds for both layouts, and one mechanism that the cluster's only extends.
        pair, cluster = sorted(layouts, key=lambda r: r.scope in CLUSTER_SCOPES)
        assert pair.thresholds == cluster.thresholds and cluster.mechanism.startswith(pair.mechanism)


def test_nodes_that_differ_fire_nodes_differ_on_a_pair_and_on_a_ring() -> None:
    c = _ring_node("c")
    for fn in c.functions:
        c = with_function(c, fn.netdev, fw_ver="28.39.1002")
    assert "NODES_DIFFER" in _pair_firing("nodes-differ")
    assert "NODES_DIFFER" in _ring({"c": c}) and "NODES_DIFFER" not in _ring()


def test_an_mtu_that_differs_fires_mtu_mismatch_on_a_pair_and_on_a_ring() -> None:
    assert "MTU_MISMATCH" in _pair_firing("mtu-mismatch")
    assert _ring({"b": with_function(_ring_node("b"), "enP2p1s0f0np0", mtu=1500)}) == {"MTU_MISMATCH"}
    assert "MTU_MISMATCH" not in _ring()


def test_cabling_moved_since_init_fires_link_changed_on_a_pair_and_on_a_ring() -> None:
    assert "LINK_CHANGED" in _pair_firing("link-moved")
    gone = ExpectedCluster(cables=("b:p1<->a:p0", "a:p1<->c:p0", "b:p0<->c:p1", "a:p0<->c:p0"))
    assert _ring(expected=gone) == {"LINK_CHANGED"}


def test_a_rank_on_sockets_fires_the_pairs_two_nccl_rules_on_a_ring() -> None:
    pair = _pair_firing("nccl-socket-fallback")
    assert {"NCCL_SOCKET_FALLBACK", "NCCL_BUSBW_LOW"} <= pair
    facts = _facts(CLUSTER_SCENARIOS["ring3"]())
    ranks = (_rank("spark-a", 4100, P1, "IB"), _rank("spark-b", 4200, (), "Socket"), _rank("spark-c", 4300, P1, "IB"))
    _, diagnosis = _judge(facts, _run_capture(facts, ranks, "Socket", 2.04))
    ring = {f.rule_id for f in diagnosis.findings if f.status in (Status.WARN, Status.FAIL)}
    assert {"NCCL_SOCKET_FALLBACK", "NCCL_BUSBW_LOW"} <= ring
    assert not [f for f in diagnosis.findings if f.rule_id in FORMER]


def test_a_former_id_in_linkcheck_yaml_tunes_the_rule_and_says_its_new_id(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "linkcheck.yaml"
    path.write_text("thresholds:\n  NCCL_CLUSTER_BUSBW_LOW: {ring_min_busbw_gbs: 12.5}\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        rules = configured_rules([], load_config(path), kind="all")
    assert {r.scope in CLUSTER_SCOPES: r.thresholds["ring_min_busbw_gbs"] for r in rules
            if r.id == "NCCL_BUSBW_LOW"} == {False: 12.5, True: 12.5}
    assert "rule NCCL_CLUSTER_BUSBW_LOW is now NCCL_BUSBW_LOW" in caplog.text and "linkcheck.yaml:2" in caplog.text
    # The old id and the new one for the same rule: which one wins is not guessed.
    path.write_text("thresholds:\n  NCCL_CLUSTER_BUSBW_LOW: {ring_min_busbw_gbs: 12.5}\n"
                    "  NCCL_BUSBW_LOW: {ring_min_busbw_gbs: 11}\n", encoding="utf-8")
    with pytest.raises(PlaybookError, match="given twice"):
        configured_rules([], load_config(path), kind="all")


def test_a_former_id_in_a_playbook_names_the_rule_and_a_rule_may_not_take_it(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    rule = """playbook: site
rules:
  - id: SITE_SLOW_RING
    title: The site's ring is slow
    severity: warning
    scope: cluster
    when: {fact: nccl_busbw_gbs, lt: 5}
    message: slow
    explained_by: [NCCL_CLUSTER_SOCKET_FALLBACK]
"""
    (tmp_path / "site.yaml").write_text(rule, encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        (site,) = [r for r in load_playbooks([tmp_path], kind="cluster") if r.id == "SITE_SLOW_RING"]
    assert [c.rule for c in site.explained_by] == ["NCCL_SOCKET_FALLBACK"]
    assert "NCCL_CLUSTER_SOCKET_FALLBACK is now NCCL_SOCKET_FALLBACK" in caplog.text
    (tmp_path / "site.yaml").write_text(rule.replace("SITE_SLOW_RING", "CLUSTER_NODES_DIFFER"), encoding="utf-8")
    with pytest.raises(PlaybookError, match="former id of NODES_DIFFER"):
        load_playbooks([tmp_path], kind="cluster")


def test_a_former_id_in_a_profile_takes_the_rules_threshold(caplog: pytest.LogCaptureFixture) -> None:
    text = (FIXTURES.parent / "linkcheck" / "profiles" / "dgx-spark-ring3.yaml").read_text(encoding="utf-8")
    assert "NCCL_BUSBW_LOW.ring_min_busbw_gbs" in text
    with caplog.at_level(logging.WARNING):
        old = parse_profile(text.replace("NCCL_BUSBW_LOW.ring_min_busbw_gbs",
                                         "NCCL_CLUSTER_BUSBW_LOW.ring_min_busbw_gbs"), "ring.yaml")
    new = parse_profile(text, "ring.yaml")
    assert old.check("nccl_busbw_gbs") == new.check("nccl_busbw_gbs")
    assert "NCCL_CLUSTER_BUSBW_LOW is now NCCL_BUSBW_LOW" in caplog.text
    with pytest.raises(ProfileError, match="no rule NCCL_NO_SUCH"):
        parse_profile(text.replace("NCCL_BUSBW_LOW.ring_min_busbw_gbs", "NCCL_NO_SUCH.x"), "ring.yaml")


def test_a_cluster_layout_takes_a_clusters_scope() -> None:
    text = """playbook: site
rules:
  - id: SITE_MTU
    title: t
    severity: warning
    scope: path
    when: {differs: [a.mtu, b.mtu]}
    message: m
    cluster:
      scope: path
      when: {differs: [a.mtu, b.mtu]}
"""
    with pytest.raises(PlaybookError, match="gives a cluster's scope"):
        parse_playbook(text, "site.yaml")
    # A key the block does not take is named with the keys it does, at its line.
    with pytest.raises(PlaybookError, match=r"unknown key 'colour' under 'rules\[0\]\.cluster' \(expected: check, "
                                            r"evidence, .*when, where\)") as refused:
        parse_playbook(text + "      colour: red\n", "site.yaml")
    assert refused.value.line == 12
    rules = parse_playbook(text.replace("      scope: path\n      when: {differs: [a.mtu, b.mtu]}",
                                        "      scope: port\n      when: {differs: [mtu, cluster_mtu]}"), "site.yaml")
    assert [(r.id, r.scope) for r in rules] == [("SITE_MTU", "path"), ("SITE_MTU", "port")]

"""One engine judges a pair and a cluster: `diagnose` runs the rules of the facts' own scopes (a pair's over a pair's
LinkFacts, a cluster's over a cluster's ClusterFacts) from one CHECKS and one subjects table, and refuses the other's
facts where a rule's scope or check would read them."""

from __future__ import annotations

from pathlib import Path

import pytest

from linkcheck.app.topology import cluster_facts
from linkcheck.bundle.format import load_bundle
from linkcheck.cluster.facts import ClusterFacts
from linkcheck.collect.specs import CLUSTER_SPECS, SPECS
from linkcheck.diagnose.checks.registry import CHECKS
from linkcheck.diagnose.engine import CABLE_TRAPS, diagnose
from linkcheck.diagnose.facts_schema import CLUSTER_SCOPES, subjects
from linkcheck.diagnose.playbook import load_playbooks
from linkcheck.facts.model import LinkFacts
from linkcheck.facts.pair import build_link_facts
from tests.emulators.captures import node_captures
from tests.lab.cluster import CLUSTER_SCENARIOS, cluster_models

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
ALL_RULES = load_playbooks(kind="all")


def _pair() -> LinkFacts:
    return build_link_facts(load_bundle(FIXTURES / "healthy").captures)


def _ring3() -> ClusterFacts:
    models = cluster_models(CLUSTER_SCENARIOS["ring3"]())
    captures = [c for n, m in models.items() for c in node_captures(n, m, SPECS + CLUSTER_SPECS)]
    return cluster_facts(list(models), captures, {})


def test_diagnose_runs_only_the_rules_of_the_facts_own_scopes() -> None:
    # A rule may judge both layouts under one id (NCCL_BUSBW_LOW); its pair's layout and its cluster's are apart. A
    # cluster also meets the pair's traps of a node and its cable end, judged on each of its cables, and no other.
    cluster_rules = {r.id for r in ALL_RULES if r.scope in CLUSTER_SCOPES}
    pair_rules = {r.id for r in ALL_RULES if r.scope not in CLUSTER_SCOPES}
    pair = {f.rule_id for f in diagnose(_pair(), ALL_RULES).findings}
    ring = {f.rule_id for f in diagnose(_ring3(), ALL_RULES).findings}
    assert pair and pair <= pair_rules and not pair & (cluster_rules - pair_rules)
    # Every trap is judged on the ring's cables but NCCL_HCA_PAIRING (a ring node's other cage is live: NCCL routes a
    # ring by subnet).
    assert ring and ring <= cluster_rules | set(CABLE_TRAPS)
    assert set(CABLE_TRAPS) - ring == {"NCCL_HCA_PAIRING"}
    assert not ring & (pair_rules - cluster_rules - set(CABLE_TRAPS))
    alone = diagnose(_ring3(), load_playbooks(kind="cluster"))  # the cluster's own rules: no trap of the pair's
    assert {f.rule_id for f in alone.findings} == ring - set(CABLE_TRAPS)
    assert diagnose(_pair(), ALL_RULES) == diagnose(_pair(), load_playbooks(kind="pair"))


def test_a_check_or_a_scope_refuses_the_other_kind_of_facts() -> None:
    with pytest.raises(TypeError, match="pair's check"):
        CHECKS["nodes_differ"].observe(_ring3(), {})
    with pytest.raises(TypeError, match="cluster's check"):
        CHECKS["cluster_nodes_differ"].observe(_pair(), {})
    with pytest.raises(TypeError, match="judges a cluster"):
        list(subjects("cable", _pair()))
    with pytest.raises(TypeError, match="judges a pair"):
        list(subjects("path", _ring3()))
    assert [s for s, _, _ in subjects("cable", _ring3())]  # each in its own kind, the subjects are there

"""A pair is the cluster of its one cable: every saved bundle goes through the one loader (`cluster_bundle`), and
two nodes with no switch between them are judged there by the pair's rules on their one cable, whatever named them
(`--node a=... --node b=...`, two plain `--node`, a hostfile of two), and read in the pair's look (`judged_view`)."""

from __future__ import annotations

import re
from pathlib import Path

import msgspec
import pytest

from linkcheck.app.offline import cluster_bundle, judge_cluster, pair_record
from linkcheck.app.topology import cluster_facts
from linkcheck.bundle.verify import load_trusted
from linkcheck.diagnose.engine import diagnose
from linkcheck.diagnose.playbook import load_playbooks
from linkcheck.facts.pair import build_link_facts
from linkcheck.model import Finding, Status, Verdict
from linkcheck.outcome import ClusterCheck, Outcome, judged_view
from linkcheck.values import evidence_line
from tests.cluster.cluster_checks import ALL_RULES
from tests.fixture_bundles import FIXTURE_DIR, PAIR_BUNDLES


def _one_cable(path: Path) -> ClusterCheck:
    return cluster_bundle(path, ALL_RULES, allow_unverified=True)


def _firing(findings: list[Finding]) -> dict[str, Status]:
    out: dict[str, Status] = {}
    for f in findings:
        if f.status in (Status.WARN, Status.FAIL):
            out[f.rule_id] = Status.FAIL if Status.FAIL in (f.status, out.get(f.rule_id)) else Status.WARN
    return out


def _cluster_findings(check: ClusterCheck) -> list[Finding]:
    return [*check.view.diagnosis.findings, *(f for cable in check.cables for f in cable.findings)]


def _said(findings: tuple[Finding, ...]) -> list[tuple[str, str, Status, str]]:
    return [(f.rule_id, f.subject, f.status, f.message) for f in findings]


@pytest.mark.parametrize("path", PAIR_BUNDLES, ids=lambda p: p.name)
def test_a_pair_judged_as_the_cluster_of_its_one_cable_gives_what_the_pairs_rules_say_of_its_facts(path: Path) -> None:
    # The reference is built apart from the cluster's facts: the pair's own facts (facts/pair.py build_link_facts, its
    # nodes a and b) judged by the pair's rules with the bundle's errors.
    bundle = load_trusted(path, allow_unverified=True)
    errors = {**bundle.collection_errors, **{f"bundle: {p}": p for p in bundle.problems}}
    reference = diagnose(build_link_facts(bundle.captures, bundle.collection_errors), load_playbooks(),
                         collection_errors=errors)
    check = _one_cable(path)
    assert len(check.cables) == 1 and check.view.topology.nodes == ("a", "b")
    (cable,) = check.cables
    assert _said(cable.findings) == _said(reference.findings) and cable.verdict is reference.verdict
    assert check.verdict is reference.verdict  # the cluster's own rules add nothing on one cable
    view = judged_view(check)
    assert isinstance(view, Outcome) and view.diagnosis.notes == reference.notes
    assert view.link == build_link_facts(bundle.captures, bundle.collection_errors)


def test_two_nodes_named_by_a_hostfile_are_the_pair_they_are() -> None:
    # The same hot-plugged pair saved as the pair's own bundle and as the cluster of its one cable (a hostfile of
    # two): the same findings, in the pair's look.
    pair, cable = (judged_view(_one_cable(FIXTURE_DIR / name)) for name in ("hotplug-degraded", "cluster-pair-hotplug"))
    assert isinstance(pair, Outcome) and isinstance(cable, Outcome)
    assert _firing(list(pair.diagnosis.findings)) == _firing(list(cable.diagnosis.findings)) == {
        "LINK_HOTPLUG_DEGRADED": Status.FAIL}
    assert pair.verdict is cable.verdict is Verdict.FAIL


def test_a_ring_stays_a_cluster() -> None:
    check = _one_cable(FIXTURE_DIR / "cluster-ring3-hotplug")
    assert judged_view(check) is check and len(check.cables) == 3


def test_a_pair_bundles_runs_are_its_one_cables() -> None:
    # Runs saved before they carried a path (`path` absent) or named it by the twins alone: each is read on its path.
    check = _one_cable(FIXTURE_DIR / "hotplug-degraded")
    (cable,) = check.cables
    assert cable.problem is None and cable.state == "slow"
    assert cable.lowest_gbps is not None and 13.0 < cable.lowest_gbps < 14.0
    assert {f.rule_id for f in cable.findings if f.status is Status.FAIL} == {"LINK_HOTPLUG_DEGRADED"}


def test_a_pair_bundles_nccl_job_is_the_job_across_its_two_nodes() -> None:
    check = _one_cable(FIXTURE_DIR / "nccl-socket-fallback")
    assert check.facts.nccl is not None and [p.node for p in check.facts.nccl.ranks] == ["a", "b"]
    assert {"NCCL_SOCKET_FALLBACK", "NCCL_BUSBW_LOW"} <= set(_firing(_cluster_findings(check)))
    assert check.verdict is Verdict.FAIL


def test_nccl_device_pairing_is_judged_on_the_cable_of_two_nodes() -> None:
    # Each node's every live port is on the one cable: NCCL pairs their devices by index (a ring's are not judged:
    # tests/diagnose/test_one_engine.py).
    check = _one_cable(FIXTURE_DIR / "nccl-hca-pairing")
    assert _firing(_cluster_findings(check)) == {"NCCL_HCA_PAIRING": Status.FAIL}


def test_two_nodes_named_as_their_owner_names_them_are_named_so_in_the_pairing_finding() -> None:
    # The nccl-hca-pairing bundle's two nodes as `--node spark-1 --node spark-2` would name them: the finding, its
    # evidence and its fix say spark-1 and spark-2, never the pair view's a and b.
    bundle = load_trusted(FIXTURE_DIR / "nccl-hca-pairing")
    names = {"a": "spark-1", "b": "spark-2"}
    captures = [msgspec.structs.replace(c, node=names[c.node]) for c in bundle.captures]
    facts = cluster_facts(["spark-1", "spark-2"], captures, {})
    (finding,) = [f for f in diagnose(facts, ALL_RULES).findings
                  if f.rule_id == "NCCL_HCA_PAIRING" and f.status is Status.FAIL]
    said = " ".join([finding.message, *finding.fix, *(e.fact for e in finding.evidence)])
    assert "spark-1 uses" in finding.message and "spark-2 uses" in finding.message
    assert "address node spark-2 so that each position faces node spark-1's: 'spark-2:rocep1s0f1 into" in said
    assert "NCCL_IB_HCA on spark-1" in said and " a:" not in said and "node b" not in said


# The pair view's roles said as if they were node names: `node a`, `a uses`, `on node b`, `a:enp1s0f1np1`, `a->b`.
ROLE_AS_NAME = re.compile(r"\bnode [ab]\b|\b[ab] uses\b|cages on [ab]\b|(?<![\w.:/-])[ab]:(?:enp|enP|roce)"
                          r"|\b[ab]->[ab]\b")


@pytest.mark.parametrize("path", PAIR_BUNDLES, ids=lambda p: p.name)
def test_two_nodes_named_by_their_owner_are_never_called_a_and_b(path: Path) -> None:
    bundle = load_trusted(path, allow_unverified=True)
    names = {"a": "spark-1", "b": "spark-2"}
    captures = [msgspec.structs.replace(c, node=names.get(c.node, c.node)) for c in bundle.captures]
    renamed = msgspec.structs.replace(bundle, captures=captures, nodes={names[k]: v for k, v in bundle.nodes.items()})
    hosts, doc = pair_record(renamed)
    check = judge_cluster(hosts, captures, {}, doc, ALL_RULES, bundle=renamed)
    assert [h.name for h in hosts] == ["spark-1", "spark-2"] and len(check.cables) == 1
    for f in _cluster_findings(check):
        if f.status in (Status.WARN, Status.FAIL):
            for text in (f.message, *f.fix, *(evidence_line(e) for e in f.evidence)):
                assert not ROLE_AS_NAME.search(text), (f.rule_id, text)


@pytest.mark.parametrize("nodes", [{"x": {}, "y": {}}, {"a": {}, "b\x1b[31m": {}}, {"a": {}, "b": {}, "c": {}}, {}],
                         ids=["other-names", "escape-in-a-name", "three-names", "none"])
def test_a_pair_bundles_manifest_naming_other_nodes_than_its_captures_is_judged_on_a_and_b(
        nodes: dict[str, dict[str, str]]) -> None:
    # The manifest's `nodes` and each capture's node are written apart: a pair's bundle is judged on the nodes its
    # captures bear (a and b), never on names only its manifest gives.
    bundle = load_trusted(FIXTURE_DIR / "hotplug-degraded")
    hosts, _ = pair_record(msgspec.structs.replace(bundle, nodes=nodes))
    assert [h.name for h in hosts] == ["a", "b"]
    view = judged_view(judge_cluster(hosts, bundle.captures, {}, pair_record(bundle)[1], ALL_RULES,
                                     bundle=msgspec.structs.replace(bundle, nodes=nodes)))
    assert isinstance(view, Outcome)
    assert _firing(list(view.diagnosis.findings)) == {"LINK_HOTPLUG_DEGRADED": Status.FAIL}


@pytest.mark.parametrize(("recorded", "moved"), [(("a:p1<->b:p1",), False), (("b:p1<->a:p1",), False),
                                                 (("a:p0<->b:p0",), True), ((), True)])
def test_a_pairs_cable_recorded_as_a_clusters_is_compared_with_the_live_one(recorded: tuple[str, ...],
                                                                           moved: bool) -> None:
    """Two nodes on one cable whose cabling init recorded as a `cluster:` section (names other than a and b): the
    one cable's LINK_CHANGED warns when the live cable is not the recorded one, and its verdict says so."""
    from linkcheck.cluster.facts import ExpectedCluster

    path = FIXTURE_DIR / "cluster-pair-hotplug"  # its live cable: a:p1<->b:p1
    plain = judged_view(cluster_bundle(path, ALL_RULES))
    check = cluster_bundle(path, ALL_RULES, expected=ExpectedCluster(cables=recorded, source="site.yaml"))
    judged = judged_view(check)
    assert isinstance(judged, Outcome) and isinstance(plain, Outcome)
    changed = [f for f in judged.diagnosis.findings if f.rule_id == "LINK_CHANGED"]
    if not moved:
        assert changed == [] and judged.diagnosis == plain.diagnosis
        return
    assert [f.status for f in changed] == [Status.WARN] and "site.yaml" in changed[0].message
    assert "new cables: a:p1<->b:p1" in changed[0].message
    assert judged.diagnosis.findings[:-1] == plain.diagnosis.findings
    assert judged.verdict is plain.verdict  # the hot-plugged cable fails already; a warning adds no worse verdict
    healthy = judged_view(cluster_bundle(FIXTURE_DIR / "healthy", ALL_RULES,
                                         expected=ExpectedCluster(cables=recorded, source="site.yaml")))
    assert healthy.verdict is Verdict.WARN and healthy.exit_code == 1  # a passing pair now warns

"""A pair is the cluster of its one cable: every pair fixture, read as that cluster's record and judged by the
cluster's judge, gives the verdict and the findings the pair's own judging gives. Two nodes named either way
(`--node a=... --node b=...`, or two plain `--node`) meet the same rules at the same severity."""

from __future__ import annotations

import re
from pathlib import Path

import msgspec
import pytest

from linkcheck.app.offline import diagnose_bundle, judge_cluster, one_cable_record
from linkcheck.app.topology import cluster_facts
from linkcheck.bundle.verify import load_trusted
from linkcheck.cluster.hosts import recorded_hosts
from linkcheck.diagnose.engine import diagnose, verdict_of
from linkcheck.model import Finding, Status, Verdict
from linkcheck.outcome import ClusterCheck
from linkcheck.values import evidence_line
from tests.cluster.cluster_checks import ALL_RULES
from tests.fixture_bundles import FIXTURE_DIR, PAIR_BUNDLES

NOT_ON_A_CLUSTER = {"NCCL_HCA_UNCABLED"}


def _one_cable(path: Path) -> ClusterCheck:
    bundle = load_trusted(path, allow_unverified=True)
    facts = cluster_facts(list(bundle.nodes), bundle.captures, {})
    doc = one_cable_record(bundle, facts)
    errors = {n: e for n, e in bundle.collection_errors.items() if n in bundle.nodes}
    return judge_cluster(recorded_hosts(doc), bundle.captures, errors, doc, ALL_RULES)


def _firing(findings: list[Finding]) -> dict[str, Status]:
    out: dict[str, Status] = {}
    for f in findings:
        if f.status in (Status.WARN, Status.FAIL):
            out[f.rule_id] = Status.FAIL if Status.FAIL in (f.status, out.get(f.rule_id)) else Status.WARN
    return out


def _cluster_findings(check: ClusterCheck) -> list[Finding]:
    return [*check.view.diagnosis.findings, *(f for cable in check.cables for f in cable.findings)]


@pytest.mark.parametrize("path", PAIR_BUNDLES, ids=lambda p: p.name)
def test_a_pair_judged_as_the_cluster_of_its_one_cable_gives_the_pairs_verdict_and_findings(path: Path) -> None:
    pair = diagnose_bundle(path, allow_unverified=True)
    check = _one_cable(path)
    assert len(check.cables) == 1 and check.view.topology.layout == "pair"
    # All but NCCL_HCA_UNCABLED, which a cluster does not judge: its premise is not NCCL's (an HCA that is not ACTIVE
    # is skipped before NCCL_IB_HCA is matched: diagnose/engine.py CABLE_TRAPS says where).
    judged = [f for f in pair.diagnosis.findings if f.rule_id not in NOT_ON_A_CLUSTER]
    failed = bool(pair.bundle.collection_errors) or bool(pair.bundle.problems)
    assert check.verdict is verdict_of(judged, failed)
    # What the cluster reads beside SINGLE_PCIE_PATH: the twin left unaddressed, or the neighbour entry holding the far
    # node's other twin, as a cabling fault of the topology (a bundle without tests still shows it).
    extra = {f.rule_id for f in check.view.diagnosis.findings if f.rule_id == "CABLING_FAULT"
             and f.status is Status.WARN and f.subject.split(" ")[0] in ("unaddressed", "neighbour_mismatch")}
    assert extra <= {"CABLING_FAULT"} and (not extra or "SINGLE_PCIE_PATH" in _firing(judged))
    assert {k: v for k, v in _firing(_cluster_findings(check)).items() if k not in extra} == _firing(judged)


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
    facts = cluster_facts(list(names.values()), captures, {})
    doc = one_cable_record(renamed, facts)
    check = judge_cluster(recorded_hosts(doc), captures, {}, doc, ALL_RULES)
    for f in _cluster_findings(check):
        if f.status in (Status.WARN, Status.FAIL):
            for text in (f.message, *f.fix, *(evidence_line(e) for e in f.evidence)):
                assert not ROLE_AS_NAME.search(text), (f.rule_id, text)

"""A pair's textfile and a cluster's name the same things the same way: `linkcheck report BUNDLE -f prometheus` over
the shipped pair and cluster fixtures writes the same metric families with the same label names, so a dashboard or
an alert written for one reads the other (a pair being a cluster of one cable; docs/reports.md)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pytest
from msgspec.structs import replace

from linkcheck.accept.evidence import cluster_evidence
from linkcheck.accept.judge import judge_cluster as judge_acceptance
from linkcheck.accept.profile import resolve_profile
from linkcheck.report.prometheus import render_prometheus
from tests.cluster import cluster_checks as cc
from tests.fixture_bundles import FIXTURE_DIR
from tests.lab.cluster import ring3

if TYPE_CHECKING:
    from tests.conftest import InProcessCli

PAIRS = ("healthy", "hotplug-degraded", "accept-pass")
CLUSTERS = ("cluster-ring3-healthy", "cluster-ring3-hotplug", "cluster-switch4-slow-node")
_SAMPLE = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? \S+")

ACCEPTANCE = {"linkcheck_acceptance_info", "linkcheck_acceptance_verdict", "linkcheck_acceptance_non_standard",
              "linkcheck_acceptance_check_status", "linkcheck_acceptance_check_margin"}
# What only a pair's fixtures write, each because the shipped cluster fixtures hold no such record (a cluster writes
# the same family, with the same labels, from the same code where its bundle holds one): an acceptance (accept-pass;
# report/prometheus.py acceptance_families, compared below) and an NCCL run's bus bandwidth (nccl_family).
_NOT_IN_THE_CLUSTER_FIXTURES = ACCEPTANCE | {"linkcheck_nccl_busbw_bytes_per_second"}


def families(text: str) -> dict[str, set[frozenset[str]]]:
    """Each family's label-name sets, the deprecated aliases (`linkcheck_cluster_*`) left out."""
    out: dict[str, set[frozenset[str]]] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.fullmatch(line)
        assert match is not None, line
        name, labels = match.groups()
        if not name.startswith("linkcheck_cluster_"):
            out.setdefault(name, set()).add(frozenset(re.findall(r'(\w+)="', labels or "")))
    return out


def written(cli: InProcessCli, fixture: str) -> dict[str, set[frozenset[str]]]:
    done = cli("report", str(FIXTURE_DIR / fixture), "-f", "prometheus")
    assert done.returncode in (0, 1, 2), done.stderr
    return families(done.stdout)


@pytest.mark.parametrize("cluster", CLUSTERS)
@pytest.mark.parametrize("pair", PAIRS)
def test_a_pair_and_a_cluster_write_the_same_families_with_the_same_labels(pair: str, cluster: str,
                                                                          cli: InProcessCli) -> None:
    mine, theirs = written(cli, pair), written(cli, cluster)
    assert set(theirs) - set(mine) == set(), "a cluster's family the pair does not write"
    assert set(mine) - set(theirs) <= _NOT_IN_THE_CLUSTER_FIXTURES, "a pair's family the cluster does not write"
    for name in set(mine) & set(theirs):
        if name == "linkcheck_finding":
            # A test's rule per cable in both; a cluster's own rules per node or for the whole cluster, which a
            # pair (no cluster rules) does not have.
            assert mine[name] == {frozenset({"rule", "severity", "cable"})}
            assert mine[name] <= theirs[name] <= {frozenset({"rule", "severity", "cable"}),
                                                  frozenset({"rule", "severity", "node"}),
                                                  frozenset({"rule", "severity"})}
        elif name == "linkcheck_info":
            # A pair's node_a and node_b: its labels of the release before, deprecated (docs/reports.md).
            assert {s - {"node_a", "node_b"} for s in mine[name]} == theirs[name] == {
                frozenset({"layout", "supported", "nodes", "tool_version"})}
        else:
            assert mine[name] == theirs[name], name


@pytest.mark.parametrize("pair", ["accept-pass", "accept-fail"])
def test_a_pairs_acceptance_and_a_rings_carry_the_same_labels(pair: str, cli: InProcessCli) -> None:
    """A pair's checks are named by its one cable and pass as a cluster's test's are (the NCCL run's by neither);
    the ring is the cluster tests' stand-in facts (not a recording), accepted against the ring profile."""
    check = cc.checked(ring3(), lambda t: cc.HEALTHY)
    record = {**judge_acceptance(check, resolve_profile("dgx-spark-ring3"), 1).to_dict(),
              "evidence": cluster_evidence(check, [], "2026-12-03T00:00:00+00:00", "test")}
    ring = families(render_prometheus(replace(check, acceptance=record)))
    mine = written(cli, pair)
    assert {n: mine[n] for n in ACCEPTANCE} == {n: ring[n] for n in ACCEPTANCE}


def test_the_guard_fails_on_a_label_one_side_lacks() -> None:
    """The comparison above can fail: a cable state without its `cable` is a different label set."""
    with_cable = families('linkcheck_cable_state{cable="a:p1<->b:p1",a="a",b="b",state="pass"} 1\n')
    without = families('linkcheck_cable_state{a="a",b="b",state="pass"} 1\n')
    assert with_cable != without

"""The JSON report is one document for every layout (schema_version 2): the same envelope, every node by name with
its facts and how it was reached, every test (a pair's one cable as a cluster's cables), the matrix, the findings."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

from tests.fixture_bundles import FIXTURE_DIR

if TYPE_CHECKING:
    from tests.conftest import InProcessCli

ENVELOPE = ["schema", "schema_version", "tool_version", "created", "bundle", "bundle_created", "layout", "summary",
            "verdict", "exit_code", "nodes"]
SHARED = {*ENVELOPE, "tests", "matrix", "findings", "notes", "acceptance", "repair"}
TEST_KEYS = {"label", "a", "b", "round", "pass", "switched", "state", "verdict", "problem", "lowest_gbps",
             "totals_gbps", "runs", "not_run", "findings"}


def _report(cli: InProcessCli, fixture: str) -> tuple[int, dict[str, Any]]:
    run = cli("report", str(FIXTURE_DIR / fixture), "-f", "json")
    assert not run.stderr, run.stderr
    return run.returncode, json.loads(run.stdout)


@pytest.mark.parametrize("fixture", ["healthy", "hotplug-degraded", "link-down", "cluster-pair-hotplug",
                                     "cluster-ring3-hotplug", "cluster-switch4-slow-node"])
def test_every_layout_opens_with_one_envelope_and_names_its_nodes(cli: InProcessCli, fixture: str) -> None:
    code, doc = _report(cli, fixture)
    assert list(doc)[:len(ENVELOPE)] == ENVELOPE and set(doc) >= SHARED
    assert (doc["schema"], doc["schema_version"]) == ("linkcheck-report", 2)
    assert doc["exit_code"] == code and doc["bundle"] == str(FIXTURE_DIR / fixture)
    for name, node in doc["nodes"].items():
        # How it was reached, then its facts, under its own name whatever the layout.
        assert {"target", "origin", "error", "hostname", "functions", "identity", "nccl"} <= set(node), name
        assert node["error"] is None and node["hostname"] and node["functions"]
    assert all(set(t) == TEST_KEYS for t in doc["tests"])
    assert set(doc["matrix"]) == set(doc["nodes"])


def test_a_pairs_one_cable_is_a_test_as_a_clusters_cable_is(cli: InProcessCli) -> None:
    _, pair = _report(cli, "hotplug-degraded")
    _, cable = _report(cli, "cluster-pair-hotplug")  # the same fault, two nodes named by a hostfile
    assert pair["layout"] == cable["layout"] == "pair" and list(pair["nodes"]) == list(cable["nodes"]) == ["a", "b"]
    (mine,) = pair["tests"]
    (theirs,) = cable["tests"]
    assert mine["label"] == theirs["label"] == "a:p1<->b:p1"
    assert (mine["state"], mine["verdict"]) == (theirs["state"], theirs["verdict"]) == ("slow", "fail")
    assert {f["id"] for f in mine["findings"] if f["status"] == "fail"} == {"LINK_HOTPLUG_DEGRADED"}
    assert {f["id"] for f in theirs["findings"] if f["status"] == "fail"} == {"LINK_HOTPLUG_DEGRADED"}
    # Both directions of the one cable, by node, at the 13 Gb/s per path of the hot-plug state.
    assert set(mine["totals_gbps"]) == {"a->b", "b->a"} and all(20 < v < 40 for v in mine["totals_gbps"].values())
    assert pair["matrix"] == {"a": {"b": mine["totals_gbps"]["a->b"]}, "b": {"a": mine["totals_gbps"]["b->a"]}}
    # The pair keeps its own version 1 fields: its paths and its traffic facts.
    assert pair["paths"] and pair["bench"]["rdma"] and pair["nodes"]["a"]["target"] == "dgx-spark-1"


def test_a_pair_inspected_without_traffic_has_no_test_as_a_clusters_inspection_has_none(cli: InProcessCli) -> None:
    _, doc = _report(cli, "gid-stale")
    assert doc["tests"] == [] and doc["matrix"] == {"a": {}, "b": {}}
    assert doc["verdict"] == "fail" and any(f["id"] == "GID_INDEX_STALE" for f in doc["findings"])


def test_a_clusters_report_says_how_each_node_was_reached_beside_its_facts(cli: InProcessCli) -> None:
    code, doc = _report(cli, "cluster-ring3-hotplug")
    assert code == 2 and doc["layout"] == "ring3" and list(doc["nodes"]) == ["a", "b", "c"]
    assert {n: (v["target"], v["origin"]) for n, v in doc["nodes"].items()} == {
        "a": ("a", "--node"), "b": ("b", "--node"), "c": ("c", "--node")}
    assert doc["nodes"]["c"]["hostname"] == "spark-c" and doc["cluster_verdict"] in ("pass", "warn", "fail")
    assert doc["notes"] == [] and doc["repair"] is None  # no plan saved in this bundle

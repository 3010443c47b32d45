"""The cluster fixtures (bundles `check --quick` saved against the lab's clusters; scripts/make_cluster_fixtures.py):
each verifies, is judged offline to its expected.yaml (layout, verdict, the rules that fire and where) with the
documented exit code, renders in every report format, and says how it was recorded. The commands that serve only a
pair refuse it in one line (exit 4) instead of answering it as a pair; `diagnose --all` and `topology BUNDLE` read
it as a cluster."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from tests.fixture_bundles import CLUSTER_BUNDLES, FIXTURE_DIR, PAIR_BUNDLES, cluster_fired

if TYPE_CHECKING:
    from tests.conftest import InProcessCli

EXIT = {"pass": 0, "warn": 1, "fail": 2, "inconclusive": 3}
NAMES = [p.name for p in CLUSTER_BUNDLES]
RING = FIXTURE_DIR / "cluster-ring3-hotplug"  # a ring of three with one failing cable
REFUSAL = "serves a pair; this bundle holds 3 nodes (ring3); "


def _expected(name: str) -> dict[str, Any]:
    data = yaml.safe_load((FIXTURE_DIR / name / "expected.yaml").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def test_the_cluster_fixtures_are_shipped() -> None:
    assert {"cluster-ring3-healthy", "cluster-ring3-hotplug", "cluster-switch4-slow-node"} <= set(NAMES)
    assert {p.name for p in PAIR_BUNDLES}.isdisjoint(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_expected_yaml_and_provenance(name: str) -> None:
    expected = _expected(name)
    assert expected["scenario"] == name and expected["origin"] == "synthetic"
    assert expected["verdict"] in EXIT and isinstance(expected["layout"], str)
    assert set(expected["subjects"]) == set(expected["findings"])
    assert set(expected["findings"].values()) <= {"warn", "fail"}
    provenance = (FIXTURE_DIR / name / "PROVENANCE.md").read_text(encoding="utf-8")
    assert "not on real hardware" in provenance and "scripts/make_cluster_fixtures.py" in provenance


@pytest.mark.parametrize("name", NAMES)
def test_fixture_verifies_and_is_judged_as_expected(name: str, cli: InProcessCli) -> None:
    expected = _expected(name)
    assert cli("verify", str(FIXTURE_DIR / name)).returncode == 0
    run = cli("diagnose", str(FIXTURE_DIR / name), "-f", "json")
    report = json.loads(run.stdout)
    assert run.returncode == EXIT[expected["verdict"]], run.stderr
    assert (report["verdict"], report["layout"]) == (expected["verdict"], expected["layout"])
    # The key findings, each on exactly its stated subjects; other rules may fire beside them (scripts/
    # make_cluster_fixtures.py), but none can turn a stated verdict.
    status, subjects = cluster_fired(report)
    assert {k: status.get(k) for k in expected["findings"]} == expected["findings"]
    assert {k: subjects.get(k) for k in expected["subjects"]} == expected["subjects"]


@pytest.mark.parametrize("fmt", ["html", "json", "junit", "prometheus", "markdown"])
@pytest.mark.parametrize("name", NAMES)
def test_every_report_format_renders_offline(name: str, fmt: str, cli: InProcessCli) -> None:
    run = cli("report", str(FIXTURE_DIR / name), "-f", fmt)
    assert run.returncode == EXIT[_expected(name)["verdict"]], run.stderr
    assert run.stdout.strip() and not run.stderr


@pytest.mark.parametrize("name", NAMES)
def test_quiet_prints_the_bundles_one_verdict_line(name: str, cli: InProcessCli) -> None:
    run = cli("-q", "diagnose", str(FIXTURE_DIR / name))
    assert run.returncode == EXIT[_expected(name)["verdict"]]
    # One line: a cluster's verdict, or the pair's with its counts (the cluster of one cable is the pair).
    (line,) = run.stderr.splitlines()
    assert run.stdout == "" and line.lower().startswith(f"verdict: {_expected(name)['verdict']}")


def test_diagnose_all_shows_the_passed_rules_of_a_cluster(cli: InProcessCli) -> None:
    plain = cli("diagnose", str(RING)).stdout
    every = cli("diagnose", str(RING), "--all")
    assert every.returncode == 2
    # The cluster's rules and each cable's, passed: the ring's ports, and the other two cables' hot-plug check.
    assert "PASS RING_SAME_PORT (cable a:p1<->c:p0)" in every.stdout
    assert "PASS LINK_HOTPLUG_DEGRADED (b:p0<->c:p1)" in every.stdout
    assert "PASS " not in plain
    assert "FAIL LINK_HOTPLUG_DEGRADED (a:p0<->b:p1" in every.stdout


def test_a_clusters_findings_carry_their_evidence_in_every_report_a_person_reads(cli: InProcessCli) -> None:
    # The switch's slow node: the cluster's finding with what it rests on, each test's findings one level below the
    # test, pointing at the node's fix rather than repeating it; the console as the Markdown.
    switch = FIXTURE_DIR / "cluster-switch4-slow-node"
    text = cli("report", str(switch), "-f", "markdown").stdout
    cluster, _, tests = text.partition("## Findings per test")
    assert "### FAIL `NODE_SLOW_WITH_EVERY_PARTNER` node c" in cluster
    assert "- evidence: partners measured = 3" in cluster and "sudo systemctl reboot --no-block" in cluster
    assert "### b\\<-\\>c (round 1)" in tests and "#### FAIL `LINK_HOTPLUG_DEGRADED`" in tests
    assert "- evidence: ib\\_write\\_bw concurrent b-\\>c = 13\\.30 Gb/s" in tests
    assert "the fix is the node's" in tests and "Fix:" not in tests  # the node's reboot, given once above
    console = cli("diagnose", str(switch)).stdout
    assert "  evidence: partners measured = 3  [the test rounds]" in console
    assert "  evidence (enp1s0f1np1<->enp1s0f1np1): ib_write_bw concurrent b->c = 13.30 Gb/s" in console


def test_topology_reads_a_saved_cluster_bundle(cli: InProcessCli) -> None:
    run = cli("topology", str(RING))
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == "layout: ring3 (3 nodes; a layout NVIDIA documents)"
    assert [line for line in lines if line.startswith("cable ")] == [
        "cable a:p0<->b:p1", "cable a:p1<->c:p0", "cable b:p0<->c:p1"]
    assert sum(line.startswith("round ") for line in lines) == 3
    switch = json.loads(cli("topology", str(FIXTURE_DIR / "cluster-switch4-slow-node"), "-f", "json").stdout)
    assert switch["layout"] == "switch" and len(switch["nodes"]) == 4 and len(switch["schedule"]["rounds"]) == 3


def test_topology_reads_a_pair_bundle_as_a_cluster_of_one_cable(cli: InProcessCli) -> None:
    data = json.loads(cli("topology", str(FIXTURE_DIR / "healthy"), "-f", "json").stdout)
    assert data["layout"] == "pair" and [c["key"] for c in data["cables"]] == ["a:p1<->b:p1"]


@pytest.mark.parametrize(("fixture", "rule", "code"), [("link-down", "FAIL LINK_DOWN", 2),
                                                     ("twins-same-subnet", "WARN TWINS_SAME_SUBNET", 1)])
def test_topology_judges_the_pairs_traps_on_each_cable(fixture: str, rule: str, code: int,
                                                        cli: InProcessCli) -> None:
    # The inspection alone, as `topology` reads it: a twin down, twins in one subnet are the pair's rules' on the cable,
    # at the pair's severity, never a flag that passes.
    run = cli("topology", str(FIXTURE_DIR / fixture))
    assert run.returncode == code, run.stderr
    assert any(line.startswith(rule) for line in run.stdout.splitlines()), run.stdout
    assert "CABLING_FAULT" not in run.stdout


def test_topology_takes_a_bundle_or_nodes_not_both(cli: InProcessCli) -> None:
    run = cli("topology", str(RING), "--node=a")
    assert run.returncode == 4 and run.stderr.count("\n") == 1 and "--node" in run.stderr

"""A cluster's baseline over real SSH in the lab: a healthy ring of three checked with --quick and saved as the
known-good state, then the same three nodes (the same hostnames, MACs and cables) with one cable in the hot-plug
state checked against it: the drift is named on that cable alone, with the rate then and now, in the node_exporter
textfile too, and both runs are in the history of each cable's two nodes; a baseline of another cluster is refused
after the run's bundle was saved."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
import pytest

from linkcheck.baseline import store
from linkcheck.baseline.drift import cluster_snapshot
from linkcheck.baseline.store import new_cluster_baseline
from tests.cluster.cluster_checks import checked
from tests.lab.cluster import ring3

if TYPE_CHECKING:
    from tests.conftest import InProcessCli
    from tests.live.conftest import ClusterFactory

pytestmark = pytest.mark.lab


def _findings(data: dict[str, Any]) -> list[tuple[str, ...]]:
    """Every finding of a cluster's JSON report, the cluster's and each test's: rule, subject, status, its cause."""
    out = [(f["id"], f["subject"], f["status"], f["explained_by"] or "") for f in data["findings"]]
    out += [(t["label"], f["id"], f["subject"], f["status"]) for t in data["tests"] for f in t["findings"]]
    return sorted(out)


def test_a_hot_plugged_cable_is_named_as_drift_from_the_rings_baseline(cluster_factory: ClusterFactory,
                                                                        cli: InProcessCli, tmp_path: Path) -> None:
    healthy = cluster_factory("ring3")
    run = cli("check", *healthy.args, "--quick", "-f", "json", "--save", str(tmp_path / "good"), timeout=300)
    assert run.returncode == 0, run.stderr
    saved = cli("baseline", "save", "ring", str(tmp_path / "good"))
    assert saved.returncode == 0, saved.stderr
    healthy.lab.down()

    hot = cluster_factory("ring3-hotplug")
    prom = tmp_path / "linkcheck.prom"
    run = cli("check", *hot.args, "--quick", "-f", "json", "--save", str(tmp_path / "later"),
              "--baseline", "ring", "--prometheus-textfile", str(prom), timeout=300)
    assert run.returncode == 2, run.stderr
    states = {line.split('test="')[1].split('"')[0]: line.split('state="')[1].split('"')[0]
              for line in prom.read_text(encoding="utf-8").splitlines()
              if line.startswith("linkcheck_cluster_test_state{") and line.endswith(" 1")}
    assert states["a:p0<->b:p1"] == "slow" and list(states.values()).count("pass") == 2, states
    data = json.loads(run.stdout)
    drift = {(f["id"], f["subject"]) for t in data["tests"] for f in t["findings"] if f["status"] in ("fail", "warn")}
    drift |= {(f["id"], f["subject"]) for f in data["findings"] if f["status"] in ("fail", "warn")}
    fell = {subject for rule, subject in drift if rule == "DRIFT_THROUGHPUT"}
    assert fell and all(s.startswith("a:p0<->b:p1: ") for s in fell), drift
    assert not any(rule.startswith(("CLUSTER_DRIFT", "DRIFT_IDENTITY")) for rule, _ in drift), drift
    # The same bundle judged again offline against the baseline gives the same verdict and the same findings, the
    # drift included: both judge it in the cluster's one diagnosis.
    again = cli("diagnose", str(tmp_path / "later"), "--baseline", "ring", "-f", "json")
    assert again.returncode == 2, again.stderr
    assert _findings(json.loads(again.stdout)) == _findings(data)
    # Every cable of both runs is in the history of its two nodes; the hot-plugged one passed, then failed.
    log = cli("history", "-f", "json")
    assert log.returncode == 0, log.stderr
    rows = json.loads(log.stdout)
    assert len(rows) == 6 and {r["command"] for r in rows} == {"check --quick"}, rows
    assert [r["verdict"] for r in rows if r["cable"] == "a:p0<->b:p1"] == ["pass", "fail"], rows
    assert len({r["pair"] for r in rows}) == 3, rows
    # A baseline of another cluster (no node in common) is one line, exit 4, after the run's bundle was saved: the
    # bundle is written before it is judged, so the refused run is kept and verifies.
    snap = cluster_snapshot(checked(ring3()), [], "pass")
    others = msgspec.structs.replace(snap, nodes=tuple(
        msgspec.structs.replace(n, hostname=f"other-{n.name}", macs=(f"02:00:00:00:00:0{i}",))
        for i, n in enumerate(snap.nodes)))
    store.save(new_cluster_baseline("other", others, None, "2026-12-01T10:00:00+00:00", forced=False),
               overwrite=False)
    refused = cli("check", *hot.args, "--save", str(tmp_path / "refused"), "--baseline", "other", timeout=300)
    lines = [ln for ln in refused.stderr.splitlines() if ln.strip()]
    assert refused.returncode == 4 and "another cluster" in lines[-1] and "Traceback" not in refused.stderr, lines
    assert f"bundle saved to {tmp_path / 'refused'}" in refused.stderr
    assert cli("verify", str(tmp_path / "refused")).returncode == 0

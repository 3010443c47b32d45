"""The shipped Grafana dashboard, without a Grafana (Debian 12 packages none): it loads as JSON and keeps the
dashboard model's structural rules as Grafana's JSON model documents them (a title and uid, a schemaVersion, panels
with unique ids on the 24-column grid without overlaps, targets with unique refIds, every variable it uses
defined), every query is PromQL that promtool parses, and every linkcheck metric it reads is one linkcheck writes
(taken from the textfiles rendered from the fixtures and the service's own)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

from linkcheck.app.offline import diagnose_bundle
from linkcheck.baseline.store import read_baseline
from linkcheck.report.prometheus import render_prometheus
from linkcheck.service.textfile import ServiceRun, render_service
from tests.cluster import cluster_checks as cc
from tests.service.monitoring_helpers import DASHBOARD, FIXTURES, binary, fixture_textfile

PANEL_TYPES = {"stat", "timeseries", "table", "text", "row", "gauge", "bargauge"}
UID = re.compile(r"[A-Za-z0-9_-]{1,40}")  # Grafana's uid: at most 40 of these characters
VARIABLE = re.compile(r"\$\{?(\w+)")
METRIC = re.compile(r"\b(linkcheck_[a-z_]+|node_[a-z_]+)\b")


def _dashboard() -> dict[str, Any]:
    data = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def _queries(dash: dict[str, Any]) -> list[str]:
    return [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]


def test_the_dashboard_keeps_the_models_structural_rules() -> None:
    dash = _dashboard()
    assert isinstance(dash["title"], str) and dash["title"]
    assert UID.fullmatch(dash["uid"])
    assert isinstance(dash["schemaVersion"], int) and dash["schemaVersion"] >= 36
    assert set(dash["time"]) == {"from", "to"}
    variables = {v["name"] for v in dash["templating"]["list"]}
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids)) and all(isinstance(i, int) for i in ids)
    cells: set[tuple[int, int]] = set()
    for panel in dash["panels"]:
        assert panel["type"] in PANEL_TYPES and panel["title"]
        grid = panel["gridPos"]
        assert all(isinstance(grid[k], int) and grid[k] >= 0 for k in ("x", "y", "w", "h"))
        assert grid["w"] >= 1 and grid["h"] >= 1 and grid["x"] + grid["w"] <= 24, panel["title"]
        x0, y0 = grid["x"], grid["y"]
        mine = {(x, y) for x in range(x0, x0 + grid["w"]) for y in range(y0, y0 + grid["h"])}
        assert not mine & cells, f"{panel['title']} overlaps another panel"
        cells |= mine
        refs = [t["refId"] for t in panel["targets"]]
        assert refs and len(refs) == len(set(refs))
        for text in (json.dumps(panel["datasource"]), *(t["expr"] for t in panel["targets"])):
            assert set(VARIABLE.findall(text)) <= variables, text
    for variable in dash["templating"]["list"]:
        if variable["type"] == "query":
            assert set(VARIABLE.findall(json.dumps(variable["datasource"]))) <= variables


def test_every_query_is_promql_that_promtool_parses(tmp_path: Path) -> None:
    """Each query as a recording rule (the dashboard's variables filled in as Grafana would), checked by promtool;
    a query with a syntax error makes the same check fail."""
    queries = [q.replace("$instance", ".*") for q in _queries(_dashboard())]
    rules = tmp_path / "queries.yml"

    def check(exprs: list[str]) -> subprocess.CompletedProcess[str]:
        rules.write_text(json.dumps({"groups": [{"name": "dashboard", "rules": [
            {"record": f"linkcheck:dashboard_query_{i}", "expr": q} for i, q in enumerate(exprs)]}]}))
        return subprocess.run([binary("promtool"), "check", "rules", str(rules)], capture_output=True, text=True,
                              timeout=60)

    done = check(queries)
    assert done.returncode == 0, done.stdout + done.stderr
    assert check([*queries, "max by (instance (linkcheck_exit_code)"]).returncode != 0


def _written_names(tmp: Path) -> set[str]:
    """Every series name linkcheck writes, from real renderings: the pair's (hot-plug, drift against its baseline,
    an acceptance), the cluster's and the service's."""
    texts = [fixture_textfile(name, tmp) for name in ("hotplug-degraded", "healthy", "accept-pass")]
    drift = FIXTURES / "drift-cable-swap"
    texts.append(render_prometheus(diagnose_bundle(drift, baseline=read_baseline(drift / "baseline.json"))))
    texts.append(render_prometheus(cc.switch()))
    texts.append(render_service(ServiceRun(kind="boot", finished=1.0, exit_code=0, verdict="pass", reason=None,
                                           answered={"a": True}, baseline="good", baseline_created=1.0)))
    return {line.split("{")[0].split()[0] for text in texts for line in text.splitlines()
            if line and not line.startswith("#")}


def test_every_metric_the_dashboard_reads_is_one_linkcheck_writes(tmp_path: Path) -> None:
    written = _written_names(tmp_path) | {"node_boot_time_seconds"}
    read = {m for q in _queries(_dashboard()) for m in METRIC.findall(q)}
    assert read - written == set()
    # one set of names for a pair and a cluster (the cluster's older names are aliases, read by no panel)
    assert {"linkcheck_finding", "linkcheck_node_inspected", "linkcheck_service_inconclusive"} <= read
    assert not {m for m in read if m.startswith("linkcheck_cluster_")}

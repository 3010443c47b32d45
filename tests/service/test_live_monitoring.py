"""The shipped rules and dashboard queries in a real Prometheus 2.42 scraping real node_exporters 1.5 (Debian 12) on
127.0.0.1, each node_exporter's textfile collector reading the file `linkcheck report -f prometheus` wrote for a
recorded scenario: the hot-plugged pair's trap fires with its rule and hostnames, the healthy pair stays silent, and
a new healthy check of the hot pair resolves the alert. (tests/live/test_service_lab.py does the same with the
service's own run against the lab.)"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from tests.service.monitoring_helpers import DASHBOARD, FIXTURES, firing, monitoring

if TYPE_CHECKING:
    from tests.conftest import InProcessCli


def _report(cli: InProcessCli, scenario: str, tmp: Path, out: Path) -> None:
    bundle = tmp / f"{scenario}-bundle"
    if not bundle.exists():
        shutil.copytree(FIXTURES / scenario, bundle)
    result = cli("report", str(bundle), "-f", "prometheus", "-o", str(out))
    assert result.returncode in (0, 2), result.stderr  # 2: the verdict fails


def test_the_hot_plugged_pair_fires_in_a_real_prometheus_and_the_healthy_pair_does_not(cli: InProcessCli,
                                                                                      tmp_path: Path) -> None:
    folders = {"hot": tmp_path / "tf-hot", "healthy": tmp_path / "tf-healthy"}
    for folder in folders.values():
        folder.mkdir()
    _report(cli, "hotplug-degraded", tmp_path, folders["hot"] / "linkcheck.prom")
    _report(cli, "healthy", tmp_path, folders["healthy"] / "linkcheck.prom")
    with monitoring(tmp_path, folders) as stack:
        stack.wait_for(lambda: "hot" in firing(stack, "LinkcheckTrapFiring"))
        stack.wait_for(lambda: bool(stack.query('up{host="healthy"} == 1')))
        alert = firing(stack, "LinkcheckTrapFiring")["hot"]
        assert {k: alert["labels"][k] for k in ("rule", "nodes", "cable", "node_a", "node_b", "severity")} == {
            "rule": "LINK_HOTPLUG_DEGRADED", "nodes": "dgx-spark-1,dgx-spark-2", "cable": "a:p1<->b:p1",
            "node_a": "dgx-spark-1", "node_b": "dgx-spark-2", "severity": "critical"}
        assert alert["annotations"]["summary"] == ("LINK_HOTPLUG_DEGRADED on 2 subject(s) of dgx-spark-1,dgx-spark-2 "
                                                   "on cable a:p1<->b:p1")
        assert float(alert["value"]) == 2
        # the healthy pair: scraped, and no alert of any kind fires or waits for it
        assert [a["labels"]["alertname"] for a in stack.alerts() if a["labels"].get("host") == "healthy"
                and a["labels"]["alertname"] != "LinkcheckNoCheckSinceBoot"] == []
        # the fixtures' runs (2026-11-29 12:00 UTC) predate this machine's boot unless it has been up since: that
        # alert then waits its 15 minutes, on both
        boot = float(stack.query('node_boot_time_seconds{host="hot"}')[0]["value"][1])
        expected = {"hot", "healthy"} if boot > 1795953600 else set()

        def pending() -> set[str]:
            return {a["labels"]["host"] for a in stack.alerts()
                    if a["labels"]["alertname"] == "LinkcheckNoCheckSinceBoot" and a["state"] == "pending"}
        # Each host's alert turns pending at the first rule evaluation after that host's first scrape: the healthy
        # one may be scraped a moment after the hot one's trap fired, so its alert is waited for, not raced.
        stack.wait_for(lambda: pending() == expected)
        assert pending() == expected
        # the dashboard's queries answer from the same series (its variable as Grafana's "All")
        dashboard = json.loads(DASHBOARD.read_text())
        answered = {t["expr"] for p in dashboard["panels"] for t in p["targets"]
                    if stack.query(t["expr"].replace("$instance", ".*"))}
        assert any("linkcheck_finding" in q for q in answered) and any("concurrent_total" in q for q in answered)
        # the hot pair checked again and healthy: linkcheck renames the new file in, the alert resolves
        _report(cli, "healthy", tmp_path, folders["hot"] / "linkcheck.prom")
        stack.wait_for(lambda: "hot" not in firing(stack, "LinkcheckTrapFiring"))

"""`linkcheck service run --boot` against the lab over real SSH, its textfiles read by a real node_exporter and a real
Prometheus with the shipped rules: after the hot-plug scenario's boot check the trap alert fires for that pair with
the rule's name, after the healthy pair's none does, and no boot alert either (both checks ran after this boot)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.lab import Lab
from tests.lab.scenario import specs_for_scenario
from tests.service.monitoring_helpers import binary, firing, monitoring

pytestmark = pytest.mark.lab  # builds two two-node labs

if TYPE_CHECKING:
    from tests.live.conftest import Live


def test_the_boot_check_of_a_hot_plugged_pair_fires_its_trap_and_the_healthy_pair_nothing(
        module_lab_factory: Callable[..., Lab], live: Live, tmp_path: Path) -> None:
    for name in ("prometheus", "prometheus-node-exporter"):
        binary(name)  # skip before building a lab when the monitoring parts are absent
    folders, started, args = {}, {}, {}
    for host, scenario in (("hot", "hotplug-degraded"), ("healthy", "healthy")):
        work = tmp_path / host
        lab = module_lab_factory(specs_for_scenario(scenario, work / "models"))
        config = live.lab_config(lab, work / "linkcheck.yaml", nodes={"a": {"target": "a"}, "b": {"target": "b"}})
        folders[host] = work / "textfiles"
        folders[host].mkdir()
        args[host] = ("service", "run", "--boot", "--wait", "60", "--config", str(config),
                      "--textfile-dir", str(folders[host]), "--bundles", str(work / "bundles"))
        started[host] = live.start(*args[host])
    runs = {host: live.wait(handle, args[host], timeout=300) for host, handle in started.items()}
    assert runs["hot"].returncode == 2, runs["hot"].describe()
    assert runs["healthy"].returncode == 0, runs["healthy"].describe()
    hot_lines = runs["hot"].stdout.splitlines()
    assert sum(line.startswith("LINK_HOTPLUG_DEGRADED fail ") for line in hot_lines) == 2, hot_lines
    assert hot_lines[-1] == "linkcheck service: boot run: FAIL"
    assert not any(" fail " in line or " warn " in line for line in runs["healthy"].stdout.splitlines()[:-1])
    for host, folder in folders.items():
        assert sorted(p.name for p in folder.iterdir()) == ["linkcheck-boot.prom", "linkcheck-service.prom"], host
        service = {s.name: s for f in text_string_to_metric_families((folder / "linkcheck-service.prom").read_text())
                   for s in f.samples}
        assert service["linkcheck_service_inconclusive"].value == 0
        assert len(list((tmp_path / host / "bundles").glob("linkcheck-*"))) == 1

    with monitoring(tmp_path, folders) as stack:
        stack.wait_for(lambda: "hot" in firing(stack, "LinkcheckTrapFiring"))
        stack.wait_for(lambda: bool(stack.query('up{host="healthy"} == 1')) and bool(
            stack.query('linkcheck_verdict{host="healthy", run="boot", verdict="pass"} == 1')))
        stack.wait_for(lambda: bool(stack.api("/api/v1/rules")["groups"][0]["rules"][0].get("lastEvaluation")))
        alerts = stack.alerts()
        hot = [a for a in alerts if a["labels"]["alertname"] == "LinkcheckTrapFiring"]
        assert [a["labels"]["rule"] for a in hot] == ["LINK_HOTPLUG_DEGRADED"], json.dumps(alerts)
        info = stack.query('linkcheck_info{host="hot"}')[0]["metric"]
        assert (hot[0]["labels"]["node_a"], hot[0]["labels"]["node_b"]) == (info["node_a"], info["node_b"])
        assert hot[0]["labels"]["host"] == "hot" and float(hot[0]["value"]) == 2
        assert [a["labels"]["alertname"] for a in alerts if a["labels"].get("host") == "healthy"] == []
        assert [a for a in alerts if a["labels"]["alertname"] == "LinkcheckNoCheckSinceBoot"] == []

"""The shipped alerting rules, checked and unit-tested by promtool (Debian's prometheus package) on the series
linkcheck writes for the recorded scenarios: the hot-plugged pair (fixtures/hotplug-degraded) fires the trap alert
with the rule's name and the pair's hostnames, the healthy pair (fixtures/healthy) fires nothing; the boot, the
inconclusive, the below-baseline and the expired-acceptance alerts each fire where they should and only there."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from linkcheck.app.offline import diagnose_bundle
from linkcheck.baseline.store import read_baseline
from linkcheck.report.prometheus import render_prometheus
from linkcheck.service.textfile import ServiceRun, labelled, render_service
from tests.cluster import cluster_checks as cc
from tests.service.monitoring_helpers import FIXTURES, RULES, binary, fixture_textfile, input_series

TRAP_HELP = ("`linkcheck playbooks show {rule}` gives the mechanism and the fix; the run's bundle is the newest "
             "under /var/lib/linkcheck/bundles (`linkcheck diagnose` it, `linkcheck fix` it).")
DAY = 86400


def promtool_test(tmp: Path, series: list[str], cases: list[str],
                  rules: Path = RULES) -> subprocess.CompletedProcess[str]:
    test = tmp / "test.yml"
    test.write_text("\n".join([f"rule_files: ['{rules}']", "evaluation_interval: 1m", "tests:",
                               "  - interval: 1m", "    input_series:", *series, "    alert_rule_test:", *cases])
                    + "\n")
    return subprocess.run([binary("promtool"), "test", "rules", str(test)], capture_output=True, text=True,
                          timeout=60)


def test_promtool_checks_the_shipped_rules() -> None:
    done = subprocess.run([binary("promtool"), "check", "rules", str(RULES)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 6 rules found" in done.stdout


def _pair_series(tmp: Path) -> list[str]:
    """The hot-plugged pair as the service's boot run writes it (run="boot"), beside a later timer run of the same
    pair (run="timer") that says 0 for the hot-plug rule (the healthy fixture's series: the hardest case, a 0 that
    must not hide the boot run's 2), and the healthy pair as a user's own `check --prometheus-textfile` writes it (no
    run label); each node booted before its run."""
    hot, healthy = fixture_textfile("hotplug-degraded", tmp), fixture_textfile("healthy", tmp)
    series = input_series({"hot": labelled(hot, "boot")}) + input_series({"hot": labelled(healthy, "timer")})
    series += input_series({"healthy": healthy})
    series += input_series({"hot": "node_boot_time_seconds 1\n", "healthy": "node_boot_time_seconds 1\n"})
    return series


def test_the_hot_plugged_pair_fires_the_trap_with_its_name_and_the_healthy_pair_nothing(tmp_path: Path) -> None:
    """One alert in all: the hot-plug trap on the cable of dgx-spark-1 and dgx-spark-2 on the `hot` target, standing
    while the timer's inspection says 0 for that rule; none for `healthy`, and no warning, drift or boot alert."""
    labels = ("{severity: critical, rule: LINK_HOTPLUG_DEGRADED, instance: hot, job: node, cable: 'a:p1<->b:p1', "
              "nodes: 'dgx-spark-1,dgx-spark-2', node_a: dgx-spark-1, node_b: dgx-spark-2}")
    cases = [
        "      - eval_time: 5m", "        alertname: LinkcheckTrapFiring", "        exp_alerts:",
        f"          - exp_labels: {labels}",
        "            exp_annotations:",
        "              summary: 'LINK_HOTPLUG_DEGRADED on 2 subject(s) of dgx-spark-1,dgx-spark-2 on cable "
        "a:p1<->b:p1'",
        f"              description: \"{TRAP_HELP.format(rule='LINK_HOTPLUG_DEGRADED')}\"",
        *(line for name in ("LinkcheckTrapWarning", "LinkcheckBelowBaseline", "LinkcheckNoCheckSinceBoot",
                            "LinkcheckInconclusive", "LinkcheckAcceptanceExpired")
          for line in ("      - eval_time: 30m", f"        alertname: {name}", "        exp_alerts: []")),
    ]
    done = promtool_test(tmp_path, _pair_series(tmp_path), cases)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


def test_a_broken_rule_fails_the_same_test(tmp_path: Path) -> None:
    """The test above can fail: the trap's rule asking for a severity linkcheck never writes fires nothing."""
    broken = tmp_path / "broken.rules.yml"
    broken.write_text(RULES.read_text().replace('linkcheck_finding{severity="error"}',
                                                'linkcheck_finding{severity="critical"}'))
    cases = ["      - eval_time: 5m", "        alertname: LinkcheckTrapFiring", "        exp_alerts:",
             "          - exp_labels: {severity: critical, rule: LINK_HOTPLUG_DEGRADED, instance: hot, job: node, "
             "cable: 'a:p1<->b:p1', nodes: 'dgx-spark-1,dgx-spark-2', node_a: dgx-spark-1, node_b: dgx-spark-2}"]
    done = promtool_test(tmp_path, _pair_series(tmp_path), cases, rules=broken)
    assert done.returncode != 0
    assert "FAILED" in done.stdout + done.stderr


@pytest.mark.parametrize(("slow", "fine"), [("hotplug-degraded", "healthy"),
                                            ("cluster-ring3-hotplug", "cluster-ring3-healthy")])
def test_no_check_since_boot_fires_after_its_grace_on_the_node_that_rebooted(slow: str, fine: str,
                                                                            tmp_path: Path) -> None:
    """`hot` booted after its last run (the fixture's time, a pair's or a ring's), `healthy` before it: only `hot`
    fires, and only once the 15 minutes of the boot unit's grace are over."""
    hot, healthy = fixture_textfile(slow, tmp_path), fixture_textfile(fine, tmp_path)
    def last(text: str) -> float:
        return next(float(line.split()[1]) for line in text.splitlines()
                    if line.startswith("linkcheck_last_run_timestamp_seconds "))

    series = input_series({"hot": labelled(hot, "boot"), "healthy": healthy})
    series += input_series({"hot": f"node_boot_time_seconds {last(hot) + 60:.0f}\n",
                            "healthy": f"node_boot_time_seconds {last(healthy) - 60:.0f}\n"})
    cases = ["      - eval_time: 10m", "        alertname: LinkcheckNoCheckSinceBoot", "        exp_alerts: []",
             "      - eval_time: 20m", "        alertname: LinkcheckNoCheckSinceBoot", "        exp_alerts:",
             "          - exp_labels: {severity: warning, instance: hot, job: node}",
             "            exp_annotations:",
             "              summary: 'no linkcheck run on hot since it booted'",
             "              description: \"`systemctl status linkcheck-boot.service` and `journalctl -u "
             "linkcheck-boot.service` say why; run it again with `systemctl start linkcheck-boot.service`.\""]
    done = promtool_test(tmp_path, series, cases)
    assert done.returncode == 0, done.stdout + done.stderr


def test_below_baseline_names_the_path_and_its_ratio(tmp_path: Path) -> None:
    """The cable swapped under a saved baseline (fixtures/drift-cable-swap): the path at 0.88 of the baseline."""
    bundle = FIXTURES / "drift-cable-swap"
    text = render_prometheus(diagnose_bundle(bundle, baseline=read_baseline(bundle / "baseline.json")))
    ratios = [line for line in text.splitlines() if line.startswith("linkcheck_baseline_ratio{")
              and float(line.split()[-1]) < 0.9]
    assert len(ratios) == 1, ratios
    done = promtool_test(tmp_path, input_series({"drift": text}), [
        "      - eval_time: 5m", "        alertname: LinkcheckBelowBaseline", "        exp_alerts:",
        "          - exp_labels: {severity: warning, instance: drift, job: node, baseline: healthy-pair, "
        "metric: rdma, subject: 'enP2p1s0f1np1<->enP2p1s0f1np1 concurrent a->b'}",
        "            exp_annotations:",
        "              summary: 'enP2p1s0f1np1<->enP2p1s0f1np1 concurrent a->b (rdma) at 0.880049 of baseline "
        "healthy-pair'",
        "              description: 'Below DRIFT_THROUGHPUT''s 0.90 of the known-good run; `linkcheck playbooks show "
        "DRIFT_THROUGHPUT`.'"])
    assert done.returncode == 0, done.stdout + done.stderr


def _service(reason: str | None, verdict: str, baseline_created: float | None) -> str:
    return render_service(ServiceRun(kind="timer", finished=0.0, exit_code=3 if verdict == "inconclusive" else 0,
                                     verdict=verdict, reason=reason, answered={"a": True, "b": reason is None},
                                     baseline="good", baseline_created=baseline_created))


def test_an_unreachable_node_and_an_old_acceptance_alert_on_their_node_only(tmp_path: Path) -> None:
    """`away`: node b never answered (the service's textfile says so; the check wrote nothing), its baseline 181
    days old; `fine`: a passing run against a baseline of last week. Only `away` alerts, for both."""
    eval_minutes = 20
    now = eval_minutes * 60
    series = input_series({"away": _service("no answer from node b", "inconclusive", now - 181 * DAY),
                           "fine": _service(None, "pass", now - 7 * DAY)})
    cases = [f"      - eval_time: {eval_minutes}m", "        alertname: LinkcheckInconclusive", "        exp_alerts:",
             "          - exp_labels: {severity: warning, instance: away, job: node, reason: 'no answer from node b'}",
             "            exp_annotations:",
             "              summary: 'linkcheck on away is inconclusive: no answer from node b'",
             "              description: 'Missing is never passing: `journalctl -u linkcheck-check.service` shows the "
             "run''s lines.'",
             f"      - eval_time: {eval_minutes}m", "        alertname: LinkcheckAcceptanceExpired",
             "        exp_alerts:",
             "          - exp_labels: {severity: info, instance: away, job: node, baseline: good}",
             "            exp_annotations:",
             "              summary: 'baseline good on away is older than 180 days'",
             "              description: 'Run `linkcheck accept`, save the passing run with `linkcheck baseline save "
             "NAME --force`, and point the service at it (`linkcheck service install --baseline NAME`).'"]
    done = promtool_test(tmp_path, series, cases)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_clusters_hot_plugged_node_fires_per_test_and_on_the_node(tmp_path: Path) -> None:
    """A switch of four whose node c runs at the hot-plug rates (the cluster tests' stand-in facts, not a
    recording): the trap alert per test through c, named by the rule and its cable (the second pass's `pass 2`), and
    one for node c slow with every partner, each once though the older names are written beside; the healthy switch
    nothing."""
    slow = render_prometheus(cc.switch(rates=cc.slow_node("c")))
    fine = render_prometheus(cc.switch())
    cables = sorted({line.split('cable="')[1].split('"')[0]
                     for line in slow.splitlines() if line.startswith("linkcheck_finding{")
                     and 'rule="LINK_HOTPLUG_DEGRADED"' in line and not line.endswith(" 0")})
    assert len(cables) == 4 and all("c" in t for t in cables) and "c<->a pass 2" in cables, cables
    trap = TRAP_HELP.format(rule="LINK_HOTPLUG_DEGRADED")
    node = TRAP_HELP.format(rule="NODE_SLOW_WITH_EVERY_PARTNER")
    nodes = "spark-a,spark-b,spark-c,spark-d"  # the stand-in nodes' hostnames, linkcheck_info's `nodes`
    done = promtool_test(tmp_path, input_series({"slow": labelled(slow, "boot"), "fine": fine}), [
        "      - eval_time: 5m", "        alertname: LinkcheckTrapFiring", "        exp_alerts:",
        *(line for t in cables for line in (
            f"          - exp_labels: {{severity: critical, rule: LINK_HOTPLUG_DEGRADED, instance: slow, job: node, "
            f"cable: '{t}', nodes: '{nodes}'}}",
            "            exp_annotations:",
            f"              summary: 'LINK_HOTPLUG_DEGRADED on 2 subject(s) of {nodes} on cable {t}'",
            f"              description: \"{trap}\"")),
        "          - exp_labels: {severity: critical, rule: NODE_SLOW_WITH_EVERY_PARTNER, instance: slow, job: node, "
        f"node: c, nodes: '{nodes}'}}",
        "            exp_annotations:",
        f"              summary: 'NODE_SLOW_WITH_EVERY_PARTNER on 1 subject(s) of {nodes} on node c'",
        f"              description: \"{node}\""])
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_clusters_check_since_boot_is_read_from_its_files_mtime(tmp_path: Path) -> None:
    """A cluster's textfile of the release before says no run time, so the boot alert reads node_exporter's mtime of
    the check's file (as node_exporter 1.5 labels it: the full path): `old` was written before its boot, `new`
    after; only `old` fires. The service's own file, written after boot on both, does not count."""
    text = labelled("".join(line for line in render_prometheus(cc.switch()).splitlines(keepends=True)
                            if "linkcheck_last_run_timestamp_seconds" not in line), "boot")
    mtime = "node_textfile_mtime_seconds{{file=\"/var/lib/prometheus/node-exporter/{}\"}} {}\n"
    series = input_series({"old": text, "new": text})
    series += input_series({
        "old": mtime.format("linkcheck-boot.prom", 900) + mtime.format("linkcheck-service.prom", 1100)
        + "node_boot_time_seconds 1000\n",
        "new": mtime.format("linkcheck-boot.prom", 1100) + "node_boot_time_seconds 1000\n"})
    done = promtool_test(tmp_path, series, [
        "      - eval_time: 20m", "        alertname: LinkcheckNoCheckSinceBoot", "        exp_alerts:",
        "          - exp_labels: {severity: warning, instance: old, job: node}",
        "            exp_annotations:",
        "              summary: 'no linkcheck run on old since it booted'",
        "              description: \"`systemctl status linkcheck-boot.service` and `journalctl -u "
        "linkcheck-boot.service` say why; run it again with `systemctl start linkcheck-boot.service`.\""])
    assert done.returncode == 0, done.stdout + done.stderr

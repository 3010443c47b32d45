"""`linkcheck service run` without a lab: nodes that never answer make an inconclusive run that says why (its
textfile and its lines), never a gap; the journal gets one line per finding of the check's JSON; the check's textfile
is labelled by run kind; old bundles go, and only the service's own."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from prometheus_client.parser import text_string_to_metric_families

from linkcheck.service.run import finding_lines, one_run_at_a_time, prune_bundles, wait_for_nodes
from linkcheck.service.textfile import labelled
from linkcheck.transport.base import NodeTarget
from tests.service.monitoring_helpers import FIXTURES, fixture_textfile, free_port

if TYPE_CHECKING:
    from tests.conftest import InProcessCli


def _config(folder: Path) -> Path:
    """Two nodes on loopback ports nothing listens on (a refused connection: no traffic leaves the machine)."""
    config = folder / "linkcheck.yaml"
    config.write_text(f"version: 1\nnodes:\n  a: {{target: root@127.0.0.1:{free_port()}}}\n"
                      f"  b: {{target: root@127.0.0.1:{free_port()}}}\n")
    return config


def test_nodes_that_never_answer_make_an_inconclusive_run_that_says_why(cli: InProcessCli, tmp_path: Path) -> None:
    textfiles, bundles = tmp_path / "textfiles", tmp_path / "bundles"
    textfiles.mkdir()
    start = time.monotonic()
    result = cli("service", "run", "--boot", "--wait", "1", "--config", str(_config(tmp_path)),
                 "--textfile-dir", str(textfiles), "--bundles", str(bundles))
    assert time.monotonic() - start < 30  # the wait is bounded
    assert result.returncode == 3
    lines = result.stdout.splitlines()
    assert "node a did not answer on its SSH port within 1 s; the check says what it can" in lines
    assert lines[-1] == "linkcheck service: boot run: INCONCLUSIVE (no answer from node a, b)"
    assert any("connection refused" in line for line in lines)  # the check's own words, in the journal
    assert sorted(os.listdir(textfiles)) == ["linkcheck-service.prom"]  # the check wrote none: no stale pass
    series = {(s.name, tuple(sorted(s.labels.items()))): s.value for f in text_string_to_metric_families(
        (textfiles / "linkcheck-service.prom").read_text()) for s in f.samples}
    assert series[("linkcheck_service_inconclusive", (("reason", "no answer from node a, b"),))] == 1
    assert series[("linkcheck_service_node_answered", (("peer", "b"),))] == 0
    assert series[("linkcheck_service_exit_code", ())] == 3


def test_a_node_waited_for_is_asked_until_it_answers_within_the_bound() -> None:
    asked: list[str] = []

    def answer(node: NodeTarget) -> bool:
        asked.append(node.name)
        return node.name == "a" or len(asked) > 4  # b answers on its third try

    nodes = [NodeTarget(name="a", host="x"), NodeTarget(name="b", host="y")]
    assert wait_for_nodes(nodes, wait_s=5, poll_s=0.01, answer=answer) == {"a": True, "b": True}
    assert asked == ["a", "b", "b", "b", "b"]
    never = wait_for_nodes(nodes, wait_s=0.05, poll_s=0.01, answer=lambda n: n.name == "a")
    assert never == {"a": True, "b": False}


def test_one_line_per_finding_that_warns_or_fails_from_the_checks_json(cli: InProcessCli, tmp_path: Path) -> None:
    done = cli("diagnose", str(FIXTURES / "hotplug-degraded"), "-f", "json", timeout=60)
    lines = finding_lines(done.stdout)
    assert lines and all(line.startswith("LINK_HOTPLUG_DEGRADED fail ") for line in lines)
    assert {line.split(":")[0] for line in lines} == {
        "LINK_HOTPLUG_DEGRADED fail enP2p1s0f1np1<->enP2p1s0f1np1",
        "LINK_HOTPLUG_DEGRADED fail enp1s0f1np1<->enp1s0f1np1"}
    hostile = {"findings": [{"id": "X", "status": "fail", "subject": "s", "message": "a\nb\x1b]2;t\x07"}]}
    assert finding_lines(json.dumps(hostile)) == ["X fail s: a\\x0ab\\x1b]2;t\\x07"]  # one line, nothing obeyed
    assert finding_lines("") == []


def test_the_checks_textfile_is_labelled_by_run_and_otherwise_the_same(tmp_path: Path) -> None:
    text = fixture_textfile("hotplug-degraded", tmp_path)
    plain = {(s.name, tuple(sorted(s.labels.items()))): s.value
             for f in text_string_to_metric_families(text) for s in f.samples}
    boot = {(s.name, tuple(sorted(s.labels.items()))): s.value
            for f in text_string_to_metric_families(labelled(text, "boot")) for s in f.samples}
    assert {(n, tuple(sorted({*labels, ("run", "boot")}))): v for (n, labels), v in plain.items()} == boot


def test_old_bundles_go_and_only_the_services_own(tmp_path: Path) -> None:
    for stamp in ("20261201T000000", "20261202T000000", "20261203T000000"):
        (tmp_path / f"linkcheck-{stamp}").mkdir()
    (tmp_path / "keep-me").mkdir()
    elsewhere = tmp_path.parent / f"{tmp_path.name}-elsewhere"
    elsewhere.mkdir()
    (tmp_path / "linkcheck-00000000T000000").symlink_to(elsewhere)
    removed = prune_bundles(tmp_path, keep=2)
    assert [p.name for p in removed] == ["linkcheck-20261201T000000"]
    assert sorted(os.listdir(tmp_path)) == ["keep-me", "linkcheck-00000000T000000", "linkcheck-20261202T000000",
                                            "linkcheck-20261203T000000"]
    assert elsewhere.is_dir()


def test_a_second_run_while_one_runs_is_skipped(tmp_path: Path) -> None:
    with one_run_at_a_time(tmp_path) as first, one_run_at_a_time(tmp_path) as second:
        assert (first, second) == (True, False)
    with one_run_at_a_time(tmp_path) as again:
        assert again

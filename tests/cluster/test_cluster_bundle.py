"""A cluster's bundle: every node's captures plus cluster.json, covered by `verify`, judged again by `diagnose` and
`report` through the code the live check used; and every way cluster.json can be bad gets one line and exit 4."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from linkcheck.app.live import save_cluster
from linkcheck.app.offline import cluster_bundle, judge_cluster
from linkcheck.bundle.acceptance import add_files
from linkcheck.bundle.format import Bundle
from linkcheck.bundle.run_record import CLUSTER, SCHEMA, SCHEMA_VERSION, ClusterDocument, HostEntry, cluster_json
from linkcheck.cluster.hosts import parse_node_values
from linkcheck.collect.specs import CLUSTER_SPECS, SPECS
from linkcheck.diagnose.playbook import load_playbooks
from linkcheck.report.json_report import render_json
from tests.emulators.captures import node_captures
from tests.lab.cluster import CLUSTER_SCENARIOS, cluster_models

if TYPE_CHECKING:
    from tests.conftest import InProcessCli

RULES = load_playbooks(kind="all")


def _saved(tmp_path: Path, name: str = "ring3-same-port") -> tuple[Path, str]:
    """A cluster bundle of the scenario's nodes (no traffic) and the JSON its check printed."""
    models = cluster_models(CLUSTER_SCENARIOS[name]())
    captures = [c for n, m in models.items() for c in node_captures(n, m, SPECS + CLUSTER_SPECS)]
    hosts = parse_node_values([f"{n}=root@{n}.lab" for n in models])
    doc = ClusterDocument(SCHEMA, SCHEMA_VERSION, tuple(HostEntry(h.name, str(h.target), h.origin) for h in hosts))
    live = judge_cluster(hosts, captures, {}, doc, RULES)
    folder = tmp_path / "bundle"
    save_cluster(Bundle(captures=captures, nodes={n: {"target": f"root@{n}.lab"} for n in models},
                        created="2026-12-02T20:00:00+00:00"), doc, folder)
    return folder, render_json(live)


def test_a_saved_cluster_is_judged_again_as_its_check_judged_it(tmp_path: Path, cli: InProcessCli) -> None:
    folder, live = _saved(tmp_path)
    again = json.loads(render_json(cluster_bundle(folder, RULES)))
    # The same judgement; only what the saved copy adds differs: the bundle it was read from, when it was saved.
    assert (again.pop("bundle"), again.pop("bundle_created")) == (str(folder), "2026-12-02T20:00:00+00:00")
    first = json.loads(live)
    assert (first.pop("bundle"), first.pop("bundle_created")) == (None, None)
    assert {k: v for k, v in again.items() if k != "created"} == {k: v for k, v in first.items() if k != "created"}
    run = cli("diagnose", str(folder), "-f", "json")
    assert run.returncode == 1, run.stderr  # RING_SAME_PORT warns
    assert json.loads(run.stdout)["layout"] == "ring3"
    assert {f["id"] for f in json.loads(run.stdout)["findings"] if f["status"] == "warn"} == {"RING_SAME_PORT"}
    assert cli("verify", str(folder)).returncode == 0
    md = cli("report", str(folder), "-f", "markdown")
    assert md.returncode == 1 and md.stdout.startswith("# linkcheck cluster check: WARN")
    starts = {"html": "<!DOCTYPE html>", "junit": "<?xml", "prometheus": "# HELP", "json": "{"}
    for fmt, start in starts.items():
        out = cli("report", str(folder), "-f", fmt, "-o", str(tmp_path / f"r.{fmt}"))
        assert out.returncode == 1, (fmt, out.stderr)
        assert (tmp_path / f"r.{fmt}").read_text(encoding="utf-8").lstrip().startswith(start), fmt
    bad = cli("report", str(folder), "-f", "nonsense")
    assert bad.returncode == 4 and "unknown report format 'nonsense'" in bad.stderr and "Traceback" not in bad.stderr


def _rewrite(folder: Path, doc: dict[str, object]) -> None:
    """cluster.json replaced and vouched for by the manifest, as a writer that made it so would have."""
    add_files(folder, {CLUSTER: json.dumps(doc)})


BAD_DOCS = {
    "unknown key": lambda d: {**d, "extra": 1},
    "wrong schema": lambda d: {**d, "schema": "other"},
    "nine hosts": lambda d: {**d, "hosts": [{"name": f"n{i}", "target": f"n{i}"} for i in range(9)]},
    "a host twice": lambda d: {**d, "hosts": [d["hosts"][0], d["hosts"][0]]},
    "a test with an unknown node": lambda d: {**d, "tests": [{"label": "a<->z", "round": 1, "a": "a", "b": "z"}]},
    "a test of a node with itself": lambda d: {**d, "tests": [{"label": "a<->a", "round": 1, "a": "a", "b": "a"}]},
    "a negative round": lambda d: {**d, "tests": [{"label": "a<->b", "round": -1, "a": "a", "b": "b"}]},
    "hosts not a list": lambda d: {**d, "hosts": "a,b,c"},
    "a version to come": lambda d: {**d, "schema_version": 3},
    "version 1 with the latency test": lambda d: {**d, "schema_version": 1, "latency": True},
}


@pytest.mark.parametrize("case", sorted(BAD_DOCS))
def test_a_bad_cluster_record_is_one_line_and_exit_4(tmp_path: Path, cli: InProcessCli, case: str) -> None:
    folder, _ = _saved(tmp_path)
    doc = json.loads((folder / CLUSTER).read_text(encoding="utf-8"))
    _rewrite(folder, BAD_DOCS[case](doc))
    run = cli("diagnose", str(folder))
    assert run.returncode == 4, (case, run.stdout, run.stderr)
    lines = [ln for ln in run.stderr.splitlines() if ln.strip()]
    assert CLUSTER in lines[0] and "Traceback" not in run.stderr, lines


def test_a_version_1_record_reads_as_one_without_the_latency_test(tmp_path: Path, cli: InProcessCli) -> None:
    """Version 2 added the latency test; a record written before (version 1, no latency fields) is judged as the
    version 2 record of the same run without them, and new records are written as version 2."""
    folder, _ = _saved(tmp_path)
    doc = json.loads((folder / CLUSTER).read_text(encoding="utf-8"))
    assert doc["schema_version"] == 2 and doc["latency"] is False
    now = cli("diagnose", str(folder), "-f", "json")
    old = {k: v for k, v in doc.items() if k not in ("latency", "latency_error")}
    _rewrite(folder, {**old, "schema_version": 1})
    then = cli("diagnose", str(folder), "-f", "json")
    assert then.returncode == now.returncode, then.stderr
    written = [{k: v for k, v in json.loads(run.stdout).items() if k != "created"} for run in (then, now)]
    assert written[0] == written[1]  # all but when each report was written


def test_an_edited_missing_or_odd_cluster_record_is_refused(tmp_path: Path, cli: InProcessCli) -> None:
    folder, _ = _saved(tmp_path)
    record = folder / CLUSTER
    # Edited after the run: verify rejects the bundle, diagnose refuses it before reading it.
    record.write_text(record.read_text(encoding="utf-8").replace('"a"', '"z"'), encoding="utf-8")
    run = cli("diagnose", str(folder))
    assert run.returncode == 4 and "verify" in run.stderr and "Traceback" not in run.stderr
    # With --allow-unverified the record is still not read: it is not the run's.
    run = cli("diagnose", str(folder), "--allow-unverified")
    assert run.returncode == 4 and CLUSTER in run.stderr and "SHA-256" in run.stderr
    # A FIFO and a folder in its place: one line each, nothing blocks.
    record.unlink()
    os.mkfifo(record)
    run = cli("diagnose", str(folder), "--allow-unverified", timeout=30)
    assert run.returncode == 4 and CLUSTER in run.stderr and "Traceback" not in run.stderr
    record.unlink()
    record.mkdir()
    run = cli("diagnose", str(folder), "--allow-unverified", timeout=30)
    assert run.returncode == 4 and CLUSTER in run.stderr and "Traceback" not in run.stderr


def test_the_record_round_trips_the_hosts_and_tests(tmp_path: Path) -> None:
    folder, _ = _saved(tmp_path)
    text = (folder / CLUSTER).read_text(encoding="utf-8")
    assert text == cluster_json(ClusterDocument(**{**json.loads(text), "hosts": tuple(
        HostEntry(**h) for h in json.loads(text)["hosts"])}))
    assert [h["name"] for h in json.loads(text)["hosts"]] == ["a", "b", "c"]

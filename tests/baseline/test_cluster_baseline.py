"""A cluster's baseline: saved from a cluster's bundle, compared per cable by the pair's DRIFT_* rules and per node and
cabling by CLUSTER_DRIFT_NODE and the cluster layouts of DRIFT_CONFIG and DRIFT_IDENTITY; hostile files are one line,
exit 4 (a pair's baseline for a cluster and the reverse: test_baseline_across_layouts.py)."""

from __future__ import annotations

import collections
import dataclasses
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
import pytest

from linkcheck import strict_json
from linkcheck.app import offline, topology
from linkcheck.app.offline import cluster_bundle
from linkcheck.baseline.drift import cluster_snapshot
from linkcheck.baseline.store import (
    ClusterBaseline,
    ClusterSnapshot,
    from_json,
    new_cluster_baseline,
    resolve_any,
    to_json,
)
from linkcheck.diagnose import engine
from linkcheck.diagnose.engine import Diagnosis
from linkcheck.diagnose.playbook import load_playbooks
from linkcheck.errors import BaselineError
from linkcheck.model import Finding, Status
from linkcheck.outcome import ClusterCheck
from tests.cluster.cluster_checks import HEALTHY, HOTPLUG, checked, console_text, judged, saved_bundle, switch
from tests.emulators.node import Node
from tests.lab.cluster import ring3

if TYPE_CHECKING:
    from tests.conftest import InProcessCli

ROOT = Path(__file__).resolve().parents[2]
FIRST = "a:p0<->b:p1"  # ring3's first cable


def _baseline(check: ClusterCheck, edit: Callable[[ClusterSnapshot], ClusterSnapshot] = lambda s: s) -> ClusterBaseline:
    """The check saved as a baseline and read back from its JSON, its snapshot edited first (a baseline of a
    cluster that was then as `edit` makes it)."""
    snap = edit(cluster_snapshot(check, [], check.verdict.value))
    saved = new_cluster_baseline("known-good", snap, None, "2026-12-01T10:00:00+00:00", forced=False)
    found = from_json(strict_json.dumps(to_json(saved)), "known-good.json")
    assert isinstance(found, ClusterBaseline)  # the one reader takes the cluster's shape by its schema
    return found


def compare(check: ClusterCheck, baseline: ClusterBaseline) -> ClusterCheck:
    """The run judged with `baseline` attached to its facts before its one diagnosis, as `check --baseline` and
    `diagnose --baseline` judge it."""
    return judged(check.facts, check.cables, check.view.errors, check.traffic_error, check.interrupted, baseline)


def _drift(check: ClusterCheck) -> list[Finding]:
    return [f for f in check.view.diagnosis.findings if "DRIFT_" in f.rule_id and f.status is not Status.PASS]


def _cable_edit(label: str, kind: str, key: str, value: str) -> Callable[[ClusterSnapshot], ClusterSnapshot]:
    def edit(snap: ClusterSnapshot) -> ClusterSnapshot:
        cables = []
        for c in snap.cables:
            fields = dict(getattr(c.snapshot, kind))
            if c.label == label:
                fields[key] = value
            cables.append(msgspec.structs.replace(c, snapshot=msgspec.structs.replace(c.snapshot, **{kind: fields})))
        return msgspec.structs.replace(snap, cables=tuple(cables))
    return edit


def test_the_same_cluster_has_no_drift_and_its_baseline_reads_back_whole() -> None:
    good = checked(ring3())
    base = _baseline(good)
    assert [c.label for c in base.snapshot.cables] == [r.test.label for r in good.cables]
    assert base.snapshot == cluster_snapshot(good, [], "pass")  # the JSON holds every field
    same = compare(good, base)
    assert same.verdict.value == "pass" and _drift(same) == []
    passed = {f.rule_id for f in same.view.diagnosis.findings if f.rule_id.startswith("DRIFT_")}
    assert {"DRIFT_IDENTITY", "DRIFT_CONFIG", "DRIFT_THROUGHPUT"} <= passed


def test_a_cable_whose_rate_fell_is_named_with_its_rates_then_and_now() -> None:
    base = _baseline(checked(ring3()))
    hot = checked(ring3(), lambda t: HOTPLUG if t.label == FIRST else HEALTHY)
    result = compare(hot, base)
    fell = [f for f in _drift(result) if f.rule_id == "DRIFT_THROUGHPUT"]
    assert fell and all(f.subject.startswith(f"{FIRST}: ") and f.status is Status.FAIL for f in fell)
    total = next(f for f in fell if f.subject == f"{FIRST}: concurrent total a->b")
    assert total.evidence[0].value == {"baseline": 196.02, "now": 26.6, "ratio": 0.1357}
    assert "26.6 Gb/s now, 196.02 Gb/s in baseline known-good" in total.message
    assert total.explained_by is not None and total.explained_by.startswith(f"LINK_HOTPLUG_DEGRADED:{FIRST}")
    assert result.verdict.value == "fail"
    assert f"FAIL DRIFT_THROUGHPUT ({FIRST}: concurrent total a->b)" in console_text(result)


def test_a_cable_serial_and_firmware_changed_are_named_on_their_cable() -> None:
    good = checked(ring3())
    twin = next(k.removesuffix(".firmware") for k in cluster_snapshot(good, [], "").cables[1].snapshot.configuration
                if k.endswith(".firmware"))
    edit = _cable_edit(FIRST, "identity", "cable.a.serial", "OLD-SERIAL")
    edited = _baseline(good, lambda s: _cable_edit("b:p0<->c:p1", "configuration", f"{twin}.firmware", "28.39.1002")(
        edit(s)))
    now = cluster_snapshot(good, [], "").cables[0].snapshot.identity["cable.a.serial"]  # the cable's own serial
    result = compare(good, edited)
    found = {(f.rule_id, f.subject): f for f in _drift(result)}
    assert set(found) == {("DRIFT_IDENTITY", FIRST), ("DRIFT_CONFIG", "b:p0<->c:p1")}
    serial = found[("DRIFT_IDENTITY", FIRST)]
    assert serial.status is Status.FAIL and f"cable.a.serial OLD-SERIAL -> {now}" in serial.message
    assert serial.evidence[0].value == {"baseline": "OLD-SERIAL", "now": now}
    assert found[("DRIFT_CONFIG", "b:p0<->c:p1")].status is Status.WARN
    assert result.verdict.value == "fail"


def test_a_cable_missing_and_one_new_are_named_by_their_cages() -> None:
    good = checked(ring3())

    def moved(snap: ClusterSnapshot) -> ClusterSnapshot:  # the baseline had a:p0 cabled to b:p0
        first = msgspec.structs.replace(snap.cables[0], label="a:p0<->b:p0")
        return msgspec.structs.replace(snap, cables=(first, *snap.cables[1:]))

    result = compare(good, _baseline(good, moved))
    cabling = {f.subject: f for f in _drift(result) if f.rule_id == "DRIFT_IDENTITY"}
    assert cabling["a:p0<->b:p0"].status is Status.FAIL and "not found" in cabling["a:p0<->b:p0"].message
    assert cabling[FIRST].status is Status.WARN and "absent in the baseline" in cabling[FIRST].message
    assert result.verdict.value == "fail"


def test_a_replaced_node_and_a_node_setting_are_named_on_the_node() -> None:
    good = checked(ring3())

    def nodes(snap: ClusterSnapshot) -> ClusterSnapshot:
        a, b, c = snap.nodes
        old_b = msgspec.structs.replace(b, hostname="spark-old", macs=("02:00:00:00:00:01",))
        old_c = msgspec.structs.replace(c, configuration={**c.configuration, "c.kernel": "6.11.0-1016-nvidia"})
        return msgspec.structs.replace(snap, nodes=(a, old_b, old_c))

    result = compare(good, _baseline(good, nodes))
    found = {(f.rule_id, f.subject): f for f in _drift(result)}
    replaced = found[("CLUSTER_DRIFT_NODE", "node b")]
    assert replaced.status is Status.FAIL and "hostname spark-old" in replaced.message
    assert "hostname spark-b" in replaced.evidence[0].value["now"]
    kernel = found[("DRIFT_CONFIG", "node c")]
    assert kernel.status is Status.WARN and "c.kernel 6.11.0-1016-nvidia -> 6.17.0-1008-nvidia" in kernel.message


def test_a_gid_index_that_moved_unpinned_is_a_note_of_the_run_as_on_a_pair() -> None:
    good = checked(ring3())

    def moved(snap: ClusterSnapshot) -> ClusterSnapshot:  # the baseline had a's HCA at index 4
        first = snap.cables[0]
        gids = {**first.snapshot.gid_index, "a:rocep1s0f0": 4}
        first = msgspec.structs.replace(first, snapshot=msgspec.structs.replace(first.snapshot, gid_index=gids))
        return msgspec.structs.replace(snap, cables=(first, *snap.cables[1:]))

    result = compare(good, _baseline(good, moved))
    assert result.verdict.value == "pass" and _drift(result) == []  # nothing pins the index: NCCL resolves it
    note = next(n for n in result.view.diagnosis.notes if n.startswith("DRIFT_GID_INDEX"))
    assert note.startswith(f"DRIFT_GID_INDEX ({FIRST}: ") and "index 4 in baseline known-good, 3 now" in note, note


def test_a_baseline_of_another_cluster_compares_nothing() -> None:
    good = checked(ring3())

    def others(snap: ClusterSnapshot) -> ClusterSnapshot:
        return msgspec.structs.replace(snap, nodes=tuple(
            msgspec.structs.replace(n, hostname=f"other-{n.name}", macs=(f"02:00:00:00:00:0{i}",))
            for i, n in enumerate(snap.nodes)))

    with pytest.raises(BaselineError, match="another cluster"):
        compare(good, _baseline(good, others))


def test_a_switch_baseline_names_each_test_through_the_switch() -> None:
    base = _baseline(switch("abcd"))
    slow = compare(switch("abcd", lambda t: HOTPLUG if "c" in t.nodes else HEALTHY), base)
    named = {f.subject.split(":")[0] for f in _drift(slow) if f.rule_id == "DRIFT_THROUGHPUT"}
    assert named == {"a<->c", "b<->c", "c<->d"}


# A saved cluster bundle, through the command line.

def _bundle(tmp_path: Path, name: str, change: Callable[[str, Node], Node] = lambda _, m: m,
            scenario: str = "ring3") -> Path:
    """A cluster bundle of the scenario (inspection only), each node's model changed by `change` first."""
    return saved_bundle(tmp_path / name, scenario, change)


def _one_line(run: object, *needles: str) -> None:
    code, err = getattr(run, "returncode"), getattr(run, "stderr")  # noqa: B009
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 4 and len(lines) == 1 and "Traceback" not in err, (code, err)
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_save_then_diagnose_a_cluster_bundle_against_its_baseline(tmp_path: Path, cli: InProcessCli) -> None:
    good = _bundle(tmp_path, "good")
    saved = cli("baseline", "save", "ring", str(good))
    assert saved.returncode == 0 and "run verdict: pass" in saved.stdout, saved.stderr
    doc = json.loads(next((Path(os.environ["XDG_DATA_HOME"]) / "linkcheck" / "baselines").glob("cluster-*/ring.json"))
                     .read_text())
    assert doc["schema"] == "linkcheck-cluster-baseline" and doc["cluster"]["layout"] == "ring3"
    assert [n["hostname"] for n in doc["nodes"]] == ["spark-a", "spark-b", "spark-c"]
    assert [c["label"] for c in doc["cables"]] == ["a:p0<->b:p1", "b:p0<->c:p1", "a:p1<->c:p0"]
    assert cli("diagnose", str(good), "--baseline", "ring").returncode == 0
    listed = cli("baseline", "list")
    assert "ring3: a, b, c" in listed.stdout
    assert json.loads(cli("baseline", "show", "ring").stdout.split("\n", 1)[1])["name"] == "ring"

    def changed(name: str, model: Node) -> Node:
        if name == "b":
            return dataclasses.replace(model, kernel_release="6.18.0-1001-nvidia")
        if name == "a" and model.cable is not None:
            return dataclasses.replace(model, cable=dataclasses.replace(model.cable, vendor_sn="APF26010099999"))
        return model

    later = cli("diagnose", str(_bundle(tmp_path, "later", changed)), "--baseline", "ring", "-f", "json")
    assert later.returncode == 2, later.stderr
    findings = {(f["id"], f["subject"]): f for f in json.loads(later.stdout)["findings"]
                if f["status"] in ("fail", "warn")}
    # b's kernel on node b; its in-tree driver's version on each of b's cables; a's cable serial on a's cable
    assert set(findings) == {("DRIFT_IDENTITY", "a:p0<->b:p1"), ("DRIFT_CONFIG", "a:p0<->b:p1"),
                             ("DRIFT_CONFIG", "b:p0<->c:p1"), ("DRIFT_CONFIG", "node b"),
                             ("NODES_DIFFER", "cluster")}
    assert "b.kernel 6.17.0-1008-nvidia -> 6.18.0-1001-nvidia" in findings[("DRIFT_CONFIG",
                                                                            "node b")]["message"]
    serial = findings[("DRIFT_IDENTITY", "a:p0<->b:p1")]["message"]
    assert re.search(r"cable\.a\.serial APF\d+ -> APF26010099999", serial), serial


def _file(tmp_path: Path) -> dict[str, object]:
    base = _baseline(checked(ring3()))
    return json.loads(strict_json.dumps(to_json(base)))


HOSTILE: dict[str, Callable[[Path, dict[str, object]], str]] = {
    "not JSON": lambda p, d: p.write_text('{"schema": "linkcheck-cluster-baseline", ') and "not valid JSON",
    "wrong schema": lambda p, d: p.write_text(json.dumps({**d, "schema": "linkcheck-other"})) and "no \"schema\"",
    "newer schema": lambda p, d: p.write_text(json.dumps({**d, "schema_version": 9})) and "newer",
    "unknown key": lambda p, d: p.write_text(json.dumps({**d, "extra": 1})) and "extra",
    "cables not a list": lambda p, d: p.write_text(json.dumps({**d, "cables": "a-b"})) and "cables",
    "a zero rate": lambda p, d: p.write_text(json.dumps(d).replace("98.01", "0")) and "rdma_gbps",
    "a NaN rate": lambda p, d: p.write_text(json.dumps(d).replace("98.01", "NaN", 1)) and "NaN",
    "a cable of an unknown node": lambda p, d: p.write_text(json.dumps(
        {**d, "cables": [{**d["cables"][0], "b": "z"}]})) and "not among the nodes",  # type: ignore[index]
    "no node": lambda p, d: p.write_text(json.dumps({**d, "nodes": [], "cables": []})) and "at least two nodes",
    "a cable twice": lambda p, d: p.write_text(json.dumps(
        {**d, "cables": [d["cables"][0], d["cables"][0]]})) and "listed twice",  # type: ignore[index]
    "a FIFO": lambda p, d: os.mkfifo(p) or "FIFO",
    "a folder": lambda p, d: p.mkdir() or "folder",
    "a symlink to a FIFO": lambda p, d: (os.mkfifo(p.with_name("fifo")), p.symlink_to(p.with_name("fifo")))
    and "FIFO",
    "a dangling symlink": lambda p, d: p.symlink_to(p.with_name("gone")) or "cannot read",
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_cluster_baseline_file_is_one_line_exit_4(tmp_path: Path, cli: InProcessCli, case: str) -> None:
    folder = Path(os.environ["XDG_DATA_HOME"]) / "linkcheck" / "baselines" / "cluster-x"
    folder.mkdir(parents=True)
    path = folder / "bad.json"
    needle = HOSTILE[case](path, _file(tmp_path))
    cluster = _bundle(tmp_path, "cluster")
    _one_line(cli("diagnose", str(cluster), "--baseline", "bad"), "bad.json", needle)
    _one_line(cli("diagnose", str(cluster), "--baseline", str(path)), "bad.json", needle)
    _one_line(cli("baseline", "list"), "bad.json")


def test_a_cluster_baseline_needs_a_passing_run_unless_forced(tmp_path: Path, cli: InProcessCli) -> None:
    # A ring cabled p0 to p0 warns (RING_SAME_PORT): not the known-good state either.
    failing = _bundle(tmp_path, "same-port", scenario="ring3-same-port")
    refused = cli("baseline", "save", "one", str(failing))
    assert refused.returncode == 4 and "verdict is warn" in refused.stderr, refused.stderr
    forced = cli("baseline", "save", "one", str(failing), "--force")
    assert forced.returncode == 0 and "run verdict: warn" in forced.stdout, forced.stderr
    again = cli("baseline", "save", "one", str(failing), "--force")
    assert again.returncode == 0, again.stderr
    assert cli("baseline", "save", "one", str(_bundle(tmp_path, "good"))).returncode == 4  # the name is taken


# The shipped cluster fixtures, against a baseline saved from the healthy ring: what each diagnosis says.
FIXTURES = ROOT / "fixtures"
HOT_CABLE = "a:p0<->b:p1"
HOT_DRIFT = {  # the hot-plugged cable's rates fell; each fall is explained by its path's hot-plug state
    (f"{HOT_CABLE}: {path} {direction}", f"LINK_HOTPLUG_DEGRADED:{HOT_CABLE}: {path}")
    for path in ("enp1s0f0np0<->enp1s0f1np1", "enP2p1s0f0np0<->enP2p1s0f1np1") for direction in
    ("concurrent a->b", "concurrent b->a")} | {
    (f"{HOT_CABLE}: concurrent total {d}", f"LINK_HOTPLUG_DEGRADED:{HOT_CABLE}: enP2p1s0f0np0<->enP2p1s0f1np1")
    for d in ("a->b", "b->a")}


def _counting(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Diagnosis]]:
    """Every diagnosis the judging of a cluster runs, by where it runs: each test's (app/offline.py judge_test) and
    the cluster's (app/topology.py judge_facts)."""
    calls: dict[str, list[Diagnosis]] = {"test": [], "cluster": []}
    for module, kind in ((offline, "test"), (topology, "cluster")):
        def counted(*args: Any, _kind: str = kind, **kwargs: Any) -> Diagnosis:
            found = engine.diagnose(*args, **kwargs)
            calls[_kind].append(found)
            return found
        monkeypatch.setattr(module, "diagnose", counted)
    return calls


def test_a_clusters_drift_comes_from_its_one_diagnosis(monkeypatch: pytest.MonkeyPatch, cli: InProcessCli) -> None:
    assert cli("baseline", "save", "ring", str(FIXTURES / "cluster-ring3-healthy")).returncode == 0
    rules = load_playbooks(kind="all")
    calls = _counting(monkeypatch)
    plain = cluster_bundle(FIXTURES / "cluster-ring3-hotplug", rules)
    tests = len(calls["test"])
    assert tests == 3 and len(calls["cluster"]) == 1
    calls["test"].clear(), calls["cluster"].clear()
    against = cluster_bundle(FIXTURES / "cluster-ring3-hotplug", rules, baseline=resolve_any("ring"))
    # No diagnosis more than without a baseline: the drift is judged in the cluster's one diagnosis.
    assert len(calls["test"]) == tests and len(calls["cluster"]) == 1
    drift = {(f.subject, f.explained_by) for f in calls["cluster"][0].findings
             if f.rule_id == "DRIFT_THROUGHPUT" and f.status is Status.FAIL}
    assert drift == HOT_DRIFT
    assert against.view.diagnosis == calls["cluster"][0]  # what the report shows is that diagnosis, unchanged
    assert not any("DRIFT" in f.rule_id for f in plain.view.diagnosis.findings)


def test_diagnose_against_the_rings_baseline_names_the_hot_plugged_cable_alone(cli: InProcessCli) -> None:
    assert cli("baseline", "save", "ring", str(FIXTURES / "cluster-ring3-healthy")).returncode == 0
    healthy = cli("diagnose", "-f", "json", str(FIXTURES / "cluster-ring3-healthy"), "--baseline", "ring")
    assert healthy.returncode == 0, healthy.stderr
    judged = [f for f in json.loads(healthy.stdout)["findings"] if "DRIFT_" in f["id"]]
    # Per cable: identity, configuration; per HCA its GID index; per figure its rate (3 cables, 2 paths, 2 directions).
    assert collections.Counter(f["id"] for f in judged) == {"DRIFT_IDENTITY": 3, "DRIFT_CONFIG": 3,
                                                            "DRIFT_GID_INDEX": 12, "DRIFT_THROUGHPUT": 18}
    assert {f["status"] for f in judged} == {"pass"}
    hot = cli("diagnose", "-f", "json", str(FIXTURES / "cluster-ring3-hotplug"), "--baseline", "ring")
    assert hot.returncode == 2, hot.stderr
    found = json.loads(hot.stdout)["findings"]
    fired = {(f["id"], f["subject"], f["explained_by"]) for f in found
             if "DRIFT_" in f["id"] and f["status"] != "pass"}
    assert fired == {("DRIFT_THROUGHPUT", subject, cause) for subject, cause in HOT_DRIFT}
    assert len([f for f in found if "DRIFT_" in f["id"]]) == 36

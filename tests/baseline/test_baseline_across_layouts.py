"""A pair is the cluster of its one cable: a pair's baseline given to a cluster's run is read as the cluster of its two
nodes and one cable (the cable judged by the pair's DRIFT_* rules, the run's other nodes new), and a cluster's
baseline given to a pair's run is read for its cable between the pair's two nodes. One conversion
(baseline/across_layouts.py `pair_as_cluster`, `cable_as_pair`) serves both ways; a pair whose nodes are not both in
the cluster, or a cluster's baseline with no cable between the pair's nodes, is one line, exit 4."""

from __future__ import annotations

import collections
import json
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
import pytest

from linkcheck.app.baseline import save_baseline
from linkcheck.app.offline import judge_bundle
from linkcheck.baseline import store
from linkcheck.baseline.across_layouts import cable_as_pair, for_cluster, for_pair, pair_as_cluster
from linkcheck.baseline.store import ClusterBaseline, resolve_any
from linkcheck.bundle.format import Bundle, write_bundle
from linkcheck.collect.specs import SPECS
from linkcheck.facts.snapshot import snapshot_of
from linkcheck.facts.snapshot_model import PairKey
from linkcheck.outcome import Outcome
from tests.adversarial.adversarial_helpers import one_line_error
from tests.baseline.test_cluster_baseline import HOT_DRIFT
from tests.cluster.cluster_checks import saved_bundle
from tests.emulators.captures import node_captures
from tests.lab.cluster import Expected, _direct, cluster_models

if TYPE_CHECKING:
    from tests.conftest import InProcessCli

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
RING = FIXTURES / "cluster-ring3-healthy"
RING_HOT = FIXTURES / "cluster-ring3-hotplug"
PAIR_13G = FIXTURES / "real-hotplug-13g"  # its hostnames are spark-a and spark-b, as the ring fixtures' a and b
OTHER_PAIR = FIXTURES / "healthy"  # dgx-spark-1 and dgx-spark-2: in no ring fixture


def _fired(run: Any) -> set[tuple[str, str, str]]:
    """The drift findings that fired in a `diagnose -f json` run: (rule, subject, status)."""
    return {(f["id"], f["subject"], f["status"]) for f in json.loads(run.stdout)["findings"]
            if "DRIFT" in f["id"] and f["status"] not in ("pass", "skip")}


def _pair_of_the_ring(folder: Path, first: str = "a") -> Path:
    """A pair's bundle (inspection only) of the ring's machines a and b on the ring's cable a:p0<->b:p1, as they
    were before node c joined: the same hostnames, MACs, cable and addresses; `first` is the ring's node given as
    the pair's node a."""
    models = cluster_models(replace(_direct("ab", [("a", "p0", "b", "p1")]), expected=Expected("pair")))
    order = (first, "b" if first == "a" else "a")
    captures = [c for side, name in zip("ab", order, strict=True) for c in node_captures(side, models[name], SPECS)]
    write_bundle(Bundle(captures=captures, nodes={side: {"target": f"root@spark-{name}.lab"}
                                                  for side, name in zip("ab", order, strict=True)},
                        created="2026-12-01T10:00:00+00:00"), folder)
    return folder


def _ring_baseline(name: str = "ring") -> ClusterBaseline:
    """The healthy ring fixture saved as a cluster's baseline, and read back from its file."""
    save_baseline(name, RING, force=False)
    found = resolve_any(name)
    assert isinstance(found, ClusterBaseline)
    return found


def _pair_snapshot(bundle: Path) -> Any:
    judged = judge_bundle(bundle)
    assert isinstance(judged, Outcome)
    return snapshot_of(judged.bundle, judged.link, judged.verdict.value)


# The one conversion, both ways.

@pytest.mark.parametrize("fixture", ["healthy", "real-cross-cage", "real-hotplug-13g"])
def test_a_pairs_snapshot_is_the_cluster_of_its_one_cable_and_back(fixture: str) -> None:
    snap = _pair_snapshot(FIXTURES / fixture)
    cluster = pair_as_cluster(snap)
    assert cluster.layout == "pair" and [n.name for n in cluster.nodes] == ["a", "b"]
    a, b = cluster.nodes
    assert (a.hostname, a.macs, b.hostname, b.macs) == (snap.pair.a_hostname, snap.pair.a_macs, snap.pair.b_hostname,
                                                        snap.pair.b_macs)
    assert a.configuration == {k: v for k, v in snap.configuration.items() if k.startswith("a.")}
    (cable,) = cluster.cables
    cages = {side: snap.identity[f"{side}:{snap.identity['pairing'].split('; ')[0].split('<->')[i][2:]}.cage"]
             for i, side in enumerate("ab")}
    assert (cable.label, cable.a, cable.b) == (f"a:{cages['a']}<->b:{cages['b']}", "a", "b")
    # A node's own fields are the node's, not the cable's: compared once per node.
    assert not [k for k in {**cable.snapshot.identity, **cable.snapshot.configuration} if k.startswith(("a.", "b."))]
    assert cable.snapshot.performance == snap.performance and cable.snapshot.gid_index == snap.gid_index
    # Nothing lost: read back from either end (twice from b: the pair turned round, then back) it is the same pair.
    assert cable_as_pair(cluster, cable, "a") == snap
    turned = cable_as_pair(cluster, cable, "b")
    assert turned.pair.a_hostname == snap.pair.b_hostname
    again = pair_as_cluster(turned)
    assert cable_as_pair(again, again.cables[0], "b") == snap


def test_a_rings_cable_read_from_its_far_end_turns_its_rates_and_paths() -> None:
    saved = _ring_baseline()
    cable = next(c for c in saved.snapshot.cables if c.label == "a:p1<->c:p0")
    # Each rate of the cable its own (the fixture's are alike), so that a rate read from the wrong end shows.
    perf = cable.snapshot.performance
    cable = msgspec.structs.replace(cable, snapshot=msgspec.structs.replace(cable.snapshot, performance=(
        msgspec.structs.replace(perf, rdma_gbps={k: 90.0 + i for i, k in enumerate(sorted(perf.rdma_gbps))},
                                concurrent_total_gbps={"a->b": 190.0, "b->a": 180.0}))))
    ring = msgspec.structs.replace(saved, snapshot=msgspec.structs.replace(saved.snapshot, cables=tuple(
        cable if c.label == cable.label else c for c in saved.snapshot.cables)))
    pair = cable_as_pair(ring.snapshot, cable, "c")  # node c as the pair's a
    assert (pair.pair.a_hostname, pair.pair.b_hostname) == ("spark-c", "spark-a")
    assert pair.identity["pairing"] == "a:enP2p1s0f0np0<->b:enP2p1s0f1np1; a:enp1s0f0np0<->b:enp1s0f1np1"
    assert pair.identity["a:enp1s0f0np0.cage"] == "p0" and pair.identity["b:enp1s0f1np1.cage"] == "p1"
    assert pair.identity["a.hostname"] == "spark-c" and pair.configuration["a.kernel"] == \
        ring.snapshot.nodes[2].configuration["c.kernel"]
    assert set(pair.gid_index) == {"a:rocep1s0f0", "a:roceP2p1s0f0", "b:rocep1s0f1", "b:roceP2p1s0f1"}
    was = cable.snapshot.performance
    assert pair.performance.rdma_gbps == {
        "enp1s0f0np0<->enp1s0f1np1|concurrent|b->a": was.rdma_gbps["enp1s0f1np1<->enp1s0f0np0|concurrent|a->b"],
        "enp1s0f0np0<->enp1s0f1np1|concurrent|a->b": was.rdma_gbps["enp1s0f1np1<->enp1s0f0np0|concurrent|b->a"],
        "enP2p1s0f0np0<->enP2p1s0f1np1|concurrent|b->a": was.rdma_gbps["enP2p1s0f1np1<->enP2p1s0f0np0|concurrent|a->b"],
        "enP2p1s0f0np0<->enP2p1s0f1np1|concurrent|a->b": was.rdma_gbps["enP2p1s0f1np1<->enP2p1s0f0np0|concurrent|b->a"]}
    assert len(set(pair.performance.rdma_gbps.values())) == 4
    assert pair.performance.concurrent_total_gbps == {"a->b": 180.0, "b->a": 190.0}  # c->a was the cable's b->a
    # And that pair's baseline, given back to the ring, is the ring's cable and its two nodes again.
    as_pair = for_pair(ring, PairKey("spark-c", ring.snapshot.nodes[2].macs, "spark-a", ring.snapshot.nodes[0].macs,
                                     None))
    back = for_cluster(as_pair, ring.snapshot, ("a", "b", "c"))
    assert back.snapshot.cables == (cable,)
    assert back.snapshot.nodes == (ring.snapshot.nodes[0], ring.snapshot.nodes[2])


# A pair's baseline for a cluster.

def test_a_pair_grown_into_a_ring_compares_its_cable_and_names_the_new_node(tmp_path: Path,
                                                                          cli: InProcessCli) -> None:
    pair = _pair_of_the_ring(tmp_path / "pair")
    assert cli("baseline", "save", "before-c", str(pair)).returncode == 0
    ring = saved_bundle(tmp_path / "ring", "ring3")
    run = cli("diagnose", str(ring), "--baseline", "before-c", "-f", "json")
    assert run.returncode == 2, run.stderr
    findings = json.loads(run.stdout)["findings"]
    # The old cable is the pair's: judged by the pair's rules, unchanged. Node c is new (a warning, as for a cluster's
    # baseline that lacks a node; its cables are covered by it); the layout was a pair's (DRIFT_IDENTITY's cluster
    # layout, an error, as for a ring of three grown into four); the ring's NCCL settings are new on a and b.
    old = {(f["id"], f["status"]) for f in findings if f["subject"].startswith("a:p0<->b:p1") and "DRIFT" in f["id"]}
    assert old == {("DRIFT_IDENTITY", "pass"), ("DRIFT_CONFIG", "pass"), ("DRIFT_GID_INDEX", "pass"),
                   ("DRIFT_THROUGHPUT", "skip")}, old
    assert _fired(run) == {("CLUSTER_DRIFT_NODE", "node c", "warn"), ("DRIFT_IDENTITY", "cluster", "fail"),
                           ("DRIFT_CONFIG", "node a", "warn"), ("DRIFT_CONFIG", "node b", "warn")}
    layout = next(f for f in findings if f["id"] == "DRIFT_IDENTITY" and f["subject"] == "cluster")
    assert "pair in the baseline, ring3 now" in layout["message"]
    settings = next(f for f in findings if f["subject"] == "node a" and f["id"] == "DRIFT_CONFIG")["message"]
    assert "a.nccl.NCCL_IB_MERGE_NICS absent -> 0; a.nccl.NCCL_NET_PLUGIN absent -> none" in settings
    assert not [f for f in findings if "DRIFT" in f["id"] and f["subject"].startswith(("b:p0<->c:p1", "a:p1<->c:p0"))]


def test_a_pair_baseline_of_a_rings_cable_judges_that_cable_s_rates(cli: InProcessCli) -> None:
    # The ring's cable a:p0<->b:p1 as a pair's baseline (what `baseline save` of that pair would hold), given to the
    # hot-plugged ring: its rates fall on that cable exactly as against the ring's own baseline.
    ring = _ring_baseline()
    a, b = ring.snapshot.nodes[:2]
    pair = for_pair(ring, PairKey(a.hostname, a.macs, b.hostname, b.macs, None))
    store.save(msgspec.structs.replace(pair, name="ab-cable"), overwrite=False)
    run = cli("diagnose", str(RING_HOT), "--baseline", "ab-cable", "-f", "json")
    assert run.returncode == 2, run.stderr
    findings = json.loads(run.stdout)["findings"]
    fell = {(f["subject"], f["explained_by"]) for f in findings
            if f["id"] == "DRIFT_THROUGHPUT" and f["status"] == "fail"}
    assert fell == HOT_DRIFT
    assert _fired(run) == {("DRIFT_THROUGHPUT", s, "fail") for s, _ in HOT_DRIFT} | {
        ("CLUSTER_DRIFT_NODE", "node c", "warn"), ("DRIFT_IDENTITY", "cluster", "fail")}
    judged = collections.Counter(f["id"] for f in findings if "DRIFT_" in f["id"] and f["subject"] != "cluster"
                                 and not f["subject"].startswith("node "))
    assert judged == {"DRIFT_IDENTITY": 1, "DRIFT_CONFIG": 1, "DRIFT_GID_INDEX": 4, "DRIFT_THROUGHPUT": 6}


def test_a_shipped_pair_baseline_against_the_shipped_ring(cli: InProcessCli) -> None:
    # real-hotplug-13g's spark-a and spark-b are the ring's a and b by hostname; that pair was cabled p0 to p0, the
    # ring's cable between them runs a:p0 to b:p1: the pair's cable is not found, the ring's is new.
    assert cli("baseline", "save", "pair13g", str(PAIR_13G), "--force").returncode == 0
    run = cli("diagnose", str(RING), "--baseline", "pair13g", "-f", "json")
    assert run.returncode == 2, run.stderr
    assert _fired(run) == {("CLUSTER_DRIFT_NODE", "node c", "warn"), ("DRIFT_IDENTITY", "cluster", "fail"),
                           ("DRIFT_IDENTITY", "a:p0<->b:p0", "fail"), ("DRIFT_IDENTITY", "a:p0<->b:p1", "warn"),
                           ("DRIFT_CONFIG", "node a", "warn"), ("DRIFT_CONFIG", "node b", "warn")}
    kernel = next(f for f in json.loads(run.stdout)["findings"] if f["subject"] == "node b"
                  and f["id"] == "DRIFT_CONFIG")
    assert "b.kernel 6.17.0-1032-nvidia -> 6.18.44-fc-v1272" in kernel["message"]


# A cluster's baseline for a pair.

@pytest.mark.parametrize("first", ["a", "b"])
def test_a_rings_baseline_for_a_pair_of_its_nodes_compares_their_cable(tmp_path: Path, cli: InProcessCli,
                                                                       first: str) -> None:
    assert cli("baseline", "save", "ring", str(saved_bundle(tmp_path / "ring", "ring3"))).returncode == 0
    run = cli("diagnose", str(_pair_of_the_ring(tmp_path / "pair", first)), "--baseline", "ring", "-f", "json")
    assert run.returncode == 1, run.stderr  # the ring's NCCL settings, gone: a warning
    findings = json.loads(run.stdout)["findings"]
    drift = {(f["id"], f["subject"], f["status"]) for f in findings if "DRIFT" in f["id"]}
    # The cable runs the ring's a from p0 to its b at p1: each HCA named by the pair's node that holds it.
    hcas = {"a": ("rocep1s0f0", "roceP2p1s0f0"), "b": ("rocep1s0f1", "roceP2p1s0f1")}
    ring_nodes = (first, "b" if first == "a" else "a")  # the pair's a and b
    assert drift == {("DRIFT_IDENTITY", "pair", "pass"), ("DRIFT_CONFIG", "pair", "warn"),
                     ("DRIFT_THROUGHPUT", "pair", "skip")} | {
        ("DRIFT_GID_INDEX", f"{side}:{hca}", "pass") for side, node in zip("ab", ring_nodes, strict=True)
        for hca in hcas[node]}
    config = next(f for f in findings if f["id"] == "DRIFT_CONFIG")["message"]
    assert config.startswith("4 setting(s) differ from baseline ring") and "a.nccl.NCCL_IB_MERGE_NICS 0 -> absent" \
        in config


def test_the_rings_baseline_for_a_shipped_pair_of_two_of_its_hostnames(cli: InProcessCli) -> None:
    assert cli("baseline", "save", "ring", str(RING)).returncode == 0
    run = cli("diagnose", str(PAIR_13G), "--baseline", "ring", "-f", "json")
    assert run.returncode == 2, run.stderr
    findings = {f["id"]: f for f in json.loads(run.stdout)["findings"] if "DRIFT" in f["id"]
                and f["status"] != "pass"}
    assert "cable.a.serial APF25090786480 -> APF25090012345" in findings["DRIFT_IDENTITY"]["message"]
    assert ("pairing a:enP2p1s0f0np0<->b:enP2p1s0f1np1; a:enp1s0f0np0<->b:enp1s0f1np1 -> "
            "a:enP2p1s0f0np0<->b:enP2p1s0f0np0; a:enp1s0f0np0<->b:enp1s0f0np0") in findings["DRIFT_IDENTITY"]["message"]
    assert "a.kernel 6.18.44-fc-v1272 -> 6.17.0-1032-nvidia" in findings["DRIFT_CONFIG"]["message"]
    # The ring ran -D 4, this pair -D 10: the rates are not compared.
    assert findings["DRIFT_THROUGHPUT"]["status"] == "skip" and "duration_s 4 in the baseline, 10 now" in \
        findings["DRIFT_THROUGHPUT"]["message"]


# Bad input: one line, exit 4.

def _edited(path: Path, edit: Any, target: Path) -> Path:
    doc = json.loads(path.read_text())
    edit(doc)
    target.write_text(json.dumps(doc))
    return target


def test_a_pair_baseline_whose_nodes_are_not_in_the_cluster_is_one_line(tmp_path: Path, cli: InProcessCli) -> None:
    assert cli("baseline", "save", "others", str(OTHER_PAIR)).returncode == 0
    one_line_error(cli("diagnose", str(RING), "--baseline", "others"), 4, "others.json", "baseline 'others' is a "
                   "pair's (dgx-spark-1 + dgx-spark-2) and its node a (hostname dgx-spark-1, ConnectX-7 MACs ",
                   "and node b (hostname dgx-spark-2, ", "are not in this cluster (spark-a, spark-b, spark-c now)",
                   "linkcheck baseline save NAME CLUSTER_BUNDLE")
    # One of the two is the ring's (spark-a), the other (its hostname and MACs another machine's) is not.
    assert cli("baseline", "save", "pair13g", str(PAIR_13G), "--force").returncode == 0
    saved = next(store.baselines_dir().glob("*/pair13g.json"))

    def other_b(doc: dict[str, Any]) -> None:
        doc["pair"].update(b_hostname="spark-x", b_macs=["02:00:00:00:00:01"])
        doc["identity"]["b.hostname"] = "spark-x"

    path = _edited(saved, other_b, tmp_path / "half.json")
    line = one_line_error(cli("diagnose", str(RING), "--baseline", str(path)), 4, "half.json",
                          "(spark-a + spark-x) and its node b (hostname spark-x, ConnectX-7 MACs 02:00:00:00:00:01) "
                          "is not in this cluster (spark-a, spark-b, spark-c now)")
    assert "node a" not in line


def test_a_cluster_baseline_with_no_cable_for_the_pair_is_one_line(tmp_path: Path, cli: InProcessCli) -> None:
    assert cli("baseline", "save", "ring", str(RING)).returncode == 0
    one_line_error(cli("diagnose", str(OTHER_PAIR), "--baseline", "ring"), 4, "ring.json", "baseline 'ring' is a "
                   "cluster's (ring3: a, b, c) and holds no cable between dgx-spark-1 (not among its nodes) and "
                   "dgx-spark-2 (not among its nodes)", "linkcheck baseline save NAME BUNDLE")
    # Both nodes are the ring's, but the baseline (edited) holds no cable between them.
    saved = next(store.baselines_dir().glob("cluster-*/ring.json"))
    path = _edited(saved, lambda d: d.update(cables=[c for c in d["cables"] if c["label"] != "a:p0<->b:p1"]),
                   tmp_path / "no-ab.json")
    one_line_error(cli("diagnose", str(PAIR_13G), "--baseline", str(path)), 4, "no-ab.json", "holds no cable "
                   "between spark-a (its node a) and spark-b (its node b)")


def test_a_baseline_for_a_live_cluster_is_still_read_before_any_node_is_touched(cli: InProcessCli) -> None:
    one_line_error(cli("check", "--node", "a=198.18.9.1", "--node", "b=198.18.9.2", "--node", "c=198.18.9.3",
                       "--baseline", "nosuch"), 4, "no baseline named 'nosuch'")


def test_a_pairs_twins_of_another_cage_are_not_its_cables() -> None:
    # A pair with its p0 twin addressed but not cabled (as on a node that was in a ring): that twin is the node's
    # other cable's, which the cluster's cable leaves out (`cable_only`); who the node is keeps every MAC.
    snap = _pair_snapshot(OTHER_PAIR)
    spare = {"a:enp1s0f0np0.cage": "p0", "a:enp1s0f0np0.mac": "3c:6d:66:cc:b3:b6"}
    snap = msgspec.structs.replace(snap, identity={**snap.identity, **spare}, configuration={
        **snap.configuration, "a:enp1s0f0np0.ipv4": "192.168.200.10/24"})
    cluster = pair_as_cluster(snap)
    (cable,) = cluster.cables
    assert not [k for k in {**cable.snapshot.identity, **cable.snapshot.configuration} if "enp1s0f0np0" in k]
    assert cable.snapshot.pair.a_macs == ("3c:6d:66:cc:b3:b7", "3c:6d:66:cc:b3:bb")  # the cable's twins
    assert cluster.nodes[0].macs == snap.pair.a_macs and len(snap.pair.a_macs) == 4
    assert cable.label == "a:p1<->b:p1"

"""A cluster against its baseline: the snapshot of a checked cluster (per node, per cable), and the baseline attached
to the cluster's facts before its one diagnosis, as a pair's is attached to the pair's (facts/drift.py
attach_baseline): the drift is facts/drift.py's model, judged by the rules in that same diagnosis.

Each cable is a pair: its snapshot is the pair's (linkcheck.facts.snapshot) on the test's pair view restricted to the
cable's own cages, and that view, with the cable's part of the baseline attached, is judged by the pair's DRIFT_*
rules (identity, configuration, GID index, throughput), each finding named by the cable. What is a node's own (who
it is; kernel, OS, NCCL settings) is kept once per node and judged by CLUSTER_DRIFT_NODE and
DRIFT_CONFIG (its cluster layout); a cable missing or new, and the layout, by DRIFT_IDENTITY (its cluster layout).
A node that one run could not inspect is not compared, nor are its cables.

A pair's baseline given to a cluster is first read as the cluster of its one cable (baseline/across_layouts.py
`for_cluster`), so that one comparison serves both.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import msgspec
from msgspec.structs import replace

from linkcheck.baseline.across_layouts import for_cluster
from linkcheck.baseline.store import (
    CableSnapshot,
    ClusterBaseline,
    ClusterSnapshot,
    NodeSnapshot,
    new_baseline,
    new_cluster_baseline,
    without_nodes,
)
from linkcheck.cluster.cables import CableTest, cable_tests, of_test_round
from linkcheck.cluster.facts import ClusterFacts
from linkcheck.cluster.schedule import schedule
from linkcheck.errors import BaselineError
from linkcheck.facts.drift import CableBaseline, CableDrift, ClusterDrift, NodeDrift, changes, node_differences
from linkcheck.facts.model import LinkFacts, NodeFacts
from linkcheck.facts.snapshot import snapshot_from, snapshot_of
from linkcheck.facts.snapshot_model import Baseline, BaselineFacts, PairKey, Performance, Snapshot
from linkcheck.model import Capture
from linkcheck.outcome import CableResult, ClusterCheck, Judged


class CableView(msgspec.Struct, frozen=True):
    """A first-pass test of the run: its label, nodes and pair view (with its traffic, when it ran)."""

    label: str
    a: str
    b: str
    switched: bool
    link: LinkFacts
    round: int = 0  # its schedule round: a switch's second pass may run the same two nodes over the same paths


def _cable_views(facts: ClusterFacts, results: Sequence[CableResult], errors: Mapping[str, str]) -> list[CableView]:
    """The run's cables: each first-pass test (with its traffic); from the topology when no traffic was sent. A
    test with a node not inspected, or whose far end is not known, is left out."""
    lost = set(errors)
    tests: Iterable[tuple[CableTest, LinkFacts]]
    if results:
        tests = ((r.test, r.link) for r in results if r.test.pass_no == 1)
    else:
        tests = ((t, t.link) for t in cable_tests(facts, schedule(facts.topology), skip=lost))
    return [CableView(t.label, t.a, t.b, t.switched, link, t.round) for t, link in tests
            if "?" not in t.label and not lost & {t.a, t.b}]


def _ends(node: NodeFacts, ends: Sequence[str | None], netdevs: set[str]) -> NodeFacts:
    cages = {c for c in ends if c}
    return replace(node, functions=tuple(f for f in node.functions
                                         if (f.cage in cages if f.cage else f.netdev in netdevs)))


def cable_only(link: LinkFacts) -> LinkFacts:
    """The pair view with each node's twins of this cable's cages only (a node's other cable is not this one's)."""
    return replace(link, a=_ends(link.a, [p.a.cage for p in link.paths], {p.a.netdev for p in link.paths}),
                   b=_ends(link.b, [p.b.cage for p in link.paths], {p.b.netdev for p in link.paths}))


def _test_captures(captures: Sequence[Capture], view: CableView) -> list[Capture]:
    """The runs of this cable's paths (keyed by node, `a:netdev<->b:netdev`) in its own schedule round, whose
    command lines give the test parameters."""
    keys = {f"{p.a.label}<->{p.b.label}" for p in view.link.paths}
    return [c for c in captures if c.meta.get("path") in keys and of_test_round(c, view.round)]


def cable_snapshot(view: CableView, captures: Sequence[Capture], verdict: str) -> Snapshot:
    """The pair's snapshot of one cable, without its nodes' own fields."""
    snap = snapshot_from(_test_captures(captures, view), cable_only(view.link), verdict)
    nodes = (view.link.a.name, view.link.b.name)
    identity = without_nodes(snap.identity, nodes)
    if "pairing" in identity:  # the twin paths named by their nodes, not by the pair's a and b
        identity["pairing"] = "; ".join(sorted(f"{p.a.label}<->{p.b.label}" for p in view.link.paths)) or "no path"
    return replace(snap, identity=identity, configuration=without_nodes(snap.configuration, nodes))


def node_snapshot(node: NodeFacts) -> NodeSnapshot:
    """A node's identity and its own settings (kernel, OS, NCCL), from the pair's snapshot of the node alone."""
    own = snapshot_from((), LinkFacts(a=node, b=node), "")
    prefix = f"{node.name}."
    return NodeSnapshot(name=node.name, hostname=node.hostname, macs=tuple(sorted(f.mac for f in node.functions
                                                                                  if f.mac)),
                        configuration={k: v for k, v in own.configuration.items() if k.startswith(prefix)},
                        unknown=tuple(p for p in own.unknown if p.startswith(prefix)))


def cluster_snapshot(check: ClusterCheck, captures: Sequence[Capture], verdict: str) -> ClusterSnapshot:
    """The cluster as this checked run shows it (what `baseline save` records)."""
    return _snapshot(check.facts, _cable_views(check.facts, check.cables, check.view.errors), check.view.errors,
                     captures, verdict)


def _snapshot(facts: ClusterFacts, views: Sequence[CableView], errors: Mapping[str, str],
              captures: Sequence[Capture], verdict: str) -> ClusterSnapshot:
    """The cluster as a run shows it: per inspected node, per cable; the nodes not inspected listed."""
    nodes = tuple(node_snapshot(facts.nodes[n]) for n in facts.topology.nodes if n not in errors and n in facts.nodes)
    cables = tuple(CableSnapshot(v.label, v.a, v.b, v.switched, cable_snapshot(v, captures, verdict)) for v in views)
    return ClusterSnapshot(layout=facts.topology.layout, nodes=nodes, cables=cables, verdict=verdict,
                           unread=tuple(n for n in facts.topology.nodes if n in errors))


def _unknowns(prefixes: tuple[str, ...]) -> Snapshot:
    """A snapshot that only says which key prefixes were not read (what `changes` asks of each side)."""
    return Snapshot(pair=PairKey(None, (), None, (), None), identity={}, configuration={}, gid_index={},
                    performance=Performance(), verdict="", unknown=prefixes)


def _same_cluster(base: ClusterSnapshot, now: ClusterSnapshot, baseline: ClusterBaseline) -> None:
    """Refuse a baseline none of whose nodes is among this run's (by machine id, hostname or a ConnectX-7 MAC)."""
    if not base.nodes or not now.nodes:
        return
    if any(not node_differences(b.pair_key(), n.pair_key(), b.name) for b in base.nodes for n in now.nodes):
        return
    raise BaselineError(baseline.path or baseline.name, f"baseline {baseline.name!r} is of another cluster: no node "
                        f"matches ({', '.join(sorted(n.hostname or n.name for n in base.nodes))} in the baseline, "
                        f"{', '.join(sorted(n.hostname or n.name for n in now.nodes))} now)",
                        fix="compare with a baseline of this cluster (linkcheck baseline list), or save one")


def _node_drift(base: ClusterSnapshot, now: ClusterSnapshot) -> list[NodeDrift]:
    out: list[NodeDrift] = []
    for was in base.nodes:
        if was.name in now.unread:
            continue
        node = now.node(was.name)
        if node is None:
            out.append(NodeDrift(was.name, "missing", was.who(), "not named in this run"))
            continue
        if node_differences(was.pair_key(), node.pair_key(), was.name):
            other = next((b.name for b in base.nodes if b.name != was.name
                          and not node_differences(b.pair_key(), node.pair_key(), b.name)), None)
            now_who = node.who() + (f" (baseline node {other}: name the nodes as when the baseline was saved)"
                                    if other else "")
            out.append(NodeDrift(was.name, "replaced", was.who(), now_who))
            continue
        host = f"{was.name}.hostname"  # a renamed node (its MACs the same) is the same node, renamed
        changed, unread = changes({**was.configuration, host: was.hostname},
                                  {**node.configuration, host: node.hostname},
                                  _unknowns(was.unknown), _unknowns(node.unknown))
        if changed or unread:
            out.append(NodeDrift(was.name, "settings", "", "", tuple(changed), tuple(unread)))
    out += [NodeDrift(n.name, "new", "absent", n.who()) for n in now.nodes
            if base.node(n.name) is None and n.name not in base.unread]
    return out


def _paths(cable: CableSnapshot) -> str:
    return cable.snapshot.identity.get("pairing") or f"{cable.a} and {cable.b}"


def _cable_drift(base: ClusterSnapshot, now: ClusterSnapshot, skipped: set[str]) -> list[CableDrift]:
    out: list[CableDrift] = []
    if base.layout != now.layout:
        out.append(CableDrift("cluster", "layout", base.layout, now.layout))
    was = {c.label: c for c in base.cables}
    found = {c.label: c for c in now.cables}
    out += [CableDrift(label, "missing", _paths(c), "not found", (c.a, c.b)) for label, c in was.items()
            if label not in found and not skipped & {c.a, c.b}]
    out += [CableDrift(label, "new", "absent", _paths(c), (c.a, c.b)) for label, c in found.items()
            if label not in was and not skipped & {c.a, c.b}]
    return out


def attach_cluster_baseline(facts: ClusterFacts, results: Sequence[CableResult], errors: Mapping[str, str],
                            baseline: Baseline | ClusterBaseline, captures: Sequence[Capture]) -> ClusterFacts:
    """The cluster's facts with its baseline attached, before the cluster's one diagnosis (as a pair's is, by
    facts/drift.py attach_baseline): the nodes and the cabling that differ, which CLUSTER_DRIFT_NODE and the cluster
    layouts of DRIFT_CONFIG and DRIFT_IDENTITY judge, and each cable of both runs with its part of the baseline, which
    the pair's DRIFT_* rules judge on that cable. `results` are the run's tests (none when no traffic was sent),
    `errors` the nodes not inspected, `captures` the runs whose command lines give the test parameters. A baseline of
    another cluster (no node in common) compares nothing: BaselineError. A pair's baseline is read as the cluster of its
    one cable (`for_cluster`)."""
    views = _cable_views(facts, results, errors)
    now = _snapshot(facts, views, errors, captures, "")
    baseline = for_cluster(baseline, now, facts.topology.nodes)
    base = baseline.snapshot
    _same_cluster(base, now, baseline)
    nodes = _node_drift(base, now)
    skipped = set(base.unread) | set(now.unread) | {d.node for d in nodes if d.kind in ("missing", "new")}
    by_label = {v.label: v for v in views}
    current = {c.label: c.snapshot for c in now.cables}
    compared = tuple(
        CableBaseline(c.label, replace(cable_only(by_label[c.label].link),
                                       baseline=BaselineFacts(baseline.cable_baseline(c), current[c.label])))
        for c in base.cables if c.label in by_label and not skipped & {c.a, c.b})
    drift = ClusterDrift(baseline.name, baseline.created, tuple(nodes), tuple(_cable_drift(base, now, skipped)),
                         compared)
    return replace(facts, drift=drift)


def baseline_of(name: str, judged: Judged, source: Path) -> Baseline | ClusterBaseline:
    """The baseline a judged run gives (`forced` when its verdict is not pass): a pair's one cable and two nodes,
    or a cluster's every node and cable (from the captures it was judged from)."""
    verdict = judged.verdict.value
    if isinstance(judged, ClusterCheck):
        snap = cluster_snapshot(judged, judged.bundle.captures if judged.bundle else (), verdict)
        return new_cluster_baseline(name, snap, source, judged.created, forced=verdict != "pass")
    return new_baseline(name, snapshot_of(judged.bundle, judged.link, verdict), source, judged.bundle.created,
                        forced=verdict != "pass")

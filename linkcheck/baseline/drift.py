"""A cluster against its baseline: the snapshot of a checked cluster (per node, per cable), and the baseline attached
to the cluster's facts before its one diagnosis, as a pair's is attached to the pair's (facts/drift.py
attach_baseline): the drift is facts/drift.py's model, judged by the rules in that same diagnosis.

Each cable is a pair: its snapshot is the pair's (linkcheck.facts.snapshot) on the test's pair view restricted to the
cable's own cages, and that view, with the cable's part of the baseline attached, is judged by the pair's DRIFT_*
rules (identity, configuration, GID index, throughput), each finding named by the cable. What is a node's own (who
it is; kernel, OS, NCCL settings) is kept once per node and judged by CLUSTER_DRIFT_NODE and
DRIFT_CONFIG (its cluster layout); a cable missing or new, and the layout, by DRIFT_IDENTITY (its cluster layout).
A node that one run could not inspect is not compared, nor are its cables.

A pair is the cluster of its one cable, and either baseline serves either run through one conversion
(`pair_as_cluster`, and its inverse `cable_as_pair`): a pair's baseline given to a cluster is read as its two nodes
and one cable, named as the run names the same machines (`for_cluster`); a cluster's given to a pair is read for its
cable between the pair's two nodes (`for_pair`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec
from msgspec.structs import replace

from linkcheck.baseline.store import (
    CableSnapshot,
    ClusterBaseline,
    ClusterSnapshot,
    NodeSnapshot,
    describe_nodes,
    new_baseline,
    new_cluster_baseline,
)
from linkcheck.cluster.cables import CableTest, cable_tests, of_test_round
from linkcheck.cluster.facts import ClusterFacts
from linkcheck.cluster.schedule import schedule
from linkcheck.errors import BaselineError
from linkcheck.facts.drift import CableBaseline, CableDrift, ClusterDrift, NodeDrift, changes, node_differences, swapped
from linkcheck.facts.model import LinkFacts, NodeFacts
from linkcheck.facts.snapshot import snapshot_from, snapshot_of
from linkcheck.facts.snapshot_model import (
    Baseline,
    BaselineFacts,
    Fields,
    PairKey,
    Performance,
    SavedBaseline,
    Snapshot,
)
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


def _without_nodes(fields: Fields, nodes: tuple[str, str]) -> Fields:
    """The fields that are not a node's own (`a.kernel`, `a.nccl.X`, `a.hostname`): those are compared per node."""
    prefixes = tuple(f"{n}." for n in nodes)
    return {k: v for k, v in fields.items() if not k.startswith(prefixes)}


def cable_snapshot(view: CableView, captures: Sequence[Capture], verdict: str) -> Snapshot:
    """The pair's snapshot of one cable, without its nodes' own fields."""
    snap = snapshot_from(_test_captures(captures, view), cable_only(view.link), verdict)
    nodes = (view.link.a.name, view.link.b.name)
    identity = _without_nodes(snap.identity, nodes)
    if "pairing" in identity:  # the twin paths named by their nodes, not by the pair's a and b
        identity["pairing"] = "; ".join(sorted(f"{p.a.label}<->{p.b.label}" for p in view.link.paths)) or "no path"
    return replace(snap, identity=identity, configuration=_without_nodes(snap.configuration, nodes))


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


def _key(node: NodeSnapshot) -> PairKey:
    """The node as node a of a pair's key, so that the pair's test of identity applies."""
    return PairKey(a_hostname=node.hostname, a_macs=node.macs, b_hostname=None, b_macs=(), cable_sn=None,
                   a_machine_id=node.machine_id)


def _who(node: NodeSnapshot) -> str:
    who = f"hostname {node.hostname or '?'}"
    who += f", machine id {node.machine_id}" if node.machine_id else ""
    return who + f", ConnectX-7 MACs {', '.join(node.macs) or 'none'}"


def _unknowns(prefixes: tuple[str, ...]) -> Snapshot:
    """A snapshot that only says which key prefixes were not read (what `changes` asks of each side)."""
    return Snapshot(pair=PairKey(None, (), None, (), None), identity={}, configuration={}, gid_index={},
                    performance=Performance(), verdict="", unknown=prefixes)


def _same_cluster(base: ClusterSnapshot, now: ClusterSnapshot, baseline: ClusterBaseline) -> None:
    """Refuse a baseline none of whose nodes is among this run's (by machine id, hostname or a ConnectX-7 MAC)."""
    if not base.nodes or not now.nodes:
        return
    if any(not node_differences(_key(b), _key(n), b.name) for b in base.nodes for n in now.nodes):
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
            out.append(NodeDrift(was.name, "missing", _who(was), "not named in this run"))
            continue
        if node_differences(_key(was), _key(node), was.name):
            other = next((b.name for b in base.nodes if b.name != was.name
                          and not node_differences(_key(b), _key(node), b.name)), None)
            now_who = _who(node) + (f" (baseline node {other}: name the nodes as when the baseline was saved)"
                                    if other else "")
            out.append(NodeDrift(was.name, "replaced", _who(was), now_who))
            continue
        host = f"{was.name}.hostname"  # a renamed node (its MACs the same) is the same node, renamed
        changed, unread = changes({**was.configuration, host: was.hostname},
                                  {**node.configuration, host: node.hostname},
                                  _unknowns(was.unknown), _unknowns(node.unknown))
        if changed or unread:
            out.append(NodeDrift(was.name, "settings", "", "", tuple(changed), tuple(unread)))
    out += [NodeDrift(n.name, "new", "absent", _who(n)) for n in now.nodes
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


# -- a pair's baseline for a cluster, a cluster's for a pair: a pair is the cluster of its one cable ---------------

PAIR_NODES = ("a", "b")  # a pair's two nodes, as its snapshot names them (facts/pair.py)
_TURNED = {"a->b": "b->a", "b->a": "a->b"}


def _joins(text: str, names: Mapping[str, str], turn: bool = False) -> str:
    """A cable's label (`a:p0<->b:p1`, a switch test's `a<->b`) or a pairing (`a:enp1s0f0np0<->b:enp1s0f1np1; ...`)
    with its nodes renamed by `names`, and each join's ends swapped when `turn`; a pairing of no path as it is."""
    if "<->" not in text:
        return text
    out = []
    for join in text.split("; "):
        ends = []
        for end in join.split("<->", 1):
            node, sep, rest = end.partition(":")
            ends.append(names.get(node, node) + sep + rest)
        out.append("<->".join(reversed(ends) if turn else ends))
    return "; ".join(sorted(out))


def _renamed_key(key: str, names: Mapping[str, str]) -> str:
    """A field's key (`a.kernel`, `a:enp1s0f0np0.mtu`, `cable.a.serial`), a GID index's (`a:rocep1s0f0`) or an unread
    prefix, with its node renamed by `names`."""
    for old in sorted(names, key=len, reverse=True):  # the longest first: node `a` must not take node `a.b`'s keys
        new = names[old]
        for before, after in ((f"cable.{old}.", f"cable.{new}."), (f"{old}.", f"{new}."), (f"{old}:", f"{new}:")):
            if key.startswith(before):
                return after + key[len(before):]
    return key


def _renamed_fields(fields: Mapping[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
    return {_renamed_key(k, names): v for k, v in fields.items()}


def _renamed_node(node: NodeSnapshot, name: str) -> NodeSnapshot:
    names = {node.name: name}
    return replace(node, name=name, configuration=_renamed_fields(node.configuration, names),
                   unknown=tuple(_renamed_key(p, names) for p in node.unknown))


def _turned_rate(key: str) -> str:
    """A rate's key (`enp1s0f0np0<->enp1s0f1np1|concurrent|a->b`) seen from the cable's other end."""
    parts = key.split("|")
    parts[0] = "<->".join(reversed(parts[0].split("<->")))
    parts[-1] = _TURNED.get(parts[-1], parts[-1])
    return "|".join(parts)


def _oriented(cable: CableSnapshot, names: Mapping[str, str], first: str) -> CableSnapshot:
    """The cable with its nodes renamed by `names`, and seen from node `first` (a new name): its end a, from which its
    rates' directions (`a->b`) and paths (`netdev of a<->netdev of b`) are told."""
    snap = cable.snapshot
    turn = names.get(cable.a, cable.a) != first
    identity = _renamed_fields(snap.identity, names)
    pairing = snap.identity.get("pairing")
    if pairing is not None:
        identity["pairing"] = _joins(pairing, names, turn)
    performance = snap.performance
    if turn:
        performance = replace(performance, rdma_gbps={_turned_rate(k): v for k, v in performance.rdma_gbps.items()},
                              concurrent_total_gbps={_TURNED.get(d, d): v
                                                     for d, v in performance.concurrent_total_gbps.items()})
    ends = (names.get(cable.b, cable.b), names.get(cable.a, cable.a)) if turn else \
        (names.get(cable.a, cable.a), names.get(cable.b, cable.b))
    return CableSnapshot(_joins(cable.label, names, turn), *ends, cable.switched, replace(
        snap, pair=swapped(snap.pair) if turn else snap.pair, identity=identity,
        configuration=_renamed_fields(snap.configuration, names), gid_index=_renamed_fields(snap.gid_index, names),
        performance=performance, unknown=tuple(_renamed_key(p, names) for p in snap.unknown)))


def _pairing(snap: Snapshot) -> list[list[str]]:
    """The pair's twin paths as their two ends (`a:enp1s0f1np1`, `b:enp1s0f1np1`); none when not read or no path."""
    pairing = snap.identity.get("pairing") or ""
    return [join.split("<->", 1) for join in pairing.split("; ") if "<->" in join]


def _on_cable(snap: Snapshot) -> Callable[[str], bool]:
    """Whether a pair's field is its cable's, as `cable_only` keeps a node's functions: a twin's field (`a:X.mtu`) where
    the twin sits in a cage of the pairing's twins (or is one of them, its cage not known), any other field (the
    cable's serial, the pairing); every field when the pairing was not read."""
    ends = {end for join in _pairing(snap) for end in join}
    if not ends:
        return lambda key: True
    cages = {(end.partition(":")[0], snap.identity.get(f"{end}.cage")) for end in ends}

    def keep(key: str) -> bool:
        if ":" not in key or key.startswith("cable."):
            return True
        twin = key.rsplit(".", 1)[0]
        cage = snap.identity.get(f"{twin}.cage")
        return (twin.partition(":")[0], cage) in cages if cage else twin in ends
    return keep


def _pair_label(snap: Snapshot) -> str:
    """The pair's cable as a cluster labels one (`a:p1<->b:p1`: the cages of its first path; `?` where not known)."""
    ends = (_pairing(snap) or [[f"{n}:" for n in PAIR_NODES]])[0]
    return "<->".join(f"{end.partition(':')[0]}:{snap.identity.get(f'{end}.cage') or '?'}" for end in ends)


def pair_as_cluster(snap: Snapshot) -> ClusterSnapshot:
    """A pair's snapshot as the cluster of its one cable, split as `cluster_snapshot` splits a cluster's run: nodes a
    and b (who each is; its kernel, OS and NCCL settings) and the cable between them (its twins, cable, pairing, GID
    indices and rates; a twin of another cage, addressed but not on this cable, left out as `cable_only` leaves it).
    The layout is a pair's: two nodes on one cable."""
    keep = _on_cable(snap)

    def cable_fields(fields: Fields) -> Fields:
        return {k: v for k, v in _without_nodes(fields, PAIR_NODES).items() if keep(k)}

    nodes = tuple(NodeSnapshot(name=name, hostname=key.a_hostname, machine_id=key.a_machine_id, macs=key.a_macs,
                               configuration={k: v for k, v in snap.configuration.items() if k.startswith(f"{name}.")},
                               unknown=tuple(p for p in snap.unknown if p.startswith(f"{name}.")))
                  for name, key in zip(PAIR_NODES, (snap.pair, swapped(snap.pair)), strict=True))
    identity = cable_fields(snap.identity)
    macs = {n: tuple(sorted(v for k, v in identity.items() if k.startswith(f"{n}:") and k.endswith(".mac") and v))
            for n in PAIR_NODES}  # the cable's own twins' MACs, as a cluster's cable records them
    cable = replace(snap, pair=replace(snap.pair, a_macs=macs["a"], b_macs=macs["b"]), identity=identity,
                    configuration=cable_fields(snap.configuration))
    return ClusterSnapshot(layout="pair", nodes=nodes, cables=(CableSnapshot(_pair_label(snap), *PAIR_NODES, False,
                                                                             cable),), verdict=snap.verdict)


def cable_as_pair(snap: ClusterSnapshot, cable: CableSnapshot, first: str) -> Snapshot:
    """A cable of `snap` and its two nodes as a pair's snapshot, node `first` as the pair's a (the inverse of
    `pair_as_cluster`): the cable's fields with its nodes' own (hostname, kernel, OS, NCCL) and who they are."""
    other = cable.b if cable.a == first else cable.a
    names = dict(zip((first, other), PAIR_NODES, strict=True))
    a, b = (_renamed_node(snap.node(n) or NodeSnapshot(name=n), names[n]) for n in (first, other))
    one = _oriented(cable, names, PAIR_NODES[0]).snapshot
    return replace(one, pair=PairKey(a_hostname=a.hostname, a_macs=a.macs, b_hostname=b.hostname, b_macs=b.macs,
                                     cable_sn=one.pair.cable_sn, a_machine_id=a.machine_id, b_machine_id=b.machine_id),
                   identity={**one.identity, f"{a.name}.hostname": a.hostname, f"{b.name}.hostname": b.hostname},
                   configuration={**one.configuration, **a.configuration, **b.configuration},
                   unknown=tuple(dict.fromkeys((*one.unknown, *a.unknown, *b.unknown))))


def _saved(baseline: Baseline | ClusterBaseline) -> dict[str, Any]:
    """What the baseline says of itself (name, dates, source) and where it is stored, for the same baseline read as
    the other kind."""
    return {**{f: getattr(baseline, f) for f in SavedBaseline.__struct_fields__}, "path": baseline.path}


def _matched(nodes: Sequence[NodeSnapshot], key: PairKey, taken: Iterable[str]) -> str | None:
    """The name of the node of `nodes` that is node a of `key` (by machine id, hostname or a ConnectX-7 MAC, as a
    cluster's nodes are matched), none taken already."""
    return next((n.name for n in nodes if n.name not in taken and not node_differences(_key(n), key, n.name)), None)


def for_cluster(baseline: Baseline | ClusterBaseline, now: ClusterSnapshot, order: Sequence[str]) -> ClusterBaseline:
    """The baseline a cluster's run compares with: a cluster's as it is; a pair's as the cluster of its one cable
    (`pair_as_cluster`), its two nodes named as this run names the same machines (`order`: the run's nodes), so that
    the cable is judged by the pair's DRIFT_* rules and the run's other nodes are new, as for a cluster's baseline that
    lacks them. A node of the pair not among this run's: BaselineError naming it."""
    if isinstance(baseline, ClusterBaseline):
        return baseline
    pair = pair_as_cluster(baseline.snapshot)
    names: dict[str, str] = {}
    for node in pair.nodes:
        found = _matched(now.nodes, _key(node), names.values())
        if found is not None:
            names[node.name] = found
    missing = [n for n in pair.nodes if n.name not in names]
    if missing:
        unread = f"; not inspected: {', '.join(now.unread)}" if now.unread else ""
        raise BaselineError(baseline.path or baseline.name, f"baseline {baseline.name!r} is a pair's "
                            f"({' + '.join(n.hostname or '?' for n in pair.nodes)}) and its "
                            f"{' and '.join(f'node {n.name} ({_who(n)})' for n in missing)} "
                            f"{'is' if len(missing) == 1 else 'are'} not in this cluster "
                            f"({', '.join(sorted(n.hostname or n.name for n in now.nodes)) or 'no node'} now{unread})",
                            fix="compare with a baseline that holds these nodes (linkcheck baseline list), or save "
                            "one: linkcheck baseline save NAME CLUSTER_BUNDLE")
    rank = list(order).index
    first = min(names.values(), key=rank)
    nodes = tuple(sorted((_renamed_node(n, names[n.name]) for n in pair.nodes), key=lambda n: rank(n.name)))
    return ClusterBaseline(**_saved(baseline), snapshot=replace(pair, nodes=nodes, cables=(
        _oriented(pair.cables[0], names, first),)))


def for_pair(baseline: Baseline | ClusterBaseline, now: PairKey) -> Baseline:
    """The baseline a pair's run compares with: a pair's as it is; a cluster's read for its cable between the pair's
    two nodes (matched by identity, as a cluster's nodes are), that cable and those nodes as a pair's snapshot
    (`cable_as_pair`), which the pair's DRIFT_* rules judge. No such cable in the baseline: BaselineError naming both
    nodes."""
    if isinstance(baseline, Baseline):
        return baseline
    base = baseline.snapshot
    names: dict[str, str] = {}  # the pair's node -> the baseline's
    for side, key in zip(PAIR_NODES, (now, swapped(now)), strict=True):
        found = _matched(base.nodes, key, names.values())
        if found is not None:
            names[side] = found
    ends = {names.get(n) for n in PAIR_NODES}
    cable = next((c for c in base.cables if {c.a, c.b} == ends), None)
    if cable is None:
        who = [f"{host or '?'} ({f'its node {names[n]}' if n in names else 'not among its nodes'})"
               for n, host in zip(PAIR_NODES, (now.a_hostname, now.b_hostname), strict=True)]
        raise BaselineError(baseline.path or baseline.name, f"baseline {baseline.name!r} is a cluster's "
                            f"({describe_nodes(baseline)}) and holds no cable between {who[0]} and {who[1]}",
                            fix="compare the pair with a baseline that holds its cable (linkcheck baseline list), or "
                            "save one: linkcheck baseline save NAME BUNDLE")
    return Baseline(**_saved(baseline), snapshot=cable_as_pair(base, cable, names[PAIR_NODES[0]]))

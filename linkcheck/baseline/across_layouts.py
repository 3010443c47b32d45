"""A pair is the cluster of its one cable, so either baseline serves either run, through one conversion and its
inverse: a pair's baseline given to a cluster is read as a one-cable cluster's (`pair_as_cluster`), its two nodes named
as the run names the same machines (`for_cluster`); a cluster's given to a pair is read for its cable between the
pair's two nodes, as a pair's snapshot (`cable_as_pair`, `for_pair`). The files are read as they are, never rewritten.

It stands apart from the cluster's drift (baseline/drift.py, which reads a pair's baseline through `for_cluster`) and
from a pair's (facts/drift.py attach_baseline, given `for_pair`'s answer): the conversion is neither layout's, and
each of the two judges only the baseline of its own layout.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from msgspec.structs import replace

from linkcheck.baseline.store import (
    CableSnapshot,
    ClusterBaseline,
    ClusterSnapshot,
    NodeSnapshot,
    describe_nodes,
    without_nodes,
)
from linkcheck.errors import BaselineError
from linkcheck.facts.drift import node_differences, swapped
from linkcheck.facts.snapshot_model import Baseline, Fields, PairKey, SavedBaseline, Snapshot

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
    """Whether a pair's field is its cable's, as drift.py `cable_only` keeps a node's functions: a twin's field
    (`a:X.mtu`) where the twin sits in a cage of the pairing's twins (or is one of them, its cage not known), any other
    field (the cable's serial, the pairing); every field when the pairing was not read."""
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
    """A pair's snapshot as the cluster of its one cable, split as drift.py `cluster_snapshot` splits a cluster's run:
    nodes a and b (who each is; its kernel, OS and NCCL settings) and the cable between them (its twins, cable,
    pairing, GID indices and rates; a twin of another cage, addressed but not on this cable, left out as `cable_only`
    leaves it). The layout is a pair's: two nodes on one cable."""
    keep = _on_cable(snap)

    def cable_fields(fields: Fields) -> Fields:
        return {k: v for k, v in without_nodes(fields, PAIR_NODES).items() if keep(k)}

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
    return next((n.name for n in nodes
                 if n.name not in taken and not node_differences(n.pair_key(), key, n.name)), None)


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
        found = _matched(now.nodes, node.pair_key(), names.values())
        if found is not None:
            names[node.name] = found
    missing = [n for n in pair.nodes if n.name not in names]
    if missing:
        unread = f"; not inspected: {', '.join(now.unread)}" if now.unread else ""
        raise BaselineError(baseline.path or baseline.name, f"baseline {baseline.name!r} is a pair's "
                            f"({' + '.join(n.hostname or '?' for n in pair.nodes)}) and its "
                            f"{' and '.join(f'node {n.name} ({n.who()})' for n in missing)} "
                            f"{'is' if len(missing) == 1 else 'are'} not in this cluster "
                            f"({', '.join(sorted(n.hostname or n.name for n in now.nodes)) or 'no node'} now{unread})",
                            fix="compare with a baseline that holds these nodes (linkcheck baseline list), or save "
                            "one: linkcheck baseline save NAME CLUSTER_BUNDLE")
    rank = list(order).index
    first = min(names.values(), key=rank)
    nodes = tuple(sorted((_renamed_node(n, names[n.name]) for n in pair.nodes), key=lambda n: rank(n.name)))
    return ClusterBaseline(**_saved(baseline), snapshot=replace(pair, nodes=nodes, cables=(
        _oriented(pair.cables[0], names, first),)))


def _own_names(snap: Snapshot) -> tuple[str, str] | None:
    """The names a pair's snapshot gives its nodes a and b (its `NAME.hostname` keys, told apart by the hostnames
    its key records); None where they cannot be told."""
    named = {k.removesuffix(".hostname"): v for k, v in snap.identity.items()
             if k.endswith(".hostname") and not k.startswith("cable.")}
    first = [n for n, host in named.items() if host == snap.pair.a_hostname]
    second = [n for n, host in named.items() if host == snap.pair.b_hostname]
    if len(named) != 2 or len(first) != 1 or len(second) != 1 or first == second:
        return None
    return first[0], second[0]


def _named_as(baseline: Baseline, names: tuple[str, str]) -> Baseline:
    """A pair's baseline with its nodes named as the run names them, in the pair's order: a pair saved as nodes a and
    b and checked as two nodes named otherwise (`--node spark-1=...`, a hostfile), or the reverse, is the same pair,
    and its fields are compared key by key. The pairing (`a:NETDEV<->b:NETDEV`) names the pair's ends, not its
    nodes, and stays."""
    snap = baseline.snapshot
    own = _own_names(snap)
    if own is None or own == names:
        return baseline
    renamed = dict(zip(own, names, strict=True))
    return replace(baseline, snapshot=replace(
        snap, identity=_renamed_fields(snap.identity, renamed),
        configuration=_renamed_fields(snap.configuration, renamed),
        gid_index={_renamed_key(k, renamed): v for k, v in snap.gid_index.items()},
        unknown=tuple(_renamed_key(p, renamed) for p in snap.unknown)))


def for_pair(baseline: Baseline | ClusterBaseline, now: PairKey, run_names: tuple[str, str] = PAIR_NODES
             ) -> Baseline:
    """The baseline a pair's run compares with, its nodes named as the run's (`run_names`, `_named_as`): a pair's as it
    is; a cluster's read for its cable between the pair's two nodes (matched by identity, as a cluster's nodes are),
    that cable and those nodes as a pair's snapshot (`cable_as_pair`), which the pair's DRIFT_* rules judge. No such
    cable in the baseline: BaselineError naming both nodes."""
    if isinstance(baseline, Baseline):
        return _named_as(baseline, run_names)
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
    return _named_as(Baseline(**_saved(baseline), snapshot=cable_as_pair(base, cable, names[PAIR_NODES[0]])),
                     run_names)

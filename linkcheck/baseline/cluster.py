"""A cluster's baselines on disk: plain JSON (`"schema": "linkcheck-cluster-baseline"`) beside the pairs' in
$XDG_DATA_HOME/linkcheck/baselines/<cluster>/<NAME>.json, written and refused as a pair's are
(linkcheck.baseline.store).

The file holds who the cluster is (the layout; per node its name, hostname, machine id where the bundle has one,
ConnectX-7 MACs and its own settings) and per cable (or test through the switch) a pair's snapshot restricted to
that cable: the sections a pair's baseline holds (pair, identity, configuration, recorded, performance, unknown).
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any

import msgspec

from linkcheck import __version__
from linkcheck.baseline import store
from linkcheck.errors import BaselineError, UsageError
from linkcheck.facts.snapshot_model import Baseline, Fields, SavedBaseline, Snapshot

CLUSTER_SCHEMA = "linkcheck-cluster-baseline"
CLUSTER_SCHEMA_VERSION = 1


class NodeSnapshot(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One node of the cluster: who it is, and its own settings (kernel, OS, NCCL), compared once per node."""

    name: str
    hostname: str | None = None
    machine_id: str | None = None
    macs: tuple[str, ...] = ()
    configuration: Fields = msgspec.field(default_factory=dict)
    unknown: tuple[str, ...] = ()  # key prefixes this run could not read


class CableSnapshot(msgspec.Struct, frozen=True):
    """One cable (or test through the switch) by its label and nodes, with the pair's snapshot of that cable."""

    label: str
    a: str
    b: str
    switched: bool
    snapshot: Snapshot


class ClusterSnapshot(msgspec.Struct, frozen=True):
    """The cluster as one run shows it: the layout, the nodes (those not inspected listed in `unread`), the
    cables, and the run's verdict."""

    layout: str
    nodes: tuple[NodeSnapshot, ...]
    cables: tuple[CableSnapshot, ...]
    verdict: str
    unread: tuple[str, ...] = ()

    def node(self, name: str) -> NodeSnapshot | None:
        return next((n for n in self.nodes if n.name == name), None)


class ClusterBaseline(SavedBaseline, frozen=True):
    """A cluster's saved snapshot, and where it is stored."""

    snapshot: ClusterSnapshot
    path: str = ""

    def cable_baseline(self, cable: CableSnapshot) -> Baseline:
        """One cable's part as a pair's baseline, which the pair's DRIFT_* rules compare with."""
        return Baseline(name=self.name, created=self.created, tool_version=self.tool_version,
                        source_bundle=self.source_bundle, bundle_created=self.bundle_created, forced=self.forced,
                        snapshot=cable.snapshot, path=self.path)


def to_json(baseline: ClusterBaseline) -> dict[str, Any]:
    snap = baseline.snapshot
    return {
        "schema": CLUSTER_SCHEMA, "schema_version": CLUSTER_SCHEMA_VERSION, "name": baseline.name,
        "created": baseline.created, "tool_version": baseline.tool_version,
        "source": {"bundle": baseline.source_bundle, "bundle_created": baseline.bundle_created,
                   "verdict": snap.verdict, "forced": baseline.forced},
        "cluster": {"layout": snap.layout, "unread": list(snap.unread)},
        "nodes": [msgspec.to_builtins(n) for n in snap.nodes],
        "cables": [{"label": c.label, "a": c.a, "b": c.b, "switched": c.switched, **store.snapshot_json(c.snapshot)}
                   for c in snap.cables],
    }


class _Head(msgspec.Struct, frozen=True):
    schema: Any = None
    schema_version: Any = None
    nodes: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)
    cables: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)
    source: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)
    cluster: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)


class _Cluster(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    layout: str
    unread: tuple[str, ...]


class _Cable(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    label: str
    a: str
    b: str
    switched: bool
    pair: store.PairEntry
    identity: Fields
    configuration: Fields
    recorded: store.RecordedEntry
    performance: store.PerformanceEntry
    unknown: tuple[str, ...]


class _File(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A cluster's baseline file as `to_json` writes it."""

    schema: str
    schema_version: int
    name: str
    created: str
    tool_version: str
    source: store.SourceEntry
    cluster: _Cluster
    nodes: tuple[NodeSnapshot, ...]
    cables: tuple[_Cable, ...]


_FIX = "save it again: linkcheck baseline save NAME CLUSTER_BUNDLE --force"


def _check_head(path: str, head: _Head) -> None:
    version = head.schema_version
    if head.schema != CLUSTER_SCHEMA:
        raise BaselineError(path, f"not a linkcheck cluster baseline (no \"schema\": \"{CLUSTER_SCHEMA}\")", fix=_FIX)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise BaselineError(path, "'schema_version' must be a positive integer", fix=_FIX)
    if version > CLUSTER_SCHEMA_VERSION:
        raise BaselineError(path, f"cluster baseline schema version {version} is newer than this linkcheck reads "
                            f"({CLUSTER_SCHEMA_VERSION})", fix="upgrade linkcheck, or save the baseline again")
    for key in ("source", "cluster", "nodes", "cables"):
        if not getattr(head, key):
            raise BaselineError(path, f"'{key}' is missing", fix=_FIX)


def _check(path: str, doc: _File) -> None:
    """What the schema cannot say: at least two nodes, distinct node names, each cable once, between them."""
    names = [n.name for n in doc.nodes]
    if len(names) < 2:
        raise BaselineError(path, f"'nodes': a cluster's baseline holds at least two nodes, not {len(names)}",
                            fix=_FIX)
    if len(set(names)) != len(names):
        raise BaselineError(path, f"'nodes': a node named twice ({', '.join(names)})", fix=_FIX)
    labels = [c.label for c in doc.cables]
    twice = next((label for label in labels if labels.count(label) > 1), None)
    if twice is not None:
        raise BaselineError(path, f"'cables': the cable {twice!r} is listed twice", fix=_FIX)
    for i, cable in enumerate(doc.cables):
        unknown = [n for n in (cable.a, cable.b) if n not in names]
        if unknown:
            raise BaselineError(path, f"'cables[{i}]' ({cable.label!r}) joins {unknown[0]!r}, not among the nodes",
                                fix=_FIX)


def from_json(text: str, path: str) -> ClusterBaseline:
    """The cluster baseline in `text`; any mistake is one BaselineError naming the file (and the field)."""
    doc = store.decode(text, path, lambda: _check_head(path, msgspec.json.decode(text, type=_Head)), _File)
    _check(path, doc)
    cables = tuple(CableSnapshot(c.label, c.a, c.b, c.switched, store.snapshot_from_entries(
        c.pair, c.identity, c.configuration, c.recorded, c.performance, c.unknown, doc.source.verdict))
        for c in doc.cables)
    snap = ClusterSnapshot(layout=doc.cluster.layout, nodes=doc.nodes, cables=cables, verdict=doc.source.verdict,
                           unread=doc.cluster.unread)
    return ClusterBaseline(name=doc.name, created=doc.created, tool_version=doc.tool_version,
                           source_bundle=doc.source.bundle, bundle_created=doc.source.bundle_created,
                           forced=doc.source.forced, snapshot=snap, path=path)


class _Schema(msgspec.Struct, frozen=True):
    schema: Any = None


def _schema_of(text: str) -> Any:
    """The file's `schema`, or None when it is no JSON object (the reader then says what is wrong)."""
    try:
        return msgspec.json.decode(text, type=_Schema).schema
    except (msgspec.DecodeError, RecursionError):
        return None


def read_any(path: Path) -> Baseline | ClusterBaseline:
    """A pair's or a cluster's baseline file, by its schema; anything else is one BaselineError."""
    text = store.read_text(path)
    if _schema_of(text) == CLUSTER_SCHEMA:
        return from_json(text, str(path))
    return store.from_json(text, str(path))


def resolve_any(name_or_file: str) -> Baseline | ClusterBaseline:
    """A stored baseline by name, or a baseline file by path (as `store.resolve`), a pair's or a cluster's."""
    if (name_or_file.endswith(".json") or os.sep in name_or_file) and os.path.lexists(name_or_file):
        return read_any(Path(name_or_file))
    path = store.find_path(store.check_name(name_or_file))
    if path is None:
        raise UsageError(f"no baseline named {name_or_file!r}; `linkcheck baseline list` shows the saved ones")
    return read_any(path)


def list_any() -> tuple[list[Baseline | ClusterBaseline], list[BaselineError]]:
    """Every stored baseline that reads, and one error per entry that does not (a folder, a FIFO, a corrupt or
    newer file): one bad entry never hides the others."""
    baselines: list[Baseline | ClusterBaseline] = []
    problems: list[BaselineError] = []
    for path in store.stored_paths():
        try:
            baselines.append(read_any(path))
        except BaselineError as exc:
            problems.append(exc)
    return baselines, problems


def describe_nodes(baseline: ClusterBaseline) -> str:
    """`ring3: a, b, c`: the layout and the nodes by name."""
    return f"{baseline.snapshot.layout}: {', '.join(n.name for n in baseline.snapshot.nodes)}"


def _described(baseline: Baseline | ClusterBaseline) -> str:
    if isinstance(baseline, ClusterBaseline):
        return f"a cluster's ({describe_nodes(baseline)})"
    pair = baseline.snapshot.pair
    return f"a pair's ({pair.a_hostname or '?'} + {pair.b_hostname or '?'})"


def pair_baseline(name_or_file: str) -> Baseline:
    """The baseline a pair's run compares with; a cluster's is refused in one line (exit 4)."""
    found = resolve_any(name_or_file)
    if isinstance(found, ClusterBaseline):
        raise BaselineError(found.path or found.name, f"baseline {found.name!r} is {_described(found)}, and this "
                            "is a pair's run", fix="compare a pair with a pair's baseline (linkcheck baseline list)")
    return found


def cluster_baseline(name_or_file: str) -> ClusterBaseline:
    """The baseline a cluster's run compares with; a pair's is refused in one line (exit 4)."""
    found = resolve_any(name_or_file)
    if not isinstance(found, ClusterBaseline):
        raise BaselineError(found.path or found.name, f"baseline {found.name!r} is {_described(found)}, and this "
                            "is a cluster's run", fix="compare a cluster with a cluster's baseline: linkcheck "
                            "baseline save NAME CLUSTER_BUNDLE")
    return found


def cluster_id(snapshot: ClusterSnapshot) -> str:
    """A file-system name for the cluster: `cluster-`, its first node's hostname, how many others, and a digest of
    every node's identity."""
    ids = [n.machine_id or n.hostname or n.name for n in snapshot.nodes]
    digest = hashlib.sha256("\n".join(ids).encode()).hexdigest()[:8]
    first = re.sub(r"[^A-Za-z0-9_.-]", "_", ids[0] if ids else "unknown")[:40]
    return f"cluster-{first}+{max(len(ids) - 1, 0)}-{digest}"


def save(baseline: ClusterBaseline, *, overwrite: bool) -> Path:
    """Write the cluster's baseline as a pair's is written (atomic, a name taken elsewhere refused)."""
    return store.write(baseline.name, cluster_id(baseline.snapshot), to_json(baseline), overwrite=overwrite)


def new_cluster_baseline(name: str, snapshot: ClusterSnapshot, bundle_path: Path | None, bundle_created: str,
                         forced: bool) -> ClusterBaseline:
    """A baseline of `snapshot`, keeping only the rates a ratio can be taken against (so that it loads)."""
    cables = tuple(msgspec.structs.replace(c, snapshot=msgspec.structs.replace(
        c.snapshot, performance=c.snapshot.performance.usable())) for c in snapshot.cables)
    return ClusterBaseline(name=store.check_name(name), created=store.now_iso(), tool_version=__version__,
                           source_bundle=str(bundle_path.resolve()) if bundle_path else "",
                           bundle_created=bundle_created, forced=forced,
                           snapshot=msgspec.structs.replace(snapshot, cables=cables))

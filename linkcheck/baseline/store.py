"""Baselines on disk, a pair's and a cluster's: plain JSON with a schema version under
$XDG_DATA_HOME/linkcheck/baselines/<pair or cluster>/<NAME>.json, each shape read and written here.

A pair's file (`"schema": "linkcheck-baseline"`) holds the pair's snapshot at its top: the sections pair, identity,
configuration, recorded, performance and unknown. A cluster's (`"schema": "linkcheck-cluster-baseline"`) holds who
the cluster is (the layout; per node its name, hostname, machine id where the bundle has one, ConnectX-7 MACs and
its own settings) and per cable (or test through the switch) a pair's snapshot restricted to that cable, with the
same sections. Both are written, refused and listed alike; each schema has its own version.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import os
import re
import secrets
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import msgspec

from linkcheck import __version__, schema, strict_json
from linkcheck.errors import BaselineError, ExitCode, LinkcheckError, UsageError
from linkcheck.facts.snapshot import pair_id
from linkcheck.facts.snapshot_model import (
    MIN_RATE_GBPS,
    SCHEMA,
    SCHEMA_VERSION,
    Baseline,
    Fields,
    PairKey,
    Performance,
    SavedBaseline,
    Snapshot,
)
from linkcheck.safe_read import read_capped
from linkcheck.safe_write import create_file, replace_file

T = TypeVar("T")
NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$")
MAX_BYTES = 4 << 20
CLUSTER_SCHEMA = "linkcheck-cluster-baseline"
CLUSTER_SCHEMA_VERSION = 1


class StoreWriteError(LinkcheckError):
    """The data folder cannot take a baseline: not a folder, not writable, or its disk full."""

    exit_code = ExitCode.OUTPUT


def data_dir() -> Path:
    """The user's XDG data directory for linkcheck ($XDG_DATA_HOME, else ~/.local/share)."""
    base = os.environ.get("XDG_DATA_HOME") or ""
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".local" / "share"
    return root / "linkcheck"


def baselines_dir() -> Path:
    return data_dir() / "baselines"


def check_name(name: str) -> str:
    if not NAME_RE.fullmatch(name):  # fullmatch: `$` alone lets "name\n" through
        raise UsageError(f"baseline name {name!r} must be 1-64 characters of A-Z a-z 0-9 _ . - "
                         "(not starting with . or -)")
    return name


class NodeSnapshot(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    """One node of the cluster: who it is, and its own settings (kernel, OS, NCCL), compared once per node."""

    name: str
    hostname: str | None = None
    machine_id: str | None = None
    macs: tuple[str, ...] = ()
    configuration: Fields = msgspec.field(default_factory=dict)
    unknown: tuple[str, ...] = ()  # key prefixes this run could not read

    def pair_key(self) -> PairKey:
        """The node as node a of a pair's key, so that the pair's test of identity applies."""
        return PairKey(a_hostname=self.hostname, a_macs=self.macs, b_hostname=None, b_macs=(), cable_sn=None,
                       a_machine_id=self.machine_id)

    def who(self) -> str:
        """Who the node is, as a finding or a refusal names it: hostname, machine id, ConnectX-7 MACs."""
        who = f"hostname {self.hostname or '?'}"
        who += f", machine id {self.machine_id}" if self.machine_id else ""
        return who + f", ConnectX-7 MACs {', '.join(self.macs) or 'none'}"


def without_nodes(fields: Fields, nodes: tuple[str, str]) -> Fields:
    """The fields of a pair's snapshot that a cluster's cable keeps: not a node's own (`a.kernel`, `a.nccl.X`,
    `a.hostname`), which the cluster keeps once per node."""
    prefixes = tuple(f"{n}." for n in nodes)
    return {k: v for k, v in fields.items() if not k.startswith(prefixes)}


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


def to_json(baseline: Baseline | ClusterBaseline) -> dict[str, Any]:
    """The baseline as its file holds it: a pair's or a cluster's shape."""
    if isinstance(baseline, ClusterBaseline):
        return _cluster_json(baseline)
    snap = baseline.snapshot
    return {
        "schema": SCHEMA, "schema_version": SCHEMA_VERSION, "name": baseline.name, "created": baseline.created,
        "tool_version": baseline.tool_version,
        "source": {"bundle": baseline.source_bundle, "bundle_created": baseline.bundle_created,
                   "verdict": snap.verdict, "forced": baseline.forced},
        **snapshot_json(snap),
    }


def snapshot_json(snap: Snapshot) -> dict[str, Any]:
    """A snapshot's sections as a baseline file holds them: pair, identity, configuration, recorded, performance,
    unknown (a pair's baseline at its top, a cluster's once per cable)."""
    return {
        "pair": {**msgspec.structs.asdict(snap.pair), "a_macs": list(snap.pair.a_macs),
                 "b_macs": list(snap.pair.b_macs)},
        "identity": snap.identity, "configuration": snap.configuration,
        "recorded": {"gid_index": snap.gid_index},
        "performance": msgspec.structs.asdict(snap.performance),
        "unknown": list(snap.unknown),
    }


def _cluster_json(baseline: ClusterBaseline) -> dict[str, Any]:
    snap = baseline.snapshot
    return {
        "schema": CLUSTER_SCHEMA, "schema_version": CLUSTER_SCHEMA_VERSION, "name": baseline.name,
        "created": baseline.created, "tool_version": baseline.tool_version,
        "source": {"bundle": baseline.source_bundle, "bundle_created": baseline.bundle_created,
                   "verdict": snap.verdict, "forced": baseline.forced},
        "cluster": {"layout": snap.layout, "unread": list(snap.unread)},
        "nodes": [msgspec.to_builtins(n) for n in snap.nodes],
        "cables": [{"label": c.label, "a": c.a, "b": c.b, "switched": c.switched, **snapshot_json(c.snapshot)}
                   for c in snap.cables],
    }


def snapshot_from_entries(p: PairEntry, identity: Fields, configuration: Fields, recorded: RecordedEntry,
                          performance: PerformanceEntry, unknown: tuple[str, ...], verdict: str) -> Snapshot:
    """The snapshot that `snapshot_json` wrote, from its validated sections."""
    return Snapshot(
        pair=PairKey(a_hostname=p.a_hostname, a_macs=p.a_macs, b_hostname=p.b_hostname, b_macs=p.b_macs,
                     cable_sn=p.cable_sn, a_machine_id=p.a_machine_id, b_machine_id=p.b_machine_id),
        identity=identity, configuration=configuration, gid_index=dict(recorded.gid_index),
        performance=Performance(**msgspec.structs.asdict(performance)), verdict=verdict, unknown=unknown)


_RATE = (f"a rate must be a finite number of at least {MIN_RATE_GBPS:g} Gb/s (a ratio against it would be infinite "
         "or NaN)")
Rate = Annotated[float, msgspec.Meta(ge=MIN_RATE_GBPS, lt=1e15)]
GidIndex = Annotated[int, msgspec.Meta(gt=-(1 << 31), lt=1 << 31)]
_NON_FINITE = re.compile(r"(?<![\w\"])(-?Infinity|NaN)(?![\w\"])")


class _Head(msgspec.Struct, frozen=True):
    """What is checked first: is it a baseline (a pair's or a cluster's), of a version this linkcheck reads, with each
    section there."""

    schema: Any = None
    schema_version: Any = None
    source: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)
    pair: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)
    identity: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)
    configuration: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)
    recorded: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)
    performance: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)
    cluster: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)
    nodes: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)
    cables: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)


class SourceEntry(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    bundle: str
    bundle_created: str
    verdict: str
    forced: bool


class PairEntry(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    a_hostname: str | None = None
    a_macs: tuple[str, ...]
    b_hostname: str | None = None
    b_macs: tuple[str, ...]
    cable_sn: str | None = None
    a_machine_id: str | None = None
    b_machine_id: str | None = None


class RecordedEntry(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    gid_index: dict[str, GidIndex | None]


class PerformanceEntry(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    rdma_gbps: dict[str, Rate]
    concurrent_total_gbps: dict[str, Rate]
    nccl_busbw_gbs: Rate | None = None
    rdma_parameters: dict[str, str]
    nccl_parameters: dict[str, str]


class _File(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A baseline file as `to_json` writes it."""

    schema: str
    schema_version: int
    name: str
    created: str
    tool_version: str
    source: SourceEntry
    pair: PairEntry
    identity: Fields
    configuration: Fields
    recorded: RecordedEntry
    performance: PerformanceEntry
    unknown: tuple[str, ...]


class _Cluster(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    layout: str
    unread: tuple[str, ...]


class _Cable(msgspec.Struct, frozen=True, forbid_unknown_fields=True, kw_only=True):
    label: str
    a: str
    b: str
    switched: bool
    pair: PairEntry
    identity: Fields
    configuration: Fields
    recorded: RecordedEntry
    performance: PerformanceEntry
    unknown: tuple[str, ...]


class _ClusterFile(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A cluster's baseline file as `to_json` writes it."""

    schema: str
    schema_version: int
    name: str
    created: str
    tool_version: str
    source: SourceEntry
    cluster: _Cluster
    nodes: tuple[NodeSnapshot, ...]
    cables: tuple[_Cable, ...]


_FIX = "save it again: linkcheck baseline save NAME BUNDLE --force"
_CLUSTER_FIX = "save it again: linkcheck baseline save NAME CLUSTER_BUNDLE --force"


def refusal(path: str, text: str, exc: msgspec.ValidationError, model: type) -> BaselineError:
    """A baseline file that does not fit `model` (the file's struct): one error naming the field and its line."""
    problem = schema.locate(exc)
    where = schema.dotted(problem.steps)
    section = re.sub(r"^cables\[\d+\]\.", "", where)  # a cluster's cable holds a pair's sections
    if section.startswith(("performance.rdma_gbps", "performance.concurrent_total_gbps",
                           "performance.nccl_busbw_gbs")):
        reason = f"'{where}' holds {problem.what.replace('`', '').lower()}: {_RATE}"
    elif section.startswith(("performance.rdma_parameters", "performance.nccl_parameters")):
        reason = f"'{where}': {problem.what.replace('`', '')} (test parameters must be strings)"
    else:
        reason = schema.describe(problem, allowed=lambda field: ", ".join(
            schema.field_names(model, problem.steps) or []) if field.endswith("*") else None)
    key = (problem.unknown,) if problem.unknown is not None else ()
    return BaselineError(path, reason, line=schema.json_line(text, problem.steps + key), fix=_FIX)


def decode(text: str, path: str, check_head: Callable[[], None], model: type[T]) -> T:
    """The baseline file `text` read into `model` after `check_head` (which decodes and checks its head); any
    mistake is one BaselineError naming the file (and the field and line where it can)."""
    try:
        check_head()
        return msgspec.json.decode(text, type=model)
    except msgspec.ValidationError as exc:
        line = schema.long_number_line(text, exc)
        if line is not None:
            raise BaselineError(path, "not valid JSON: a number of more than 4300 digits", line=line) from None
        raise refusal(path, text, exc, model) from None
    except RecursionError:
        raise BaselineError(path, "not valid JSON: nested too deeply") from None
    except msgspec.DecodeError as exc:
        found = _NON_FINITE.search(text)
        if found and "malformed" in str(exc):  # msgspec reads neither NaN nor Infinity: neither is JSON
            raise BaselineError(path, f"{found.group(1)} is not a number: {_RATE}",
                                line=text.count("\n", 0, found.start()) + 1, fix=_FIX) from None
        raise BaselineError(path, f"not valid JSON: {str(exc).removeprefix('JSON is malformed: ')}",
                            line=schema.decode_line(text, exc)) from None


class _Shape(msgspec.Struct, frozen=True):
    """One file shape's head: its schema and version, what its files are called, its sections, how to mend it."""

    schema: str
    version: int
    called: str
    sections: tuple[str, ...]
    fix: str
    section_hint: bool  # a missing section's message says it must be an object


_PAIR = _Shape(SCHEMA, SCHEMA_VERSION, "baseline", ("source", "pair", "identity", "configuration", "recorded",
                                                    "performance"), _FIX, True)
_CLUSTER = _Shape(CLUSTER_SCHEMA, CLUSTER_SCHEMA_VERSION, "cluster baseline", ("source", "cluster", "nodes", "cables"),
                  _CLUSTER_FIX, False)


def _check_head(path: str, head: _Head, shape: _Shape) -> None:
    version = head.schema_version
    if head.schema != shape.schema:
        raise BaselineError(path, f"not a linkcheck {shape.called} (no \"schema\": \"{shape.schema}\")", fix=shape.fix)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise BaselineError(path, "'schema_version' must be a positive integer", fix=shape.fix)
    if version > shape.version:
        raise BaselineError(path, f"{shape.called} schema version {version} is newer than this linkcheck reads "
                            f"({shape.version})", fix="upgrade linkcheck, or save the baseline again")
    for key in shape.sections:
        if not getattr(head, key):
            hint = f" ('{key}' must be an object)" if shape.section_hint else ""
            raise BaselineError(path, f"'{key}' is missing{hint}", fix=shape.fix)


def _head(text: str, path: str, shape: _Shape) -> Callable[[], None]:
    return lambda: _check_head(path, msgspec.json.decode(text, type=_Head), shape)


def _pair_from_json(text: str, path: str) -> Baseline:
    """A pair's baseline in the JSON `text`, read into its model; any mistake (a cluster's file included) is one
    BaselineError naming the file."""
    doc = decode(text, path, _head(text, path, _PAIR), _File)
    snapshot = snapshot_from_entries(doc.pair, doc.identity, doc.configuration, doc.recorded, doc.performance,
                                     doc.unknown, doc.source.verdict)
    return Baseline(name=doc.name, created=doc.created, tool_version=doc.tool_version,
                    source_bundle=doc.source.bundle, bundle_created=doc.source.bundle_created,
                    forced=doc.source.forced, snapshot=snapshot, path=path)


def _check_cluster(path: str, doc: _ClusterFile) -> None:
    """What the schema cannot say: at least two nodes, distinct node names, each cable once, between them."""
    names = [n.name for n in doc.nodes]
    if len(names) < 2:
        raise BaselineError(path, f"'nodes': a cluster's baseline holds at least two nodes, not {len(names)}",
                            fix=_CLUSTER_FIX)
    if len(set(names)) != len(names):
        raise BaselineError(path, f"'nodes': a node named twice ({', '.join(names)})", fix=_CLUSTER_FIX)
    labels = [c.label for c in doc.cables]
    twice = next((label for label in labels if labels.count(label) > 1), None)
    if twice is not None:
        raise BaselineError(path, f"'cables': the cable {twice!r} is listed twice", fix=_CLUSTER_FIX)
    for i, cable in enumerate(doc.cables):
        unknown = [n for n in (cable.a, cable.b) if n not in names]
        if unknown:
            raise BaselineError(path, f"'cables[{i}]' ({cable.label!r}) joins {unknown[0]!r}, not among the nodes",
                                fix=_CLUSTER_FIX)


def _cluster_from_json(text: str, path: str) -> ClusterBaseline:
    """A cluster's baseline in `text`; any mistake is one BaselineError naming the file (and the field)."""
    doc = decode(text, path, _head(text, path, _CLUSTER), _ClusterFile)
    _check_cluster(path, doc)
    cables = tuple(CableSnapshot(c.label, c.a, c.b, c.switched, snapshot_from_entries(
        c.pair, c.identity, c.configuration, c.recorded, c.performance, c.unknown, doc.source.verdict))
        for c in doc.cables)
    snap = ClusterSnapshot(layout=doc.cluster.layout, nodes=doc.nodes, cables=cables, verdict=doc.source.verdict,
                           unread=doc.cluster.unread)
    return ClusterBaseline(name=doc.name, created=doc.created, tool_version=doc.tool_version,
                           source_bundle=doc.source.bundle, bundle_created=doc.source.bundle_created,
                           forced=doc.source.forced, snapshot=snap, path=path)


def from_json(text: str, path: str) -> Baseline | ClusterBaseline:
    """A pair's or a cluster's baseline in the JSON `text`, by its `schema`, read into its model; any mistake is one
    BaselineError naming the file (and the field and line where it can)."""
    if _schema_of(text) == CLUSTER_SCHEMA:
        return _cluster_from_json(text, path)
    return _pair_from_json(text, path)


def read_text(path: Path) -> str:
    """A baseline file's text: a regular file (a symbolic link followed to one) of at most MAX_BYTES, UTF-8; a
    FIFO, a folder, a device or a missing file is one BaselineError."""
    try:
        return read_capped(path, MAX_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(str(path), f"cannot read: {getattr(exc, 'strerror', None) or exc}") from None


def read_baseline(path: Path) -> Baseline:
    """Load and validate one baseline file; corrupt, truncated or future-schema files are one-line errors."""
    return _pair_from_json(read_text(path), str(path))


def stored_paths() -> list[Path]:
    """Every entry of the store named like a baseline (NAME.json under a pair's or a cluster's folder), sorted."""
    root = baselines_dir()
    return sorted(root.glob("*/*.json")) if root.is_dir() else []


def find_path(name: str) -> Path | None:
    return next((p for p in stored_paths() if p.stem == name), None)


def resolve(name_or_file: str) -> Baseline:
    """A stored baseline by name, or a baseline file given by path (a fixture's, a colleague's)."""
    candidate = Path(name_or_file)
    if (name_or_file.endswith(".json") or os.sep in name_or_file) and os.path.lexists(candidate):
        return read_baseline(candidate)
    path = find_path(check_name(name_or_file))
    if path is None:
        raise UsageError(f"no baseline named {name_or_file!r}; `linkcheck baseline list` shows the saved ones")
    return read_baseline(path)


def save(baseline: Baseline | ClusterBaseline, folder: str | None = None, *, overwrite: bool) -> Path:
    """Write the baseline atomically into its folder (`folder`, else the pair's `pair_id` or the cluster's
    `cluster_id`); an existing name is refused unless `overwrite`, and a name another pair or cluster holds always
    (--force replaces this one's baseline, never another's).

    Created with link(): of two saves of one new name at once exactly one wins, the other is refused. The file
    appears whole or not at all; a failed write (a full disk, a data folder that is a file) leaves no temporary
    file and raises StoreWriteError."""
    if folder is None:
        folder = (cluster_id(baseline.snapshot) if isinstance(baseline, ClusterBaseline)
                  else pair_id(baseline.snapshot.pair))
    return write(baseline.name, folder, to_json(baseline), overwrite=overwrite)


def write(name: str, pair: str, document: dict[str, Any], *, overwrite: bool) -> Path:
    """Write a baseline file `document` as NAME.json in the folder `pair` (a pair's, or a cluster's), as `save`
    says."""
    name = check_name(name)
    target = baselines_dir() / pair / f"{name}.json"
    existing = find_path(name)
    if existing is not None and existing != target:
        raise UsageError(f"a baseline named {name!r} exists for another pair or cluster ({existing}); choose another "
                         f"name, or `linkcheck baseline delete {name}` first")
    if existing is not None and not overwrite:
        raise UsageError(f"a baseline named {name!r} exists ({existing}); choose another name or "
                         "pass --force to replace it")
    data = (strict_json.dumps(document, indent=1, sort_keys=True) + "\n").encode("utf-8")
    _refuse_odd_entry(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        if overwrite:
            replace_file(target, data, 0o644)
        else:
            _link_new(target, data)
    except FileExistsError:
        raise UsageError(f"a baseline named {name!r} was saved by another run meanwhile ({target}); choose "
                         "another name or pass --force to replace it") from None
    except OSError as exc:
        raise StoreWriteError(f"{target}: cannot write the baseline: {exc.strerror or exc}",
                              fix="point XDG_DATA_HOME at a writable folder, or free space") from None
    return target


def _refuse_odd_entry(target: Path) -> None:
    """A store entry that is not a plain file (a folder, a FIFO, a link) is never replaced or written through:
    one line saying what is there (exit 4)."""
    try:
        info = os.lstat(target)
    except OSError:
        return
    if stat.S_ISREG(info.st_mode):
        return
    kind = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "a folder" if stat.S_ISDIR(info.st_mode) else \
        "a FIFO" if stat.S_ISFIFO(info.st_mode) else "not a plain file"
    raise BaselineError(str(target), f"is {kind}, not a baseline file; left as it is",
                        fix="move it out of the baseline store, then save again")


def _link_new(target: Path, data: bytes) -> None:
    """`target` created whole, never replacing anything: a file under a fresh name, then link()ed to the name
    (of two saves of one new name at once exactly one wins; FileExistsError for the other)."""
    tmp = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
    try:
        create_file(tmp, data, 0o644, sync=True)
        os.link(tmp, target)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()


def delete(name: str) -> Path:
    path = find_path(check_name(name))
    if path is None:
        raise UsageError(f"no baseline named {name!r}; `linkcheck baseline list` shows the saved ones")
    if path.is_dir() and not path.is_symlink():  # a link or a FIFO is removed itself; a folder is not a baseline
        _refuse_odd_entry(path)
    try:
        path.unlink()
    except OSError as exc:
        raise StoreWriteError(f"{path}: cannot delete the baseline: {exc.strerror or exc}") from None
    return path


def now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def new_baseline(name: str, snapshot: Snapshot, bundle_path: Path | None, bundle_created: str,
                 forced: bool) -> Baseline:
    snapshot = msgspec.structs.replace(snapshot, performance=snapshot.performance.usable())  # so that it loads
    return Baseline(name=check_name(name), created=now_iso(), tool_version=__version__,
                    source_bundle=str(bundle_path.resolve()) if bundle_path else "", bundle_created=bundle_created,
                    forced=forced, snapshot=snapshot)


# -- a pair's or a cluster's, by name ------------------------------------------------------------------------------

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
    return from_json(read_text(path), str(path))


def resolve_any(name_or_file: str) -> Baseline | ClusterBaseline:
    """A stored baseline by name, or a baseline file by path (as `resolve`), a pair's or a cluster's."""
    if (name_or_file.endswith(".json") or os.sep in name_or_file) and os.path.lexists(name_or_file):
        return read_any(Path(name_or_file))
    path = find_path(check_name(name_or_file))
    if path is None:
        raise UsageError(f"no baseline named {name_or_file!r}; `linkcheck baseline list` shows the saved ones")
    return read_any(path)


def list_any() -> tuple[list[Baseline | ClusterBaseline], list[BaselineError]]:
    """Every stored baseline that reads, and one error per entry that does not (a folder, a FIFO, a corrupt or
    newer file): one bad entry never hides the others."""
    baselines: list[Baseline | ClusterBaseline] = []
    problems: list[BaselineError] = []
    for path in stored_paths():
        try:
            baselines.append(read_any(path))
        except BaselineError as exc:
            problems.append(exc)
    return baselines, problems


def describe_nodes(baseline: Baseline | ClusterBaseline) -> str:
    """Whose state it holds: a pair's two hostnames (`spark-a + spark-b`), a cluster's layout and its nodes by
    name (`ring3: a, b, c`)."""
    if isinstance(baseline, ClusterBaseline):
        return f"{baseline.snapshot.layout}: {', '.join(n.name for n in baseline.snapshot.nodes)}"
    pair = baseline.snapshot.pair
    return f"{pair.a_hostname or '?'} + {pair.b_hostname or '?'}"


def cluster_id(snapshot: ClusterSnapshot) -> str:
    """A file-system name for the cluster: `cluster-`, its first node's hostname, how many others, and a digest of
    every node's identity."""
    ids = [n.machine_id or n.hostname or n.name for n in snapshot.nodes]
    digest = hashlib.sha256("\n".join(ids).encode()).hexdigest()[:8]
    first = re.sub(r"[^A-Za-z0-9_.-]", "_", ids[0] if ids else "unknown")[:40]
    return f"cluster-{first}+{max(len(ids) - 1, 0)}-{digest}"


def new_cluster_baseline(name: str, snapshot: ClusterSnapshot, bundle_path: Path | None, bundle_created: str,
                         forced: bool) -> ClusterBaseline:
    """A baseline of `snapshot`, keeping only the rates a ratio can be taken against (so that it loads)."""
    cables = tuple(msgspec.structs.replace(c, snapshot=msgspec.structs.replace(
        c.snapshot, performance=c.snapshot.performance.usable())) for c in snapshot.cables)
    return ClusterBaseline(name=check_name(name), created=now_iso(), tool_version=__version__,
                           source_bundle=str(bundle_path.resolve()) if bundle_path else "",
                           bundle_created=bundle_created, forced=forced,
                           snapshot=msgspec.structs.replace(snapshot, cables=cables))

"""Baselines on disk: plain JSON with a schema version under $XDG_DATA_HOME/linkcheck/baselines/<pair>/<NAME>.json."""

from __future__ import annotations

import contextlib
import datetime as dt
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
from linkcheck.facts.snapshot_model import (
    MIN_RATE_GBPS,
    SCHEMA,
    SCHEMA_VERSION,
    Baseline,
    PairKey,
    Performance,
    Snapshot,
)
from linkcheck.safe_read import read_capped
from linkcheck.safe_write import create_file, replace_file

T = TypeVar("T")
NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$")
MAX_BYTES = 4 << 20


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


def to_json(baseline: Baseline) -> dict[str, Any]:
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
Fields = dict[str, "str | None"]
_NON_FINITE = re.compile(r"(?<![\w\"])(-?Infinity|NaN)(?![\w\"])")


class _Head(msgspec.Struct, frozen=True):
    """What is checked first: is it a baseline, of a version this linkcheck reads, with each section there."""

    schema: Any = None
    schema_version: Any = None
    source: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)
    pair: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)
    identity: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)
    configuration: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)
    recorded: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)
    performance: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)


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


_FIX = "save it again: linkcheck baseline save NAME BUNDLE --force"


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


def _check_head(path: str, head: _Head) -> None:
    version = head.schema_version
    if head.schema != SCHEMA:
        raise BaselineError(path, f"not a linkcheck baseline (no \"schema\": \"{SCHEMA}\")", fix=_FIX)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise BaselineError(path, "'schema_version' must be a positive integer", fix=_FIX)
    if version > SCHEMA_VERSION:
        raise BaselineError(path, f"baseline schema version {version} is newer than this linkcheck reads "
                            f"({SCHEMA_VERSION})", fix="upgrade linkcheck, or save the baseline again")
    for key in ("source", "pair", "identity", "configuration", "recorded", "performance"):
        if not getattr(head, key):
            raise BaselineError(path, f"'{key}' is missing ('{key}' must be an object)", fix=_FIX)


def from_json(text: str, path: str) -> Baseline:
    """The baseline in the JSON `text`, read into its model; any mistake is one BaselineError naming the file."""
    doc = decode(text, path, lambda: _check_head(path, msgspec.json.decode(text, type=_Head)), _File)
    snapshot = snapshot_from_entries(doc.pair, doc.identity, doc.configuration, doc.recorded, doc.performance,
                                     doc.unknown, doc.source.verdict)
    return Baseline(name=doc.name, created=doc.created, tool_version=doc.tool_version,
                    source_bundle=doc.source.bundle, bundle_created=doc.source.bundle_created,
                    forced=doc.source.forced, snapshot=snapshot, path=path)


def read_text(path: Path) -> str:
    """A baseline file's text: a regular file (a symbolic link followed to one) of at most MAX_BYTES, UTF-8; a
    FIFO, a folder, a device or a missing file is one BaselineError."""
    try:
        return read_capped(path, MAX_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(str(path), f"cannot read: {getattr(exc, 'strerror', None) or exc}") from None


def read_baseline(path: Path) -> Baseline:
    """Load and validate one baseline file; corrupt, truncated or future-schema files are one-line errors."""
    return from_json(read_text(path), str(path))


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


def save(baseline: Baseline, pair: str, *, overwrite: bool) -> Path:
    """Write the baseline atomically; an existing name is refused unless `overwrite`, and a name another pair
    holds always (--force replaces this pair's baseline, never another pair's).

    Created with link(): of two saves of one new name at once exactly one wins, the other is refused. The file
    appears whole or not at all; a failed write (a full disk, a data folder that is a file) leaves no temporary
    file and raises StoreWriteError."""
    return write(baseline.name, pair, to_json(baseline), overwrite=overwrite)


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

"""Baselines on disk: plain JSON with a schema version under $XDG_DATA_HOME/linkcheck/baselines/<pair>/<NAME>.json."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import math
import os
import re
import threading
from pathlib import Path
from typing import Any

import msgspec

from linkcheck import __version__, strict_json
from linkcheck.errors import BaselineError, ExitCode, LinkcheckError, UsageError
from linkcheck.facts.snapshot_model import (
    MIN_RATE_GBPS,
    SCHEMA,
    SCHEMA_VERSION,
    Baseline,
    PairKey,
    Performance,
    Snapshot,
    usable_rate,
)
from linkcheck.safe_read import read_capped

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
        "pair": {**msgspec.structs.asdict(snap.pair), "a_macs": list(snap.pair.a_macs),
                 "b_macs": list(snap.pair.b_macs)},
        "identity": snap.identity, "configuration": snap.configuration,
        "recorded": {"gid_index": snap.gid_index},
        "performance": msgspec.structs.asdict(snap.performance),
        "unknown": list(snap.unknown),
    }


class _Reader:
    """Typed access to a parsed baseline document; any mistake is one BaselineError naming the file."""

    def __init__(self, path: str) -> None:
        self.path = path

    def fail(self, reason: str) -> BaselineError:
        return BaselineError(self.path, reason, fix="save it again: linkcheck baseline save NAME BUNDLE --force")

    def obj(self, data: Any, key: str) -> dict[str, Any]:
        value = data.get(key) if isinstance(data, dict) else None
        if not isinstance(value, dict):
            raise self.fail(f"'{key}' must be an object")
        return value

    def text(self, data: dict[str, Any], key: str, *, optional: bool = False) -> str | None:
        value = data.get(key)
        if (value is None and optional) or isinstance(value, str):
            return value
        raise self.fail(f"'{key}' must be a string")

    def fields(self, data: Any, key: str) -> dict[str, str | None]:
        value = self.obj(data, key)
        if not all(isinstance(v, (str, type(None))) for v in value.values()):
            raise self.fail(f"'{key}' values must be strings or null")
        return dict(value)

    def numbers(self, data: Any, key: str, kind: type = float) -> dict[str, Any]:
        value = self.obj(data, key)

        def ok(v: object) -> bool:
            if kind is int:
                return v is None or (isinstance(v, int) and not isinstance(v, bool) and abs(v) < 1 << 31)
            return isinstance(v, (int, float)) and not isinstance(v, bool) and abs(v) < 1e15  # False for inf, nan

        if not all(ok(v) for v in value.values()):
            wanted = ("integers" if kind is int
                      else f"rates, and a rate must be a finite number of at least {MIN_RATE_GBPS:g}")
            raise self.fail(f"'{key}' values must be {wanted}")
        return {k: (v if kind is int else _float(v)) for k, v in value.items()}

    def strings(self, data: dict[str, Any], key: str) -> tuple[str, ...]:
        value = data.get(key)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(f"'{key}' must be a list of strings")
        return tuple(value)


def _pair(r: _Reader, data: dict[str, Any]) -> PairKey:
    pair = r.obj(data, "pair")
    return PairKey(a_hostname=r.text(pair, "a_hostname", optional=True), a_macs=r.strings(pair, "a_macs"),
                   b_hostname=r.text(pair, "b_hostname", optional=True), b_macs=r.strings(pair, "b_macs"),
                   cable_sn=r.text(pair, "cable_sn", optional=True),
                   a_machine_id=r.text(pair, "a_machine_id", optional=True),
                   b_machine_id=r.text(pair, "b_machine_id", optional=True))


def _float(value: float) -> float:
    """A JSON number as a float; an integer too large for one is infinite (and then refused as a rate)."""
    try:
        return float(value)
    except OverflowError:
        return math.inf


def _rates(r: _Reader, rates: dict[str, float], key: str) -> dict[str, float]:
    """A baseline's rates are divided into: each must be finite and positive, or the file is refused."""
    for name, value in rates.items():
        if not usable_rate(value):
            raise r.fail(f"'performance.{key}' {name!r} is {value!r}: a rate must be a finite number of at "
                         f"least {MIN_RATE_GBPS:g} Gb/s (a ratio against it would be infinite or NaN)")
    return rates


def _performance(r: _Reader, data: dict[str, Any]) -> Performance:
    perf = r.obj(data, "performance")
    busbw = perf.get("nccl_busbw_gbs")
    if busbw is not None and (isinstance(busbw, bool) or not isinstance(busbw, (int, float))
                              or not abs(busbw) < 1e15):  # inf, nan, a 400-digit integer
        raise r.fail("'nccl_busbw_gbs' must be null or a rate, and a rate must be a finite number")
    busbw = None if busbw is None else _float(busbw)
    if busbw is not None:
        _rates(r, {"nccl all_gather": busbw}, "nccl_busbw_gbs")
    params = {k: r.fields(perf, k) for k in ("rdma_parameters", "nccl_parameters")}
    if any(v is None for p in params.values() for v in p.values()):
        raise r.fail("test parameters must be strings")
    return Performance(rdma_gbps=_rates(r, r.numbers(perf, "rdma_gbps"), "rdma_gbps"),
                       concurrent_total_gbps=_rates(r, r.numbers(perf, "concurrent_total_gbps"),
                                                    "concurrent_total_gbps"), nccl_busbw_gbs=busbw,
                       rdma_parameters={k: str(v) for k, v in params["rdma_parameters"].items()},
                       nccl_parameters={k: str(v) for k, v in params["nccl_parameters"].items()})


def from_json(data: Any, path: str) -> Baseline:
    r = _Reader(path)
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise r.fail(f"not a linkcheck baseline (no \"schema\": \"{SCHEMA}\")")
    version = data.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise r.fail("'schema_version' must be a positive integer")
    if version > SCHEMA_VERSION:
        raise BaselineError(path, f"baseline schema version {version} is newer than this linkcheck reads "
                            f"({SCHEMA_VERSION})", fix="upgrade linkcheck, or save the baseline again")
    source = r.obj(data, "source")
    verdict, forced = source.get("verdict"), source.get("forced")
    if not isinstance(verdict, str) or not isinstance(forced, bool):
        raise r.fail("'source' needs a string 'verdict' and a boolean 'forced'")
    snapshot = Snapshot(pair=_pair(r, data), identity=r.fields(data, "identity"),
                        configuration=r.fields(data, "configuration"),
                        gid_index=r.numbers(r.obj(data, "recorded"), "gid_index", int),
                        performance=_performance(r, data), verdict=verdict, unknown=r.strings(data, "unknown"))
    return Baseline(name=str(r.text(data, "name")), created=str(r.text(data, "created")),
                    tool_version=str(r.text(data, "tool_version")), source_bundle=str(r.text(source, "bundle")),
                    bundle_created=str(r.text(source, "bundle_created")), forced=forced, snapshot=snapshot,
                    path=path)


def read_baseline(path: Path) -> Baseline:
    """Load and validate one baseline file; corrupt, truncated or future-schema files are one-line errors."""
    try:
        text = read_capped(path, MAX_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(str(path), f"cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:  # ValueError: also JSONDecodeError and a 4,300+ digit integer
        line = getattr(exc, "lineno", None)
        raise BaselineError(str(path), f"not valid JSON: {getattr(exc, 'msg', exc)}", line=line) from None
    return from_json(data, str(path))


def _paths() -> list[Path]:
    root = baselines_dir()
    return sorted(root.glob("*/*.json")) if root.is_dir() else []


def find_path(name: str) -> Path | None:
    return next((p for p in _paths() if p.stem == name), None)


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
    name = check_name(baseline.name)
    target = baselines_dir() / pair / f"{name}.json"
    existing = find_path(name)
    if existing is not None and existing != target:
        raise UsageError(f"a baseline named {name!r} exists for another pair ({existing}); choose another name, "
                         f"or `linkcheck baseline delete {name}` first")
    if existing is not None and not overwrite:
        raise UsageError(f"a baseline named {name!r} exists ({existing}); choose another name or "
                         "pass --force to replace it")
    data = (strict_json.dumps(to_json(baseline), indent=1, sort_keys=True) + "\n").encode("utf-8")
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            _write_new(tmp, data)
            if overwrite:
                os.replace(tmp, target)
            else:
                os.link(tmp, target)  # never replaces: FileExistsError when another save got there first
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink()
    except FileExistsError:
        raise UsageError(f"a baseline named {name!r} was saved by another run meanwhile ({target}); choose "
                         "another name or pass --force to replace it") from None
    except OSError as exc:
        raise StoreWriteError(f"{target}: cannot write the baseline: {exc.strerror or exc}",
                              fix="point XDG_DATA_HOME at a writable folder, or free space") from None
    return target


def _write_new(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    finally:
        os.close(fd)


def list_baselines() -> list[Baseline]:
    return [read_baseline(p) for p in _paths()]


def delete(name: str) -> Path:
    path = find_path(check_name(name))
    if path is None:
        raise UsageError(f"no baseline named {name!r}; `linkcheck baseline list` shows the saved ones")
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

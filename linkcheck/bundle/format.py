"""The evidence bundle: a versioned directory of raw captures with a hashed manifest.

Layout (format version 1):
    manifest.json                 format, versions, nodes, captures (identity + file names), sha256 of files
    <node>/<spec>[.<arg>].stdout   raw stdout of one command, untouched
    <node>/<spec>[.<arg>].stderr   raw stderr, only when non-empty
    <node>/bench/<spec>.<n>.stdout benchmark outputs (their identity lives in the capture's `meta`)
    SHA256SUMS                    every file above, manifest.json included, for `sha256sum -c` (see digests.py)
A capture's identity (node, spec, arg, meta) is read from the manifest, never from a file name.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import posixpath
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import msgspec

from linkcheck import __version__
from linkcheck.bundle.digests import DIGEST_KEY, SUMS, files_digest, sha256_hex, sums_text
from linkcheck.errors import BundleError
from linkcheck.model import Capture
from linkcheck.safe_read import RefusedFile, read_capped, walk_bounded

FORMAT = "linkcheck-bundle"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
MAX_MANIFEST_BYTES = 16 << 20
MAX_CAPTURE_BYTES = 16 << 20  # one capture file; a larger one is skipped with the reason, never read
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_SAFE = re.compile(r"[^A-Za-z0-9_.:-]")


class Bundle(msgspec.Struct, frozen=True):
    """A bundle in memory: what was collected, from which nodes, and what went wrong.

    Frozen: a run that adds traffic results or a save folder makes a new Bundle (msgspec.structs.replace),
    so what was diagnosed is what was written."""

    captures: list[Capture]
    nodes: dict[str, dict[str, Any]] = msgspec.field(default_factory=dict)
    created: str = ""
    tool_version: str = __version__
    collection_errors: dict[str, str] = msgspec.field(default_factory=dict)
    problems: list[str] = msgspec.field(default_factory=list)  # files missing or altered since collection
    path: Path | None = None
    unverified: frozenset[str] = frozenset()  # files `verify` doubts: never read (manifest.json among them: none)

    def capture(self, node: str, spec: str, arg: str | None = None) -> Capture | None:
        return next((c for c in self.captures if c.key == (node, spec, arg)), None)

    def node_captures(self, node: str) -> list[Capture]:
        return [c for c in self.captures if c.node == node]


def _file_stem(capture: Capture, index: int) -> str:
    if capture.meta:
        return f"{capture.node}/bench/{_SAFE.sub('_', capture.spec)}.{index}"
    arg = f".{_SAFE.sub('_', capture.arg)}" if capture.arg else ""
    return f"{capture.node}/{_SAFE.sub('_', capture.spec)}{arg}"


_sha256 = sha256_hex


def write_bundle(bundle: Bundle, directory: Path) -> Path:
    """Write `bundle` to `directory` (created; must be empty or absent) and return the manifest path."""
    directory.mkdir(parents=True, exist_ok=True)
    if any(directory.iterdir()):
        raise BundleError(str(directory), "directory is not empty", fix="choose a new --save directory")
    files: dict[str, str] = {}
    entries: list[dict[str, Any]] = []

    def put(rel: str, text: str) -> str:
        data = text.encode("utf-8", errors="surrogateescape")
        target = directory / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        files[rel] = _sha256(data)
        return rel

    for index, cap in enumerate(bundle.captures):
        stem = _file_stem(cap, index)
        entries.append(
            {
                "node": cap.node,
                "spec": cap.spec,
                "arg": cap.arg,
                "command": cap.command,
                "exit_status": cap.exit_status,
                "duration_s": round(cap.duration_s, 3),
                "skipped": cap.skipped,
                "meta": dict(cap.meta),
                "stdout": put(stem + ".stdout", cap.stdout),
                "stderr": put(stem + ".stderr", cap.stderr) if cap.stderr else None,
            }
        )
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "tool_version": bundle.tool_version,
        "created": bundle.created or dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "nodes": bundle.nodes,
        "collection_errors": bundle.collection_errors,
        "captures": entries,
        "files": files,
        DIGEST_KEY: files_digest(files),
    }
    path = directory / MANIFEST
    text = json.dumps(manifest, indent=1, sort_keys=False) + "\n"
    path.write_text(text, encoding="utf-8")
    sums = {**files, MANIFEST: _sha256(text.encode("utf-8"))}
    (directory / SUMS).write_text(sums_text(sums), encoding="utf-8", errors="surrogateescape")
    return path


def read_manifest(directory: Path, *, entries: bool = False) -> dict[str, Any]:
    """The manifest of the bundle at `directory` (or the manifest file itself), checked as `load_bundle` does
    (each captures[] entry too, with `entries`)."""
    data = _load_manifest(directory)
    if entries:
        manifest = (directory if directory.is_dir() else directory.parent) / MANIFEST
        for index, entry in enumerate(data["captures"]):
            _check_entry(manifest, index, entry)
    return data


def _load_manifest(directory: Path) -> dict[str, Any]:
    if not directory.exists():
        raise BundleError(str(directory), "no such bundle directory")
    path = directory / MANIFEST if directory.is_dir() else directory
    if path.is_symlink():
        raise BundleError(str(path), "is a symbolic link; a bundle's manifest is a plain file of its folder",
                          fix="copy the bundle with its files (cp -a), not links to them")
    if not os.path.lexists(path):
        raise BundleError(str(directory), f"no {MANIFEST}: not a linkcheck bundle",
                          fix="pass the folder written by `linkcheck collect --save` or a fixtures/ scenario")
    data = _parse_manifest(path)
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise BundleError(str(path), f"not a {FORMAT} manifest (missing or wrong 'format')")
    version = data.get("format_version")
    if isinstance(version, bool) or not isinstance(version, int) or not 1 <= version <= FORMAT_VERSION:
        raise BundleError(str(path), f"bundle format_version {version!r} is not supported (this linkcheck reads "
                          f"1 to {FORMAT_VERSION})", fix="upgrade linkcheck" if isinstance(version, int)
                          and not isinstance(version, bool) and version > FORMAT_VERSION else None)
    if not isinstance(data.get("captures"), list):
        raise BundleError(str(path), "manifest has no 'captures' list")
    _check_tables(path, data)
    return data


def _check_tables(path: Path, data: dict[str, Any]) -> None:
    """nodes, collection_errors and files are objects; each file has a sha256, each error is text."""
    for key in ("nodes", "collection_errors", "files"):
        if not isinstance(data.get(key, {}), dict):
            raise BundleError(str(path), f"'{key}' must be an object, got {type(data[key]).__name__}")
    for rel, digest in data.get("files", {}).items():
        if not isinstance(digest, str) or not _SHA256.match(digest):
            raise BundleError(str(path), f"files[{rel!r}] must be a sha256 in hex, got {str(digest)[:80]!r}")
    for node, error in data.get("collection_errors", {}).items():
        if not isinstance(error, str):
            raise BundleError(str(path), f"collection_errors[{node!r}] must be text, got {type(error).__name__}")


def _parse_manifest(path: Path) -> Any:
    """The manifest's JSON, read within MAX_MANIFEST_BYTES; a located BundleError otherwise."""
    try:
        raw = read_capped(path, MAX_MANIFEST_BYTES)
    except RefusedFile as exc:
        raise BundleError(str(path), f"manifest {exc.strerror}") from None
    except OSError as exc:
        raise BundleError(str(path), f"cannot read: {exc.strerror or exc}") from None
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise BundleError(str(path), "manifest is not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise BundleError(str(path), f"malformed JSON: {exc.msg}", line=exc.lineno) from None
    except RecursionError:
        raise BundleError(str(path), "malformed JSON: nested too deeply") from None


def regular_files(directory: Path) -> frozenset[str]:
    """The bundle's plain files, as relative POSIX paths, found without following a symbolic link.

    One walk of the folder vouches for every path the manifest names: a name outside this set is missing,
    a link or outside the bundle, and is never opened (resolving each path instead cost an lstat per
    component of its absolute path, several thousand for one bundle)."""
    try:
        files, _, _ = walk_bounded(directory)
    except OSError as exc:  # deeper or larger than a bundle can be, or unreadable
        raise BundleError(str(directory), f"cannot list the bundle folder: {exc.strerror or exc}") from None
    return frozenset(files)


def _read_file(directory: Path, rel: str | None, files: Mapping[str, str],
               present: frozenset[str], unverified: Mapping[str, str] | None = None) -> tuple[str, str | None]:
    """Return (text, problem); a missing or altered file yields a problem instead of an exception."""
    if rel is None:
        return "", None
    name = posixpath.normpath(rel)
    if name == ".." or name.startswith(("../", "/")):
        return "", f"{rel}: path leaves the bundle directory"
    if name not in present:
        return "", f"{rel}: missing from bundle" if not os.path.lexists(directory / name) else \
            f"{rel}: not a plain file of the bundle (a link or a folder; not read)"
    expected = files.get(rel)
    if expected is None:  # nothing vouches for this file: it is not read, so it cannot pass a rule
        return "", f"{rel}: not hashed in the manifest's 'files' (unverified, not read)"
    doubt = (unverified or {}).get(rel) or (unverified or {}).get(MANIFEST)
    if doubt:
        return "", f"{rel}: unverified, not read: {doubt}"
    try:
        data = read_capped(directory / name, MAX_CAPTURE_BYTES)
    except OSError as exc:  # swapped for a FIFO or a device since the listing, over the cap, unreadable
        return "", f"{rel}: {exc.strerror or exc} (a capture may hold {MAX_CAPTURE_BYTES >> 20} MiB)"
    if expected != _sha256(data):
        return "", f"{rel}: sha256 mismatch (changed after collection)"
    return data.decode("utf-8", errors="replace"), None


_ENTRY_TYPES: dict[str, tuple[type, ...]] = {
    "arg": (str, type(None)), "command": (str, type(None)), "exit_status": (int, type(None)),
    "duration_s": (int, float, type(None)), "skipped": (str, type(None)), "meta": (dict, type(None)),
    "stdout": (str, type(None)), "stderr": (str, type(None)),
}


def _check_entry(manifest: Path, index: int, entry: Any) -> dict[str, Any]:
    """A captures[] entry with every field of the documented type; BundleError naming the field otherwise."""
    where = f"captures[{index}]"
    if not isinstance(entry, dict):
        raise BundleError(str(manifest), f"{where} must be an object, got {type(entry).__name__}")
    for key in ("node", "spec"):
        if not isinstance(entry.get(key), str) or not entry[key]:
            raise BundleError(str(manifest), f"{where} has no '{key}' text: {str(entry)[:80]}")
    for key, types in _ENTRY_TYPES.items():
        value = entry.get(key)
        if not isinstance(value, types) or (isinstance(value, bool) and key in ("exit_status", "duration_s")):
            expected = " or ".join("null" if t is type(None) else {"str": "text", "int": "integer",
                                   "float": "number", "dict": "object"}[t.__name__] for t in types)
            raise BundleError(str(manifest), f"{where}.{key} must be {expected}, got {str(value)[:40]!r}")
    duration = entry.get("duration_s") or 0
    if not 0 <= duration < 1e9:
        raise BundleError(str(manifest), f"{where}.duration_s must be a number of seconds >= 0, got {duration!r}")
    for key in ("stdout", "stderr"):
        rel = entry.get(key)
        if rel is not None and ("\x00" in rel or not rel or rel.startswith("/")):
            raise BundleError(str(manifest), f"{where}.{key} must be a relative file name, got {rel[:80]!r}")
    return entry


def _capture_from_entry(directory: Path, entry: dict[str, Any], files: Mapping[str, str],
                        present: frozenset[str], problems: list[str],
                        unverified: Mapping[str, str] | None = None) -> Capture:
    stdout, out_problem = _read_file(directory, entry.get("stdout"), files, present, unverified)
    stderr, err_problem = _read_file(directory, entry.get("stderr"), files, present, unverified)
    problem = out_problem or err_problem
    skipped = entry.get("skipped")
    if problem:
        problems.append(problem)
        skipped = problem
    exit_status = entry.get("exit_status")
    meta = entry.get("meta") or {}
    return Capture(
        node=entry["node"],
        spec=entry["spec"],
        arg=entry.get("arg"),
        command=entry.get("command") or "",
        stdout=stdout,
        stderr=stderr,
        exit_status=exit_status if isinstance(exit_status, int) else None,
        duration_s=float(entry.get("duration_s") or 0.0),
        skipped=skipped if isinstance(skipped, str) else None,
        meta={str(k): str(v) for k, v in meta.items()} if isinstance(meta, dict) else {},
    )


def _mapping(value: Any) -> dict[str, Any]:
    return {str(k): v for k, v in value.items()} if isinstance(value, dict) else {}


def load_bundle(directory: Path, *, unverified: Mapping[str, str] | None = None) -> Bundle:
    """Read a bundle; malformed manifests raise BundleError, missing/altered files become skipped captures, and so
    do the `unverified` ones (all of them when it holds manifest.json), which are never opened."""
    data = _load_manifest(directory)
    base = directory if directory.is_dir() else directory.parent
    files = _mapping(data.get("files"))
    problems: list[str] = []
    manifest = base / MANIFEST
    entries = [_check_entry(manifest, i, e) for i, e in enumerate(data["captures"])]
    present = regular_files(base)
    captures = [_capture_from_entry(base, e, files, present, problems, unverified) for e in entries]
    nodes = _mapping(data.get("nodes"))
    errors = _mapping(data.get("collection_errors"))
    return Bundle(
        captures=captures,
        nodes=nodes,
        created=str(data.get("created", "")),
        tool_version=str(data.get("tool_version", "")),
        collection_errors={str(k): str(v) for k, v in errors.items()},
        problems=problems,
        path=base,
        unverified=frozenset(unverified or ()),
    )


def merge_captures(*groups: Iterable[Capture]) -> list[Capture]:
    """Concatenate capture lists, later groups replacing earlier captures with the same identity."""
    merged: dict[tuple[str, str, str | None, str], Capture] = {}
    for group in groups:
        for cap in group:
            merged[(cap.node, cap.spec, cap.arg, json.dumps(cap.meta, sort_keys=True))] = cap
    return list(merged.values())

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
from typing import Annotated, Any

import msgspec

from linkcheck import __version__, schema
from linkcheck.bundle.digests import DIGEST_KEY, SUMS, files_digest, sha256_hex, sums_text
from linkcheck.errors import BundleError
from linkcheck.model import Capture
from linkcheck.safe_read import RefusedFile, read_capped, walk_bounded
from linkcheck.safe_write import create_file, make_folders

FORMAT = "linkcheck-bundle"
# 2: the NCCL job's capture is kind `cluster_nccl` for a pair too, and round ids name the schedule round
# (`concurrent-a2b-c1-0`). A reader of 1 alone would take a pair's NCCL run for missing: it is told to upgrade.
FORMAT_VERSION = 2
MANIFEST = "manifest.json"
MAX_MANIFEST_BYTES = 16 << 20
MAX_CAPTURE_BYTES = 16 << 20  # one capture file; a larger one is skipped with the reason, never read
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
        folder, _, name = rel.rpartition("/")
        # Exclusively: the folder was empty, so anything at a name (a link, a FIFO) was planted meanwhile.
        create_file(make_folders(directory, folder) / name, data)
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
    create_file(path, text.encode("utf-8"))
    sums = {**files, MANIFEST: _sha256(text.encode("utf-8"))}
    create_file(directory / SUMS, sums_text(sums).encode("utf-8", errors="surrogateescape"))
    return path


def read_manifest(directory: Path) -> dict[str, Any]:
    """The manifest of the bundle at `directory` (or the manifest file itself), checked as `load_bundle` does,
    as plain JSON values (`files_sha256` only when the manifest records it)."""
    return msgspec.to_builtins(_load_manifest(directory))  # type: ignore[no-any-return]


class _Head(msgspec.Struct, frozen=True):
    """What is checked first: is it a bundle manifest, of a format version this linkcheck reads."""

    format: Any = None
    format_version: Any = None
    captures: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)


Text = Annotated[str, msgspec.Meta(min_length=1)]


class Entry(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One captures[] entry: a capture's identity, how it ran, and the files of its output."""

    node: Text
    spec: Text
    arg: str | None = None
    command: str | None = None
    exit_status: int | None = None
    duration_s: Annotated[float, msgspec.Meta(ge=0, lt=1e9)] | None = None
    skipped: str | None = None
    meta: dict[str, Any] | None = None
    stdout: str | None = None
    stderr: str | None = None


class Manifest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """manifest.json as `write_bundle` writes it (format version 1)."""

    format: str
    format_version: int
    captures: tuple[Entry, ...]
    tool_version: str = ""
    created: str = ""
    nodes: dict[str, Any] = msgspec.field(default_factory=dict)
    collection_errors: dict[str, str] = msgspec.field(default_factory=dict)
    files: dict[str, Annotated[str, msgspec.Meta(pattern="^[0-9a-f]{64}$")]] = msgspec.field(default_factory=dict)
    files_sha256: Any = msgspec.UNSET  # DIGEST_KEY: compared with the table by `verify`, whatever it holds


_ALLOWED = {"files": "an object of sha256 digests in hex", "collection_errors": "an object of text",
            "nodes": "an object", "captures": "a list of capture objects", "captures[].duration_s":
            "a number of seconds >= 0, or null", "captures[].exit_status": "an integer or null",
            "captures[].meta": "an object or null"}


def _load_manifest(directory: Path) -> Manifest:
    if not directory.exists():
        raise BundleError(str(directory), "no such bundle directory")
    path = directory / MANIFEST if directory.is_dir() else directory
    if path.is_symlink():
        raise BundleError(str(path), "is a symbolic link; a bundle's manifest is a plain file of its folder",
                          fix="copy the bundle with its files (cp -a), not links to them")
    if not os.path.lexists(path):
        raise BundleError(str(directory), f"no {MANIFEST}: not a linkcheck bundle",
                          fix="pass the folder written by `linkcheck collect --save` or a fixtures/ scenario")
    raw = _read_manifest_bytes(path)
    try:
        head = msgspec.json.decode(raw, type=_Head)
        _check_head(path, head)
        manifest = msgspec.json.decode(raw, type=Manifest)
    except msgspec.ValidationError as exc:
        raise _refusal(path, raw, exc) from None
    except RecursionError:
        raise BundleError(str(path), "malformed JSON: nested too deeply") from None
    except msgspec.DecodeError as exc:
        text = raw.decode("utf-8", errors="replace")
        raise BundleError(str(path), f"malformed JSON: {str(exc).removeprefix('JSON is malformed: ')}",
                          line=schema.decode_line(text, exc)) from None
    for index, entry in enumerate(manifest.captures):
        _check_entry(path, index, entry)
    return manifest


def _check_head(path: Path, head: _Head) -> None:
    if head.format != FORMAT:
        raise BundleError(str(path), f"not a {FORMAT} manifest (missing or wrong 'format')")
    version = head.format_version
    if isinstance(version, bool) or not isinstance(version, int) or not 1 <= version <= FORMAT_VERSION:
        raise BundleError(str(path), f"bundle format_version {version!r} is not supported (this linkcheck reads "
                          f"1 to {FORMAT_VERSION})", fix="upgrade linkcheck" if isinstance(version, int)
                          and not isinstance(version, bool) and version > FORMAT_VERSION else None)
    if not head.captures or not bytes(head.captures).startswith(b"["):
        raise BundleError(str(path), "manifest has no 'captures' list")


def _refusal(path: Path, raw: bytes, exc: msgspec.ValidationError) -> BundleError:
    problem = schema.locate(exc)
    steps = problem.steps
    if len(steps) == 2 and steps[0] == "captures" and isinstance(steps[1], int):
        entry = msgspec.json.decode(raw)["captures"][steps[1]]
        if not isinstance(entry, dict):
            return BundleError(str(path), f"captures[{steps[1]}] must be an object, got {type(entry).__name__}",
                               line=schema.json_line(raw.decode("utf-8"), steps))
        for key in ("node", "spec"):  # the identity first: an entry without it names no capture
            if not isinstance(entry.get(key), str) or not entry[key]:
                return BundleError(str(path), f"captures[{steps[1]}] has no '{key}' text: {str(entry)[:80]}")
    if len(steps) == 3 and steps[0] == "captures" and steps[2] in ("node", "spec"):
        return BundleError(str(path), f"captures[{steps[1]}] has no '{steps[2]}' text (got {problem.what})",
                           line=schema.json_line(raw.decode("utf-8"), steps))
    where = re.sub(r"\[\d+\]", "[]", schema.dotted(steps))
    reason = schema.describe(problem, allowed=lambda field: ", ".join(schema.field_names(Manifest, steps) or [])
                             if field.endswith("*") else _ALLOWED.get(where))
    extra = (problem.unknown,) if problem.unknown is not None else ()
    return BundleError(str(path), reason, line=schema.json_line(raw.decode("utf-8"), steps + extra))


def _read_manifest_bytes(path: Path) -> bytes:
    """The manifest's bytes, read within MAX_MANIFEST_BYTES, UTF-8; a located BundleError otherwise."""
    try:
        raw = read_capped(path, MAX_MANIFEST_BYTES)
    except RefusedFile as exc:
        raise BundleError(str(path), f"manifest {exc.strerror}") from None
    except OSError as exc:
        raise BundleError(str(path), f"cannot read: {exc.strerror or exc}") from None
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BundleError(str(path), "manifest is not UTF-8 text") from None
    return raw


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


def _check_entry(manifest: Path, index: int, entry: Entry) -> None:
    """What the model's types cannot say: each output file is a relative name inside the bundle."""
    for key, rel in (("stdout", entry.stdout), ("stderr", entry.stderr)):
        if rel is not None and ("\x00" in rel or not rel or rel.startswith("/")):
            raise BundleError(str(manifest), f"captures[{index}].{key} must be a relative file name, got {rel[:80]!r}")


def _capture_from_entry(directory: Path, entry: Entry, files: Mapping[str, str],
                        present: frozenset[str], problems: list[str],
                        unverified: Mapping[str, str] | None = None) -> Capture:
    stdout, out_problem = _read_file(directory, entry.stdout, files, present, unverified)
    stderr, err_problem = _read_file(directory, entry.stderr, files, present, unverified)
    problem = out_problem or err_problem
    if problem:
        problems.append(problem)
    return Capture(node=entry.node, spec=entry.spec, arg=entry.arg, command=entry.command or "", stdout=stdout,
                   stderr=stderr, exit_status=entry.exit_status, duration_s=float(entry.duration_s or 0.0),
                   skipped=problem or entry.skipped, meta={str(k): str(v) for k, v in (entry.meta or {}).items()})


def load_bundle(directory: Path, *, unverified: Mapping[str, str] | None = None) -> Bundle:
    """Read a bundle; malformed manifests raise BundleError, missing/altered files become skipped captures, and so
    do the `unverified` ones (all of them when it holds manifest.json), which are never opened."""
    manifest = _load_manifest(directory)
    base = directory if directory.is_dir() else directory.parent
    problems: list[str] = []
    present = regular_files(base)
    captures = [_capture_from_entry(base, e, manifest.files, present, problems, unverified)
                for e in manifest.captures]
    return Bundle(captures=captures, nodes=dict(manifest.nodes), created=manifest.created,
                  tool_version=manifest.tool_version, collection_errors=dict(manifest.collection_errors),
                  problems=problems, path=base, unverified=frozenset(unverified or ()))


def merge_captures(*groups: Iterable[Capture]) -> list[Capture]:
    """Concatenate capture lists, later groups replacing earlier captures with the same identity."""
    merged: dict[tuple[str, str, str | None, str], Capture] = {}
    for group in groups:
        for cap in group:
            merged[(cap.node, cap.spec, cap.arg, json.dumps(cap.meta, sort_keys=True))] = cap
    return list(merged.values())

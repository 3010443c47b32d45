"""The acceptance in the bundle: `acceptance.json` and a copy of the profile, added to the manifest's file table
(with its digest) and to SHA256SUMS, so `linkcheck verify` covers them like every capture. The record is read back
through its model in accept/record.py."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from linkcheck import strict_json
from linkcheck.bundle.digests import DIGEST_KEY, SUMS, files_digest, sha256_hex, sums_text
from linkcheck.bundle.format import MANIFEST, read_manifest
from linkcheck.safe_read import read_capped
from linkcheck.safe_write import replace_file

ACCEPTANCE = "acceptance.json"
PROFILE_COPY = "acceptance-profile.yaml"
MAX_ACCEPTANCE_BYTES = 4 << 20


def add_files(directory: Path, texts: dict[str, str]) -> None:
    """Add top-level files to a written bundle: the files, then the manifest's table and digest, then SHA256SUMS,
    each through `replace_file` (a fresh temporary name, renamed: a link or FIFO planted in the bundle is replaced,
    never followed or opened)."""
    data = read_manifest(directory)
    table: dict[str, str] = dict(data.get("files", {}))
    for rel, text in texts.items():
        raw = text.encode("utf-8")
        replace_file(directory / rel, raw)
        table[rel] = sha256_hex(raw)
    data["files"], data[DIGEST_KEY] = table, files_digest(table)
    manifest = json.dumps(data, indent=1, sort_keys=False) + "\n"
    replace_file(directory / MANIFEST, manifest.encode("utf-8"))
    sums = {**table, MANIFEST: sha256_hex(manifest.encode("utf-8"))}
    replace_file(directory / SUMS, sums_text(sums).encode("utf-8", errors="surrogateescape"))


def write_acceptance(directory: Path, document: dict[str, Any], profile_text: str) -> None:
    add_files(directory, {ACCEPTANCE: strict_json.dumps(document, indent=2) + "\n", PROFILE_COPY: profile_text})


def read_added_file(directory: Path, name: str, max_bytes: int, since: str) -> tuple[bytes | None, str | None]:
    """The bytes of a file `add_files` put in the bundle, or (None, why they are not shown); (None, None) when the
    bundle has none. Read only when the manifest lists it with the same SHA-256: an edited file is never shown as
    the run's (`since` says what it would have changed since: "the run", "the plan")."""
    path = directory / name
    if not os.path.lexists(path):
        return None, None
    if path.is_symlink():
        return None, f"{path}: a symbolic link, not a plain file of the bundle (not shown)"
    files = read_manifest(directory).get("files", {})
    try:
        raw = read_capped(path, max_bytes)
    except OSError as exc:  # a FIFO, a device or a folder in its place, or over the cap
        return None, f"{path}: cannot read: {exc.strerror or exc} (not shown)"
    if name not in files:
        return None, f"{path}: not in {MANIFEST} (unverified, not shown)"
    if sha256_hex(raw) != files[name]:
        return None, f"{path}: does not match its SHA-256 in {MANIFEST} (changed since {since}; not shown)"
    return raw, None

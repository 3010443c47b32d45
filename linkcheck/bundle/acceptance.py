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

ACCEPTANCE = "acceptance.json"
PROFILE_COPY = "acceptance-profile.yaml"
MAX_ACCEPTANCE_BYTES = 4 << 20


def _replace(path: Path, data: bytes) -> None:
    """`path` holds either its old bytes or all of `data`: written beside it, then renamed over it."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def add_files(directory: Path, texts: dict[str, str]) -> None:
    """Add top-level files to a written bundle: the files, then the manifest's table and digest, then SHA256SUMS."""
    data = read_manifest(directory)
    table: dict[str, str] = dict(data.get("files", {}))
    for rel, text in texts.items():
        raw = text.encode("utf-8")
        _replace(directory / rel, raw)
        table[rel] = sha256_hex(raw)
    data["files"], data[DIGEST_KEY] = table, files_digest(table)
    manifest = json.dumps(data, indent=1, sort_keys=False) + "\n"
    _replace(directory / MANIFEST, manifest.encode("utf-8"))
    sums = {**table, MANIFEST: sha256_hex(manifest.encode("utf-8"))}
    _replace(directory / SUMS, sums_text(sums).encode("utf-8", errors="surrogateescape"))


def write_acceptance(directory: Path, document: dict[str, Any], profile_text: str) -> None:
    add_files(directory, {ACCEPTANCE: strict_json.dumps(document, indent=2) + "\n", PROFILE_COPY: profile_text})

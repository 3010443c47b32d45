"""`linkcheck verify`: is a saved bundle exactly what was collected? Every changed, added or removed file named.

What is checked, each mismatch one line:
- every file of the manifest's `files` table is present and has its SHA-256 (else `changed:` / `removed:`);
- every file in the folder is in that table (else `added:`), except manifest.json, SHA256SUMS and the
  fixture-only files at the top of the folder (FIXTURE_ONLY: a fixture's expected findings, the sources of
  its real outputs, the config and the baseline it is diagnosed with, none of which a bundle writer produces);
- every capture's stdout/stderr is hashed in `files` (an unhashed capture is never read by the diagnosis);
- `files_sha256`, when the manifest records it, matches the table (digests.py says which bytes it covers);
- SHA256SUMS, when present (or when `files_sha256` says one was written), lists exactly the table plus
  manifest.json, with the same digests, and manifest.json has the digest it lists.
Bundles written before SHA256SUMS existed (the shipped fixtures) are checked against their table alone.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgspec

from linkcheck.bundle.digests import DIGEST_KEY, SUMS, files_digest, parse_sums, sha256_hex
from linkcheck.bundle.format import MANIFEST, read_manifest

FIXTURE_ONLY = frozenset({"expected.yaml", "PROVENANCE.md", "linkcheck.yaml", "baseline.json"})


class Verification(msgspec.Struct, frozen=True):
    """The result of `verify_bundle`: how many files the manifest vouches for, and every mismatch."""

    path: Path
    files: int
    problems: tuple[str, ...]
    sums_checked: bool
    digest_checked: bool

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        extras = ", ".join(name for name, done in ((SUMS, self.sums_checked), (DIGEST_KEY, self.digest_checked))
                           if done) or f"no {SUMS} or {DIGEST_KEY}: only the manifest's table"
        if self.ok:
            return f"verify: {self.path}: intact, {self.files} files match {MANIFEST} (checked: {extras})"
        return f"verify: {self.path}: NOT intact, {len(self.problems)} problem(s) (checked: {extras})"


def _digest_of(base: Path, rel: str) -> tuple[str | None, str | None]:
    """(sha256, problem) of the file `rel` inside `base`, never following a path out of the folder."""
    target = base / rel
    if Path(os.path.normpath(rel)).is_absolute() or ".." in Path(rel).parts:
        return None, f"changed: {rel} (path leaves the bundle folder)"
    if target.is_symlink() or (target.exists() and not target.is_file()):
        return None, f"changed: {rel} (not a plain file)"
    if not target.exists():
        return None, f"removed: {rel} (listed in {MANIFEST}, missing from the folder)"
    try:
        return sha256_hex(target.read_bytes()), None
    except OSError as exc:
        return None, f"changed: {rel} (cannot read: {exc.strerror or exc})"


def _table(base: Path, files: dict[str, str]) -> list[str]:
    problems = []
    for rel in sorted(files):
        actual, problem = _digest_of(base, rel)
        if problem is None and actual != files[rel]:
            problem = f"changed: {rel} (sha256 {actual}, {MANIFEST} says {files[rel]})"
        if problem:
            problems.append(problem)
    return problems


def _on_disk(base: Path) -> list[str]:
    """Every plain file and symlink under `base`, as `/`-separated paths relative to it."""
    found = []
    for root, dirs, names in os.walk(base):
        here = Path(root)
        links = [d for d in dirs if (here / d).is_symlink()]  # reported, never followed
        for name in [*names, *links]:
            found.append((here / name).relative_to(base).as_posix())
    return sorted(found)


def _added(base: Path, files: dict[str, str]) -> list[str]:
    ignored = {MANIFEST, SUMS, *FIXTURE_ONLY}
    return [f"added: {rel} (not in {MANIFEST})" for rel in _on_disk(base) if rel not in files and rel not in ignored]


def _unhashed(data: dict[str, Any], files: dict[str, str]) -> list[str]:
    problems = []
    for index, entry in enumerate(data["captures"]):
        for key in ("stdout", "stderr"):
            rel = entry.get(key) if isinstance(entry, dict) else None
            if isinstance(rel, str) and rel not in files:
                problems.append(f"unhashed: {rel} (captures[{index}].{key} names it, {MANIFEST} 'files' does not)")
    return problems


def _digest(data: dict[str, Any], files: dict[str, str]) -> list[str]:
    recorded = data.get(DIGEST_KEY)
    if recorded == files_digest(files):
        return []
    return [f"changed: {MANIFEST} ({DIGEST_KEY} {str(recorded)[:64]} does not match its 'files' table, "
            f"whose digest is {files_digest(files)})"]


def _sums(base: Path, files: dict[str, str]) -> list[str]:
    try:
        text = (base / SUMS).read_bytes().decode("utf-8", errors="surrogateescape")
    except OSError as exc:
        return [f"changed: {SUMS} (cannot read: {exc.strerror or exc})"]
    listed, problems = parse_sums(text)
    manifest_digest, _ = _digest_of(base, MANIFEST)
    expected = {**files, MANIFEST: manifest_digest or ""}
    for rel in sorted(listed):
        if rel not in expected:
            problems.append(f"changed: {SUMS} (lists {rel}, which {MANIFEST} does not)")
        elif listed[rel] != expected[rel]:
            source = "the file" if rel == MANIFEST else MANIFEST
            problems.append(f"changed: {rel if rel == MANIFEST else SUMS} ({SUMS} says {listed[rel]} for {rel}, "
                            f"{source} has {expected[rel]})")
    problems += [f"changed: {SUMS} (does not list {rel})" for rel in sorted(set(expected) - set(listed))]
    return problems


def verify_bundle(directory: Path) -> Verification:
    """Compare the bundle folder with its manifest (and SHA256SUMS); BundleError when it is not a bundle."""
    data = read_manifest(directory)
    base = directory if directory.is_dir() else directory.parent
    files = {str(k): str(v) for k, v in data.get("files", {}).items()}
    problems = _table(base, files) + _added(base, files) + _unhashed(data, files)
    digest_checked = DIGEST_KEY in data
    if digest_checked:
        problems += _digest(data, files)
    sums_present = (base / SUMS).exists() or (base / SUMS).is_symlink()
    if sums_present:
        problems += _sums(base, files)
    elif digest_checked:
        problems.append(f"removed: {SUMS} ({MANIFEST} records {DIGEST_KEY}, so {SUMS} was written beside it)")
    unique = tuple(dict.fromkeys(problems))
    return Verification(base, len(files), unique, sums_present, digest_checked)

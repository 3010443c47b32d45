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
import shlex
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import msgspec

from linkcheck.bundle.digests import DIGEST_KEY, SUMS, files_digest, parse_sums, sha256_hex
from linkcheck.bundle.format import MANIFEST, MAX_CAPTURE_BYTES, MAX_MANIFEST_BYTES, Bundle, load_bundle, read_manifest
from linkcheck.errors import BundleError
from linkcheck.safe_read import read_capped, walk_bounded

FIXTURE_ONLY = frozenset({"expected.yaml", "PROVENANCE.md", "linkcheck.yaml", "baseline.json"})


class Verification(msgspec.Struct, frozen=True):
    """The result of `verify_bundle`: how many files the manifest vouches for, and every mismatch."""

    path: Path
    files: int
    problems: tuple[str, ...]
    sums_checked: bool
    digest_checked: bool
    # The files a diagnosis must not read: every one named by a problem, and every file of the bundle (MANIFEST
    # among them) when the manifest itself is in doubt (its digest, SHA256SUMS unreadable or disagreeing with it).
    unverified: Mapping[str, str] = msgspec.field(default_factory=dict)  # file -> the problem that puts it in doubt

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
    if any(p.is_symlink() for p in (target, *target.parents[:len(Path(rel).parts) - 1])):
        return None, f"changed: {rel} (a symbolic link or a path through one; not read)"
    if target.exists() and not target.is_file():
        return None, f"changed: {rel} (not a plain file)"
    if not target.exists():
        return None, f"removed: {rel} (listed in {MANIFEST}, missing from the folder)"
    try:
        return sha256_hex(read_capped(target, max(MAX_CAPTURE_BYTES, MAX_MANIFEST_BYTES))), None
    except OSError as exc:
        return None, f"changed: {rel} (cannot read: {exc.strerror or exc})"


def _table(base: Path, files: dict[str, str]) -> dict[str, str]:
    """rel -> problem, for each file of the table that is not there with its digest."""
    problems = {}
    for rel in sorted(files):
        actual, problem = _digest_of(base, rel)
        if problem is None and actual != files[rel]:
            problem = f"changed: {rel} (sha256 {actual}, {MANIFEST} says {files[rel]})"
        if problem:
            problems[rel] = problem
    return problems


def _on_disk(base: Path) -> list[str]:
    """Every file, symlink (reported, never followed) and other entry (a FIFO, a device) under `base`, as
    `/`-separated paths relative to it."""
    try:
        files, links, other = walk_bounded(base)
    except OSError as exc:  # deeper or larger than a bundle can be, or unreadable
        raise BundleError(str(base), f"cannot list the bundle folder: {exc.strerror or exc}") from None
    return sorted([*files, *links, *other])


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


def _sums(base: Path, files: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """The problems, and the files they put in doubt (MANIFEST: all of them), each with its problem."""
    if (base / SUMS).is_symlink():
        problem = f"changed: {SUMS} (a symbolic link, not a plain file of the bundle; not read)"
        return [problem], {MANIFEST: problem}
    try:
        text = read_capped(base / SUMS, MAX_MANIFEST_BYTES).decode("utf-8", errors="surrogateescape")
    except OSError as exc:
        problem = f"changed: {SUMS} (cannot read: {exc.strerror or exc})"
        return [problem], {MANIFEST: problem}
    listed, problems = parse_sums(text)
    doubted = {MANIFEST: problems[0]} if problems else {}
    manifest_digest, _ = _digest_of(base, MANIFEST)
    expected = {**files, MANIFEST: manifest_digest or ""}
    for rel in sorted(listed):
        if rel not in expected:
            problems.append(f"changed: {SUMS} (lists {rel}, which {MANIFEST} does not)")
        elif listed[rel] != expected[rel]:
            source = "the file" if rel == MANIFEST else MANIFEST
            problems.append(f"changed: {rel if rel == MANIFEST else SUMS} ({SUMS} says {listed[rel]} for {rel}, "
                            f"{source} has {expected[rel]})")
            doubted[rel] = problems[-1]
    for rel in sorted(set(expected) - set(listed)):
        problems.append(f"changed: {SUMS} (does not list {rel})")
        doubted[rel] = problems[-1]
    return problems, doubted


def verify_bundle(directory: Path) -> Verification:
    """Compare the bundle folder with its manifest (and SHA256SUMS); BundleError when it is not a bundle."""
    data = read_manifest(directory)
    base = directory if directory.is_dir() else directory.parent
    files = {str(k): str(v) for k, v in data.get("files", {}).items()}
    table = _table(base, files)
    problems = [*table.values(), *_added(base, files), *_unhashed(data, files)]
    doubted = dict(table)
    digest_checked = DIGEST_KEY in data
    if digest_checked and _digest(data, files):
        problems += _digest(data, files)
        doubted[MANIFEST] = problems[-1]
    sums_present = os.path.lexists(base / SUMS)
    if sums_present:
        sums_problems, sums_doubted = _sums(base, files)
        problems += sums_problems
        doubted = {**sums_doubted, **doubted}
    elif digest_checked:
        problems.append(f"removed: {SUMS} ({MANIFEST} records {DIGEST_KEY}, so {SUMS} was written beside it)")
        doubted[MANIFEST] = problems[-1]
    unique = tuple(dict.fromkeys(problems))
    if MANIFEST in doubted:  # the table itself is in doubt: so is every file it vouches for
        doubted = {**dict.fromkeys(files, doubted[MANIFEST]), **doubted}
    unverified = doubted
    return Verification(base, len(files), unique, sums_present, digest_checked, unverified)


def load_trusted(directory: Path, *, allow_unverified: bool = False,
                 warn: Callable[[str], None] | None = None, overridable: bool = True) -> Bundle:
    """The bundle at `directory`, if `verify` finds it intact; else BundleError (exit 4), or with
    `allow_unverified` the bundle with every unverified file left unread (its captures skipped, so it can make
    a rule inconclusive but never pass or fail one), each problem passed to `warn`. `overridable`: the caller's
    command has --allow-unverified, so the refusal's fix may offer it (anonymize and baseline save do not)."""
    read_manifest(directory)  # a malformed manifest is named as such, before its digests
    result = verify_bundle(directory)
    if not result.ok and not allow_unverified:
        more = f" and {len(result.problems) - 1} more" if len(result.problems) > 1 else ""
        override = ("; --allow-unverified reads the bundle anyway, without its unverified files" if overridable
                    else "")
        raise BundleError(str(result.path), f"does not verify: {result.problems[0]}{more}",
                          fix=f"`linkcheck verify {shlex.quote(str(directory))}` lists every problem{override}")
    for problem in result.problems:
        if warn is not None:
            warn(f"UNVERIFIED (not read): {problem}")
    return load_bundle(directory, unverified=result.unverified)

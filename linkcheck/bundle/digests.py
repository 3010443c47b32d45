"""The bundle's checksum files: SHA256SUMS (for `sha256sum -c`) and the one digest over the manifest's file table.

Both are built from the same lines, so a person can check either with coreutils alone:
    sha256sum -c SHA256SUMS                                  every file, manifest.json included
    grep -v '  manifest.json$' SHA256SUMS | sha256sum         = the manifest's `files_sha256`
`files_sha256` is the SHA-256 of the UTF-8 bytes of one `<sha256>  <path>\\n` line per entry of the
manifest's `files` table, sorted by path (the `sha256sum` text format; paths relative to the bundle folder,
`/`-separated). It is the one value to sign or to paste into a ticket: it pins every capture file, and
SHA256SUMS adds manifest.json itself.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping

SUMS = "SHA256SUMS"
DIGEST_KEY = "files_sha256"
_LINE = re.compile(r"^(\\?)([0-9a-f]{64}) [ *](.+)$")


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _sums_line(rel: str, digest: str) -> str:
    """One `sha256sum` line; a name with a backslash or newline is escaped as GNU coreutils does."""
    if "\\" in rel or "\n" in rel or "\r" in rel:
        escaped = rel.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
        return f"\\{digest}  {escaped}\n"
    return f"{digest}  {rel}\n"


def sums_text(files: Mapping[str, str]) -> str:
    """`files` (path -> sha256 hex) as `sha256sum` text, sorted by path."""
    return "".join(_sums_line(rel, files[rel]) for rel in sorted(files))


def files_digest(files: Mapping[str, str]) -> str:
    """The manifest's `files_sha256`: the SHA-256 of `sums_text(files)` as UTF-8."""
    return sha256_hex(sums_text(files).encode("utf-8", errors="surrogateescape"))


def parse_sums(text: str) -> tuple[dict[str, str], list[str]]:
    """SHA256SUMS text -> (path -> sha256, problems naming the line); the inverse of `sums_text`."""
    entries: dict[str, str] = {}
    problems: list[str] = []
    for number, line in enumerate(text.split("\n"), 1):
        if not line:
            continue
        match = _LINE.match(line)
        if match is None:
            problems.append(f"{SUMS}:{number}: not a `sha256sum` line: {line[:80]!r}")
            continue
        escaped, digest, rel = match.groups()
        if escaped:
            rel = re.sub(r"\\(.)", lambda m: {"n": "\n", "r": "\r"}.get(m.group(1), m.group(1)), rel)
        if rel in entries:
            problems.append(f"{SUMS}:{number}: {rel} is listed twice")
        entries[rel] = digest
    return entries, problems

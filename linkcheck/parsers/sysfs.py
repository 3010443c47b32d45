"""Parse sysfs dumps (ours, `grep -H .`, cat/grep errors) into path -> value/error/link entries.

Why one module: every sysfs-based fact (netdev attributes, RDMA ports, GID tables, PCIe link) reads
the same dump, and the dump's quirks live here once: ':' inside PCI paths and GID values, EINVAL on
empty GID attributes, symlinks recorded as targets, and a stray shell warning or two.
"""

from __future__ import annotations

import re

import msgspec

from linkcheck.errors import ParseError

SPEC = "sysfs"

# grep -H prints "<path>:<value>". Values may contain ':' (GIDs, "4: ACTIVE") and '/' ("IB/RoCE v1"),
# and so may directory names, but only in known shapes: PCI BDF 0000:01:00.0 (and 0000:00:01.0:pcie002),
# pci0000:00, ACPI MTKP0001:00, SCSI 0:0:0:0, USB 1-1:1.0. A file name never holds ':'.
_COLON_DIR = (
    r"(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7](?::[A-Za-z0-9_.]+)?"
    r"|pci[0-9a-fA-F]{4}:[0-9a-fA-F]{2}|[A-Z][A-Z0-9_]*:[0-9A-Fa-f]{2}|[0-9][0-9.-]*(?::[0-9][0-9.]*)+"
)
_GREP_RE = re.compile(rf"^(/(?:(?:[^/:\s]+|{_COLON_DIR})/)*[^/:\s]+):(.*)$")
# `grep: <path>: <error>` and `cat: <path>: <error>`; the path may hold ': ' only in theory.
_TOOL_ERROR_RE = re.compile(r"^(?:grep|cat|head): (/\S*): ([^:]+)$")
_PATH_RE = re.compile(r"^/\S*$")
_SPEED_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*GT/s")


class SysfsEntry(msgspec.Struct, frozen=True):
    """One sysfs file: its first line, the read error, or (for a symlink) its target."""

    path: str
    value: str | None = None
    error: str | None = None
    link: str | None = None


class SysfsDump(msgspec.Struct, frozen=True):
    """All entries of a dump in input order; a path seen twice keeps its last entry in `get`."""

    entries: tuple[SysfsEntry, ...]
    # The lookup index by path, built with the entries (`of`); a leading underscore keeps it out of plain data.
    _index: dict[str, SysfsEntry] = {}

    @classmethod
    def of(cls, entries: tuple[SysfsEntry, ...]) -> SysfsDump:
        return cls(entries, {e.path: e for e in entries})

    def get(self, path: str) -> SysfsEntry | None:
        """The entry for `path`, or None when the dump has no such file."""
        return self._index.get(path)

    def value(self, path: str) -> str | None:
        """The value of `path`; None when absent, unreadable or a symlink."""
        entry = self._index.get(path)
        return entry.value if entry is not None else None

    def under(self, prefix: str) -> tuple[SysfsEntry, ...]:
        """Entries whose path starts with `prefix`, in input order."""
        return tuple(e for e in self.entries if e.path.startswith(prefix))


def _parse_tab_line(line: str) -> SysfsEntry | None:
    """Our own format: '<path>\\t<value>', '<path>\\t!<error>' or '<path>\\t-> <target>'."""
    path, _, rest = line.partition("\t")
    if not _PATH_RE.match(path):
        return None
    if rest.startswith("!"):
        return SysfsEntry(path, error=rest[1:].strip() or "read failed")
    if rest.startswith("-> "):
        return SysfsEntry(path, link=rest[3:].strip())
    return SysfsEntry(path, value=rest.strip())


def _parse_line(line: str) -> SysfsEntry | None:
    """One non-blank line in any accepted format; None when it is none of them."""
    if "\t" in line:
        entry = _parse_tab_line(line)
        if entry is not None:
            return entry
    match = _TOOL_ERROR_RE.match(line)
    if match:
        return SysfsEntry(match.group(1), error=match.group(2).strip())
    match = _GREP_RE.match(line)
    if match:
        return SysfsEntry(match.group(1), value=match.group(2).strip())
    return None


def parse_sysfs_dump(text: str, *, spec: str = SPEC) -> SysfsDump:
    """Parse a sysfs dump; empty text is a valid empty dump (a host with no RDMA devices).

    A few unrecognised lines (a shell warning) are skipped; more than half unrecognised means the
    text is not a dump at all.

    >>> p = "/sys/class/infiniband/mlx5_0/ports/1"
    >>> d = parse_sysfs_dump(f'''{p}/gids/3\\t0000:0000:0000:0000:0000:ffff:c0a8:6401
    ... {p}/gid_attrs/types/5\\t!Invalid argument
    ... /sys/bus/pci/devices/0000:01:00.0/current_link_speed:32.0 GT/s PCIe''')
    >>> d.value(f"{p}/gids/3")
    '0000:0000:0000:0000:0000:ffff:c0a8:6401'
    >>> d.get(f"{p}/gid_attrs/types/5").error
    'Invalid argument'
    >>> d.value("/sys/bus/pci/devices/0000:01:00.0/current_link_speed")
    '32.0 GT/s PCIe'
    """
    if "\x00" in text:
        raise ParseError(spec, "binary data (NUL bytes)")
    entries: list[SysfsEntry] = []
    unknown: list[int] = []
    for line_no, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip("\r")
        if not line.strip():
            continue
        entry = _parse_line(line)
        if entry is None:
            unknown.append(line_no)
        else:
            entries.append(entry)
    if unknown and len(unknown) * 2 > len(unknown) + len(entries):
        reason = "not a sysfs dump: most lines are neither '<path>\\t<value>' nor grep -H output"
        raise ParseError(spec, reason, unknown[0])
    return SysfsDump.of(tuple(entries))


def parse_link_speed_gts(text: str) -> float | None:
    """PCIe `current_link_speed`/`max_link_speed` in GT/s: '32.0 GT/s PCIe' (kernel >= 5.7), '8 GT/s'.

    >>> [parse_link_speed_gts(s) for s in ("32.0 GT/s PCIe", "8 GT/s", "Unknown")]
    [32.0, 8.0, None]
    """
    match = _SPEED_RE.match(text)
    return float(match.group(1)) if match else None

"""RoCE GID tables from show_gids or a sysfs dump, and the RoCE v2 IPv4 index NCCL should use.

Why: the GID index of the IPv4 RoCE v2 entry moves after reboots and re-applies (holes left by
still-referenced entries, IPv6 addresses taking slots), so a pinned NCCL_IB_GID_INDEX goes stale.
The index is resolved here from the table itself, never assumed to be 3.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable

import msgspec

from linkcheck.errors import ParseError
from linkcheck.parsers._text import require_text
from linkcheck.parsers.sysfs import SysfsDump, parse_sysfs_dump

_ZERO_GID = "0000:0000:0000:0000:0000:0000:0000:0000"
_FE80_ZERO_GID = "fe80:0000:0000:0000:0000:0000:0000:0000"
_GID_PATH_RE = re.compile(
    r"^(?P<port_dir>.*/infiniband/(?P<dev>[^/]+)/ports/(?P<port>[0-9]{1,4}))/gids/(?P<idx>[0-9]{1,6})$"
)
_VERSION_RE = re.compile(r"[vV]\s*(\d{1,2})\s*$")
_IPV4_RE = re.compile(r"^\d{1,3}(?:\.\d{1,3}){3}$")
_N_GIDS_RE = re.compile(r"^n_gids_found=([0-9]{1,9})$")
_SMALL_INT_RE = re.compile(r"^[0-9]{1,6}$")


class GidEntry(msgspec.Struct, frozen=True):
    """One GID table slot; `gid` is 8 groups of 4 lower-case hex digits, as sysfs prints it."""

    device: str
    port: int
    index: int
    gid: str
    roce_version: int | None
    netdev: str | None
    ipv4: str | None
    masked: bool = False  # digits replaced by 'x' before pasting: `gid` keeps the text as given

    @property
    def empty(self) -> bool:
        """All-zero GID, or the bare fe80:: that show_gids also skips: an unusable slot."""
        return self.gid in (_ZERO_GID, _FE80_ZERO_GID)

    @property
    def link_local(self) -> bool:
        """fe80::/10: the MAC-derived default GID, not routable and never what NCCL should use."""
        if self.masked:
            return self.gid.startswith("fe80:")
        try:
            return ipaddress.IPv6Address(self.gid).is_link_local
        except ValueError:
            return False


def masked_gid(text: str) -> str | None:
    """A GID with hex digits masked as 'x' ('fe80:0000:0000:0000:xxxx:xxxx:xxxx:xxxx'), lower-cased; else None."""
    candidate = text.strip().lower()
    return candidate if "x" in candidate and _MASKED_GID_RE.match(candidate) else None


def normalize_gid(text: str) -> str | None:
    """Any IPv6 spelling of a GID ('::ffff:192.168.100.1', long form) -> long lower-case form."""
    candidate = text.strip()
    if _LONG_GID_RE.match(candidate):
        return candidate.lower()  # sysfs already prints the long form; a GID table has 255 slots per port
    if "%" in candidate:
        return None
    try:
        return ipaddress.IPv6Address(candidate).exploded
    except ValueError:
        return None


def ipv4_of_gid(gid: str) -> str | None:
    """The dotted quad of an IPv4-mapped GID (::ffff:a.b.c.d), else None."""
    if _LONG_GID_RE.match(gid):
        if not gid.lower().startswith(_MAPPED_PREFIX):
            return None
        high, low = int(gid[30:34], 16), int(gid[35:39], 16)
        return f"{high >> 8}.{high & 255}.{low >> 8}.{low & 255}"
    try:
        mapped = ipaddress.IPv6Address(gid).ipv4_mapped
    except ValueError:
        return None
    return str(mapped) if mapped is not None else None


_LONG_GID_RE = re.compile(r"^[0-9A-Fa-f]{4}(?::[0-9A-Fa-f]{4}){7}$")
_MASKED_GID_RE = re.compile(r"^[0-9a-fx]{0,4}(?::[0-9a-fx]{0,4}){2,7}$")
_MASKED_IPV4_RE = re.compile(r"^[0-9x]{1,3}(?:\.[0-9x]{1,3}){3}$")  # '192.168.x.x' in the IPv4 column
_MAPPED_PREFIX = "0000:0000:0000:0000:0000:ffff:"


def roce_version(text: str | None) -> int | None:
    """'IB/RoCE v1' / 'v1' -> 1, 'RoCE v2' / 'v2' -> 2; None for empty or unreadable."""
    if not text:
        return None
    match = _VERSION_RE.search(text)
    return int(match.group(1)) if match else None


def _entry(device: str, port: int, index: int, gid: str, version: int | None, netdev: str | None,
           masked: bool = False, ipv4: str | None = None) -> GidEntry:
    return GidEntry(device, port, index, gid, version, netdev or None, ipv4 or ipv4_of_gid(gid), masked)


def _sort(entries: Iterable[GidEntry]) -> tuple[GidEntry, ...]:
    return tuple(sorted(entries, key=lambda e: (e.device, e.port, e.index)))


def _show_gids_row(tokens: list[str], line_no: int) -> GidEntry:
    """DEV PORT INDEX GID [IPv4] [VER] [DEV]: empty TAB fields already dropped by the split."""
    spec = "show_gids"
    if len(tokens) < 4 or not _SMALL_INT_RE.match(tokens[1]) or not _SMALL_INT_RE.match(tokens[2]):
        raise ParseError(spec, f"not a GID row: {' '.join(tokens)!r}", line_no)
    gid, masked = normalize_gid(tokens[3]), False
    if gid is None:
        gid, masked = masked_gid(tokens[3]), True
    if gid is None:
        raise ParseError(spec, f"invalid GID {tokens[3]!r}", line_no)
    rest, ipv4 = tokens[4:], None
    if rest and _IPV4_RE.match(rest[0]):
        if ipv4_of_gid(gid) not in (None, rest[0]):
            raise ParseError(spec, f"IPv4 column {rest[0]} disagrees with GID {gid}", line_no)
        ipv4 = rest[0] if masked and gid.startswith(_MAPPED_PREFIX) else None
        rest = rest[1:]
    elif rest and _MASKED_IPV4_RE.match(rest[0]):
        rest = rest[1:]
    version = None
    if rest and _VERSION_RE.fullmatch(rest[0]):
        version = roce_version(rest[0])
        rest = rest[1:]
    if len(rest) > 1:
        raise ParseError(spec, f"unexpected fields {rest!r}", line_no)
    return _entry(tokens[0], int(tokens[1]), int(tokens[2]), gid, version, rest[0] if rest else None,
                  masked, ipv4)


def parse_show_gids(text: str) -> tuple[GidEntry, ...]:
    """Parse mlnx-tools `show_gids`; rows come in `ls` order (0,1,10,2...), returned sorted numerically.

    show_gids skips empty slots, so the result has no empty entries; `n_gids_found=N`, when present,
    must match the row count (a mismatch means truncated output).

    >>> rows = parse_show_gids('''DEV\\tPORT\\tINDEX\\tGID\\t\\t\\t\\t\\tIPv4  \\t\\tVER\\tDEV
    ... ---\\t----\\t-----\\t---\\t\\t\\t\\t\\t------------  \\t---\\t---
    ... mlx5_0\\t1\\t3\\t0000:0000:0000:0000:0000:ffff:c0a8:6401\\t192.168.100.1  \\tv2\\tens1f0np0
    ... n_gids_found=1''')
    >>> rows[0].index, rows[0].roce_version, rows[0].ipv4, rows[0].netdev
    (3, 2, '192.168.100.1', 'ens1f0np0')
    """
    spec = "show_gids"
    text = require_text(spec, text)
    rows: list[GidEntry] = []
    declared: tuple[int, int] | None = None
    for line_no, line in enumerate(text.split("\n"), start=1):
        tokens = line.split()
        if not tokens or tokens[0] in ("DEV", "---"):
            continue
        counted = _N_GIDS_RE.match(line.strip())
        if counted:
            declared = (int(counted.group(1)), line_no)
            continue
        rows.append(_show_gids_row(tokens, line_no))
    keys = {(e.device, e.port, e.index) for e in rows}
    if len(keys) != len(rows):
        raise ParseError(spec, "the same device/port/index appears twice")
    if declared is not None and declared[0] != len(rows):
        raise ParseError(spec, f"n_gids_found={declared[0]} but {len(rows)} rows: truncated", declared[1])
    if declared is None and not rows and "DEV" not in text:
        raise ParseError(spec, "no header, no rows: not show_gids output")
    return _sort(rows)


def gid_entries_from_sysfs(dump: SysfsDump, *, spec: str = "gid_sysfs") -> tuple[GidEntry, ...]:
    """Every `ports/<p>/gids/<n>` slot of a dump, empty ones included (types/ndevs EINVAL -> None).

    A gids file that could not be read is reported as an empty slot: it cannot be used either.
    """
    entries: list[GidEntry] = []
    for item in dump.entries:
        match = _GID_PATH_RE.match(item.path)
        if match is None:
            continue
        gid = _ZERO_GID if item.value is None else normalize_gid(item.value)
        masked = gid is None and item.value is not None and masked_gid(item.value) is not None
        if masked and item.value is not None:
            gid = masked_gid(item.value)
        if gid is None:
            raise ParseError(spec, f"{item.path}: invalid GID {item.value!r}")
        port_dir, idx = match.group("port_dir"), match.group("idx")
        version = roce_version(dump.value(f"{port_dir}/gid_attrs/types/{idx}"))
        netdev = dump.value(f"{port_dir}/gid_attrs/ndevs/{idx}")
        entries.append(_entry(match.group("dev"), int(match.group("port")), int(idx), gid, version, netdev, masked))
    unique = {(e.device, e.port, e.index): e for e in entries}  # a repeated path keeps its last value
    return _sort(unique.values())


def parse_gid_sysfs(text: str) -> tuple[GidEntry, ...]:
    """Parse a sysfs dump of gids/, gid_attrs/types/, gid_attrs/ndevs/; empty text = no devices.

    >>> p = "/sys/class/infiniband/rocep1s0f1/ports/1"
    >>> rows = parse_gid_sysfs(f'''{p}/gids/2\\t0000:0000:0000:0000:0000:0000:0000:0000
    ... {p}/gids/3\\t0000:0000:0000:0000:0000:ffff:c0a8:640a
    ... {p}/gid_attrs/types/2\\t!Invalid argument
    ... {p}/gid_attrs/types/3\\tRoCE v2
    ... {p}/gid_attrs/ndevs/3\\tenp1s0f1np1''')
    >>> [(e.index, e.empty, e.roce_version, e.ipv4) for e in rows]
    [(2, True, None, None), (3, False, 2, '192.168.100.10')]
    """
    return gid_entries_from_sysfs(parse_sysfs_dump(text, spec="gid_sysfs"))


def _port_rows(entries: Iterable[GidEntry], device: str, port: int) -> list[GidEntry]:
    return sorted((e for e in entries if e.device == device and e.port == port), key=lambda e: e.index)


def resolve_roce_v2_ipv4_index(
    entries: Iterable[GidEntry], device: str, port: int, netdev: str, ipv4: str
) -> int | None:
    """The first RoCE v2 index whose GID is ::ffff:<ipv4> bound to `netdev` (NCCL's correct choice).

    An entry with no readable netdev is accepted only when no entry names the netdev.
    """
    try:
        wanted = str(ipaddress.IPv4Address(ipv4.strip()))
    except ValueError:
        return None
    candidates = [e for e in _port_rows(entries, device, port) if e.roce_version == 2 and e.ipv4 == wanted]
    for entry in candidates:
        if entry.netdev == netdev:
            return entry.index
    for entry in candidates:
        if entry.netdev is None:
            return entry.index
    return None


def holes(entries: Iterable[GidEntry], device: str, port: int) -> tuple[int, ...]:
    """Empty (or, for show_gids, missing) indices below the highest used one: a drift precursor."""
    rows = _port_rows(entries, device, port)
    used = {e.index for e in rows if not e.empty}
    if not used:
        return ()
    return tuple(i for i in range(max(used)) if i not in used)

"""Parse NetworkManager keyfiles (`tail -v -n +1` of /etc and /run/NetworkManager/system-connections/*).

A keyfile is INI (GLib key files): `[connection]` with `id`, `uuid`, `type`, `interface-name`; `[ethernet]`
(older files: `[802-3-ethernet]`) with `mac-address` and `mtu`; `[ipv4]` with `method` and `address1=`,
`address2=` ... (`CIDR[,gateway]`; NetworkManager before 1.0 also wrote `addresses1=`). Profiles under /run
live in memory only (`nmcli connection add ... save no`, `nmcli --temporary`, the ones cloud-init or a script
put there) and are gone at the next boot, except those netplan's NetworkManager renderer writes there as
`netplan-<id>.nmconnection` (or `netplan-<id>-<ssid>.nmconnection` for Wi-Fi), which it regenerates from
/etc/netplan at every boot (canonical/netplan `src/nm.c`).
"""

from __future__ import annotations

import posixpath
import re

import msgspec

from linkcheck.errors import ParseError

SPEC = "nm_connections"
RUN_DIR = "/run/NetworkManager/system-connections"
_HEADER_RE = re.compile(r"^==> (.+) <==$")
_SECTION_RE = re.compile(r"^\[([^\]]+)\]\s*$")
_KEY_RE = re.compile(r"^([A-Za-z0-9_.-]+(?:\[[^\]]*\])?)\s*=\s*(.*)$")
_ADDRESS_KEY_RE = re.compile(r"^address(?:es)?\d*$")
_MAC_RE = re.compile(r"^[0-9A-Fa-f]{2}(?::[0-9A-Fa-f]{2}){5}$")


class NmProfile(msgspec.Struct, frozen=True):
    """One NetworkManager connection profile as its keyfile states it."""

    path: str
    id: str | None
    uuid: str | None
    type: str | None
    interface_name: str | None
    mac_address: str | None  # lower case
    mtu: int | None
    ipv4_method: str | None
    ipv4_addresses: tuple[str, ...]  # CIDRs, gateways dropped

    @property
    def runtime_only(self) -> bool:
        """Kept only in memory: under /run and not one of netplan's generated profiles."""
        return posixpath.dirname(self.path) == RUN_DIR and not posixpath.basename(self.path).startswith("netplan-")

    @property
    def netplan_generated(self) -> bool:
        return posixpath.dirname(self.path) == RUN_DIR and posixpath.basename(self.path).startswith("netplan-")


class NmProfiles(msgspec.Struct, frozen=True):
    profiles: tuple[NmProfile, ...]


def _sections(text: str, path: str, first_line: int) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for no, raw in enumerate(text.split("\n"), first_line):
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        section = _SECTION_RE.match(line)
        if section is not None:
            current = out.setdefault(section.group(1).strip(), {})
            continue
        key = _KEY_RE.match(line)
        if key is None or current is None:
            raise ParseError(SPEC, f"{path}: not a key file line: {line[:80]!r}", no)
        current[key.group(1)] = key.group(2).strip()
    return out


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value else None
    except ValueError:
        return None


def _profile(path: str, sections: dict[str, dict[str, str]]) -> NmProfile:
    conn = sections.get("connection", {})
    eth = sections.get("ethernet") or sections.get("802-3-ethernet") or {}
    ipv4 = sections.get("ipv4", {})
    addresses = []
    for key, value in sorted(ipv4.items()):
        if _ADDRESS_KEY_RE.match(key):
            # "192.168.100.10/24,192.168.100.1" (address1); the old addresses1 wrote "192.168.100.10;24;GW;"
            # (NetworkManager's own keyfile tests hold both), or "192.168.100.10/24;GW;"
            parts = [part.strip() for part in re.split(r"[,;]", value)]
            first = parts[0]
            prefix = parts[1] if len(parts) > 1 else ""
            if first and "/" not in first and ";" in value and prefix.isascii() and prefix.isdigit():
                first = f"{first}/{prefix}"
            if first:
                addresses.append(first if "/" in first else f"{first}/32")
    mac = eth.get("mac-address", "").rstrip(";")
    return NmProfile(
        path=path, id=conn.get("id"), uuid=conn.get("uuid"), type=conn.get("type"),
        interface_name=conn.get("interface-name") or None,
        mac_address=mac.lower() if _MAC_RE.match(mac) else None,
        mtu=_int(eth.get("mtu")), ipv4_method=ipv4.get("method"), ipv4_addresses=tuple(addresses))


def parse_nm_connections(text: str) -> NmProfiles:
    """Parse a `tail -v -n +1` dump of keyfiles ("==> PATH <==" before each); empty: no profiles.

    >>> p = parse_nm_connections("==> /run/NetworkManager/system-connections/cx7.nmconnection <==\\n"
    ...     "[connection]\\nid=cx7\\ntype=ethernet\\ninterface-name=enp1s0f1np1\\n\\n"
    ...     "[ipv4]\\nmethod=manual\\naddress1=192.168.100.10/24\\n").profiles[0]
    >>> p.interface_name, p.ipv4_addresses, p.runtime_only
    ('enp1s0f1np1', ('192.168.100.10/24',), True)
    """
    if "\x00" in text:
        raise ParseError(SPEC, "binary data (NUL bytes)")
    files: list[tuple[str, int, list[str]]] = []
    for no, line in enumerate(text.replace("\r\n", "\n").split("\n"), 1):
        header = _HEADER_RE.match(line)
        if header is not None:
            files.append((header.group(1), no + 1, []))
        elif files:
            files[-1][2].append(line)
        elif line.strip():
            raise ParseError(SPEC, "text before the first '==> file <==' header", no)
    parsed = ((path, _sections("\n".join(lines), path, first)) for path, first, lines in files)
    # A directory under system-connections shows as a header without content: no profile.
    return NmProfiles(tuple(_profile(path, sections) for path, sections in parsed if sections))

"""Anonymise a bundle: hostnames, users, IPs, MACs, GUIDs and serials become fakes shared by both nodes.

One `Anonymizer` holds the mapping tables of the whole bundle, so a value seen on node a (its IP in a's
`ip addr`) and on node b (in b's neighbour table, a GID, a perftest line) gets one fake everywhere and the
pair rules (subnets, GID resolution, neighbour MACs) diagnose the same. Each text goes through a single
regex pass whose alternatives cover every kind and form, so a fake is never replaced again. Fakes are
sequential in first-seen order over the sorted captures, never hashes: guessing and hashing an original
reveals nothing. Interface and RDMA device names are kept (no identity; the rules key on them), except
`enx<MAC>` names, whose MAC part is mapped like any MAC.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import itertools
import json
import re
from collections.abc import Callable
from typing import Any

from linkcheck.collect.bundle import Bundle
from linkcheck.model import Capture
from linkcheck.parsers._eeprom import CMIS_ASCII, CMIS_IDS, SFF8636_ASCII, SFF8636_IDS

_H = "[0-9A-Fa-f]"
_SN_LABELS = r'Vendor SN[ \t]*:[ \t]*|\[SN\] Serial number:[ \t]*|"vendor_sn":[ \t]*"'
# Order matters only between alternatives that start at the same place: specific forms first.
_KINDS: tuple[tuple[str, str], ...] = (
    # NCCL per-QP line "GID 3 (0/A64A8C0FFFF0000)": subnet prefix / interface id as little-endian %lX.
    ("nccl", rf"(?<=GID )-?\d+ \({_H}{{1,16}}/{_H}{{1,16}}\)"),
    ("snctx", rf'(?:{_SN_LABELS})[^\s"][^\n"]*?(?=[ \t]*(?:"|$))'),
    ("dgid", r"(?<![\w:])\d{1,3}(?::\d{1,3}){15}(?![\w:])"),  # perftest prints GID bytes in decimal
    ("guidctx", r'(?:(?<=GUID: )|(?<=guid: )|(?<="phys_switch_id":")|(?<=switchid )|(?<=Serial Number ))'
                rf"(?:(?:0x)?{_H}{{16}}|{_H}{{2}}(?:-{_H}{{2}}){{7}})(?![0-9A-Fa-f-])"),
    ("guid", rf"(?<![0-9A-Fa-f:]){_H}{{4}}(?::{_H}{{4}}){{3}}(?![0-9A-Fa-f:])"),
    ("guidk", rf"(?<![0-9A-Fa-f])(?:0x)?{_H}{{16}}(?![0-9A-Fa-f])"),
    ("mac", rf"(?<![0-9A-Fa-f:]){_H}{{2}}(?::{_H}{{2}}){{5}}(?![0-9A-Fa-f:])"),
    ("mack", rf"(?<![0-9A-Fa-f]){_H}{{12}}(?![0-9A-Fa-f])"),
    # `grep -H .` of sysfs GID files: "<path>/gids/3:0000:...:c0a8:640a" (the ':' after the index).
    ("sysgid", rf"(?<=\d:)(?:{_H}{{4}}:){{7}}{_H}{{4}}(?![\w:])"),
    ("v6", rf"(?<![\w:.])(?:{_H}{{0,4}}:){{2,7}}(?:{_H}{{1,4}}|\d{{1,3}}(?:\.\d{{1,3}}){{3}})?(?![\w:]|\.\d)"),
    ("v4", r"(?<![\w.-])\d{1,3}(?:\.\d{1,3}){3}(?![\w-]|\.\d)"),
    ("home", r"(?<=/home/)[A-Za-z_][\w.-]*(?![\w.-])"),  # the remote user, e.g. in ~/.nccl.conf paths
)
_SN_LABEL = re.compile(_SN_LABELS)
# A dotted quad right after a version label is a version number, not an address.
_VERSION_BEFORE = re.compile(r"(?i)\b(?:version|ver|fw|firmware|release|rev)[\s:=]{0,3}$")
_HOSTNAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]*")
_DOTTED = re.compile(r"\d+(?:\.\d+){3}")
_HEX_ROW = re.compile(r"^(0x([0-9A-Fa-f]{4}):[ \t]*)((?:[0-9A-Fa-f]{2}[ \t]*)+)$", re.M)
_SN_RANGES = {code: dict((label, (first, last)) for label, first, last in table)["Vendor SN"]
              for ids, table in ((CMIS_IDS, CMIS_ASCII), (SFF8636_IDS, SFF8636_ASCII)) for code in ids}
_M64 = (1 << 64) - 1
_FE80 = 0xFE80 << 48
_U_L_BIT = 0x02 << 40  # modified EUI-64 flips the universal/local bit of the MAC


def _eui_to_mac(iid: int) -> int | None:
    if (iid >> 24) & 0xFFFF != 0xFFFE:
        return None
    return (((iid >> 40) << 24) | (iid & 0xFFFFFF)) ^ _U_L_BIT


def _mac_to_eui(mac: int) -> int:
    mac ^= _U_L_BIT
    return ((mac >> 24) << 40) | (0xFFFE << 24) | (mac & 0xFFFFFF)


def _keep_v4(value: int) -> bool:
    """Addresses that identify nothing: this-network, loopback, link-local, multicast/reserved, netmasks."""
    first = value >> 24
    inverted = ~value & 0xFFFFFFFF
    return first in (0, 127) or first >= 224 or value >> 16 == 0xA9FE or (first >= 128 and not inverted & inverted + 1)


def _refill(original: str, value: int, digits: int) -> str:
    """`value` written in the shape of `original`: same separators, 0x prefix and letter case."""
    head = original[:2] if original[:2].lower() == "0x" else ""
    body = original[len(head):]
    new = iter(f"{value:0{digits}X}" if any(c.isupper() for c in body) else f"{value:0{digits}x}")
    return head + "".join(next(new) if c in "0123456789abcdefABCDEF" else c for c in body)


def _hex_value(text: str) -> int:
    return int(re.sub("[^0-9A-Fa-f]", "", text[2:] if text[:2].lower() == "0x" else text), 16)


class Anonymizer:
    """The mapping tables of one bundle, and the text substitution that applies them.

    >>> anon = Anonymizer()
    >>> anon.text("192.168.100.10/24 lladdr 3c:6d:66:cc:b3:b7 GID 0000:0000:0000:0000:0000:ffff:c0a8:640a")
    '10.0.100.10/24 lladdr 02:00:00:00:00:01 GID 0000:0000:0000:0000:0000:ffff:0a00:640a'
    >>> anon.text("GID[  1]: fe80::3e6d:66ff:fecc:b3b7, RoCE v2")
    'GID[  1]: fe80::ff:fe00:1, RoCE v2'
    """

    def __init__(self) -> None:
        self.v4_prefixes: dict[int, int] = {}  # first two octets -> fake 10.<n>: /16../32 relations survive
        self.v6_prefixes: dict[int, int] = {}
        self.v6_iids: dict[int, int] = {}
        self.macs: dict[int, int] = {}
        self.guids: dict[int, int] = {}
        self.serials: dict[str, str] = {}
        self.hosts: dict[str, str] = {}
        self.users: dict[str, str] = {}
        self._handlers: dict[str, Callable[[re.Match[str]], str]] = {
            "nccl": self._nccl, "snctx": self._serial_ctx, "dgid": self._dgid, "guidctx": self._guid_ctx,
            "guid": self._guid_colon, "guidk": self._guid_known, "mac": self._mac, "mack": self._mac_known,
            "v6": self._v6, "sysgid": self._v6, "v4": self._v4, "host": lambda m: self.hosts[m.group()],
            "user": lambda m: self.users[m.group()], "home": self._home, "serial": lambda m: self.serials[m.group()]}
        self._compiled: dict[tuple[bool, int, int, int], re.Pattern[str]] = {}

    def add_host(self, name: object, fake: str) -> None:
        """Map a hostname, its FQDN and short form (NCCL truncates at the first '.'), to `fake`."""
        text = str(name or "").strip()
        if not _HOSTNAME.fullmatch(text) or _DOTTED.fullmatch(text) or text.lower().startswith("localhost"):
            return
        for form in (text, text.split(".")[0]):
            if len(form) >= 3:
                self.hosts.setdefault(form, fake)

    def add_user(self, user: str) -> None:
        if user and user != "root" and _HOSTNAME.fullmatch(user):
            self.users.setdefault(user, f"user{len(self.users) + 1}")

    @staticmethod
    def _next(table: dict[int, int], key: int, base: int) -> int:
        if key not in table:
            table[key] = base + len(table) + 1
        return table[key]

    def map_v4(self, value: int) -> int:
        if _keep_v4(value):
            return value
        if value >> 16 not in self.v4_prefixes:
            n = len(self.v4_prefixes)
            self.v4_prefixes[value >> 16] = ((10 + n // 256 % 100) << 8) | n % 256
        return (self.v4_prefixes[value >> 16] << 16) | (value & 0xFFFF)

    def map_mac(self, value: int) -> int:
        if value in (0, 0xFFFFFFFFFFFF) or value >> 40 & 1:  # zero, broadcast, multicast: no identity
            return value
        return self._next(self.macs, value, 0x020000000000)

    def map_guid(self, value: int) -> int:
        mac = _eui_to_mac(value)  # RoCE port GUIDs are the EUI-64 of the MAC: keep them matching the GIDs
        if mac is not None:
            return _mac_to_eui(self.map_mac(mac))
        return value if value in (0, _M64) else self._next(self.guids, value, 0x0200 << 48)

    def map_v6(self, value: int) -> int:
        if value >> 32 == 0xFFFF:  # IPv4-mapped (RoCE v2 IPv4 GIDs): follow the IPv4 map
            return (0xFFFF << 32) | self.map_v4(value & 0xFFFFFFFF)
        if value >> 120 == 0xFF or value <= 1:
            return value
        prefix, iid = value >> 64, value & _M64
        if prefix not in (0, _FE80):
            prefix = self._next(self.v6_prefixes, prefix, 0xFD00 << 48)
        mac = _eui_to_mac(iid)
        if mac is not None:
            iid = _mac_to_eui(self.map_mac(mac))
        elif iid >= 1 << 16:  # small interface ids (::1, ::10) are hand-picked, not identity
            iid = self._next(self.v6_iids, iid, 1 << 16)
        return (prefix << 64) | iid

    def map_serial(self, value: str) -> str:
        return self.serials.setdefault(value, f"SN{len(self.serials) + 1:08d}")

    def _nccl(self, m: re.Match[str]) -> str:
        index, _, pair = m.group().partition(" (")
        prefix, iid = (int(x, 16) for x in pair[:-1].split("/"))
        raw = self.map_v6(int.from_bytes(prefix.to_bytes(8, "little") + iid.to_bytes(8, "little"), "big"))
        data = raw.to_bytes(16, "big")
        return f"{index} ({int.from_bytes(data[:8], 'little'):X}/{int.from_bytes(data[8:], 'little'):X})"

    def _serial_ctx(self, m: re.Match[str]) -> str:
        label = _SN_LABEL.match(m.group())
        cut = label.end() if label else 0
        return m.group()[:cut] + self.map_serial(m.group()[cut:])

    def _dgid(self, m: re.Match[str]) -> str:
        data = [int(x) for x in m.group().split(":")]
        if max(data) > 255:
            return m.group()
        value = int.from_bytes(bytes(data), "big")
        new = self.map_v6(value).to_bytes(16, "big")
        if new == value.to_bytes(16, "big"):
            return m.group()
        return ":".join(f"{b:02d}" for b in new)

    def _guid_ctx(self, m: re.Match[str]) -> str:
        return _refill(m.group(), self.map_guid(_hex_value(m.group())), 16)

    def _guid_colon(self, m: re.Match[str]) -> str:
        value = _hex_value(m.group())
        if value >> 48 == 0xFE80:  # an IB subnet prefix (rdma link), not a GUID
            return m.group()
        return _refill(m.group(), self.map_guid(value), 16)

    def _guid_known(self, m: re.Match[str]) -> str:
        """A bare 16-hex-digit value is only a GUID when another context already showed it as one."""
        value = _hex_value(m.group())
        mac = _eui_to_mac(value)
        if value in self.guids or (mac is not None and mac in self.macs):
            return _refill(m.group(), self.map_guid(value), 16)
        return m.group()

    def _mac(self, m: re.Match[str]) -> str:
        return _refill(m.group(), self.map_mac(_hex_value(m.group())), 12)

    def _mac_known(self, m: re.Match[str]) -> str:
        value = _hex_value(m.group())
        return _refill(m.group(), self.macs[value], 12) if value in self.macs else m.group()

    def _v6(self, m: re.Match[str]) -> str:
        text = m.group()
        try:
            value = int(ipaddress.IPv6Address(text))
        except ValueError:  # looked like IPv6 but is not (a time, an OUI): let the other kinds see it
            return self._pattern(with_v6=False).sub(self._replace, text)
        if "." in text:  # inet_ntop form ::ffff:a.b.c.d: map the dotted tail like any IPv4
            head, _, tail = text.rpartition(":")
            return f"{head}:{self._v4_text(tail)}"
        new = self.map_v6(value)
        if new == value:
            return text
        upper = any(c.isupper() for c in text)
        if "::" in text:
            out = ipaddress.IPv6Address(new).compressed
        else:
            pad = all(len(group) == 4 for group in text.split(":"))
            out = ":".join(f"{(new >> (112 - 16 * i)) & 0xFFFF:{'04x' if pad else 'x'}}" for i in range(8))
        return out.upper() if upper else out

    def _v4(self, m: re.Match[str]) -> str:
        if _VERSION_BEFORE.search(m.string, max(0, m.start() - 24), m.start()):
            return m.group()
        return self._v4_text(m.group())

    def _v4_text(self, text: str) -> str:
        octets = [int(x) for x in text.split(".")]
        if max(octets) > 255:
            return text
        new = self.map_v4(int.from_bytes(bytes(octets), "big"))
        return ".".join(str(b) for b in new.to_bytes(4, "big"))

    def _home(self, m: re.Match[str]) -> str:
        self.add_user(m.group())
        return self.users.get(m.group(), m.group())

    def _replace(self, m: re.Match[str]) -> str:
        return self._handlers[m.lastgroup or ""](m)

    def _pattern(self, *, with_v6: bool = True) -> re.Pattern[str]:
        """The one-pass regex; literal alternatives (hosts, users, serials) grow as they are learned."""
        key = (with_v6, len(self.hosts), len(self.users), len(self.serials))
        if key not in self._compiled:
            parts = [(n, p) for n, p in _KINDS if with_v6 or n != "v6"]

            def words(table: dict[str, str]) -> str:
                return "|".join(re.escape(w) for w in sorted(table, key=lambda w: (-len(w), w)))

            if self.hosts:
                parts.insert(0, ("host", rf"(?<![\w.-])(?:{words(self.hosts)})(?![\w-])"))
            if self.users:
                parts.insert(0, ("user", rf"(?<![\w.-])(?:{words(self.users)})(?=@)"))
            if self.serials:
                parts.insert(0, ("serial", rf"(?<![\w-])(?:{words(self.serials)})(?![\w-])"))
            self._compiled[key] = re.compile("|".join(f"(?P<{n}>{p})" for n, p in parts), re.M)
        return self._compiled[key]

    def text(self, text: str) -> str:
        """`text` with every identifying value replaced by its fake."""
        return self._pattern().sub(self._replace, self._hex_dump_serial(text))

    def _hex_dump_serial(self, text: str) -> str:
        """ethtool < 6.7 dumps QSFP112 EEPROMs in hex: replace the Vendor SN bytes (offsets from _eeprom)."""
        if "Offset\t\tValues" not in text:
            return text
        data: dict[int, int] = {}
        for row in _HEX_ROW.finditer(text):
            for k, token in enumerate(re.findall(_H + "{2}", row.group(3))):
                data[int(row.group(2), 16) + k] = int(token, 16)
        first, last = _SN_RANGES.get(data.get(0, -1), (0, -1))
        raw = bytes(data[o] for o in range(first, last + 1) if o in data)
        if last < first or len(raw) != last - first + 1 or not raw.rstrip(b" \x00"):
            return text
        original = "".join(chr(b) if 32 <= b <= 126 else "_" for b in raw.rstrip(b" \x00"))
        fake = self.map_serial(original).encode("ascii").ljust(len(raw))[: len(raw)]
        new = {first + k: b for k, b in enumerate(fake)}

        def row_text(row: re.Match[str]) -> str:
            base = int(row.group(2), 16)
            tokens = itertools.count(base)
            values = re.sub(_H + "{2}", lambda t: _byte(new, next(tokens), t.group()), row.group(3))
            return row.group(1) + values

        return _HEX_ROW.sub(row_text, text)

    def value(self, value: Any) -> Any:
        """Anonymise strings inside JSON-like data (the manifest's `nodes`)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: self.value(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.value(v) for v in value]
        return value


def _byte(new: dict[int, int], offset: int, token: str) -> str:
    if offset not in new:
        return token
    return f"{new[offset]:02X}" if token.isupper() else f"{new[offset]:02x}"


def _capture(anon: Anonymizer, cap: Capture) -> Capture:
    return dataclasses.replace(
        cap, command=anon.text(cap.command), stdout=anon.text(cap.stdout), stderr=anon.text(cap.stderr),
        arg=None if cap.arg is None else anon.text(cap.arg),
        skipped=None if cap.skipped is None else anon.text(cap.skipped),
        meta={k: anon.text(v) for k, v in cap.meta.items()})


def _register_nodes(anon: Anonymizer, bundle: Bundle) -> None:
    """Hostnames (manifest, `hostname` capture, SSH target) -> node-<name>; target users -> userN."""
    for name in sorted(set(bundle.nodes) | {c.node for c in bundle.captures}):
        info = bundle.nodes.get(name)
        info = info if isinstance(info, dict) else {}
        user, _, host = str(info.get("target") or "").rpartition("@")
        cap = bundle.capture(name, "hostname")
        for candidate in (info.get("hostname"), host.split(":")[0], cap.stdout if cap and cap.ok else None):
            anon.add_host(candidate, f"node-{name}")
        anon.add_user(user)


def anonymize_bundle(bundle: Bundle) -> Bundle:
    """A new bundle whose hostnames, users, IPs, MACs, GUIDs and serials are consistent fakes."""
    anon = Anonymizer()
    _register_nodes(anon, bundle)
    # First pass learns every value in a fixed order (so fakes do not depend on capture order), and
    # the serials and GUIDs seen in labelled contexts, so their other forms are found in the second.
    for cap in sorted(bundle.captures, key=lambda c: (c.node, c.spec, c.arg or "", json.dumps(c.meta, sort_keys=True),
                                                      c.command, c.stdout, c.stderr)):
        _capture(anon, cap)
    anon.value([bundle.nodes, bundle.collection_errors, bundle.problems])
    return Bundle(
        captures=[_capture(anon, c) for c in bundle.captures],
        nodes=anon.value(bundle.nodes),
        created=bundle.created,
        tool_version=bundle.tool_version,
        collection_errors={k: anon.text(v) for k, v in bundle.collection_errors.items()},
        problems=[anon.text(p) for p in bundle.problems],
        path=None,
    )

"""Anonymise a bundle: hostnames, domains, users, IPs, MACs, GUIDs and serials become fakes shared by both nodes.

One `Anonymizer` holds the mapping tables of the whole bundle, so a value seen on node a (its IP in a's
`ip addr`) and on node b (in b's neighbour table, a GID, a perftest line) gets one fake everywhere and the
pair rules (subnets, GID resolution, neighbour MACs) diagnose the same. Each text goes through a single
regex pass whose alternatives cover every kind and form, so a fake is never replaced again. Fakes are
sequential in first-seen order over the sorted captures, never hashes: guessing and hashing an original
reveals nothing. Interface and RDMA device names are kept (no identity; the rules key on them), except
`enx<MAC>` names, whose MAC part is mapped like any MAC.

What keeps its shape: an IPv4 address keeps its low 16 bits under a fake /16 (two addresses of one /24
stay in one /24, different subnets stay different; every GID form of it encodes the same fake), and a MAC
keeps its last byte under a fake 40-bit block (the twins of one adapter keep their offsets); fake /16s
never reuse a prefix the bundle holds. Hostnames match in any letter case, as FQDN, short name or
inside paths; their domain is mapped on its own. A name the tools also print as a word (`up`, `ib`,
`net`, ...) is replaced only where it stands as a hostname (the `hostname` output, the manifest,
`user@host`, NCCL's `host:pid:tid` prefix, nccl-tests' `on host device`, `mpirun -H`); a 2-character
name only as a standalone word, never inside a path, a dotted key or a longer word.
"""

from __future__ import annotations

import ipaddress
import itertools
import json
import re
from collections.abc import Callable
from typing import Any

from msgspec.structs import replace

from linkcheck.bundle.format import Bundle
from linkcheck.model import Capture
from linkcheck.parsers._eeprom import CMIS_ASCII, CMIS_IDS, SFF8636_ASCII, SFF8636_IDS

_H = "[0-9A-Fa-f]"
_SN_LABELS = (r'(?i:Vendor SN[ \t]*:[ \t]*|\[SN\] Serial number:[ \t]*|"vendor_sn":[ \t]*"'
              r'|Serial Number:[ \t]*|UUID:[ \t]*|"?serial(?:_number)?"?[ \t]*[:=][ \t]*"?'
              r'|(?:product|board|chassis)_(?:serial|uuid)[\t:]|boot_id[\t:]|boot_id"?[ \t]*:[ \t]*"'
              r'|(?m:^uuid=))')
_GUID_VALUE = rf"(?:(?:0x)?{_H}{{16}}|{_H}{{4}}(?::{_H}{{4}}){{3}}|{_H}{{2}}(?:-{_H}{{2}}){{7}})(?![0-9A-Fa-f:-])"
_QUAD = r"\d{1,3}(?:\.\d{1,3}){3}"
# Order matters only between alternatives that start at the same place: specific forms first.
_KINDS: tuple[tuple[str, str], ...] = (
    # NCCL per-QP line "GID 3 (0/A64A8C0FFFF0000)": subnet prefix / interface id as little-endian %lX.
    ("nccl", rf"(?<=GID )-?\d+ \({_H}{{1,16}}/{_H}{{1,16}}\)"),
    ("snctx", rf'{_SN_LABELS}[^\s"][^\n"]*?(?=[ \t]*(?:"|$))'),
    ("dgid", r"(?<![\w:])\d{1,3}(?::\d{1,3}){15}(?![\w:])"),  # perftest prints GID bytes in decimal
    # NCCL's %lX of a RoCE v2 IPv4 GID's interface id on its own (before the
    # 16-digit GUID forms, which it can look like): d c b a ff ff 00 00, little-endian.
    ("ncclv4", r"(?<![0-9A-Za-z])[0-9A-Fa-f]{1,8}(?:FFFF0000|ffff0000)(?![0-9A-Za-z])"),
    # "Node GUID: 0x..", "node_guid 3c6d:..", "GUID 0x..": the label is kept, the value mapped.
    ("guidlbl", rf"""(?i:guid)["']?[ \t]*[:=]?[ \t]*["']?{_GUID_VALUE}"""),
    ("guidctx", r'(?:(?<="phys_switch_id":")|(?<=switchid )|(?<=Serial Number ))' + _GUID_VALUE),
    ("guid", rf"(?<![0-9A-Fa-f:]){_H}{{4}}(?::{_H}{{4}}){{3}}(?![0-9A-Fa-f:])"),
    ("guidk", rf"(?<![0-9A-Fa-f])(?:0x)?{_H}{{16}}(?![0-9A-Fa-f])"),
    ("mac", rf"(?<![0-9A-Fa-f:]){_H}{{2}}(?::{_H}{{2}}){{5}}(?![0-9A-Fa-f:])"),
    ("macdash", rf"(?<![0-9A-Fa-f:-]){_H}{{2}}(?:-{_H}{{2}}){{5}}(?![0-9A-Fa-f:-])"),
    ("macdot", rf"(?<![0-9A-Fa-f.]){_H}{{4}}\.{_H}{{4}}\.{_H}{{4}}(?![0-9A-Fa-f]|\.{_H})"),
    ("mack", rf"(?<![0-9A-Fa-f]){_H}{{12}}(?![0-9A-Fa-f])"),
    # `grep -H .` of sysfs GID files: "<path>/gids/3:0000:...:c0a8:640a" (the ':' after the index).
    ("sysgid", rf"(?<=\d:)(?:{_H}{{4}}:){{7}}{_H}{{4}}(?![\w:])"),
    ("v6", rf"(?<![\w:.])(?:{_H}{{0,4}}:){{2,7}}(?:{_H}{{1,4}}|\d{{1,3}}(?:\.\d{{1,3}}){{3}})?(?![\w:]|\.\d)"),
    # Dotted quads, also inside names ("host_10.20.30.40") and as ranges ("10.0.0.1-10.0.0.9"); not after
    # a letter ("v1.2.3.4") or a version's "<digits>-" ("24.10-1.1.4.0").
    ("v4", rf"(?<![0-9A-Za-z.])(?<!\d-){_QUAD}(?:-{_QUAD})?(?![0-9A-Za-z]|\.\d)"),
    ("v4dash", r"(?<=[A-Za-z][-_])\d{1,3}(?:-\d{1,3}){3}(?![0-9A-Za-z]|-\d)"),  # "ip-10-20-30-40"
    ("home", r"/home/[A-Za-z_][\w.-]*(?![\w.-])"),  # the remote user, e.g. in ~/.nccl.conf paths
)
_STARTS = r"0-9A-Fa-f:/\[\"GgVvSsUuPpBbCc"  # the first characters of the fixed kinds (hex, ::, labels, /home)
_SN_LABEL = re.compile(_SN_LABELS)
_GUID_LABEL = re.compile(r"""(?i:guid)["']?[ \t]*[:=]?[ \t]*["']?""")
# A dotted quad right after a version label is a version number, not an address.
_VERSION_BEFORE = re.compile(r"(?i)\b(?:version|ver|fw|firmware|release|rev)[\s:=]{0,3}$")
_HOSTNAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")  # `_` too: not valid DNS, yet common in /etc/hostname
# Where site names stand in configuration: Wi-Fi SSIDs (netplan `access-points:` keys, NetworkManager `ssid=`,
# a Wi-Fi keyfile's `id=` and file name) and DNS search domains (netplan `search:`, resolv.conf, a
# NetworkManager keyfile's `dns-search=`).
_AP_BLOCK = re.compile(r"^([ \t]*)access-points:[ \t]*(?:#.*)?$", re.M)
_AP_FLOW = re.compile(r"access-points:[ \t]*(\{.*\})[ \t]*(?:#.*)?$", re.M)
_YAML_KEY = re.compile(r"""^([ \t]*)(?:"((?:[^"\\]|\\.)*)"|'((?:[^']|'')*)'"""
                       r"""|([^\s#'"{}\[\]][^:#\n]*?))[ \t]*:(?:[ \t]|$)""")
_NM_SSID = re.compile(r"^[ \t]*ssid[ \t]*=[ \t]*(.*?)[ \t]*$", re.M)
_SEARCH_FLOW = re.compile(r"^[ \t]*search[ \t]*:[ \t]*\[([^\]\n]*)\]", re.M)
_SEARCH_BLOCK = re.compile(r"^([ \t]*)search[ \t]*:[ \t]*(?:#.*)?$", re.M)
_RESOLV = re.compile(r"^[ \t]*(?:search|domain)[ \t]+([^#;\n]+)", re.M)
_NM_SEARCH = re.compile(r"^[ \t]*dns-search[ \t]*=([^\n]*)$", re.M)  # a keyfile's [ipv4]/[ipv6] list, ; separated
_NM_SECTION = re.compile(r"^==> (.*?) <==$", re.M)
_DOTTED = re.compile(r"\d+(?:\.\d+){3}")
_HEX_ROW = re.compile(r"^(0x([0-9A-Fa-f]{4}):[ \t]*)((?:[0-9A-Fa-f]{2}[ \t]*)+)$", re.M)
_SN_RANGES = {code: dict((label, (first, last)) for label, first, last in table)["Vendor SN"]
              for ids, table in ((CMIS_IDS, CMIS_ASCII), (SFF8636_IDS, SFF8636_ASCII)) for code in ids}
_M64 = (1 << 64) - 1
_FE80 = 0xFE80 << 48
_U_L_BIT = 0x02 << 40  # modified EUI-64 flips the universal/local bit of the MAC
# Words the inspected tools print (ip, ethtool, ibv_devinfo, lspci, sysfs, NCCL, perftest, ...): a host
# of that name is replaced only where it stands as a hostname, or its replacement would break the parsers.
_TOOL_WORD_LIST = """
ack acs active addr address agg ah all and anon api ari arp as aspm at atom auto avg bar base bash bit bits
board br buff bug bugs bus bw byte bytes cable cap caps card cat cdr class client cm cnt cntr code com comm
comp conf core count cq cqe cr crc csum ctrl cuda data date debug dev device dgx dhcp dlp down drop drs dsel
dsi dst dual dump duplex ecrc en end enp err error errors etc eth ether ethy ex fast fcp fcs fec file find
flow fmr for free frs fs full fw gb gbps gdr gen gid gids good gpu gro group grp gso gt guid hash hca help
high home host hw ib ibv id if in index inet info init intx ip ipv4 ipv6 irq is kb kernel km l0s l1 lane lanes
len let level lid life like line link lmc lo local logo lro ltr lts mac mask max mb mellanox mem memory metric
mfvc mig min mlx mlx5 mode model module more mpps mq mr msg msi mtu mw name nccl ndr net netdev next nfs nic
no node none not num nvidia obff odp of off ok om1 om2 om3 on only oob op or oui out p0 p1 page pam4 part path
pba pci pcie pcs pd peak perf perr phy phys pid pin pkey pkts pme pn port ports priv psn pxn qdr qkey qp qpn
qps qsfp rank rate raw rbe rc rcb rcv rd rdd rdma read recv res rev ring rkey ro roce rom root rq rs rss rsvd
run rv rwq rx rxof sdes sec segs send serial serr server set sge show size sl slab slot sm smf sn so spark
speed srq state step such sudo surp sys sz tag tbl temp test the this time tlp to true tso tx type uc ud udf
up url us use v0 v1 v2 ver via viol vl vlan won wq wqe wr www x4 xdp xmit xrc yaml yes
"""
TOOL_WORDS = frozenset(_TOOL_WORD_LIST.split())
# Single-label domains that say nothing about a site.
_GENERIC_DOMAINS = frozenset({"local", "localdomain", "lan", "home", "internal", "intranet", "invalid", "example"})


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


def _tool_word(form: str) -> bool:
    """A name the tools also print as a word or number: replaced only where it stands as a hostname."""
    return len(form) < 2 or form in TOOL_WORDS or form.isdigit()


def _alternatives(forms: list[str]) -> str:
    return "|".join(re.escape(w) for w in sorted(forms, key=lambda w: (-len(w), w)))


class Anonymizer:
    """The mapping tables of one bundle, and the text substitution that applies them.

    >>> anon = Anonymizer()
    >>> anon.text("192.168.100.10/24 lladdr 3c:6d:66:cc:b3:b7 GID 0000:0000:0000:0000:0000:ffff:c0a8:640a")
    '10.0.100.10/24 lladdr 02:00:00:00:01:b7 GID 0000:0000:0000:0000:0000:ffff:0a00:640a'
    >>> anon.text("GID[  1]: fe80::3e6d:66ff:fecc:b3b7, RoCE v2")
    'GID[  1]: fe80::ff:fe00:1b7, RoCE v2'
    """

    def __init__(self, *, reserved_v4: set[int] | None = None) -> None:
        self.v4_prefixes: dict[int, int] = {}  # first two octets -> fake 10.<n>: /16../32 relations survive
        self.reserved_v4 = set(reserved_v4 or ())  # /16s the bundle holds: never used as a fake
        self._v4_next = 0
        self.v6_prefixes: dict[int, int] = {}
        self.v6_iids: dict[int, int] = {}
        self.macs: dict[int, int] = {}
        self.mac_blocks: dict[int, int] = {}  # MAC without its last byte -> fake 02:00:00:00:<n>
        self.guids: dict[int, int] = {}
        self.serials: dict[str, str] = {}
        self.hosts: dict[str, str] = {}  # lower-case name (FQDN and short form) -> fake
        self.domains: dict[str, str] = {}
        self.users: dict[str, str] = {}
        self.names: dict[str, str] = {}  # SSIDs and single-label search domains -> fake, replaced as whole words
        host: Callable[[re.Match[str]], str] = self._host
        self._handlers: dict[str, Callable[[re.Match[str]], str]] = {
            "nccl": self._nccl, "snctx": self._serial_ctx, "dgid": self._dgid, "guidlbl": self._guid_label,
            "guidctx": self._guid_ctx, "guid": self._guid_colon, "guidk": self._guid_known, "mac": self._mac,
            "macdash": self._mac_loose, "macdot": self._mac_loose, "ncclv4": self._nccl_v4,
            "mack": self._mac_known, "v6": self._v6, "sysgid": self._v6, "v4": self._v4, "v4dash": self._v4_dash,
            **dict.fromkeys(("host", "hostw", "hosta", "hostx", "hostwx", "hostax", "hostat", "hostnccl", "hoston"),
                            host),
            "hostlist": self._host_list, "domain": self._domain, "domain1": self._domain,
            "user": lambda m: self.users[m.group()], "home": self._home,
            "name": lambda m: self.names.get(m.group(), self.names.get(m.group().lower(), m.group())),
            "serial": lambda m: self.serials.get(m.group().upper(), m.group())}
        self._compiled: dict[tuple[bool, int, int, int, int], re.Pattern[str]] = {}

    # --- learning ---------------------------------------------------------------------------------------

    def add_host(self, name: object, fake: str) -> None:
        """Map a hostname, its FQDN and short form (NCCL truncates at the first '.'), to `fake`; its
        domain gets a fake of its own."""
        text = str(name or "").strip().rstrip(".").lower()
        if not _HOSTNAME.fullmatch(text) or _DOTTED.fullmatch(text) or text.startswith("localhost"):
            return
        short, _, domain = text.partition(".")
        for form in (text, short):
            self.hosts.setdefault(form, fake)
        if domain and domain not in _GENERIC_DOMAINS and not _tool_word(domain):
            self.domains.setdefault(domain, f"site{len(self.domains) + 1}.invalid")
        for known_short in [h for h in self.hosts if "." not in h]:
            for known_domain in self.domains:  # "vm" + "lab.example": vm.lab.example as one name
                self.hosts.setdefault(f"{known_short}.{known_domain}", self.hosts[known_short])

    def add_config_names(self, text: str) -> None:
        """Learn the SSIDs and DNS search domains that `text` configures (see `_config_spans`)."""
        for _, _, name, kind in _config_spans(text):
            self._add_name(name, kind)

    def _add_name(self, name: str, kind: str) -> None:
        if kind == "domain":
            name = name.rstrip(".").lower()
            if not name or name in _GENERIC_DOMAINS or _DOTTED.fullmatch(name) or name in self.domains:
                return
            if "." in name and _HOSTNAME.fullmatch(name):  # replaced wherever it stands, as a host's domain is
                self.domains[name] = f"site{len(self.domains) + 1}.invalid"
                return
            fake = f"site{len(self.domains) + 1}.invalid"
            self.domains.setdefault(f"\0{name}", fake)  # counted, never matched: fakes stay unique
        else:
            fake = f"wifi-{sum(f.startswith('wifi-') for f in self.names.values()) + 1}"
        if name and name not in self.names and name.lower() not in self.names:
            self.names[name] = fake
            self.names.setdefault(name.lower(), fake)

    def _config_names(self, text: str) -> str:
        """Every SSID and search domain in its configuration context replaced, tool words and short names too
        (the whole-word pass leaves those alone elsewhere)."""
        spans = _config_spans(text)
        if not spans:
            return text
        out, last = [], 0
        for start, end, name, kind in sorted(spans):
            if start < last:
                continue
            key = name.rstrip(".").lower() if kind == "domain" else name
            fake = self.domains.get(key) if kind == "domain" else None
            fake = fake or self.names.get(key) or self.names.get(key.lower())
            if fake is None:
                continue
            out += [text[last:start], fake]
            last = end
        return "".join([*out, text[last:]])

    def add_user(self, user: str) -> None:
        if user and user != "root" and _HOSTNAME.fullmatch(user):
            self.users.setdefault(user, f"user{len(self.users) + 1}")

    # --- value maps -------------------------------------------------------------------------------------

    @staticmethod
    def _next(table: dict[int, int], key: int, base: int) -> int:
        if key not in table:
            table[key] = base + len(table) + 1
        return table[key]

    def map_v4(self, value: int) -> int:
        if _keep_v4(value):
            return value
        prefix = value >> 16
        if prefix not in self.v4_prefixes:
            taken = self.reserved_v4 | set(self.v4_prefixes.values()) | set(self.v4_prefixes) | {prefix}
            while True:  # never a /16 that holds real addresses: a fake must not equal a real address
                n, self._v4_next = self._v4_next, self._v4_next + 1
                fake = ((10 + n // 256 % 100) << 8) | n % 256
                if fake not in taken:
                    break
            self.v4_prefixes[prefix] = fake
        return (self.v4_prefixes[prefix] << 16) | (value & 0xFFFF)

    def map_mac(self, value: int) -> int:
        if value in (0, 0xFFFFFFFFFFFF) or value >> 40 & 1:  # zero, broadcast, multicast: no identity
            return value
        if value not in self.macs:
            block = self._next(self.mac_blocks, value >> 8, 0x0200000000)
            self.macs[value] = (block << 8) | (value & 0xFF)
        return self.macs[value]

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
        return self.serials.setdefault(value.upper(), f"SN{len(self.serials) + 1:08d}")

    def map_host(self, name: str) -> str:
        """A whole field that holds a hostname (the manifest's, `hostname`'s output): mapped if known."""
        fake = self.hosts.get(name.strip().rstrip(".").lower())
        if fake is None:
            return self.text(name)
        head, tail = name[:len(name) - len(name.lstrip())], name[len(name.rstrip()):]
        return head + (fake.upper() if name.strip().isupper() else fake) + tail

    def map_target(self, target: str) -> str:
        """`[user@]host[:port]` of the manifest."""
        user, at, rest = target.rpartition("@")
        host, colon, port = rest.partition(":") if rest.count(":") == 1 else (rest, "", "")
        fake_user = self.users.get(user, self.text(user)) if at else ""
        return f"{fake_user}{at}{self.map_host(host) if host else ''}{colon}{self.text(port)}"

    # --- handlers ---------------------------------------------------------------------------------------

    def _host(self, m: re.Match[str]) -> str:
        fake = self.hosts[m.group().lower()]
        return fake.upper() if m.group().isupper() else fake

    def _host_list(self, m: re.Match[str]) -> str:
        """`mpirun -H a:1,b:1`: each element a hostname (any, tool words too) or an address."""
        out = []
        for item in m.group().split(","):
            name, colon, slots = item.partition(":")
            out.append(self.map_host(name) + colon + slots if name.lower() in self.hosts else self.text(item))
        return ",".join(out)

    def _domain(self, m: re.Match[str]) -> str:
        fake = self.domains[m.group().lower()]
        return fake.upper() if m.group().isupper() else fake

    def _nccl(self, m: re.Match[str]) -> str:
        index, _, pair = m.group().partition(" (")
        prefix, iid = (int(x, 16) for x in pair[:-1].split("/"))
        raw = self.map_v6(int.from_bytes(prefix.to_bytes(8, "little") + iid.to_bytes(8, "little"), "big"))
        data = raw.to_bytes(16, "big")
        return f"{index} ({int.from_bytes(data[:8], 'little'):X}/{int.from_bytes(data[8:], 'little'):X})"

    def _nccl_v4(self, m: re.Match[str]) -> str:
        text = m.group()
        data = int(text, 16).to_bytes(8, "little")  # 00 00 ff ff a b c d
        value = int.from_bytes(data[4:], "big")
        new = self.map_v4(value)
        if new == value:
            return text
        out = f"{int.from_bytes(data[:4] + new.to_bytes(4, 'big'), 'little'):X}"
        return out if any(c.isupper() for c in text) else out.lower()

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

    def _guid_label(self, m: re.Match[str]) -> str:
        label = _GUID_LABEL.match(m.group())
        cut = label.end() if label else 0
        value = m.group()[cut:]
        if _hex_value(value) >> 48 == 0xFE80 and ":" in value:  # an IB subnet prefix, not a GUID
            return m.group()
        return m.group()[:cut] + _refill(value, self.map_guid(_hex_value(value)), 16)

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

    def _mac_loose(self, m: re.Match[str]) -> str:
        """`3c-6d-..` and `3c6d.66cc.b3b7`: a MAC when it has a hex letter or is already known."""
        value = _hex_value(m.group())
        if value in self.macs or re.search("[A-Fa-f]", m.group()):
            return _refill(m.group(), self.map_mac(value), 12)
        return m.group()

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
        return "-".join(self._v4_text(part) for part in m.group().split("-"))

    def _v4_dash(self, m: re.Match[str]) -> str:
        return self._v4_text(m.group().replace("-", ".")).replace(".", "-")

    def _v4_text(self, text: str) -> str:
        octets = [int(x) for x in text.split(".")]
        if max(octets) > 255:
            return text
        new = self.map_v4(int.from_bytes(bytes(octets), "big"))
        return ".".join(str(b) for b in new.to_bytes(4, "big"))

    def _home(self, m: re.Match[str]) -> str:
        user = m.group()[len("/home/"):]
        self.add_user(user)
        return "/home/" + self.users.get(user, user)

    def _replace(self, m: re.Match[str]) -> str:
        return self._handlers[m.lastgroup or ""](m)

    # --- the pattern ------------------------------------------------------------------------------------

    def _host_parts(self) -> list[tuple[str, str]]:
        forms = list(self.hosts)
        parts: list[tuple[str, str]] = []
        if forms:
            every = f"(?i:{_alternatives(forms)})"
            # Where a name can only be a hostname: any name, tool words too.
            parts += [("hostat", rf"(?<=@){every}(?![\w-]|\.\w)"),
                      # NCCL's prefix wherever it stands: at a line's start, or glued to whatever another rank's
                      # line had printed when mpirun's merged output cut it short ("...30435:3047spark-b:30433:30433
                      # [0] NCCL INFO", "[send] vspark-c:6504:6504 [0] NCCL INFO")
                      ("hostnccl", rf"{every}(?=:\d+:\d+ )"),
                      ("hoston", rf"(?<= on ){every}(?=[ \t]+device\b)"),
                      ("hostlist", r"(?<=-H )[^\s,]+(?:,[^\s,]+)*|(?<=--host )[^\s,]+(?:,[^\s,]+)*")]
        free = [f for f in forms if not _tool_word(f)]
        short = [f for f in free if len(f) <= 2]
        alpha = [f for f in free if len(f) > 2 and f.isalpha()]
        other = [f for f in free if len(f) > 2 and not f.isalpha()]
        for name, group, left, right in (
                # "spark-a", "dgx-spark-1", FQDNs: also inside paths and longer names ("nccl-spark-a.log")
                ("host", other, "(?<![A-Za-z0-9])", "(?![A-Za-z0-9])"),
                # an English-looking name: also in paths, never in a snake_case key ("carrier_changes")
                ("hosta", alpha, "(?<![A-Za-z0-9_])", "(?![A-Za-z0-9_])"),
                # "vm": a standalone word only, never in "kvm", "vm.swappiness", "vm-1" or a path
                ("hostw", short, r"(?<![\w./-])", r"(?![\w/-]|\.\w)")):
            plain = [f for f in group if not re.fullmatch("[0-9a-f]+", f)]
            hexy = [f for f in group if re.fullmatch("[0-9a-f]+", f)]  # "ab", "cafe": never a group of a MAC,
            if plain:                                                   # GUID or IPv6 address
                parts.append((name, rf"{left}(?i:{_alternatives(plain)}){right}"))
            if hexy:
                parts.append((name + "x", rf"{left}(?<![0-9A-Fa-f:]:)(?<!::)(?i:{_alternatives(hexy)}){right}"
                                          r"(?![:.][0-9A-Fa-f])"))
        multi = [d for d in self.domains if "." in d and not d.startswith("\0")]
        single = [d for d in self.domains if "." not in d and not d.startswith("\0")]
        if multi:
            parts.append(("domain", rf"(?<![\w-])(?i:{_alternatives(multi)})(?![\w-]|\.\w)"))
        if single:
            parts.append(("domain1", rf"(?<=[A-Za-z0-9]\.)(?i:{_alternatives(single)})(?![\w.-])"))
        return parts

    def _pattern(self, *, with_v6: bool = True) -> re.Pattern[str]:
        """The one-pass regex; literal alternatives (hosts, users, serials) grow as they are learned."""
        key = (with_v6, len(self.hosts) + len(self.domains), len(self.users), len(self.serials), len(self.names))
        if key not in self._compiled:
            parts = [(n, p) for n, p in _KINDS if with_v6 or n != "v6"]
            parts[:0] = self._host_parts()
            if self.users:
                parts.insert(0, ("user", rf"(?<![\w.-])(?:{_alternatives(list(self.users))})(?=@)"))
            if self.serials:
                parts.insert(0, ("serial", rf"(?<![\w-])(?i:{_alternatives(list(self.serials))})(?![\w-])"))
            whole = [n for n in self.names if len(n) >= 3 and not _tool_word(n.lower())]
            if whole:
                parts.insert(0, ("name", rf"(?<![\w.-])(?i:{_alternatives(whole)})(?![\w-]|\.\w)"))
            # Every alternative starts with one of these characters, and none right after a letter g-z
            # but x (`enx<MAC>`): checked first, they skip most positions at once. NCCL's host:pid:tid prefix is
            # the one exception: mpirun's merged output glues it to any text a cut line had printed ("[send] v").
            learned = itertools.chain(self.hosts, self.domains, self.users, self.serials, self.names)
            first = "".join(sorted({c for w in learned for c in (w[:1].lower(), w[:1].upper())} - set(_STARTS)))
            glued = "".join(f"(?P<{n}>{p})|" for n, p in parts if n == "hostnccl")
            alternatives = "|".join(f"(?P<{n}>{p})" for n, p in parts if n != "hostnccl")
            self._compiled[key] = re.compile(
                rf"(?=[{_STARTS}{re.escape(first)}])(?:{glued}(?<![G-Zg-wyz])(?:{alternatives}))", re.M)
        return self._compiled[key]

    def text(self, text: str) -> str:
        """`text` with every identifying value replaced by its fake."""
        if self.names or self.domains:
            text = self._config_names(text)
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
        """Anonymise strings inside JSON-like data."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: self.value(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.value(v) for v in value]
        return value

    def nodes(self, nodes: dict[str, Any]) -> dict[str, Any]:
        """The manifest's `nodes`: `hostname` and `target` are hostname fields, the rest is text."""
        out: dict[str, Any] = {}
        for name, info in nodes.items():
            if not isinstance(info, dict):
                out[name] = self.value(info)
                continue
            out[name] = {k: self.map_host(v) if k == "hostname" and isinstance(v, str)
                         else self.map_target(v) if k == "target" and isinstance(v, str)
                         else self.value(v) for k, v in info.items()}
        return out


_Span = tuple[int, int, str, str]


def _span(text: str, start: int, end: int, kind: str) -> _Span | None:
    """(start, end, name, kind) of a possibly quoted value, without its quotes and blanks."""
    raw = text[start:end]
    lead = len(raw) - len(raw.lstrip())
    raw = raw.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
        lead, raw = lead + 1, raw[1:-1]
    return (start + lead, start + lead + len(raw), raw, kind) if raw.strip() else None


def _block_items(text: str, after: int, indent: int, items: bool) -> list[tuple[int, int]]:
    """The keys (or `- items`) one level below the line that ends at `after`, at the indent of the first."""
    found: list[tuple[int, int]] = []
    level = -1
    pos = after + 1
    while pos < len(text):
        end = text.find("\n", pos)
        end = len(text) if end < 0 else end
        line = text[pos:end]
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            depth = len(line) - len(line.lstrip())
            if depth <= indent:
                break
            level = depth if level < 0 else level
            if depth == level:
                if items and stripped.startswith("-"):
                    value = line[depth + 1:].split(" #")[0]
                    found.append((pos + depth + 1, pos + depth + 1 + len(value)))
                elif not items:
                    key = _YAML_KEY.match(line)
                    if key:
                        group = next(g for g in (2, 3, 4) if key.group(g) is not None)
                        found.append((pos + key.start(group), pos + key.end(group)))
        pos = end + 1
    return found


def _flow_keys(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The top-level keys of the flow mapping text[start:end] (`{"a b": {...}, c: {}}`)."""
    keys, depth, quote, key_start = [], 0, "", -1
    for i in range(start, end):
        c = text[i]
        if quote:
            quote = "" if c == quote else quote
            continue
        if c in "'\"":
            quote = c
        elif c in "{[":
            depth += 1
            if depth == 1 and c == "{":
                key_start = i + 1
        elif c in "}]":
            depth -= 1
        elif c == "," and depth == 1:
            key_start = i + 1
        elif c == ":" and depth == 1 and key_start >= 0:
            keys.append((key_start, i))
            key_start = -1
    return keys


def _config_spans(text: str) -> list[_Span]:
    """Where `text` names an SSID or a DNS search domain: (start, end, name, "ssid" or "domain")."""
    spans = [*_ssid_spans(text), *_nm_wifi_spans(text), *_search_spans(text)]
    return [s for s in spans if s is not None]


def _ssid_spans(text: str) -> list[_Span | None]:
    spans: list[_Span | None] = []
    if "access-points" in text:
        for m in _AP_BLOCK.finditer(text):
            spans += [_span(text, s, e, "ssid") for s, e in _block_items(text, m.end(), len(m.group(1)), False)]
        for m in _AP_FLOW.finditer(text):
            spans += [_span(text, s, e, "ssid") for s, e in _flow_keys(text, m.start(1), m.end(1))]
    if "ssid" in text:
        spans += [_span(text, m.start(1), m.end(1), "ssid") for m in _NM_SSID.finditer(text)]
    return spans


def _nm_wifi_spans(text: str) -> list[_Span | None]:
    """A Wi-Fi keyfile's `id=` and file name, which NetworkManager names after the SSID."""
    spans: list[_Span | None] = []
    if "==> " in text:
        sections = list(_NM_SECTION.finditer(text))
        for i, header in enumerate(sections):
            body_end = sections[i + 1].start() if i + 1 < len(sections) else len(text)
            body = text[header.end():body_end]
            if not re.search(r"^(?:type=(?:wifi|802-11-wireless)|\[(?:wifi|802-11-wireless)\])[ \t]*$", body, re.M):
                continue
            spans += [_span(text, header.end() + m.start(1), header.end() + m.end(1), "ssid")
                      for m in re.finditer(r"^id=(.*)$", body, re.M)]
            name_start = header.start(1) + header.group(1).rfind("/") + 1
            stem = re.sub(r"\.nmconnection$", "", text[name_start:header.end(1)])
            spans.append(_span(text, name_start, name_start + len(stem), "ssid"))
    return spans


def _search_spans(text: str) -> list[_Span | None]:
    spans: list[_Span | None] = []
    if "search" in text:
        for m in _SEARCH_FLOW.finditer(text):
            pos = m.start(1)
            for item in m.group(1).split(","):
                spans.append(_span(text, pos, pos + len(item), "domain"))
                pos += len(item) + 1
        for m in _SEARCH_BLOCK.finditer(text):
            spans += [_span(text, s, e, "domain") for s, e in _block_items(text, m.end(), len(m.group(1)), True)]
    if "search" in text or "domain" in text:
        for m in [*_RESOLV.finditer(text), *_NM_SEARCH.finditer(text)]:
            for word in re.finditer(r"[^\s;,]+", m.group(1)):
                if re.search("[A-Za-z]", word.group()) and _HOSTNAME.fullmatch(word.group().rstrip(".")):
                    spans.append(_span(text, m.start(1) + word.start(), m.start(1) + word.end(), "domain"))
    return spans


def _byte(new: dict[int, int], offset: int, token: str) -> str:
    if offset not in new:
        return token
    return f"{new[offset]:02X}" if token.isupper() else f"{new[offset]:02x}"


def _capture(anon: Anonymizer, cap: Capture) -> Capture:
    stdout = anon.map_host(cap.stdout) if cap.spec == "hostname" else anon.text(cap.stdout)
    return replace(
        cap, command=anon.text(cap.command), stdout=stdout, stderr=anon.text(cap.stderr),
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


def _sorted_captures(bundle: Bundle) -> list[Capture]:
    return sorted(bundle.captures, key=lambda c: (c.node, c.spec, c.arg or "", json.dumps(c.meta, sort_keys=True),
                                                  c.command, c.stdout, c.stderr))


def anonymize_bundle(bundle: Bundle) -> Bundle:
    """A new bundle whose hostnames, users, IPs, MACs, GUIDs and serials are consistent fakes."""
    return learn_and_anonymize(bundle)[0]


def learn_and_anonymize(bundle: Bundle, extra_texts: tuple[str, ...] = ()) -> tuple[Bundle, Anonymizer]:
    """anonymize_bundle, and the Anonymizer that learned it (and `extra_texts`, the bundle's other files), for
    those other files to get the same fakes."""
    scout = Anonymizer()  # finds the /16s the bundle holds, so that no fake address equals a real one
    for cap in bundle.captures:
        _capture(scout, cap)
    scout.value([bundle.nodes, bundle.collection_errors, bundle.problems, *extra_texts])
    anon = Anonymizer(reserved_v4=set(scout.v4_prefixes))
    _register_nodes(anon, bundle)
    for text in [*(c.stdout for c in _sorted_captures(bundle)), *extra_texts]:
        anon.add_config_names(text)
    # First pass learns every value in a fixed order (so fakes do not depend on capture order), and
    # the serials and GUIDs seen in labelled contexts, so their other forms are found in the second.
    for cap in _sorted_captures(bundle):
        _capture(anon, cap)
    anon.value([bundle.nodes, bundle.collection_errors, bundle.problems, *extra_texts])
    return Bundle(
        captures=[_capture(anon, c) for c in bundle.captures],
        nodes=anon.nodes(bundle.nodes),
        created=bundle.created,
        tool_version=bundle.tool_version,
        collection_errors={k: anon.text(v) for k, v in bundle.collection_errors.items()},
        problems=[anon.text(p) for p in bundle.problems],
        path=None,
    ), anon

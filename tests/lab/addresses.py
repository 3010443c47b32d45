"""Map scenario addresses into 198.18.0.0/15, so lab traffic can never leave the machine.

Fixtures carry the addresses real users type (192.168.100.10/24, 10.x, 169.254.x). The lab assigns
addresses to real interfaces, so before anything is materialised every IPv4 address in a node model,
a netplan file or a link spec is rewritten with one fixed rule, the same on every node (pair rules that
compare subnets still match):

    192.168.X.Y/P   -> 198.19.X.Y/max(P,16)        e.g. 192.168.100.10/24 -> 198.19.100.10/24
    other private   -> 198.18.X.Y/max(P,16)        (10/8, 172.16/12, 169.254/16, 100.64/10: low 16 bits
                                                    kept; 198.18.0.0/24 is reserved for management,
                                                    so X = 0 is moved to X = 255)
    198.18.0.0/15   -> unchanged
    anything else   -> unchanged in text; refused (LabError) where it would be assigned to an interface

RoCE v2 GIDs that embed an IPv4 address (``0000:...:ffff:c0a8:640a`` and ``::ffff:192.168.100.10``)
are rewritten with the same rule, so the GID table keeps matching the interface address.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any

from tests.lab.errors import LabError

LAB_NET = ipaddress.IPv4Network("198.18.0.0/15")
MGMT_NET = ipaddress.IPv4Network("198.18.0.0/24")
_SCENARIO_NET = ipaddress.IPv4Network("192.168.0.0/16")
_PRIVATE_NETS = tuple(
    ipaddress.IPv4Network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "169.254.0.0/16", "100.64.0.0/10")
)

# A dotted quad not glued to other digits or dots (keeps "28.45.1200" and "1.2.3.4.5" untouched),
# with an optional /prefix.
_QUAD_RE = re.compile(r"(?<![\d.])(\d{1,3}(?:\.\d{1,3}){3})(?:(/\d{1,2})(?!\d))?(?!\d|\.\d|/\d)")
# The hex IPv4-mapped tail of a GID as sysfs and show_gids print it: ...:ffff:c0a8:640a
_GID_RE = re.compile(r"(?i)(0000:0000:0000:0000:0000:ffff:)([0-9a-f]{4}):([0-9a-f]{4})\b")


def map_ip(ip: str) -> str:
    """The lab address for one IPv4 address (see the module docstring for the rule)."""
    addr = ipaddress.IPv4Address(ip)
    if addr in LAB_NET:
        return str(addr)
    low = int(addr) & 0xFFFF
    if addr in _SCENARIO_NET:
        return str(ipaddress.IPv4Address(int(ipaddress.IPv4Address("198.19.0.0")) | low))
    if any(addr in net for net in _PRIVATE_NETS):
        if low >> 8 == 0:
            low |= 0xFF00  # keep 198.18.0.0/24 free for the management links
        return str(ipaddress.IPv4Address(int(ipaddress.IPv4Address("198.18.0.0")) | low))
    return str(addr)


def map_cidr(cidr: str) -> str:
    """Map "A.B.C.D/P"; prefixes shorter than /16 become /16 so the subnet stays inside the lab range."""
    ip, _, prefix = cidr.partition("/")
    mapped = map_ip(ip)
    if not prefix:
        return mapped
    plen = int(prefix)
    if mapped != ip and plen < 16:
        plen = 16
    return f"{mapped}/{plen}"


def _sub_quad(m: re.Match[str]) -> str:
    quad, prefix = m.group(1), m.group(2) or ""
    try:
        ipaddress.IPv4Address(quad)
    except ValueError:
        return m.group(0)
    if prefix and 0 <= int(prefix[1:]) <= 32:
        return map_cidr(quad + prefix)
    return map_ip(quad) + prefix


def _sub_gid(m: re.Match[str]) -> str:
    value = int(m.group(2) + m.group(3), 16)
    mapped = int(ipaddress.IPv4Address(map_ip(str(ipaddress.IPv4Address(value)))))
    hexed = f"{mapped:08x}"
    return f"{m.group(1)}{hexed[:4]}:{hexed[4:]}"


def map_text(text: str) -> str:
    """Rewrite every IPv4 address, CIDR and IPv4-mapped GID in free text (netplan YAML, tool output)."""
    return _GID_RE.sub(_sub_gid, _QUAD_RE.sub(_sub_quad, text))


def map_model(value: Any) -> Any:
    """Rewrite addresses in every string of a JSON-like value (dict keys too); returns a new value."""
    if isinstance(value, str):
        return map_text(value)
    if isinstance(value, dict):
        return {map_model(k): map_model(v) for k, v in value.items()}
    if isinstance(value, list):
        return [map_model(v) for v in value]
    return value


def require_lab_cidr(cidr: str, what: str) -> ipaddress.IPv4Interface:
    """Refuse any address outside 198.18.0.0/15 before it reaches an interface."""
    try:
        iface = ipaddress.IPv4Interface(cidr)
    except ValueError as exc:
        raise LabError(f"{what}: not an IPv4 address/prefix: {cidr!r}") from exc
    if iface.ip not in LAB_NET or iface.network.prefixlen < LAB_NET.prefixlen:
        raise LabError(f"{what}: {cidr} is outside {LAB_NET}; the lab only uses benchmarking addresses")
    return iface

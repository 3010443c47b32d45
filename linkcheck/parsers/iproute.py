"""`ip -j` link, addr, route and neigh output as typed records.

Why JSON only: the text forms changed wording across iproute2 releases, the JSON keys did not;
older releases omit keys (all optional here) and some emitted `{}` placeholders, which are skipped.
"""

from __future__ import annotations

import ipaddress
import json
import re
from typing import Any

import msgspec

from linkcheck.errors import ParseError


class IpAddress(msgspec.Struct, frozen=True):
    """One `addr_info` entry; `local` is validated, so `network` never fails."""

    family: str
    local: str
    prefixlen: int
    scope: str | None

    @property
    def network(self) -> str:
        """The subnet, e.g. '192.168.100.0/24': twins must sit in distinct subnets."""
        return str(ipaddress.ip_interface(f"{self.local}/{self.prefixlen}").network)


class IpInterface(msgspec.Struct, frozen=True):
    """One interface of `ip [-d] -j link|addr show`; `mac` is the `address` key."""

    ifname: str
    ifindex: int | None
    flags: tuple[str, ...]
    operstate: str | None
    mtu: int | None
    mac: str | None
    link_type: str | None
    phys_port_name: str | None
    parentdev: str | None
    altnames: tuple[str, ...]
    addresses: tuple[IpAddress, ...]
    mac_masked: bool = False  # the MAC was pasted with 'xx' bytes: `mac` is None, never a false mismatch

    @property
    def admin_up(self) -> bool:
        return "UP" in self.flags

    @property
    def lower_up(self) -> bool:
        """Carrier: LOWER_UP is in flags only when the link has a peer."""
        return "LOWER_UP" in self.flags

    @property
    def ipv4(self) -> tuple[IpAddress, ...]:
        return tuple(a for a in self.addresses if a.family == "inet")


class IpRoute(msgspec.Struct, frozen=True):
    """One route; `dev` is None for multipath routes (nexthops)."""

    dst: str
    dev: str | None
    prefsrc: str | None
    gateway: str | None
    protocol: str | None
    scope: str | None
    metric: int | None


class IpNeighbour(msgspec.Struct, frozen=True):
    """One neighbour entry; `lladdr` is absent while resolution fails (state FAILED/INCOMPLETE)."""

    dst: str
    dev: str | None
    lladdr: str | None
    state: tuple[str, ...]
    lladdr_masked: bool = False  # pasted with 'xx' bytes: `lladdr` is None


# iproute2 ~5.9/5.10 printed a route's non-unicast type as a bare string: {"blackhole","dst":...}
# (iproute2/iproute2#37). The value is unambiguous, so restore the "type" key instead of failing.
_BARE_ROUTE_TYPE_RE = re.compile(r'\{"([a-z]+)",')


def _decode(text: str, spec: str, *, repair: bool = False) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        if repair and _BARE_ROUTE_TYPE_RE.search(text):
            return _decode(_BARE_ROUTE_TYPE_RE.sub(r'{"type":"\1",', text), spec)
        if not text.lstrip().startswith(("[", "{")):
            # iproute2 < 4.17 ignores -j for route and neigh and prints the text form
            raise ParseError(spec, "not JSON (text output: iproute2 too old for -j here?)", 1) from None
        raise ParseError(spec, f"invalid or truncated JSON: {exc.msg}", exc.lineno) from None
    except (ValueError, RecursionError) as exc:
        raise ParseError(spec, f"invalid JSON: {exc}") from None


def _load_list(text: str, spec: str) -> list[dict[str, Any]]:
    """JSON array of objects; empty text and `[]` are empty; `{}` placeholders are dropped."""
    if "\x00" in text:
        raise ParseError(spec, "binary data (NUL bytes)")
    if not text.strip():
        return []
    data = _decode(text, spec, repair=spec == "ip_route")
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        raise ParseError(spec, "expected a JSON array of objects")
    return [item for item in data if item]


def _str(obj: dict[str, Any], key: str, spec: str) -> str | None:
    value = obj.get(key)
    if value is None or isinstance(value, str):
        return value
    raise ParseError(spec, f"{key!r} is {type(value).__name__}, expected a string")


def _required_str(obj: dict[str, Any], key: str, spec: str) -> str:
    value = _str(obj, key, spec)
    if not value:
        raise ParseError(spec, f"object without {key!r}")
    return value


def _int(obj: dict[str, Any], key: str, spec: str) -> int | None:
    value = obj.get(key)
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise ParseError(spec, f"{key!r} is {type(value).__name__}, expected an integer")


def _strs(obj: dict[str, Any], key: str, spec: str) -> tuple[str, ...]:
    value = obj.get(key)
    if value is None:
        return ()
    if isinstance(value, str):  # a single state word instead of a list, as older releases print
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise ParseError(spec, f"{key!r} is not a list of strings")


def _address(obj: Any, spec: str) -> IpAddress | None:
    if not isinstance(obj, dict):
        raise ParseError(spec, "addr_info holds a non-object")
    if not obj:
        return None
    family, local = _required_str(obj, "family", spec), _required_str(obj, "local", spec)
    prefixlen = _int(obj, "prefixlen", spec)
    if prefixlen is None:
        raise ParseError(spec, f"address {local} without prefixlen")
    try:
        ipaddress.ip_interface(f"{local}/{prefixlen}")
    except ValueError:
        raise ParseError(spec, f"invalid address {local}/{prefixlen}") from None
    return IpAddress(family, local, prefixlen, _str(obj, "scope", spec))


def _addresses(obj: dict[str, Any], spec: str) -> tuple[IpAddress, ...]:
    value = obj.get("addr_info", [])
    if not isinstance(value, list):
        raise ParseError(spec, "addr_info is not a list")
    return tuple(a for a in (_address(item, spec) for item in value) if a is not None)


_MASKED_MAC_RE = re.compile(r"^(?:[0-9a-fA-F]{2}|[xX]{1,2})(?::(?:[0-9a-fA-F]{2}|[xX]{1,2})){5,19}$")


def _mac(obj: dict[str, Any], key: str, spec: str) -> tuple[str | None, bool]:
    """(MAC, masked): a MAC with bytes masked as 'xx' ('3c:6d:66:xx:xx:xx') is no MAC to compare."""
    value = _str(obj, key, spec)
    if value is not None and "x" in value.lower() and _MASKED_MAC_RE.match(value):
        return None, True
    return value, False


def _interface(obj: dict[str, Any], spec: str) -> IpInterface:
    mac, masked = _mac(obj, "address", spec)
    return IpInterface(
        ifname=_required_str(obj, "ifname", spec),
        ifindex=_int(obj, "ifindex", spec),
        flags=_strs(obj, "flags", spec),
        operstate=_str(obj, "operstate", spec),
        mtu=_int(obj, "mtu", spec),
        mac=mac,
        link_type=_str(obj, "link_type", spec),
        phys_port_name=_str(obj, "phys_port_name", spec),
        parentdev=_str(obj, "parentdev", spec),
        altnames=_strs(obj, "altnames", spec),
        addresses=_addresses(obj, spec),
        mac_masked=masked,
    )


def parse_ip_link(text: str) -> tuple[IpInterface, ...]:
    """Parse `ip [-d] -j link show` (-d adds parentdev = PCI BDF, phys_port_name = cage p0/p1).

    >>> i = parse_ip_link('[{"ifindex":4,"ifname":"enp1s0f1np1","flags":["BROADCAST","MULTICAST","UP"],'
    ...                   '"mtu":1500,"operstate":"DOWN","address":"3c:6d:66:cc:b3:b7",'
    ...                   '"parentdev":"0000:01:00.1"}]')[0]
    >>> i.ifname, i.admin_up, i.lower_up, i.parentdev
    ('enp1s0f1np1', True, False, '0000:01:00.1')
    """
    return tuple(_interface(obj, "ip_link") for obj in _load_list(text, "ip_link"))


def parse_ip_addr(text: str) -> tuple[IpInterface, ...]:
    """Parse `ip -j addr show`: the link keys (no linkmode) plus addr_info.

    >>> i = parse_ip_addr('[{"ifname":"enp1s0f1np1","addr_info":[{"family":"inet","local":"192.168.100.10",'
    ...                   '"prefixlen":24,"scope":"global"}]}]')[0]
    >>> i.ipv4[0].local, i.ipv4[0].network
    ('192.168.100.10', '192.168.100.0/24')
    """
    return tuple(_interface(obj, "ip_addr") for obj in _load_list(text, "ip_addr"))


def parse_ip_route(text: str) -> tuple[IpRoute, ...]:
    """Parse `ip -j route show`; `dst` is 'default' for the default route.

    >>> parse_ip_route('[{"dst":"192.168.100.0/24","dev":"enp1s0f1np1","protocol":"kernel",'
    ...                '"scope":"link","prefsrc":"192.168.100.10","flags":[]}]')[0].prefsrc
    '192.168.100.10'
    """
    spec = "ip_route"
    return tuple(
        IpRoute(
            dst=_required_str(obj, "dst", spec),
            dev=_str(obj, "dev", spec),
            prefsrc=_str(obj, "prefsrc", spec),
            gateway=_str(obj, "gateway", spec),
            protocol=_str(obj, "protocol", spec),
            scope=_str(obj, "scope", spec),
            metric=_int(obj, "metric", spec),
        )
        for obj in _load_list(text, spec)
    )


def parse_ip_neigh(text: str) -> tuple[IpNeighbour, ...]:
    """Parse `ip -j neigh show`; the peer twin's MAC is `lladdr` of its IPv4 entry.

    >>> parse_ip_neigh('[{"dst":"192.168.100.11","dev":"enp1s0f1np1","lladdr":"3c:6d:66:cc:b4:01",'
    ...                '"state":["REACHABLE"]}]')[0].state
    ('REACHABLE',)
    """
    spec = "ip_neigh"
    return tuple(_neighbour(obj, spec) for obj in _load_list(text, spec))


def _neighbour(obj: dict[str, Any], spec: str) -> IpNeighbour:
    # iproute2 6.1 leaves "dev" out of `ip -j neigh show to PEER dev IF` objects: dev is then None.
    lladdr, masked = _mac(obj, "lladdr", spec)
    return IpNeighbour(dst=_required_str(obj, "dst", spec), dev=_str(obj, "dev", spec), lladdr=lladdr,
                       state=_strs(obj, "state", spec), lladdr_masked=masked)

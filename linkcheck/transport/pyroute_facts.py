"""The local node through netlink (pyroute2): its `ip -j` answers, rendered in iproute2's own JSON shape (the
changes a repair makes to it are in netlink_change.py).

pyroute2 only sees the kernel it runs in, so this serves the local node only. The keys and value
spellings follow iproute2 6.1 (ip/ipaddress.c, iproute.c, ipneigh.c), so the same parsers read both.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from typing import Any

from pyroute2 import IPRoute

# What each ip_* spec is replaced with on the local node: spec id -> the command it stands for.
PYROUTE_SPECS: dict[str, str] = {
    "ip_link": "ip -d -j link show",
    "ip_addr": "ip -j addr show",
    "ip_route": "ip -j route show",
    "ip_neigh": "ip -j neigh show",
}

# fmt: off
# iproute2 print_link_flags order; NO-CARRIER is printed first when UP without RUNNING.
_IFF = (
    ("LOOPBACK", 0x8), ("BROADCAST", 0x2), ("POINTOPOINT", 0x10), ("MULTICAST", 0x1000), ("NOARP", 0x80),
    ("ALLMULTI", 0x200), ("PROMISC", 0x100), ("MASTER", 0x400), ("SLAVE", 0x800), ("DEBUG", 0x4),
    ("DYNAMIC", 0x8000), ("AUTOMEDIA", 0x4000), ("PORTSEL", 0x2000), ("NOTRAILERS", 0x20), ("UP", 0x1),
    ("LOWER_UP", 0x10000), ("DORMANT", 0x20000), ("ECHO", 0x40000),
)
_IFF_RUNNING = 0x40
_LINK_TYPES = {1: "ether", 32: "infiniband", 772: "loopback", 768: "ipip", 776: "sit", 778: "gre",
               65534: "none"}
_SCOPES = {0: "global", 200: "site", 253: "link", 254: "host", 255: "nowhere"}
_IFA_FLAGS = (
    ("secondary", 0x01), ("nodad", 0x02), ("optimistic", 0x04), ("dadfailed", 0x08), ("home", 0x10),
    ("deprecated", 0x20), ("tentative", 0x40), ("mngtmpaddr", 0x100), ("noprefixroute", 0x200),
    ("autojoin", 0x400), ("stable-privacy", 0x800),
)
_IFA_F_PERMANENT = 0x80
_GEN_MODES = {0: "eui64", 1: "none", 2: "stable_secret", 3: "random"}
_PROTOCOLS = {0: "unspec", 1: "redirect", 2: "kernel", 3: "boot", 4: "static", 9: "ra", 16: "dhcp",
              186: "bgp"}
_ROUTE_TYPES = {2: "local", 3: "broadcast", 4: "anycast", 5: "multicast", 6: "blackhole", 7: "unreachable",
                8: "prohibit", 9: "throw", 10: "nat"}
_RTNH_FLAGS = (("dead", 1), ("pervasive", 2), ("onlink", 4), ("offload", 8), ("linkdown", 16),
               ("unresolved", 32), ("trap", 64))
_NUD = (("INCOMPLETE", 0x01), ("REACHABLE", 0x02), ("STALE", 0x04), ("DELAY", 0x08), ("PROBE", 0x10),
        ("FAILED", 0x20), ("NOARP", 0x40), ("PERMANENT", 0x80))
_NUD_NOARP = 0x40
_NTF_PROXY, _NTF_ROUTER, _NTF_EXT_LEARNED = 0x08, 0x80, 0x10
_RT_TABLE_MAIN = 254
_RTM_F_CLONED = 0x200
# `ip -d link` scalar details: netlink attribute -> iproute2 JSON key.
_DETAILS = (
    ("IFLA_PROMISCUITY", "promiscuity"), ("IFLA_ALLMULTI", "allmulti"), ("IFLA_MIN_MTU", "min_mtu"),
    ("IFLA_MAX_MTU", "max_mtu"), ("IFLA_NUM_TX_QUEUES", "num_tx_queues"), ("IFLA_NUM_RX_QUEUES", "num_rx_queues"),
    ("IFLA_GSO_MAX_SIZE", "gso_max_size"), ("IFLA_GSO_MAX_SEGS", "gso_max_segs"),
    ("IFLA_TSO_MAX_SIZE", "tso_max_size"), ("IFLA_TSO_MAX_SEGS", "tso_max_segs"),
    ("IFLA_GRO_MAX_SIZE", "gro_max_size"), ("IFLA_PARENT_DEV_BUS_NAME", "parentbus"),
    ("IFLA_PARENT_DEV_NAME", "parentdev"), ("IFLA_PHYS_PORT_NAME", "phys_port_name"),
    ("IFLA_PHYS_SWITCH_ID", "phys_switch_id"), ("IFLA_PHYS_PORT_ID", "phys_port_id"),
)
# fmt: on

Msg = Any  # a pyroute2 netlink message: dict-like, `.get(attr)` reads a netlink attribute


def _name(by_index: dict[int, Msg], index: int) -> str:
    """An interface name by index, as iproute2's ll_index_to_name prints it ("if<N>" when unknown)."""
    msg = by_index.get(index)
    return str(msg.get("IFLA_IFNAME")) if msg is not None else f"if{index}"


def _names(table: tuple[tuple[str, int], ...], bits: int) -> list[str]:
    return [name for name, bit in table if bits & bit]


def link_flags(flags: int) -> list[str]:
    """Interface flags exactly as iproute2 lists them (`NO-CARRIER` when up without a carrier)."""
    head = ["NO-CARRIER"] if flags & 0x1 and not flags & _IFF_RUNNING else []
    return head + _names(_IFF, flags)


def _link_common(msg: Msg, by_index: dict[int, Msg]) -> dict[str, Any]:
    out: dict[str, Any] = {"ifindex": msg["index"]}
    lower_down = _lower_link(msg, by_index, out)
    out["ifname"] = msg.get("IFLA_IFNAME")
    out["flags"] = link_flags(msg["flags"]) + (["M-DOWN"] if lower_down else [])
    for attr, key in (("IFLA_MTU", "mtu"), ("IFLA_QDISC", "qdisc")):
        if msg.get(attr) is not None:
            out[key] = msg.get(attr)
    if msg.get("IFLA_MASTER"):
        out["master"] = _name(by_index, msg.get("IFLA_MASTER"))
    out["operstate"] = msg.get("IFLA_OPERSTATE") or "UNKNOWN"
    out["group"] = "default" if not msg.get("IFLA_GROUP") else str(msg.get("IFLA_GROUP"))
    if msg.get("IFLA_TXQLEN") is not None:
        out["txqlen"] = msg.get("IFLA_TXQLEN")
    out["link_type"] = _LINK_TYPES.get(msg["ifi_type"], f"[{msg['ifi_type']}]")
    for attr, key in (("IFLA_ADDRESS", "address"), ("IFLA_BROADCAST", "broadcast")):
        if msg.get(attr) is not None:
            out[key] = msg.get(attr)
    if msg.get("IFLA_LINK_NETNSID") is not None and msg.get("IFLA_LINK_NETNSID") >= 0:
        out["link_netnsid"] = msg.get("IFLA_LINK_NETNSID")
    perm = msg.get("IFLA_PERM_ADDRESS")
    if perm and perm != out.get("address"):
        out["permaddr"] = perm
    altnames = _altnames(msg)
    if altnames:
        out["altnames"] = altnames
    return out


def _lower_link(msg: Msg, by_index: dict[int, Msg], out: dict[str, Any]) -> bool:
    """Record the lower device (veth peer, vlan parent) like iproute2; True when it is down (M-DOWN)."""
    lower = msg.get("IFLA_LINK")
    if lower is None:
        return False
    if lower == 0:
        out["link"] = None
    elif msg.get("IFLA_LINK_NETNSID") is not None:
        out["link_index"] = lower  # the peer lives in another namespace: only its index is known
    else:
        out["link"] = _name(by_index, lower)
        lower_msg = by_index.get(lower)
        return lower_msg is not None and not lower_msg["flags"] & 0x1
    return False


def _altnames(msg: Msg) -> list[str]:
    props = msg.get("IFLA_PROP_LIST")
    if props is None:
        return []
    return [str(name) for name in props.get_attrs("IFLA_ALT_IFNAME")]


def _addr_gen_mode(msg: Msg) -> str | None:
    spec = msg.get("IFLA_AF_SPEC")
    inet6 = spec.get("AF_INET6") if spec is not None else None
    mode = inet6.get("IFLA_INET6_ADDR_GEN_MODE") if inet6 is not None else None
    return None if mode is None else _GEN_MODES.get(mode, str(mode))


def link_json(msg: Msg, by_index: dict[int, Msg], *, details: bool) -> dict[str, Any]:
    """One `ip [-d] -j link show` object."""
    out = _link_common(msg, by_index)
    if details:
        out["linkmode"] = "DORMANT" if msg.get("IFLA_LINKMODE") == 1 else "DEFAULT"
        for attr, key in _DETAILS:
            if msg.get(attr) is not None:
                out[key] = msg.get(attr)
        gen_mode = _addr_gen_mode(msg)
        if gen_mode is not None:
            out["inet6_addr_gen_mode"] = gen_mode
        info = msg.get("IFLA_LINKINFO")
        if info is not None and info.get("IFLA_INFO_KIND"):
            out["linkinfo"] = {"info_kind": info.get("IFLA_INFO_KIND")}
    return out


def addr_json(msg: Msg) -> dict[str, Any]:
    """One `addr_info` entry of `ip -j addr show`."""
    family = "inet" if msg["family"] == socket.AF_INET else "inet6"
    local = msg.get("IFA_LOCAL") or msg.get("IFA_ADDRESS")
    out: dict[str, Any] = {"family": family, "local": local}
    if msg.get("IFA_ADDRESS") and msg.get("IFA_LOCAL") and msg.get("IFA_ADDRESS") != msg.get("IFA_LOCAL"):
        out["address"] = msg.get("IFA_ADDRESS")  # the peer of a point-to-point address
    out["prefixlen"] = msg["prefixlen"]
    if msg.get("IFA_BROADCAST"):
        out["broadcast"] = msg.get("IFA_BROADCAST")
    out["scope"] = _SCOPES.get(msg["scope"], str(msg["scope"]))
    flags = msg.get("IFA_FLAGS") if msg.get("IFA_FLAGS") is not None else msg["flags"]
    if not flags & _IFA_F_PERMANENT:
        out["dynamic"] = True
    for name in _names(_IFA_FLAGS, flags):
        out["temporary" if name == "secondary" and family == "inet6" else name] = True
    if msg.get("IFA_LABEL"):
        out["label"] = msg.get("IFA_LABEL")
    cache = msg.get("IFA_CACHEINFO")
    if cache:
        out["valid_life_time"] = cache["ifa_valid"]
        out["preferred_life_time"] = cache["ifa_preferred"]
    return out


def route_json(msg: Msg, by_index: dict[int, Msg]) -> dict[str, Any]:
    """One `ip -j route show` object (main table, IPv4)."""
    out: dict[str, Any] = {}
    if msg["type"] != 1:
        out["type"] = _ROUTE_TYPES.get(msg["type"], str(msg["type"]))
    dst = msg.get("RTA_DST")
    out["dst"] = (
        "default"
        if dst is None and msg["dst_len"] == 0
        else (dst if msg["dst_len"] == 32 else f"{dst}/{msg['dst_len']}")
    )
    if msg.get("RTA_GATEWAY"):
        out["gateway"] = msg.get("RTA_GATEWAY")
    if msg.get("RTA_OIF"):
        out["dev"] = _name(by_index, msg.get("RTA_OIF"))
    if msg["proto"] != 3:  # iproute2 leaves out "boot", the default
        out["protocol"] = _PROTOCOLS.get(msg["proto"], str(msg["proto"]))
    if msg["scope"] != 0:
        out["scope"] = _SCOPES.get(msg["scope"], str(msg["scope"]))
    if msg.get("RTA_PRIORITY") is not None:
        out["metric"] = msg.get("RTA_PRIORITY")
    if msg.get("RTA_PREFSRC"):
        out["prefsrc"] = msg.get("RTA_PREFSRC")
    out["flags"] = _names(_RTNH_FLAGS, msg["flags"] & 0xFF)
    return out


def neigh_json(msg: Msg, by_index: dict[int, Msg]) -> dict[str, Any]:
    """One `ip -j neigh show` object."""
    out: dict[str, Any] = {"dst": msg.get("NDA_DST"), "dev": _name(by_index, msg["ifindex"])}
    if msg.get("NDA_LLADDR"):
        out["lladdr"] = msg.get("NDA_LLADDR")
    if msg["flags"] & _NTF_ROUTER:
        out["router"] = True
    if msg["flags"] & _NTF_PROXY:
        out["proxy"] = True
    out["state"] = _names(_NUD, msg["state"]) or ["NONE"]
    return out


def _neigh_shown(msg: Msg) -> bool:
    # ipneigh.c: `ip neigh show` hides NOARP entries and entries without any state.
    state, flags = msg["state"], msg["flags"]
    return bool(flags & (_NTF_PROXY | _NTF_EXT_LEARNED)) or bool(state and state & ~_NUD_NOARP & 0xFF)


def _route_shown(msg: Msg) -> bool:
    table = msg.get("RTA_TABLE") if msg.get("RTA_TABLE") is not None else msg["table"]
    return bool(table == _RT_TABLE_MAIN and not msg["flags"] & _RTM_F_CLONED)


def render_ip_json() -> dict[str, str]:
    """spec id -> the JSON text `ip -j` would print on this machine, read through netlink with pyroute2."""
    with IPRoute() as ipr:
        links = list(ipr.get_links())
        addrs = list(ipr.get_addr())
        routes = [r for r in ipr.get_routes(family=socket.AF_INET) if _route_shown(r)]
        neighs = [n for n in ipr.get_neighbours() if _neigh_shown(n)]
    by_index = {int(msg["index"]): msg for msg in links}
    with_addrs = []
    for link in links:
        entry = _link_common(link, by_index)
        entry["addr_info"] = [addr_json(a) for a in addrs if a["index"] == link["index"]]
        with_addrs.append(entry)
    dump: Callable[[Any], str] = lambda value: json.dumps(value, separators=(",", ":")) + "\n"  # noqa: E731
    return {
        "ip_link": dump([link_json(link, by_index, details=True) for link in links]),
        "ip_addr": dump(with_addrs),
        "ip_route": dump([route_json(r, by_index) for r in routes]),
        "ip_neigh": dump([neigh_json(n, by_index) for n in neighs]),
    }

"""`ip -d -j link show`, `ip -j addr show`, `ip -j route show`, `ip -j neigh show` in iproute2 6.1 JSON.

Key order follows ip/ipaddress.c and ip/iproute.c print functions (checked against outputs captured on
iproute2 6.1.0 in tests/samples/iproute): one compact JSON array and a newline.
"""

from __future__ import annotations

import ipaddress
import json
from typing import Any

from tests.emulators.derive import eui64, guid_hex, ifindex_map, node_routes, sys_image_guid
from tests.emulators.node import Function, Node

Output = tuple[str, str, int]
FOREVER = 4294967295


def _dump(items: list[dict[str, Any]]) -> str:
    return json.dumps(items, separators=(",", ":")) + "\n"


def _flags(admin_up: bool, carrier: bool) -> list[str]:
    if not admin_up:
        return ["BROADCAST", "MULTICAST"]
    if not carrier:
        return ["NO-CARRIER", "BROADCAST", "MULTICAST", "UP"]
    return ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"]


def _altname(mac: str) -> str:
    # systemd >= 255 (Ubuntu 24.04) adds the MAC-based alternative name enx<mac>.
    return "enx" + mac.replace(":", "")


def _head(node: Node, name: str, up: bool, carrier: bool, mtu: int, qdisc: str) -> dict[str, Any]:
    return {
        "ifindex": ifindex_map(node)[name],
        "ifname": name,
        "flags": _flags(up, carrier),
        "mtu": mtu,
        "qdisc": qdisc,
        "operstate": "UP" if up and carrier else "DOWN",
    }


def _lo(node: Node, details: bool, link: bool) -> dict[str, Any]:
    d: dict[str, Any] = {"ifindex": 1, "ifname": "lo", "flags": ["LOOPBACK", "UP", "LOWER_UP"], "mtu": 65536,
                         "qdisc": "noqueue", "operstate": "UNKNOWN"}
    if link:
        d["linkmode"] = "DEFAULT"
    d.update({"group": "default", "txqlen": 1000, "link_type": "loopback", "address": "00:00:00:00:00:00",
              "broadcast": "00:00:00:00:00:00"})
    if details:
        d.update({"promiscuity": 0, "allmulti": 0, "min_mtu": 0, "max_mtu": 0, "inet6_addr_gen_mode": "eui64",
                  "num_tx_queues": 1, "num_rx_queues": 1, "gso_max_size": 65536, "gso_max_segs": 65535,
                  "tso_max_size": 524280, "tso_max_segs": 65535, "gro_max_size": 65536})
    return d


def _ether(node: Node, fn: Function | None, details: bool, link: bool) -> dict[str, Any]:
    """The management NIC (fn None) or a CX-7 function."""
    if fn is None:
        m = node.mgmt
        d = _head(node, m.name, True, True, 1500, "mq")
        mac, queues, max_mtu = m.mac, (4, 4), 9194
    else:
        d = _head(node, fn.netdev, fn.admin_up, fn.carrier, fn.mtu, "mq" if fn.admin_up else "noop")
        mac, queues, max_mtu = fn.mac, (160, 20), 9978
    if link:
        d["linkmode"] = "DEFAULT"
    d.update({"group": "default", "txqlen": 1000, "link_type": "ether", "address": mac,
              "broadcast": "ff:ff:ff:ff:ff:ff"})
    if details:
        d.update({"promiscuity": 0, "allmulti": 0, "min_mtu": 68, "max_mtu": max_mtu,
                  "inet6_addr_gen_mode": "eui64", "num_tx_queues": queues[0], "num_rx_queues": queues[1],
                  "gso_max_size": 65536, "gso_max_segs": 65535, "tso_max_size": 524280, "tso_max_segs": 65535,
                  "gro_max_size": 65536})
        if fn is not None:
            d["phys_port_name"] = fn.cage
            d["phys_switch_id"] = guid_hex(sys_image_guid(node))
        d.update({"parentbus": "pci", "parentdev": node.mgmt.bdf if fn is None else fn.bdf})
    d["altnames"] = [_altname(mac)]
    return d


def _interfaces(node: Node, details: bool, link: bool) -> list[tuple[dict[str, Any], Function | None]]:
    items: list[tuple[dict[str, Any], Function | None]] = [(_lo(node, details, link), None)]
    items.append((_ether(node, None, details, link), None))
    for fn in sorted(node.functions, key=lambda f: f.bdf):
        items.append((_ether(node, fn, details, link), fn))
    return items


def render_ip_link(node: Node) -> Output:
    return _dump([d for d, _ in _interfaces(node, details=True, link=True)]), "", 0


def _inet(cidr: str, label: str, dynamic_s: int | None = None) -> dict[str, Any]:
    iface = ipaddress.IPv4Interface(cidr)
    d: dict[str, Any] = {"family": "inet", "local": str(iface.ip), "prefixlen": iface.network.prefixlen}
    if iface.network.prefixlen < 31:
        d["broadcast"] = str(iface.network.broadcast_address)
    d["scope"] = "global"
    if dynamic_s is not None:
        d["dynamic"] = True
        d["noprefixroute"] = True
    d["label"] = label
    life = FOREVER if dynamic_s is None else dynamic_s
    d.update({"valid_life_time": life, "preferred_life_time": life})
    return d


def _inet6(local: str, prefixlen: int, scope: str) -> dict[str, Any]:
    return {"family": "inet6", "local": local, "prefixlen": prefixlen, "scope": scope,
            "valid_life_time": FOREVER, "preferred_life_time": FOREVER}


def _link_local(mac: str) -> dict[str, Any]:
    iid = eui64(mac)
    groups = [f"{(iid[i] << 8) | iid[i + 1]:x}" for i in range(0, 8, 2)]
    return _inet6("fe80::" + ":".join(groups), 64, "link")


def _addr_info(node: Node, d: dict[str, Any], fn: Function | None) -> list[dict[str, Any]]:
    name = d["ifname"]
    if name == "lo":
        return [{"family": "inet", "local": "127.0.0.1", "prefixlen": 8, "scope": "host", "label": "lo",
                 "valid_life_time": FOREVER, "preferred_life_time": FOREVER}, _inet6("::1", 128, "host")]
    if fn is None:
        return [_inet(node.mgmt.ipv4, name, dynamic_s=85663), _link_local(node.mgmt.mac)]
    info = [_inet(c, name) for c in fn.ipv4]
    for cidr in fn.ipv6:
        iface = ipaddress.IPv6Interface(cidr)
        info.append(_inet6(str(iface.ip), iface.network.prefixlen, "global"))
    if fn.link_up:  # IPv6 link-local appears only once the link is up (addrconf waits for carrier)
        info.append(_link_local(fn.mac))
    return info


def render_ip_addr(node: Node) -> Output:
    out = []
    for d, fn in _interfaces(node, details=False, link=False):
        d["addr_info"] = _addr_info(node, d, fn)
        out.append(d)
    return _dump(out), "", 0


def render_ip_route(node: Node) -> Output:
    out = []
    for r in node_routes(node):
        d: dict[str, Any] = {"dst": r.dst}
        if r.gateway:
            d["gateway"] = r.gateway
        d["dev"] = r.dev
        d["protocol"] = r.protocol
        if r.scope:
            d["scope"] = r.scope
        if r.prefsrc:
            d["prefsrc"] = r.prefsrc
        if r.metric is not None:
            d["metric"] = r.metric
        d["flags"] = ["linkdown"] if r.linkdown else []
        out.append(d)
    return _dump(out), "", 0


def render_ip_neigh(node: Node) -> Output:
    gw = {"dst": node.mgmt.gateway, "dev": node.mgmt.name, "lladdr": "c8:7f:54:0a:11:01", "state": ["REACHABLE"]}
    out = [gw] + [{"dst": n.dst, "dev": n.dev, "lladdr": n.lladdr, "state": [n.state]} for n in node.neighbours]
    return _dump(out), "", 0

"""Values the kernel and drivers derive from the node model: GIDs, GUIDs, RoCE MTU, port states, routes.

One place for these rules so every emulated tool shows the same truth (a GID seen by show_gids, sysfs,
ibv_devinfo, perftest and NCCL is the same entry).
"""

from __future__ import annotations

import ipaddress

from tests.emulators.node import GID_TYPE_V1, GID_TYPE_V2, Function, GidSlot, Node, Route

GID_TBL_LEN = 255  # mlx5 RoCE ports
ZERO_GID = "0000:0000:0000:0000:0000:0000:0000:0000"


def mac_bytes(mac: str) -> list[int]:
    return [int(x, 16) for x in mac.split(":")]


def eui64(mac: str) -> list[int]:
    """Modified EUI-64 interface id of a MAC (U/L bit flipped, ff:fe inserted)."""
    b = mac_bytes(mac)
    return [b[0] ^ 0x02, b[1], b[2], 0xFF, 0xFE, b[3], b[4], b[5]]


def _groups(raw: list[int]) -> str:
    return ":".join(f"{raw[i]:02x}{raw[i + 1]:02x}" for i in range(0, len(raw), 2))


def gid_bytes(gid: str) -> list[int]:
    return list(ipaddress.IPv6Address(gid).packed)


def fe80_gid(mac: str) -> str:
    return _groups([0xFE, 0x80, 0, 0, 0, 0, 0, 0, *eui64(mac)])


def ipv4_gid(ip: str) -> str:
    return _groups([0] * 10 + [0xFF, 0xFF] + list(ipaddress.IPv4Address(ip).packed))


def ipv6_gid(ip: str) -> str:
    return _groups(list(ipaddress.IPv6Address(ip).packed))


def default_gid_slots(fn: Function) -> tuple[GidSlot, ...]:
    """mlx5 order: fe80 v1, fe80 v2, then a v1/v2 pair per IPv4 address, then per global IPv6 address."""
    gids = [fe80_gid(fn.mac)]
    gids += [ipv4_gid(c.split("/")[0]) for c in fn.ipv4]
    gids += [ipv6_gid(c.split("/")[0]) for c in fn.ipv6]
    slots: list[GidSlot] = []
    for gid in gids:
        for gid_type in (GID_TYPE_V1, GID_TYPE_V2):
            slots.append(GidSlot(len(slots), gid, gid_type, fn.netdev))
    return tuple(slots)


def gid_slots(fn: Function) -> dict[int, GidSlot]:
    """The populated (or explicitly emptied) slots by index."""
    slots = fn.gid_slots if fn.gid_slots is not None else default_gid_slots(fn)
    return {s.index: s for s in slots}


def gid_entry(fn: Function, index: int) -> GidSlot:
    """The slot at `index`; an absent index is an empty slot (zero GID, no type, no ndev)."""
    slot = gid_slots(fn).get(index)
    if slot is None or slot.type is None:
        return GidSlot(index, ZERO_GID, None, None)
    return slot


def inet_ntop6(gid: str) -> str:
    """glibc inet_ntop(AF_INET6): compressed, IPv4-mapped addresses with a dotted tail."""
    addr = ipaddress.IPv6Address(gid)
    if addr.ipv4_mapped is not None:
        return f"::ffff:{addr.ipv4_mapped}"
    return addr.compressed


def ipv4_of_gid(gid: str) -> str | None:
    raw = gid_bytes(gid)
    if raw[:10] == [0] * 10 and raw[10:12] == [0xFF, 0xFF]:
        return ".".join(str(x) for x in raw[12:])
    return None


def auto_gid_index(fn: Function) -> int:
    """What NCCL >= 2.21 and perftest pick without a pin: the first IPv4 RoCE v2 GID, else 0."""
    for index in sorted(gid_slots(fn)):
        slot = gid_entry(fn, index)
        if slot.type == GID_TYPE_V2 and ipv4_of_gid(slot.gid) is not None:
            return index
    return 0


def guid_of_mac(mac: str) -> str:
    """Node GUID in sysfs form: the MAC with 03:00 inserted after the OUI."""
    b = mac_bytes(mac)
    return _groups([b[0], b[1], b[2], 0x03, 0x00, b[3], b[4], b[5]])


def node_guid(fn: Function) -> str:
    return fn.node_guid or guid_of_mac(fn.mac)


def sys_image_guid(node: Node) -> str:
    """All four functions share the system image GUID of the first function (domain 0000, f0)."""
    first = sorted(node.functions, key=lambda f: f.bdf)[0]
    return node_guid(first)


def guid_hex(guid: str) -> str:
    return guid.replace(":", "")


def roce_mtu(netdev_mtu: int) -> tuple[int, int]:
    """RoCE active MTU (bytes, IB enum) for a netdev MTU: largest IB MTU fitting mtu minus RoCE headers."""
    payload = netdev_mtu - 96  # GRH 40 + UDP 8 + BTH 12 + ext 28 + ICRC 4 + pad
    best = (256, 1)
    for size, enum in ((256, 1), (512, 2), (1024, 3), (2048, 4), (4096, 5)):
        if size <= payload:
            best = (size, enum)
    return best


def port_state(fn: Function) -> tuple[str, int, str, int]:
    """(state, state code, physical state, physical code) in the kernel's IB port terms."""
    if fn.link_up:
        return ("ACTIVE", 4, "LINK_UP", 5)
    return ("DOWN", 1, "DISABLED", 3)


def port_rate(fn: Function) -> tuple[int, int, int, str]:
    """(rate Gb/s, width code, speed code, sysfs rate text): 2X x 100G up; 4X QDR (40) while down."""
    if fn.link_up:
        return (200, 16, 128, "200 Gb/sec (2X NDR)")
    return (40, 2, 8, "40 Gb/sec (4X QDR)")


def cidr_network(cidr: str) -> ipaddress.IPv4Network:
    return ipaddress.IPv4Interface(cidr).network


def derived_routes(node: Node) -> tuple[Route, ...]:
    """Default via the management NIC, then one connected route per IPv4 address (linkdown when no carrier)."""
    mgmt_ip = node.mgmt.ipv4.split("/")[0]
    routes = [
        Route("default", node.mgmt.name, "dhcp", None, mgmt_ip, node.mgmt.gateway, 100),
        Route(str(cidr_network(node.mgmt.ipv4)), node.mgmt.name, "kernel", "link", mgmt_ip, None, 100),
    ]
    for fn in node.functions:
        if not fn.admin_up:
            continue
        for cidr in fn.ipv4:
            routes.append(
                Route(str(cidr_network(cidr)), fn.netdev, "kernel", "link", cidr.split("/")[0], None, None,
                      not fn.carrier)
            )
    head, rest = routes[:1], routes[1:]
    rest.sort(key=lambda r: int(ipaddress.IPv4Network(r.dst).network_address))
    return tuple(head + rest)


def node_routes(node: Node) -> tuple[Route, ...]:
    return node.routes if node.routes is not None else derived_routes(node)


def ifindex_map(node: Node) -> dict[str, int]:
    """Interface indices: lo, the management NIC, then the CX-7 functions in PCI order."""
    names = ["lo", node.mgmt.name] + [f.netdev for f in sorted(node.functions, key=lambda f: f.bdf)]
    return {name: i + 1 for i, name in enumerate(names)}


def rdma_index_map(node: Node) -> dict[str, int]:
    return {f.rdma_dev: i for i, f in enumerate(sorted(node.functions, key=lambda f: f.bdf))}


def nccl_gid_pin(node: Node) -> int | None:
    """NCCL_IB_GID_INDEX as NCCL sees it: the environment wins over ~/.nccl.conf over /etc/nccl.conf."""
    if "NCCL_IB_GID_INDEX" in node.nccl_env:
        return _int_or_zero(node.nccl_env["NCCL_IB_GID_INDEX"])
    for text in (node.nccl_conf_user, node.nccl_conf):
        for line in (text or "").splitlines():
            key, sep, value = line.strip().partition("=")
            if sep and key.strip() == "NCCL_IB_GID_INDEX":
                return _int_or_zero(value.strip())
    return None


def _int_or_zero(value: str) -> int:
    # An empty NCCL_IB_GID_INDEX= parses as 0 in NCCL (the fe80 GID), a known trap.
    try:
        return int(value)
    except ValueError:
        return 0


def dev_sort_key(name: str) -> bytes:
    """C-locale (byte) order, as `ls` and shell globs sort under LC_ALL=C."""
    return name.encode()

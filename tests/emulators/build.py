"""Builders for GB10 node models: the four CX-7 functions, netplan files, boot logs, neighbour pairing."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import replace

from tests.emulators.node import Cable, DmesgLine, Function, MgmtNic, Neighbour, NetplanFile, Node

# (bdf, netdev, rdma device, cage, MAC offset from the base): GB10 observed pattern base/+1/+4/+5.
GB10_LAYOUT: tuple[tuple[str, str, str, str, int], ...] = (
    ("0000:01:00.0", "enp1s0f0np0", "rocep1s0f0", "p0", 0),
    ("0000:01:00.1", "enp1s0f1np1", "rocep1s0f1", "p1", 1),
    ("0002:01:00.0", "enP2p1s0f0np0", "roceP2p1s0f0", "p0", 4),
    ("0002:01:00.1", "enP2p1s0f1np1", "roceP2p1s0f1", "p1", 5),
)
Addrs = Mapping[str, tuple[str, ...]]  # netdev -> IPv4 CIDRs
NETPLAN_PATH = "/etc/netplan/40-cx7.yaml"
NM_ALL_PATH = "/etc/netplan/01-network-manager-all.yaml"
NM_ALL_TEXT = (
    "# Let NetworkManager manage all devices on this system\nnetwork:\n  version: 2\n  renderer: NetworkManager\n"
)


def mac_add(base: str, n: int) -> str:
    value = int(base.replace(":", ""), 16) + n
    raw = f"{value:012x}"
    return ":".join(raw[i:i + 2] for i in range(0, 12, 2))


def gb10_functions(mac_base: str, cabled_cage: str | None, addrs: Addrs,
                   mtu: dict[str, int]) -> tuple[Function, ...]:
    """The four functions; the twins of the cabled cage have carrier, the others none."""
    out = []
    for bdf, netdev, rdma, cage, off in GB10_LAYOUT:
        up = cage == cabled_cage
        out.append(Function(
            bdf=bdf, netdev=netdev, rdma_dev=rdma, cage=cage, mac=mac_add(mac_base, off),
            mtu=mtu.get(netdev, 1500), carrier=up, ipv4=addrs.get(netdev, ()),
            carrier_changes=2 if up else 1,
            port_xmit_data=3_711_284_118 if up else 0, port_rcv_data=3_709_837_552 if up else 0,
        ))
    return tuple(out)


def netplan_yaml(addrs: Addrs, mtu: dict[str, int]) -> str:
    """The file a user writes after NVIDIA's playbook (two-subnet layout), with MTU where set."""
    text = "network:\n  version: 2\n  ethernets:\n"
    for netdev, cidrs in addrs.items():
        text += f"    {netdev}:\n      addresses:\n"
        text += "".join(f"        - {c}\n" for c in cidrs)
        if netdev in mtu:
            text += f"      mtu: {mtu[netdev]}\n"
        text += "      dhcp4: no\n"
    return text


def boot_dmesg(node_functions: tuple[Function, ...], cabled_cage: str | None, at_s: float = 4.8) -> list[DmesgLine]:
    """mlx5 probe with the cable present at boot: module events, link up, the benign 27 W notice."""
    lines: list[DmesgLine] = []
    t = at_s
    for fn in sorted(node_functions, key=lambda f: f.bdf):
        lines += [
            DmesgLine(t, f"mlx5_core {fn.bdf}: enabling device (0000 -> 0002)"),
            DmesgLine(t + 0.000211, f"mlx5_core {fn.bdf}: firmware version: {fn.fw_ver}"),
            DmesgLine(t + 0.000248, f"mlx5_core {fn.bdf}: {fn.pcie_width * 31.506:.3f} Gb/s available PCIe "
                                    f"bandwidth ({fn.pcie_speed_gts:.1f} GT/s PCIe x{fn.pcie_width} link)"),
        ]
        t += 0.41
    for fn in sorted(node_functions, key=lambda f: f.bdf):
        module = fn.cage[1:]
        state = "plugged" if fn.cage == cabled_cage else "unplugged"
        lines.append(DmesgLine(t, f"mlx5_core {fn.bdf}: Port module event: module {module}, Cable {state}"))
        lines.append(DmesgLine(t + 0.0921, f"mlx5_core {fn.bdf}: mlx5_pcie_event:301:(pid 312): Detected "
                                           "insufficient power on the PCIe slot (27W)."))
        t += 0.013
    t += 3.1
    for fn in sorted(node_functions, key=lambda f: f.bdf):
        if fn.cage == cabled_cage:
            lines.append(DmesgLine(t, f"mlx5_core {fn.bdf} {fn.netdev}: Link up"))
            lines.append(DmesgLine(t + 0.000388, f"mlx5_core {fn.bdf} {fn.rdma_dev}: Port: 1 Link ACTIVE"))
            t += 0.52
    return lines


def hotplug_dmesg(node_functions: tuple[Function, ...], cage: str, at_s: float) -> list[DmesgLine]:
    """The cable inserted after boot: the cx7-pcie-hotplug driver re-adds the PFs, then the link comes up."""
    plugin = DmesgLine(at_s, "cx7-pcie-hotplug MTKP0001:00: Cable plugin")
    return [plugin, *boot_dmesg(node_functions, cage, at_s + 2.7)]


def gb10_node(hostname: str, mac_base: str, *, addrs: Addrs, mtu: dict[str, int] | None = None,
              cabled_cage: str | None = "p1", cable: Cable | None = None, mgmt_ip: str = "10.20.0.21/24",
              netplan_mtu: dict[str, int] | None = None, extra_netplan: tuple[NetplanFile, ...] = (),
              uptime_s: float = 172_800.0) -> Node:
    """A GB10 node whose netplan file says what is live (netplan_mtu overrides the MTU the file holds)."""
    mtu = dict(mtu or {})
    fns = gb10_functions(mac_base, cabled_cage, addrs, mtu)
    file_mtu = mtu if netplan_mtu is None else netplan_mtu
    files = (*extra_netplan, NetplanFile(NETPLAN_PATH, netplan_yaml(addrs, file_mtu)))
    return Node(
        hostname=hostname, functions=fns, cabled_cage=cabled_cage, cable=cable if cable is not None else Cable(),
        netplan_files=files, dmesg=tuple(boot_dmesg(fns, cabled_cage)), uptime_s=uptime_s,
        mgmt=MgmtNic(mac=mac_add(mac_base, -1), ipv4=mgmt_ip),
        product_serial=_serial_of(hostname), boot_id=_boot_id_of(hostname),
    )


def _serial_of(hostname: str) -> str:
    """A DGX Spark-shaped 13-digit serial of its own per node, stable for a hostname."""
    import zlib

    return f"15819250{zlib.crc32(hostname.encode()) % 100000:05d}"


def _boot_id_of(hostname: str) -> str:
    import uuid

    return str(uuid.uuid5(uuid.NAMESPACE_DNS, f"boot.{hostname}"))


def with_function(node: Node, netdev: str, **changes: object) -> Node:
    """A copy of the node with one function changed (dataclasses.replace on that function)."""
    fns = tuple(replace(f, **changes) if f.netdev == netdev else f for f in node.functions)  # type: ignore[arg-type]
    return replace(node, functions=fns)


def _peer_for(fn: Function, peer: Node) -> list[tuple[str, Function]]:
    nets = [ipaddress.IPv4Interface(c).network for c in fn.ipv4]
    found = [(c.split("/")[0], p) for p in peer.functions if p.link_up for c in p.ipv4
             if any(ipaddress.IPv4Address(c.split("/")[0]) in n for n in nets)]
    same_domain = [(ip, p) for ip, p in found if p.domain == fn.domain]
    return same_domain or found


def neighbours_to(node: Node, peer: Node) -> tuple[Neighbour, ...]:
    """Entries RoCE traffic leaves: each local twin resolved its peer twin's IP to that twin's own MAC."""
    out = []
    for fn in sorted(node.functions, key=lambda f: f.bdf):
        if fn.link_up:
            out += [Neighbour(ip, fn.netdev, p.mac) for ip, p in _peer_for(fn, peer)]
    return tuple(out)


def paired(a: Node, b: Node) -> tuple[Node, Node]:
    """Both nodes with neighbour tables filled from each other."""
    return replace(a, neighbours=neighbours_to(a, b)), replace(b, neighbours=neighbours_to(b, a))

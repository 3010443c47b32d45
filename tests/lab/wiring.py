"""Data links: veth pairs between node namespaces, named, addressed and sized like the GB10's CX-7 ports.

A link with a peer becomes one veth pair whose ends are born in the two node namespaces. A link on a
switch gets its partner end in the per-lab "switch" namespace, as a port of the Linux bridge
`br-<switch>` there (one L2 domain for every link on it, as a switch's VLAN is). A link without either
(an empty cage) gets its partner end in a per-lab "sink" namespace, left down, so the node's end has no
carrier, as a CX-7 port without a cable. The model's RJ45 management NIC becomes a
veth into the sink too (up there, so it has carrier), with the model's address and default route.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from tests.lab import netns
from tests.lab.addresses import map_cidr, map_ip, require_lab_cidr
from tests.lab.state import LabState

if TYPE_CHECKING:
    from tests.lab.node import LabNode


def wire_data_links(lab_id: str, nodes: Mapping[str, LabNode], state: LabState) -> None:
    """Create and configure every data link of every node, each pair once."""
    done: set[tuple[str, str]] = set()
    sink = f"{lab_id}-sink"
    for node in nodes.values():
        for index, link in enumerate(node.spec.links):
            if (node.name, link.ifname) in done:
                continue
            end = netns.VethEnd(node.netns, link.ifname, link.mac, link.mtu)
            if link.switch is not None:
                _switch_port(lab_id, link.switch, end, f"{node.name}-{index}", state)
            elif link.peer is None:
                _ensure_sink(sink, state)
                netns.add_veth(end, netns.VethEnd(sink, f"x{node.name}{index}"))
            else:
                peer_node = nodes[link.peer[0]]
                peer = next(p for p in peer_node.spec.links if p.ifname == link.peer[1])
                netns.add_veth(end, netns.VethEnd(peer_node.netns, peer.ifname, peer.mac, peer.mtu))
                netns.configure(peer_node.netns, peer.ifname, peer.lab_addresses(), peer.up)
                done.add((peer_node.name, peer.ifname))
            netns.configure(node.netns, link.ifname, link.lab_addresses(), link.up)
            done.add((node.name, link.ifname))
        add_oob_nic(node, sink, state)


def add_oob_nic(node: LabNode, sink: str, state: LabState) -> None:
    """The model's RJ45 NIC: a veth whose partner sits, up but unaddressed, in the sink namespace.

    It has carrier, the model's MAC, address and default route, and everything sent through it ends in
    the sink (no addresses, no forwarding). A veth rather than a dummy: some kernels lack the dummy module.
    """
    oob = node.spec.oob
    if oob is None:
        return
    _ensure_sink(sink, state)
    netns.add_veth(netns.VethEnd(node.netns, oob.ifname, oob.mac), netns.VethEnd(sink, f"oob-{node.name}"))
    netns.configure(sink, f"oob-{node.name}", [], up=True)
    addresses = [map_cidr(oob.address)] if oob.address else []
    for cidr in addresses:
        require_lab_cidr(cidr, f"node {node.name} {oob.ifname}")
    netns.configure(node.netns, oob.ifname, addresses, up=True)
    if oob.gateway and addresses:
        gateway = map_ip(oob.gateway)
        require_lab_cidr(gateway + "/32", f"node {node.name} gateway")
        netns.run([netns.IP, "-n", node.netns, "route", "add", "default", "via", gateway, "dev", oob.ifname])


def _switch_port(lab_id: str, switch: str, end: netns.VethEnd, port: str, state: LabState) -> None:
    """A veth from the node to a new port of the switch's bridge (created with the switch namespace on first use)."""
    ns = f"{lab_id}-sw"
    bridge = f"br-{switch}"
    if ns not in state.netns:
        state.netns.append(ns)
        state.save()
        netns.add_netns(ns)
    if not netns.link_exists(bridge, ns):
        # No STP: a lab switch has no loops, and STP's listening/learning delay would hold traffic ~30 s.
        netns.run([netns.IP, "-n", ns, "link", "add", bridge, "type", "bridge", "stp_state", "0"])
        netns.configure(ns, bridge, [], up=True)
    netns.add_veth(end, netns.VethEnd(ns, port, None, end.mtu))
    netns.run([netns.IP, "-n", ns, "link", "set", "dev", port, "master", bridge, "mtu", str(end.mtu or 1500)])
    netns.configure(ns, port, [], up=True)


def _ensure_sink(sink: str, state: LabState) -> None:
    if sink in state.netns:
        return
    state.netns.append(sink)
    state.save()
    netns.add_netns(sink)

"""What a lab node is made of: its data links, its node model and its degradations, declared as data."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from linkcheck.model import MAX_NODES  # a lab is at most the largest cluster linkcheck checks
from tests.lab.addresses import map_cidr, require_lab_cidr
from tests.lab.containers import ContainerSpec
from tests.lab.errors import LabError

# Node names end up in namespace and host-side interface names (15 characters at most in all).
NODE_NAME_RE = re.compile(r"^[a-z][a-z0-9]{0,3}$")
SWITCH_NAME_RE = re.compile(r"^[a-z][a-z0-9]{0,7}$")  # the bridge is br-<name>: 15 characters at most
IFNAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,15}$")
MAC_RE = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$")
TOOL_RE = re.compile(r"^[A-Za-z0-9_.+-]{1,64}$")
# Binaries the lab runs inside a node's mount namespace; hiding them would break the node, not the test.
LAB_NEEDS = frozenset(
    {"sh", "sleep", "sshd", "mount", "cp", "mkdir", "env", "python3", "python", os.path.basename(sys.executable)}
)

# Tools that need the hardware; each gets a wrapper that runs the emulator CLI on the node's model. iptables is not
# one: each node's namespace has its own netfilter tables, so the host's real iptables shows and changes that node's.
EMULATED_TOOLS: tuple[str, ...] = (
    "ibv_devinfo",
    "ibstat",
    "show_gids",
    "ibdev2netdev",
    "rdma",
    "ethtool",
    "lspci",
    "netplan",
    "ib_write_bw",
    "ib_read_bw",
    "ib_send_bw",
    "ib_write_lat",
    "all_gather_perf",
    "all_reduce_perf",
    "dmesg",
)


@dataclass(frozen=True)
class LinkSpec:
    """One data interface of a node: a veth end with a GB10 name, joined to a peer node's interface.

    `addresses` may be scenario addresses (192.168.x): they are mapped into 198.18.0.0/15 by the same
    rule as the node model. `peer` None leaves the link without a partner (no carrier: an empty cage),
    unless `switch` names a switch: then the link is a port of that Linux bridge (one L2 domain with every
    other link on it), in the lab's own switch namespace.
    """

    ifname: str
    mac: str | None = None
    mtu: int = 1500
    addresses: tuple[str, ...] = ()
    peer: tuple[str, str] | None = None
    up: bool = True
    switch: str | None = None

    def lab_addresses(self) -> tuple[str, ...]:
        """The addresses as assigned in the lab (mapped, then checked to be inside 198.18.0.0/15)."""
        mapped = tuple(map_cidr(a) for a in self.addresses)
        for a in mapped:
            require_lab_cidr(a, f"link {self.ifname}")
        return mapped


@dataclass(frozen=True)
class OobNicSpec:
    """The node's RJ45 management NIC as its model describes it (GB10: enP7s7, Realtek).

    Created as a veth into the lab's sink namespace with the (mapped) address and a default route via
    the (mapped) gateway, so `ip route` looks like a real node's; the sink answers nothing, forwards nothing.
    SSH does not use it: sshd listens on the lab's own management veth.
    """

    ifname: str = "enP7s7"
    mac: str | None = None
    address: str | None = None
    gateway: str | None = None


@dataclass(frozen=True)
class LabNodeSpec:
    """One lab node: a network + mount + UTS namespace with an sshd, data links and tool emulators.

    model: the emulators' node model (JSON); addresses in it are mapped before use.
    netplan: a directory of netplan YAML files shown at /etc/netplan (addresses mapped).
    missing_tools: tools that must not exist on the node (neither emulated nor real).
    sudo_refuses: `sudo` answers like a sudo that wants a password.
    extra_tools: name -> shell script body, put in the node's bin directory (test stand-ins).
    oob: the management NIC of the model (a veth into the sink namespace), or None.
    containers: real podman containers the node runs (tests.lab.containers), each from an image staged here.
    networkmanager: for a model with NetworkManager keyfiles, "real" (the real daemon on a private system bus,
        tests.lab.nm_daemon; the stand-in where the machine lacks it) or "standin" (tests.lab.nm_standin, for the
        faults the real daemon cannot be made to show).
    renderer: None, or "networkd" / "NetworkManager": the node's `netplan try` and `netplan apply` run for real in a
        systemd-nspawn container booted in its network namespace, with that renderer (tests.lab.nspawn).
    """

    name: str
    model: Path | None = None
    links: tuple[LinkSpec, ...] = ()
    hostname: str | None = None
    netplan: Path | None = None
    missing_tools: frozenset[str] = frozenset()
    sudo_refuses: bool = False
    extra_tools: Mapping[str, str] = field(default_factory=dict)
    oob: OobNicSpec | None = None
    containers: tuple[ContainerSpec, ...] = ()
    networkmanager: str = "real"
    renderer: str | None = None

    @property
    def host_name(self) -> str:
        """The hostname the node reports (`hostname` in an SSH session)."""
        return self.hostname or f"lab-{self.name}"


def validate_specs(nodes: Sequence[LabNodeSpec]) -> None:
    """Refuse a lab whose names, MACs, addresses or peers are inconsistent, before anything is created."""
    if not 1 <= len(nodes) <= MAX_NODES:
        raise LabError(f"a lab has 1 to {MAX_NODES} nodes, not {len(nodes)}")
    names = [n.name for n in nodes]
    if len(set(names)) != len(names):
        raise LabError(f"duplicate node names in {names}")
    by_name = {n.name: n for n in nodes}
    for node in nodes:
        _validate_node(node)
        for link in node.links:
            _validate_link(node, link, by_name)


def _validate_node(node: LabNodeSpec) -> None:
    if not NODE_NAME_RE.match(node.name):
        raise LabError(f"node name {node.name!r} must match {NODE_NAME_RE.pattern}")
    ifnames = [link.ifname for link in node.links] + ([node.oob.ifname] if node.oob else [])
    if len(set(ifnames)) != len(ifnames):
        raise LabError(f"node {node.name}: duplicate interface names in {ifnames}")
    for tool in (*node.missing_tools, *node.extra_tools):
        if not TOOL_RE.match(tool):
            raise LabError(f"node {node.name}: bad tool name {tool!r}")
    needed = sorted(node.missing_tools & LAB_NEEDS)
    if needed:
        raise LabError(f"node {node.name}: the lab itself needs {needed}; they cannot be missing")
    if node.oob is not None:
        _validate_oob(node.name, node.oob)
    _validate_daemons(node)
    if node.model is not None and not node.model.is_file():
        raise LabError(f"node {node.name}: node model {node.model} does not exist")
    if node.netplan is not None and not node.netplan.is_dir():
        raise LabError(f"node {node.name}: netplan directory {node.netplan} does not exist")


def _validate_daemons(node: LabNodeSpec) -> None:
    if node.networkmanager not in ("real", "standin"):
        raise LabError(f"node {node.name}: networkmanager must be 'real' or 'standin', not {node.networkmanager!r}")
    if node.renderer not in (None, "networkd", "NetworkManager"):
        raise LabError(f"node {node.name}: renderer must be None, 'networkd' or 'NetworkManager', "
                       f"not {node.renderer!r}")


def _validate_oob(name: str, oob: OobNicSpec) -> None:
    where = f"node {name} management NIC {oob.ifname}"
    if not IFNAME_RE.match(oob.ifname) or oob.ifname.startswith("lcm-"):
        raise LabError(f"{where}: bad interface name")
    if oob.mac is not None and not MAC_RE.match(oob.mac):
        raise LabError(f"{where}: MAC {oob.mac!r} must be lower-case aa:bb:cc:dd:ee:ff")
    if oob.address is not None:
        require_lab_cidr(map_cidr(oob.address), where)
    if oob.gateway is not None:
        require_lab_cidr(map_cidr(oob.gateway) + "/32", where)


def _validate_link(node: LabNodeSpec, link: LinkSpec, by_name: Mapping[str, LabNodeSpec]) -> None:
    where = f"node {node.name} link {link.ifname}"
    if not IFNAME_RE.match(link.ifname) or link.ifname.startswith("lcm-") or link.ifname == "lo":
        raise LabError(f"{where}: interface names are 1-15 characters of [A-Za-z0-9_.-], not lo or lcm-*")
    if link.mac is not None and not MAC_RE.match(link.mac):
        raise LabError(f"{where}: MAC {link.mac!r} must be lower-case aa:bb:cc:dd:ee:ff")
    if not 68 <= link.mtu <= 65535:
        raise LabError(f"{where}: MTU {link.mtu} out of range")
    link.lab_addresses()
    if link.switch is not None:
        if link.peer is not None:
            raise LabError(f"{where}: a link goes to a peer or to a switch, not both")
        if not SWITCH_NAME_RE.match(link.switch):
            raise LabError(f"{where}: switch name {link.switch!r} must match {SWITCH_NAME_RE.pattern}")
    if link.peer is None:
        return
    peer_node, peer_if = link.peer
    if peer_node == node.name or peer_node not in by_name:
        raise LabError(f"{where}: peer node {peer_node!r} is not another node of this lab")
    back = [p for p in by_name[peer_node].links if p.ifname == peer_if]
    if not back or back[0].peer != (node.name, link.ifname):
        raise LabError(f"{where}: peer {peer_node}:{peer_if} must name {node.name}:{link.ifname} back")

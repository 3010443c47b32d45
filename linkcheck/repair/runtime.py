"""A plan's runtime commands as operations: parsed from the step's text (which a person reads and may have
reviewed), rendered again as a shell command for a remote node, run through netlink on the local one, and each
with the operation that undoes it, taken from the live state just before the change.

Only the command shapes the planner writes are accepted: anything else in a plan (an edited repair.json) is
refused, never run.
"""

from __future__ import annotations

import ipaddress
import re
import shlex

import msgspec

from linkcheck.facts.forwarding_facts import DOCKER_USER

MTU = "mtu"
ADDR_ADD = "addr_add"
ADDR_DEL = "addr_del"
NEIGH_DEL = "neigh_del"
NEIGH_SET = "neigh_set"  # only as an undo: the entry a neigh_del removed, put back as it was
FEC = "fec"
# On mlx5 a FEC change takes the port down and up: mlx5e_set_fecparam() ends with mlx5_toggle_port_link(mdev)
# (Linux drivers/net/ethernet/mellanox/mlx5/core/en_ethtool.c); carrier and the renegotiated FEC are waited for
# this long before the link is judged.
FEC_SETTLE_S = 30
NM_RELOAD = "nm_reload"
REBOOT = "reboot"
# What only a cluster needs (spark-link s.10): a node between two others routes IPv4 between its cables, a node
# reaches a non-neighbour's subnet through a neighbour, and Docker's FORWARD DROP lets the cluster's own traffic by.
FORWARD = "forward"  # sysctl -w net.ipv4.ip_forward=VALUE
ROUTE_REPLACE = "route_replace"  # ip route replace SUBNET via GATEWAY dev DEV
ROUTE_DEL = "route_del"  # only as an undo: the route a route_replace added, removed exactly
ACCEPT_INSERT = "accept_insert"  # iptables -I DOCKER-USER -i IN -o OUT -j ACCEPT (two CX-7 interfaces)
ACCEPT_DELETE = "accept_delete"  # only as an undo: that exact rule deleted

_IFNAME = re.compile(r"^[A-Za-z0-9_.:@-]{1,15}$")
_MAC = re.compile(r"^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}$")
_FEC = {"rs", "baser", "llrs", "off", "auto"}


class OpError(Exception):
    """A runtime command of the plan that is not one linkcheck writes (or has a malformed part)."""


class RuntimeOp(msgspec.Struct, frozen=True):
    """One live change: kind, the interface, and its value (an MTU, an address with prefix, a neighbour's IP,
    a FEC encoding, ip_forward's 0 or 1, a route's destination subnet, an accept's input interface); `lladdr` and
    `nud` only for a neighbour entry put back; `via` a route's gateway, or an accept's output interface."""

    kind: str
    dev: str = ""
    value: str = ""
    lladdr: str = ""
    nud: str = ""
    via: str = ""

    @property
    def host(self) -> bool:
        """A change of the node's routing or firewall rather than of one interface's own settings."""
        return self.kind in (FORWARD, ROUTE_REPLACE, ROUTE_DEL, ACCEPT_INSERT, ACCEPT_DELETE)

    @property
    def describe(self) -> str:
        return " ".join(self.argv())

    def argv(self) -> list[str]:
        """The command, without sudo: node text as separate words (shell-quoted when rendered)."""
        if self.kind == MTU:
            return ["ip", "link", "set", "dev", self.dev, "mtu", self.value]
        if self.kind in (ADDR_ADD, ADDR_DEL):
            return ["ip", "addr", "add" if self.kind == ADDR_ADD else "del", self.value, "dev", self.dev]
        if self.kind == NEIGH_DEL:
            return ["ip", "neigh", "del", self.value, "dev", self.dev]
        if self.kind == NEIGH_SET:
            return ["ip", "neigh", "replace", self.value, "lladdr", self.lladdr, "dev", self.dev, "nud",
                    self.nud or "reachable"]
        if self.kind == FEC:
            return ["ethtool", "--set-fec", self.dev, "encoding", self.value]
        if self.kind == NM_RELOAD:
            return ["nmcli", "connection", "reload"]
        if self.kind == REBOOT:
            return ["systemctl", "reboot", "--no-block"]
        if self.host:
            return self._host_argv()
        raise OpError(f"unknown operation {self.kind!r}")

    def _host_argv(self) -> list[str]:
        if self.kind == FORWARD:
            return ["sysctl", "-w", f"net.ipv4.ip_forward={self.value}"]
        if self.kind in (ROUTE_REPLACE, ROUTE_DEL):
            return ["ip", "route", "replace" if self.kind == ROUTE_REPLACE else "del", self.value, "via", self.via,
                    "dev", self.dev]
        return ["iptables", "-I" if self.kind == ACCEPT_INSERT else "-D", DOCKER_USER, "-i", self.value,
                "-o", self.via, "-j", "ACCEPT"]

    def shell(self) -> str:
        """As run on a remote node: `sudo -n` (never a password prompt), every word quoted."""
        return "sudo -n " + " ".join(shlex.quote(w) for w in self.argv())


def _dev(word: str) -> str:
    if not _IFNAME.match(word):
        raise OpError(f"{word!r} is not an interface name")
    return word


def _cidr(word: str) -> str:
    try:
        ipaddress.ip_interface(word)
    except ValueError:
        raise OpError(f"{word!r} is not an address with a prefix") from None
    if "/" not in word:
        raise OpError(f"{word!r} has no prefix length")
    return word


def _ip(word: str) -> str:
    try:
        ipaddress.ip_address(word)
    except ValueError:
        raise OpError(f"{word!r} is not an IP address") from None
    return word


def _subnet(word: str) -> str:
    """An IPv4 network as written, in its normal form (`198.19.12.0/24`): what `ip route` and `iptables -S` print
    back, so that the exact rule or route can be found again."""
    try:
        net = ipaddress.IPv4Network(word)
    except ValueError:
        raise OpError(f"{word!r} is not an IPv4 subnet") from None
    if str(net) != word or "/" not in word:
        raise OpError(f"{word!r} is not an IPv4 subnet in its normal form")
    return word


def _ascii_number(word: str) -> bool:
    """ASCII digits only, five at most (`isdigit()` alone accepts `²`, which `int()` refuses)."""
    return word.isascii() and word.isdigit() and len(word) <= 5


def parse_op(command: str) -> RuntimeOp:
    """The operation a plan's runtime command stands for; OpError for any other command."""
    try:
        words = shlex.split(command)
    except ValueError as exc:
        raise OpError(f"cannot read {command!r}: {exc}") from None
    if words[:1] == ["sudo"]:
        words = [w for w in words[1:] if w not in ("-n",)]
    match words:
        case ["ip", "link", "set", "dev", dev, "mtu", mtu] if _ascii_number(mtu) and 68 <= int(mtu) <= 65535:
            return RuntimeOp(MTU, _dev(dev), mtu)
        case ["ip", "addr", "add" | "del" as verb, cidr, "dev", dev]:
            return RuntimeOp(ADDR_ADD if verb == "add" else ADDR_DEL, _dev(dev), _cidr(cidr))
        case ["ip", "neigh", "del", ip, "dev", dev]:
            return RuntimeOp(NEIGH_DEL, _dev(dev), _ip(ip))
        case ["ethtool", "--set-fec", dev, "encoding", fec] if fec.lower() in _FEC:
            return RuntimeOp(FEC, _dev(dev), fec.lower())
        case ["nmcli", "connection", "reload"]:
            return RuntimeOp(NM_RELOAD)
        case ["systemctl", "reboot", "--no-block"]:
            return RuntimeOp(REBOOT)
    host = _host_op(words)
    if host is not None:
        return host
    raise OpError(f"not a command linkcheck plans: {command!r}")


def _host_op(words: list[str]) -> RuntimeOp | None:
    """A cluster's routing and firewall commands (forwarding, a route through a neighbour, a DOCKER-USER accept)."""
    match words:
        case ["sysctl", "-w", setting] if setting in ("net.ipv4.ip_forward=1", "net.ipv4.ip_forward=0"):
            return RuntimeOp(FORWARD, value=setting[-1])
        case ["ip", "route", "replace" | "del" as verb, subnet, "via", via, "dev", dev]:
            return RuntimeOp(ROUTE_REPLACE if verb == "replace" else ROUTE_DEL, _dev(dev), _subnet(subnet),
                             via=_ip(via))
        case ["iptables", "-I" | "-D" as verb, chain, "-i", dev_in, "-o", dev_out,
              "-j", "ACCEPT"] if chain == DOCKER_USER:
            return RuntimeOp(ACCEPT_INSERT if verb == "-I" else ACCEPT_DELETE, value=_dev(dev_in), via=_dev(dev_out))
    return None


_NUD = {"permanent", "noarp", "reachable", "stale", "delay", "probe", "failed", "incomplete", "none"}


def check_op(op: RuntimeOp) -> None:
    """An operation read back from a journal is one linkcheck writes (its undo included): the same grammar as a
    plan's runtime commands (its command read back gives the same operation), a neighbour entry put back with a
    MAC and a state; OpError otherwise."""
    if op.kind == NEIGH_SET:
        _dev(op.dev)
        _ip(op.value)
        parse_mac(op.lladdr)
        if op.nud.lower() not in _NUD:
            raise OpError(f"{op.nud!r} is not a neighbour state")
        return
    if parse_op(shlex.join(op.argv())) != op:
        raise OpError(f"not an operation linkcheck writes: {op.describe!r}")


def parse_mac(word: str) -> str:
    if not _MAC.match(word):
        raise OpError(f"{word!r} is not a MAC address")
    return word.lower()

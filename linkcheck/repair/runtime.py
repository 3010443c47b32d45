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

_IFNAME = re.compile(r"^[A-Za-z0-9_.:@-]{1,15}$")
_MAC = re.compile(r"^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}$")
_FEC = {"rs", "baser", "llrs", "off", "auto"}


class OpError(Exception):
    """A runtime command of the plan that is not one linkcheck writes (or has a malformed part)."""


class RuntimeOp(msgspec.Struct, frozen=True):
    """One live change: kind, the interface, and its value (an MTU, an address with prefix, a neighbour's IP,
    a FEC encoding); `lladdr` and `nud` only for a neighbour entry put back."""

    kind: str
    dev: str = ""
    value: str = ""
    lladdr: str = ""
    nud: str = ""

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
        raise OpError(f"unknown operation {self.kind!r}")

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
    raise OpError(f"not a command linkcheck plans: {command!r}")


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

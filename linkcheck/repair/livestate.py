"""A node's live state around a repair, read before any change and again after a revert, and the comparison that
says whether the revert put the node back: per interface the repair touches, its MTU, its addresses (not the
link-local ones the kernel derives from the MAC), its routes in the main table and its static neighbour entries
(permanent or noarp: dynamic ones come and go by ARP), and, where the node runs NetworkManager, whether it runs,
which profiles are active on those interfaces and which profile files `/etc/NetworkManager/system-connections` holds.

Routes are compared by destination, device and gateway, not by metric: NetworkManager gives the routes of a profile
it activates its own metric ("The default value -1 means that the metric is chosen automatically based on the device
type. The metric applies to ... address prefix routes", NMSettingIPConfig:route-metric, nm-settings-nmcli(5); 100 for
an ethernet port with the real NetworkManager 1.42 in the lab), where `ip addr add` gives the prefix route metric 0.
A rollback that re-activates the port's profile therefore changes the metric of an otherwise identical route; which
route the kernel picks among one destination's routes through one device and gateway makes no difference to the path.

The profile files are listed because a NetworkManager checkpoint rollback on a port that NetworkManager took as
configured by someone else (`connected (externally)`, its profile generated in /run) re-creates that profile as a
persistent keyfile in /etc (`autoconnect=false`), a file linkcheck never wrote and no journal names: a file there
that was not there before the run is removed by the revert (linkcheck.repair.restore.put_back_verified).

A revert is never taken on trust: `netplan try` 0.106's revert re-applies the old addresses but leaves a new MTU
(systemd-networkd and NetworkManager both leave the current MTU alone), and NetworkManager's CheckpointRollback
returns before the device is activated again (no address for ~20 ms). So the state is read back until it matches
or a bounded wait ends, and a node whose state still differs is reported with what differs.
"""

from __future__ import annotations

import json
import re
import shlex
import time
from collections.abc import Iterable, Sequence
from typing import Any

import msgspec
from msgspec.structs import replace

from linkcheck.facts.forwarding_facts import DOCKER_USER
from linkcheck.repair.node import RepairNode
from linkcheck.repair.runtime import (
    ACCEPT_DELETE,
    ACCEPT_INSERT,
    ADDR_ADD,
    ADDR_DEL,
    FORWARD,
    MTU,
    NEIGH_SET,
    ROUTE_DEL,
    OpError,
    RuntimeOp,
    check_op,
)

q = shlex.quote
# How long a reverted node is given to reach its "before" state: NetworkManager re-activates a device
# asynchronously after a rollback or an `nmcli connection up`.
SETTLE_S = 10.0
_IFNAME = re.compile(r"^[A-Za-z0-9_.:@-]{1,15}$")
_STATIC_NUD = ("permanent", "noarp")
NM_KEYFILE_DIR = "/etc/NetworkManager/system-connections"
_METRIC = re.compile(r" metric [0-9]+$")


class IfaceState(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One interface as read live: absent (`present` false), or its MTU, addresses (CIDR, sorted), routes
    (`dst via gateway metric N`, sorted) and static neighbour entries (`ip lladdr nud`, sorted)."""

    dev: str
    present: bool = True
    mtu: int | None = None
    addresses: tuple[str, ...] = ()
    routes: tuple[str, ...] = ()
    neighbours: tuple[str, ...] = ()


class RendererState(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """NetworkManager as read live: running or not, its active profiles on the interfaces read (`NAME:DEV`,
    sorted) and the `.nmconnection` files in /etc/NetworkManager/system-connections (names, sorted); None where the
    node has no NetworkManager that answers (nothing to compare)."""

    nm_running: bool | None = None
    nm_active: tuple[str, ...] | None = None
    nm_keyfiles: tuple[str, ...] | None = None


class NodeState(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """`forwarding` (net.ipv4.ip_forward, `0` or `1`) and `docker_user` (`iptables -S DOCKER-USER`'s lines) are read
    only for a run that changes them (a cluster's transit node); None: not read."""

    interfaces: tuple[IfaceState, ...] = ()
    renderer: RendererState = RendererState()
    forwarding: str | None = None
    docker_user: tuple[str, ...] | None = None

    def iface(self, dev: str) -> IfaceState | None:
        return next((i for i in self.interfaces if i.dev == dev), None)


def state_command(devs: Sequence[str], host: bool = False) -> str:
    """One shell round trip: per interface a `D NAME` line, then `ip -j` of its link, addresses, main-table routes
    and neighbours (one JSON line each); with `host`, ip_forward and the DOCKER-USER chain; then NetworkManager's
    `general` and active profiles where nmcli runs."""
    parts = []
    for dev in devs:
        d = q(dev)
        parts.append(f"echo D {d}; ip -j link show dev {d} 2>/dev/null || echo '[]'; "
                     f"ip -j addr show dev {d} 2>/dev/null || echo '[]'; "
                     f"ip -j route show table main dev {d} 2>/dev/null || echo '[]'; "
                     f"ip -j neigh show dev {d} 2>/dev/null || echo '[]'")
    if host:
        # A chain that does not exist (no Docker) reads as no rule, as it did before the run.
        parts.append("echo H; cat /proc/sys/net/ipv4/ip_forward 2>/dev/null || echo '?'; echo I; "
                     "sudo -n iptables -S DOCKER-USER 2>/dev/null; echo J")
    parts.append("if command -v nmcli >/dev/null 2>&1; then "
                 "echo N; nmcli -t -f RUNNING general 2>/dev/null || echo '?'; "
                 "echo C; nmcli -t -f NAME,DEVICE connection show --active 2>/dev/null || echo '?'; "
                 # Under sudo: the folder may be root's only. Names with a control character are left out: one could
                 # read as several lines.
                 f"echo K; sudo -n find {NM_KEYFILE_DIR} -mindepth 1 -maxdepth 1 -name '*.nmconnection' "
                 "! -name '*[[:cntrl:]]*' -printf '%f\\n' 2>/dev/null || echo '?'; fi; echo E")
    return "; ".join(parts)


def _json(line: str) -> list[dict[str, Any]]:
    try:
        data = json.loads(line) if line.strip() else []
    except ValueError:
        return []
    return [d for d in data if isinstance(d, dict)] if isinstance(data, list) else []


def _iface(dev: str, link: str, addr: str, route: str, neigh: str) -> IfaceState:
    links = _json(link)
    if not links:
        return IfaceState(dev, present=False)
    mtu = links[0].get("mtu")
    addresses = sorted(f"{a['local']}/{a['prefixlen']}" for i in _json(addr) for a in i.get("addr_info", [])
                       if isinstance(a, dict) and "local" in a and "prefixlen" in a and a.get("scope") != "link")
    routes = sorted(f"{r.get('dst', '?')} via {r.get('gateway', '-')} metric {r.get('metric', 0)}"
                    for r in _json(route))
    neighbours = sorted(f"{n.get('dst', '?')} {n.get('lladdr', '-')} {str(n['state'][0]).lower()}"
                        for n in _json(neigh) if isinstance(n.get("state"), list) and n["state"]
                        and str(n["state"][0]).lower() in _STATIC_NUD)
    return IfaceState(dev, True, mtu if isinstance(mtu, int) and not isinstance(mtu, bool) else None,
                      tuple(addresses), tuple(routes), tuple(neighbours))


def nmcli_field(value: str) -> str:
    """nmcli -t escapes `:` and `\\` in a value with a backslash."""
    return re.sub(r"\\(.)", r"\1", value)


def _split_terse(line: str) -> list[str]:
    return [nmcli_field(p) for p in re.split(r"(?<!\\):", line)]


def parse_state(text: str, devs: Sequence[str]) -> NodeState:
    """What `state_command` printed; an interface it did not print is absent."""
    lines = text.split("\n")
    found: dict[str, IfaceState] = {}
    running: bool | None = None
    active: tuple[str, ...] | None = None
    keyfiles: tuple[str, ...] | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("D ") and line[2:] in devs:
            body = [*lines[i + 1:i + 5], "", "", "", ""][:4]
            found[line[2:]] = _iface(line[2:], *body)
            i += 5
            continue
        if line == "N" and i + 1 < len(lines):
            word = lines[i + 1].strip()
            running = True if word == "running" else False if word == "not running" else None
            i += 2
            continue
        if line == "C":
            rows: list[str] = []
            i += 1
            while i < len(lines) and lines[i] not in ("K", "E"):
                rows.append(lines[i])
                i += 1
            if rows != ["?"] and running is not None:
                pairs = [_split_terse(r) for r in rows if r.strip()]
                active = tuple(sorted(f"{p[0]}:{p[1]}" for p in pairs if len(p) == 2 and p[1] in devs))
            continue
        if line == "K":
            names: list[str] = []
            i += 1
            while i < len(lines) and lines[i] != "E":
                names.append(lines[i])
                i += 1
            if names != ["?"] and running is True:
                keyfiles = tuple(sorted(n for n in names if n and "/" not in n))
            continue
        i += 1
    return NodeState(tuple(found.get(d, IfaceState(d, present=False)) for d in devs),
                     RendererState(running, active, keyfiles), *_host_part(lines))


def _host_part(lines: Sequence[str]) -> tuple[str | None, tuple[str, ...] | None]:
    """ip_forward (after `H`) and the DOCKER-USER chain's lines (between `I` and `J`), where they were read."""
    forwarding: str | None = None
    docker_user: tuple[str, ...] | None = None
    if "H" in lines:
        at = lines.index("H")
        word = lines[at + 1].strip() if at + 1 < len(lines) else ""
        forwarding = word if word in ("0", "1") else None
    if "I" in lines and "J" in lines[lines.index("I"):]:
        start = lines.index("I") + 1
        end = start + list(lines[start:]).index("J")
        docker_user = tuple(r.strip() for r in lines[start:end] if r.strip())
    return forwarding, docker_user


def read_state(node: RepairNode, devs: Iterable[str], host: bool = False) -> NodeState:
    names = sorted({d for d in devs if _IFNAME.match(d)})
    return parse_state(node.sh(state_command(names, host), timeout_s=30).stdout, names)


def reads_host(state: NodeState) -> bool:
    """Whether `state` holds the node's forwarding and DOCKER-USER chain (read for a run that changes them)."""
    return state.forwarding is not None or state.docker_user is not None


def _listed(items: Sequence[str]) -> str:
    return ", ".join(items) or "none"


def route_key(route: str) -> str:
    """A route as compared: `dst via gateway`, without its metric (the module's docstring says why)."""
    return _METRIC.sub("", route)


def new_keyfiles(before: NodeState, now: NodeState) -> list[str]:
    """The paths of the profile files in /etc/NetworkManager/system-connections now that were not there before."""
    was, cur = before.renderer.nm_keyfiles, now.renderer.nm_keyfiles
    if was is None or cur is None:
        return []
    return [f"{NM_KEYFILE_DIR}/{name}" for name in cur if name not in was]


def differences(before: NodeState, now: NodeState) -> list[str]:
    """What differs in `now` from `before`, one line each (empty: the node is as it was)."""
    out: list[str] = []
    for was in before.interfaces:
        cur = now.iface(was.dev) or IfaceState(was.dev, present=False)
        if was.present != cur.present:
            out.append(f"{was.dev}: " + ("gone" if was.present else "present, was absent"))
            continue
        if not was.present:
            continue
        if was.mtu != cur.mtu:
            out.append(f"{was.dev}: MTU {cur.mtu}, was {was.mtu}")
        for what, a, b in (("addresses", was.addresses, cur.addresses), ("routes", was.routes, cur.routes),
                           ("static neighbours", was.neighbours, cur.neighbours)):
            if (sorted(map(route_key, a)) != sorted(map(route_key, b))) if what == "routes" else a != b:
                out.append(f"{was.dev}: {what} {_listed(b)}, were {_listed(a)}")
    r0, r1 = before.renderer, now.renderer
    if r0.nm_running is True and r1.nm_running is not True:
        out.append("NetworkManager is not running, it was")
    elif r0.nm_active is not None and r1.nm_active is not None and r0.nm_active != r1.nm_active:
        out.append(f"NetworkManager's active profiles {_listed(r1.nm_active)}, were {_listed(r0.nm_active)}")
    if r0.nm_keyfiles is not None and r1.nm_keyfiles is not None and r0.nm_keyfiles != r1.nm_keyfiles:
        out.append(f"{NM_KEYFILE_DIR} holds {_listed(r1.nm_keyfiles)}, held {_listed(r0.nm_keyfiles)}")
    return out + _host_differences(before, now)


def _host_differences(before: NodeState, now: NodeState) -> list[str]:
    out: list[str] = []
    if before.forwarding is not None and now.forwarding != before.forwarding:
        out.append(f"net.ipv4.ip_forward {now.forwarding or 'unread'}, was {before.forwarding}")
    if before.docker_user is not None and now.docker_user != before.docker_user:
        out.append(f"DOCKER-USER holds {_listed(now.docker_user or ())}, held {_listed(before.docker_user)}")
    return out


def _accept_rule(line: str) -> RuntimeOp | None:
    """`-A DOCKER-USER -i IN -o OUT -j ACCEPT` (as `iptables -S` prints the rule linkcheck inserts) as its
    operation."""
    words = line.split()
    if len(words) == 8 and words[:2] == ["-A", DOCKER_USER] and words[2] == "-i" and words[4] == "-o" \
            and words[6:] == ["-j", "ACCEPT"]:
        return RuntimeOp(ACCEPT_INSERT, value=words[3], via=words[5])
    return None


def _host_corrections(before: NodeState, now: NodeState) -> list[RuntimeOp]:
    """ip_forward set back; an accept in DOCKER-USER that was not there removed, one that was put back."""
    ops: list[RuntimeOp] = []
    if before.forwarding is not None and now.forwarding not in (None, before.forwarding):
        ops.append(RuntimeOp(FORWARD, value=before.forwarding))
    if before.docker_user is not None and now.docker_user is not None:
        for line in now.docker_user:
            rule = _accept_rule(line)
            if rule is not None and line not in before.docker_user:
                ops.append(replace(rule, kind=ACCEPT_DELETE))
        for line in before.docker_user:
            rule = _accept_rule(line)
            if rule is not None and line not in now.docker_user:
                ops.append(rule)
    return ops


def corrections(before: NodeState, now: NodeState) -> list[RuntimeOp]:
    """The runtime operations that bring `now` back to `before`: an MTU set back, an address added back or one
    that was not there removed, a static neighbour entry put back, a route through a gateway that was not there
    removed, ip_forward and the DOCKER-USER accepts as they were. Routes of an address follow the addresses;
    NetworkManager and the profiles are the renderer's to put back (its re-apply)."""
    ops: list[RuntimeOp] = []
    for was in before.interfaces:
        cur = now.iface(was.dev)
        if not was.present or cur is None or not cur.present:
            continue
        if was.mtu is not None and cur.mtu != was.mtu:
            ops.append(RuntimeOp(MTU, was.dev, str(was.mtu)))
        ops += [RuntimeOp(ADDR_DEL, was.dev, a) for a in cur.addresses if a not in was.addresses]
        ops += [RuntimeOp(ADDR_ADD, was.dev, a) for a in was.addresses if a not in cur.addresses]
        for entry in was.neighbours:
            if entry not in cur.neighbours:
                ip, lladdr, nud = (entry.split() + ["", "", ""])[:3]
                ops.append(RuntimeOp(NEIGH_SET, was.dev, ip, lladdr, nud))
        old = {route_key(r) for r in was.routes}
        for route in cur.routes:
            dst, _, gateway = route_key(route).partition(" via ")
            if route_key(route) not in old and gateway != "-":  # a route through a neighbour that was not there
                ops.append(RuntimeOp(ROUTE_DEL, was.dev, dst, via=gateway))
    ops += _host_corrections(before, now)
    valid = []
    for op in ops:
        try:
            check_op(op)
        except OpError:
            continue  # not one linkcheck writes (an odd address read back): left to the differences
        valid.append(op)
    return valid


def wait_matching(node: RepairNode, before: NodeState, timeout_s: float | None = None) -> list[str]:
    """The live state read until it matches `before` or `timeout_s` (default SETTLE_S) passed; what still
    differs."""
    devs = [i.dev for i in before.interfaces]
    deadline = time.monotonic() + (SETTLE_S if timeout_s is None else timeout_s)
    while True:
        diff = differences(before, read_state(node, devs, reads_host(before)))
        if not diff or time.monotonic() >= deadline:
            return diff
        time.sleep(0.25)

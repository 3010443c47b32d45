"""What the repair transaction verifies on a node, read live: the invariants it must never break (the management
interface and address that SSH came in on, the default route), and the link after a change (carrier, MTU,
addresses, a ping each way at the path MTU with fragmentation forbidden, the RoCE v2 entry of the GID table)."""

from __future__ import annotations

import ipaddress
import json
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from linkcheck.facts.model import LinkFacts
from linkcheck.repair.node import RepairNode, first_line
from linkcheck.repair.runtime import ADDR_ADD, ADDR_DEL, MTU, RuntimeOp

q = shlex.quote
PING_HEADER = 28  # IPv4 + ICMP headers: `ping -s` is the payload


class Invariants(msgspec.Struct, frozen=True):
    """What a repair must leave as it was: the interface and address SSH came in on (from $SSH_CONNECTION; None
    on the local node) and the default routes."""

    client_ip: str | None
    mgmt_dev: str | None
    mgmt_addr: str | None
    default_devs: tuple[str, ...]
    default_routes: tuple[str, ...]

    @property
    def devices(self) -> tuple[str, ...]:
        return tuple(d for d in (self.mgmt_dev, *self.default_devs) if d)


def _json_list(text: str) -> list[dict[str, Any]]:
    try:
        data = json.loads(text) if text.strip() else []
    except ValueError:
        return []
    return [d for d in data if isinstance(d, dict)] if isinstance(data, list) else []


def read_invariants(node: RepairNode) -> Invariants:
    conn = node.sh('printf "%s\\n" "${SSH_CONNECTION:-}"').stdout.split()
    routes = _json_list(node.sh("ip -j route show default").stdout)
    default_devs = tuple(sorted({str(r["dev"]) for r in routes if r.get("dev")}))
    default_routes = tuple(sorted(f"{r.get('dst')} via {r.get('gateway', '-')} dev {r.get('dev', '-')}"
                                  for r in routes))
    client = mgmt_dev = mgmt_addr = None
    if len(conn) == 4:
        client, mgmt_addr = conn[0], conn[2]
        got = _json_list(node.sh(f"ip -j route get {q(client)}").stdout)
        mgmt_dev = str(got[0]["dev"]) if got and got[0].get("dev") else None
    return Invariants(client, mgmt_dev, mgmt_addr, default_devs, default_routes)


def invariant_problems(node: RepairNode, before: Invariants) -> list[str]:
    """What changed in the invariants since `before` (empty: they hold)."""
    now = read_invariants(node)
    problems = []
    if before.mgmt_dev and (now.mgmt_dev != before.mgmt_dev or now.mgmt_addr != before.mgmt_addr):
        problems.append(f"the management path changed: {before.mgmt_addr} on {before.mgmt_dev} is now "
                        f"{now.mgmt_addr} on {now.mgmt_dev}")
    if before.mgmt_dev and before.mgmt_addr:
        addrs = addresses(node, before.mgmt_dev)
        if not any(a.split("/")[0] == before.mgmt_addr for a in addrs):
            problems.append(f"{before.mgmt_dev} no longer holds {before.mgmt_addr}")
    if now.default_routes != before.default_routes:
        problems.append(f"the default route changed: {list(before.default_routes)} -> {list(now.default_routes)}")
    return problems


def link_state(node: RepairNode, dev: str) -> dict[str, Any]:
    found = _json_list(node.sh(f"ip -j link show dev {q(dev)}").stdout)
    return found[0] if found else {}


def addresses(node: RepairNode, dev: str) -> list[str]:
    found = _json_list(node.sh(f"ip -j -4 addr show dev {q(dev)}").stdout)
    return [f"{a['local']}/{a['prefixlen']}" for i in found for a in i.get("addr_info", [])
            if a.get("family") == "inet" and "local" in a and "prefixlen" in a]


def _peer(link: LinkFacts, node: str, dev: str) -> tuple[str, str] | None:
    for path in link.paths:
        if node == "a" and path.a.netdev == dev:
            return "b", path.b.netdev
        if node == "b" and path.b.netdev == dev:
            return "a", path.a.netdev
    return None


def _same_subnet(mine: Sequence[str], theirs: Sequence[str]) -> tuple[str, str] | None:
    for m in mine:
        for t in theirs:
            mi, ti = ipaddress.ip_interface(m), ipaddress.ip_interface(t)
            if mi.network == ti.network and not mi.ip.is_link_local:
                return str(mi.ip), str(ti.ip)
    return None


def _ping(node: RepairNode, dev: str, target: str, mtu: int) -> str | None:
    cmd = f"ping -M do -s {mtu - PING_HEADER} -c 2 -i 0.2 -W 1 -I {q(dev)} {q(target)}"
    result = node.sh(cmd, timeout_s=15)
    return None if result.exit_status == 0 else f"`{cmd}` failed: {first_line(result)}"


def _roce_v2(node: RepairNode, rdma_dev: str, dev: str) -> bool:
    """A RoCE v2 entry of the device's GID table bound to `dev` (the kernel adds it with each address)."""
    script = (f'for f in /sys/class/infiniband/{q(rdma_dev)}/ports/*/gid_attrs/types/*; do '
              't=$(cat "$f" 2>/dev/null) || continue; [ "$t" = "RoCE v2" ] || continue; '
              'i=${f##*/}; p=${f%/gid_attrs/*}; '
              f'[ "$(cat "$p/gid_attrs/ndevs/$i" 2>/dev/null)" = {q(dev)} ] && exit 0; done; exit 1')
    return node.sh(f"sh -c {q(script)}").exit_status == 0


def verify_link(nodes: Mapping[str, RepairNode], link: LinkFacts, node: str, ops: Sequence[RuntimeOp],
                pending: set[tuple[str, str]]) -> list[str]:
    """The interfaces `ops` changed on `node`, checked live; what failed (empty: verified).

    Each end pings the other at its own MTU with fragmentation forbidden, so two ends left at different MTUs
    fail here. `pending`: the (node, interface) a later step of the plan still changes: against those, at the
    lower of the two MTUs, and not at all while the two ends share no subnet yet."""
    problems: list[str] = []
    me = nodes[node]
    for dev in dict.fromkeys(op.dev for op in ops if op.dev):
        state = link_state(me, dev)
        if not state:
            problems.append(f"node {node}: {dev} is gone")
            continue
        if "LOWER_UP" not in state.get("flags", []):
            problems.append(f"node {node}: {dev} has no carrier after the change")
        mtu = int(state.get("mtu", 0))
        for op in ops:
            if op.dev == dev and op.kind == MTU and mtu != int(op.value):
                problems.append(f"node {node}: {dev} is at MTU {mtu}, not {op.value}")
        mine = addresses(me, dev)
        for op in ops:
            if op.dev == dev and op.kind == ADDR_ADD and op.value not in mine:
                problems.append(f"node {node}: {dev} does not hold {op.value}")
            if op.dev == dev and op.kind == ADDR_DEL and op.value in mine:
                problems.append(f"node {node}: {dev} still holds {op.value}")
        fn = link.node(node).function(dev)
        if fn is not None and fn.rdma_dev and not _roce_v2(me, fn.rdma_dev, dev):
            problems.append(f"node {node}: {fn.rdma_dev} has no RoCE v2 GID entry on {dev}")
        problems += _ping_both(nodes, link, node, dev, mtu, mine, pending)
    return problems


def _ping_both(nodes: Mapping[str, RepairNode], link: LinkFacts, node: str, dev: str, mtu: int,
               mine: Sequence[str], pending: set[tuple[str, str]]) -> list[str]:
    peer = _peer(link, node, dev)
    if peer is None or peer[0] not in nodes:
        return []
    other, peer_dev = peer
    them = nodes[other]
    later = (other, peer_dev) in pending
    pair = _same_subnet(mine, addresses(them, peer_dev))
    if pair is None:
        # Both ends move to a new subnet: the path is checked at the peer's step, once both are there.
        return [] if later else [f"node {node}: {dev} and node {other}'s {peer_dev} share no subnet"]
    peer_mtu = int(link_state(them, peer_dev).get("mtu", 0))
    out_mtu, back_mtu = mtu, peer_mtu
    if later:
        out_mtu = back_mtu = min(mtu, peer_mtu)
    problems = []
    for who, src_dev, target, size in ((node, dev, pair[1], out_mtu), (other, peer_dev, pair[0], back_mtu)):
        why = _ping(nodes[who], src_dev, target, size)
        if why:
            problems.append(f"node {who}: {why}")
    return problems

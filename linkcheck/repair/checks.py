"""What the repair transaction verifies on a node, read live: the invariants it must never break (the management
interface and address that SSH came in on, the default route), and the link after a change (carrier, MTU,
addresses, the RoCE v2 GID entry of each address, a ping each way at the path MTU with fragmentation forbidden, and,
in the runtime verification, a short ib_write_bw over the path)."""

from __future__ import annotations

import ipaddress
import json
import shlex
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import msgspec

from linkcheck.facts.model import LinkFacts
from linkcheck.integers import ascii_int
from linkcheck.repair.node import RepairNode, first_line
from linkcheck.repair.runtime import (
    ACCEPT_INSERT,
    ADDR_ADD,
    ADDR_DEL,
    FEC,
    FEC_SETTLE_S,
    FORWARD,
    MTU,
    ROUTE_REPLACE,
    RuntimeOp,
)
from linkcheck.repair.traffic import TrafficEnd, short_write_bw

q = shlex.quote
PING_HEADER = 28  # IPv4 + ICMP headers: `ping -s` is the payload
IB_SYSFS = "/sys/class/infiniband"
# The kernel adds an address's GID entries from a workqueue (roce_gid_mgmt), a moment after the address itself:
# the entry is waited for this long before its absence counts.
GID_WAIT_S = 5
Say = Callable[[str], None]
# `ethtool --set-fec ... encoding E` -> the "Active FEC encoding:" it leads to once the link renegotiated.
FEC_ACTIVE = {"rs": "RS", "baser": "BaseR", "llrs": "LLRS", "off": "None"}


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
    """The node and interface at the other end of `dev`'s path (a pair's ends are a and b, a cable's keep the
    cluster's names)."""
    for path in link.paths:
        if node == link.a.name and path.a.netdev == dev:
            return link.b.name, path.b.netdev
        if node == link.b.name and path.b.netdev == dev:
            return link.a.name, path.a.netdev
    return None


def link_of(links: Sequence[LinkFacts], node: str, dev: str) -> LinkFacts | None:
    """The cable `dev` of `node` is on (a pair has one; a cluster's node one per cable), else one that holds the
    node; None when none does."""
    mine = [link for link in links if node in (link.a.name, link.b.name)]
    return next((link for link in mine if _peer(link, node, dev) is not None), mine[0] if mine else None)


def host_problems(node: RepairNode, name: str, ops: Sequence[RuntimeOp]) -> list[str]:
    """The routing and firewall changes read back live: ip_forward's value, each route through its gateway and
    device, each DOCKER-USER accept by its exact rule (`iptables -C`)."""
    problems = []
    for op in ops:
        if op.kind == FORWARD:
            now = node.sh("cat /proc/sys/net/ipv4/ip_forward").stdout.strip()
            if now != op.value:
                problems.append(f"node {name}: net.ipv4.ip_forward is {now[:20] or 'unread'}, not {op.value}")
        elif op.kind == ROUTE_REPLACE:
            routes = _json_list(node.sh(f"ip -j route show {q(op.value)}").stdout)
            if not any(r.get("gateway") == op.via and r.get("dev") == op.dev for r in routes):
                problems.append(f"node {name}: no route to {op.value} via {op.via} dev {op.dev}")
        elif op.kind == ACCEPT_INSERT:
            check = ["sudo", "-n", "iptables", "-C", *op.argv()[2:]]
            if node.sh(" ".join(q(w) for w in check)).exit_status != 0:
                problems.append(f"node {name}: DOCKER-USER has no rule -i {op.value} -o {op.via} -j ACCEPT")
    return problems


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


def mapped_gid(ip: str) -> str:
    """An IPv4 address's RoCE GID as sysfs prints it: `0000:0000:0000:0000:0000:ffff:c0a8:640a`."""
    return ipaddress.IPv6Address(f"::ffff:{ipaddress.IPv4Address(ip)}").exploded


def roce_v2_index(node: RepairNode, rdma_dev: str, dev: str, ip: str, *, wait_s: int = GID_WAIT_S,
                  root: str = IB_SYSFS) -> int | None:
    """The index of the RoCE v2 entry for `ip` in the device's GID table: its IPv4-mapped GID, type `RoCE v2`,
    bound to `dev`; waited for up to `wait_s`. None when there is none (an entry of another address, of RoCE v1
    or bound to another interface is not one)."""
    # One shell loop on the node: 255 slots read by the builtin, not a round trip (or a process) per file.
    script = (f"end=$(( $(date +%s) + {int(wait_s)} )); while :; do "
              f"for f in {q(root)}/{q(rdma_dev)}/ports/*/gids/*; do g=; "
              'IFS= read -r g <"$f" 2>/dev/null || [ -n "$g" ] || continue; '
              f'[ "$g" = {q(mapped_gid(ip))} ] || continue; i=${{f##*/}}; p=${{f%/gids/*}}; t=; n=; '
              'IFS= read -r t <"$p/gid_attrs/types/$i" 2>/dev/null; '
              'IFS= read -r n <"$p/gid_attrs/ndevs/$i" 2>/dev/null; '
              f'[ "$t" = "RoCE v2" ] && [ "$n" = {q(dev)} ] && {{ echo "$i"; exit 0; }}; done; '
              '[ "$(date +%s)" -ge "$end" ] && exit 1; sleep 0.2; done')
    result = node.sh(f"sh -c {q(script)}", timeout_s=wait_s + 15)
    text = result.stdout.strip()
    return ascii_int(text, 0, 1 << 16) if result.exit_status == 0 else None  # node text: ASCII digits only


def _gid_problems(node: RepairNode, name: str, rdma_dev: str, dev: str, wanted: Sequence[str],
                  found: dict[str, int]) -> list[str]:
    """Each of `wanted` (addresses with their prefix) has its RoCE v2 entry on `rdma_dev`; their indices go into
    `found`, by address."""
    problems = []
    for cidr in wanted:
        ip = cidr.split("/")[0]
        index = roce_v2_index(node, rdma_dev, dev, ip)
        if index is None:
            problems.append(f"node {name}: {rdma_dev} has no RoCE v2 GID entry for {ip} ({mapped_gid(ip)}) on {dev}")
        else:
            found[ip] = index
    return problems


def _interface_problems(node: str, dev: str, state: dict[str, Any], mine: Sequence[str],
                        ops: Sequence[RuntimeOp]) -> list[str]:
    """Carrier, and the MTU and addresses the operations asked for."""
    problems = []
    if "LOWER_UP" not in state.get("flags", []):
        problems.append(f"node {node}: {dev} has no carrier after the change")
    mtu = ascii_int(state.get("mtu", 0), 0, 1 << 20) or 0  # what the node printed, never int() of it
    for op in ops:
        if op.dev == dev and op.kind == MTU and mtu != int(op.value):
            problems.append(f"node {node}: {dev} is at MTU {mtu}, not {op.value}")
        if op.dev == dev and op.kind == ADDR_ADD and op.value not in mine:
            problems.append(f"node {node}: {dev} does not hold {op.value}")
        if op.dev == dev and op.kind == ADDR_DEL and op.value in mine:
            problems.append(f"node {node}: {dev} still holds {op.value}")
    return problems


def active_fec(node: RepairNode, dev: str) -> str | None:
    """`Active FEC encoding:` of `ethtool --show-fec` (None when it says none of it)."""
    for line in node.sh(f"ethtool --show-fec {q(dev)}").stdout.splitlines():
        head, _, value = line.strip().partition(":")
        if head == "Active FEC encoding" and value.split():
            return value.split()[0]
    return None


def wait_fec_settled(node: RepairNode, dev: str, wanted: str, *, wait_s: int = FEC_SETTLE_S,
                     root: str = "/sys/class/net") -> bool:
    """After a FEC change toggled the port: wait until `dev` has carrier again and `ethtool --show-fec` reports
    `wanted` active (one shell loop on the node); False when it did not within `wait_s`."""
    script = (f"end=$(( $(date +%s) + {int(wait_s)} )); while :; do c=; "
              f"IFS= read -r c <{q(root)}/{q(dev)}/carrier 2>/dev/null; "
              f'if [ "$c" = 1 ] && ethtool --show-fec {q(dev)} 2>/dev/null | '
              f"grep -qi {q('^[[:space:]]*Active FEC encoding:[[:space:]]*' + wanted)}; then exit 0; fi; "
              '[ "$(date +%s)" -ge "$end" ] && exit 1; sleep 1; done')
    return node.sh(f"sh -c {q(script)}", timeout_s=wait_s + 15).exit_status == 0


def _fec_problems(node: RepairNode, name: str, dev: str, ops: Sequence[RuntimeOp]) -> list[str]:
    """Each FEC the operations configured is the one the link runs."""
    problems = []
    for op in ops:
        wanted = FEC_ACTIVE.get(op.value) if op.dev == dev and op.kind == FEC else None
        if wanted is not None:
            got = active_fec(node, dev)
            if (got or "").lower() != wanted.lower():
                problems.append(f"node {name}: {dev} runs FEC {got or 'unknown'}, not {wanted}")
    return problems


def verify_link(nodes: Mapping[str, RepairNode], links: Sequence[LinkFacts], node: str, ops: Sequence[RuntimeOp],
                pending: set[tuple[str, str]], *, traffic: bool = False, say: Say | None = None) -> list[str]:
    """The interfaces `ops` changed on `node`, checked live; what failed (empty: verified).

    The GID table must hold the RoCE v2 entry of each address the change added (else of each address the interface
    holds): the one RDMA traffic from that address uses. Each end pings the other at its own MTU with fragmentation
    forbidden, so two ends left at different MTUs fail here. `pending`: the (node, interface) a later step of the
    plan still changes: against those, at the lower of the two MTUs, and not at all while the two ends share no
    subnet yet. `traffic`: once the path is complete and pings, a short ib_write_bw over it too. Each interface is
    judged on its own cable (`links`: a pair's one, a cluster's each); a route's change is read back, not pinged
    (host_problems)."""
    problems: list[str] = host_problems(nodes[node], node, [op for op in ops if op.host])
    me = nodes[node]
    for dev in dict.fromkeys(op.dev for op in ops if op.dev and not op.host):
        link = link_of(links, node, dev)
        if link is None:
            continue
        for op in ops:
            if op.dev == dev and op.kind == FEC and op.value in FEC_ACTIVE:
                wait_fec_settled(me, dev, FEC_ACTIVE[op.value])  # the port toggles; what is then read decides
        state = link_state(me, dev)
        if not state:
            problems.append(f"node {node}: {dev} is gone")
            continue
        mtu = ascii_int(state.get("mtu", 0), 0, 1 << 20) or 0  # what the node printed, never int() of it
        mine = addresses(me, dev)
        problems += _interface_problems(node, dev, state, mine, ops)
        problems += _fec_problems(me, node, dev, ops)
        added = [op.value for op in ops if op.dev == dev and op.kind == ADDR_ADD]
        fn = link.node(node).function(dev)
        gids: dict[str, int] = {}
        if fn is not None and fn.rdma_dev:
            wanted = added or [a for a in mine if not ipaddress.ip_interface(a).ip.is_link_local]
            if not wanted:
                problems.append(f"node {node}: {dev} has no IPv4 address for a RoCE v2 GID entry")
            problems += _gid_problems(me, node, fn.rdma_dev, dev, [a for a in wanted if a in mine], gids)
        problems += _ping_both(nodes, link, node, dev, mtu, mine, pending)
        if traffic and not problems:
            problems += _traffic(nodes, link, node, dev, mine, gids, pending, say)
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


def _traffic(nodes: Mapping[str, RepairNode], link: LinkFacts, node: str, dev: str, mine: Sequence[str],
             gids: dict[str, int], pending: set[tuple[str, str]], say: Say | None) -> list[str]:
    """A short ib_write_bw from the changed end into its peer, once the path is as the plan leaves it (its peer's
    end changes no more) and both ends share a subnet; the GID index of each end is its address's RoCE v2 entry."""
    peer = _peer(link, node, dev)
    if peer is None or peer[0] not in nodes or peer in pending:
        return []
    other, peer_dev = peer
    them = nodes[other]
    pair = _same_subnet(mine, addresses(them, peer_dev))
    mine_fn, peer_fn = link.node(node).function(dev), link.node(other).function(peer_dev)
    if pair is None or mine_fn is None or peer_fn is None or not mine_fn.rdma_dev or not peer_fn.rdma_dev:
        return []
    found: dict[str, int] = dict(gids)
    problems = [] if pair[0] in found else _gid_problems(nodes[node], node, mine_fn.rdma_dev, dev, [pair[0]], found)
    peer_found: dict[str, int] = {}
    problems += _gid_problems(them, other, peer_fn.rdma_dev, peer_dev, [pair[1]], peer_found)
    if problems:
        return problems
    subnet = str(ipaddress.ip_interface(next(a for a in mine if a.split("/")[0] == pair[0])).network)
    client = TrafficEnd(node, dev, mine_fn.rdma_dev, pair[0], found[pair[0]])
    server = TrafficEnd(other, peer_dev, peer_fn.rdma_dev, pair[1], peer_found[pair[1]])
    transports = {n: nodes[n].transport for n in sorted({node, other})}
    def started(line: str) -> None:
        if say is not None:
            say(f"node {node}: {line}")

    result = short_write_bw(transports, client, server, subnet, on_start=started)
    if result.skipped:
        if say is not None:
            say(f"node {node}: the RDMA traffic check is skipped ({result.skipped}); the ping and the GID table "
                "stand for it")
        return []
    if result.problem:
        return [result.problem]
    if say is not None and result.gbps is not None:
        say(f"node {node}: ib_write_bw {node}:{mine_fn.rdma_dev} -> {other}:{peer_fn.rdma_dev}: "
            f"{result.gbps:.2f} Gb/s")
    return []

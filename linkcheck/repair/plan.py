"""The repair plan, pure: the pair's facts, the findings and the captured files in, ordered steps per node out.

Each finding with a known repair gives steps; one that has none (or whose repair cannot be made safely from what
the inspection saw) is listed as not planned, with the reason. Every command's node-derived part (an interface, an
address, a path) is quoted with `shlex.quote`: text from a node is data, never a part of a command line. A stale GID
pin is removed (NCCL >= 2.21 resolves the index per HCA); with an NCCL older than 2.21, where unset means index 0, it
is set to the node's one RoCE v2 IPv4 index instead, or left to the user where the node's HCAs disagree.

A cluster's plan (`cluster_plan`): each cable planned by the same planner, each node's own settings on the node. A
pair is a cluster of one cable. The planner speaks of a pair's two ends as `a` and `b`; a cable gives its two nodes
those roles (its pair view, cluster/cables.py, the node named first as `a`), its findings are planned as a pair's
are, and the steps are named back after the cluster's nodes. A finding of one node (its own `NCCL_IB_HCA`) is
planned with that node as `a` (the repair reads only that node's facts and files). A step two cables ask of one node
(the reboot of the hot-plug state) is planned once; a node slow with every partner is rebooted alone, its cables'
findings being its own. What only a cluster needs (forwarding on a transit node, routes to non-neighbours, a
DOCKER-USER accept) is planned per node by repair/transit.py; what has no repair is listed as not planned,
with the finding's own fix. The plan's state digest covers every node, whichever findings fire.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence

import msgspec

from linkcheck.bundle.format import Bundle
from linkcheck.errors import ParseError
from linkcheck.facts.model import DataPath, Function, LinkFacts, NetplanIntent, NodeFacts
from linkcheck.facts.nccl_hca import GID_PIN, gid_index_in_effect, nccl_functions
from linkcheck.model import Finding, Status
from linkcheck.outcome import ClusterCheck
from linkcheck.parsers.netplan import parse_netplan
from linkcheck.repair.edits import EditError, apply_edit, check_netplan, conf_sets_key, unified_diff
from linkcheck.repair.files import (
    NCCL_CONF,
    NCCL_CONF_USER,
    ONLY_NETPLAN_FILE,
    NodeFiles,
    node_files,
    normal,
    text_sha256,
)
from linkcheck.repair.model import (
    TOUCH_FILE,
    TOUCH_INTERFACE,
    TOUCH_NEIGHBOUR,
    TOUCH_REBOOT,
    FileChange,
    FileEdit,
    NotPlanned,
    RepairPlan,
    Step,
)
from linkcheck.repair.paths import NM_ETC, plan_path_problem, repair_file_problem
from linkcheck.repair.renderer import (
    NETWORKD,
    NM,
    interface_renderers,
    masked_networkd_refusal,
    nm_disconnect_note,
    nm_mtu_interfaces,
    try_revert_note,
)
from linkcheck.repair.runtime import FEC_SETTLE_S

# The community layout's MTU (spark-link s.2.2; no NVIDIA playbook sets one: theirs show 1500); RoCE then negotiates
# 4096 instead of 1024, worth ~3 % on the collective (spark-link s.3e)
JUMBO_MTU = 9000
NEW_NETPLAN_FILE = "/etc/netplan/40-cx7.yaml"  # NVIDIA's playbook's file name (spark-link s.2.2)
REBOOT = "sudo systemctl reboot --no-block"  # the blocking form twice returned without rebooting (spark-link s.3b)
# The order repairs run in on a node: addressing first (the paths exist), then what rides on them.
RULE_ORDER = ("TWINS_SAME_SUBNET", "SINGLE_PCIE_PATH", "NETPLAN_NOT_APPLIED", "NM_PROFILE_RUNTIME_ONLY",
              "MTU_MISMATCH", "NCCL_BUSBW_LOW", "FEC_NOT_RS", "GID_INDEX_STALE", "GID_INDEX_DIFFERS",
              "NCCL_HCA_UNCABLED", "NCCL_IB_HCA_COPIED", "NCCL_IB_HCA_MISSES_CAGE", "LINK_HOTPLUG_DEGRADED",
              "LINK_REPLUGGED_SINCE_BOOT")


def q(value: object) -> str:
    return shlex.quote(str(value))


def _other(node: str) -> str:
    return "b" if node == "a" else "a"


class _Planner:
    """Plans finding by finding; file texts and addresses carry each step's result to the next."""

    def __init__(self, link: LinkFacts, files: Mapping[str, NodeFiles],
                 in_use: set[ipaddress.IPv4Network] | None = None, largest_mtu: int | None = None) -> None:
        self.link = link
        self.files = files
        self.largest_mtu = largest_mtu  # a cluster's largest hop MTU, which a hop below it is raised to
        # Subnets other nodes of the cluster use, and those earlier cables' steps moved twins into (shared between
        # the plans of one cluster's cables); the link's own are read from its facts.
        self.in_use = in_use if in_use is not None else set()
        self.texts: dict[tuple[str, str], str | None] = {}
        self.addresses: dict[tuple[str, str], str] = {}  # (node, netdev) -> the address a step gives it
        self.moved: dict[tuple[str, str], tuple[str, str]] = {}  # (node, netdev) -> (old, new) of a readdress
        self.mtus: dict[tuple[str, str], int] = {}
        self.steps: list[Step] = []
        self.not_planned: list[NotPlanned] = []
        self.done: set[tuple[str, str]] = set()  # (node, action): a second finding asking for it adds nothing

    # --- files -----------------------------------------------------------------------------------------------
    def _text(self, node: str, path: str) -> str | None:
        if (node, path) in self.texts:
            return self.texts[(node, path)]
        files = self.files[node]
        if path in files.nccl_conf:
            return files.nccl_conf[path]
        if path in files.nm_keyfiles:
            return files.nm_keyfiles[path]
        return files.netplan.get(path)

    def _change(self, node: str, path: str, manager: str, edit: FileEdit, mode: str,
                check: Callable[[str], None] | None = None) -> FileChange:
        why = repair_file_problem(path, manager)  # the path comes from the node's own listing: data, confined
        if why is not None:
            raise EditError(why)
        before = self._text(node, path)
        if manager == "netplan" and before is not None and self.files[node].redacted(path):
            raise EditError(f"{path} holds secret values that the inspection did not collect")
        after = normal(apply_edit(before, edit))
        if check is not None:
            check(after)
        self.texts[(node, path)] = after
        original = self.files[node].netplan.get(path) if manager == "netplan" else None
        first = original if original is not None else before
        return FileChange(path=path, manager=manager, diff=unified_diff(path, before, after), mode=mode, edit=edit,
                          before_sha256=text_sha256(first) if first is not None else None)

    def intent_of(self, node: str, fn: Function) -> NetplanIntent | None:
        """What the node's netplan files say of `fn`, as the facts matched it."""
        return next((i for i in self.link.node(node).netplan if i.netdev == fn.netdev), None)

    def _netplan_file_of(self, node: str, fn: Function) -> tuple[str, str] | None:
        """(file, netdef id) of the netplan definition configuring `fn`, as the facts matched it."""
        intent = self.intent_of(node, fn)
        if intent is None:
            return None
        files = self.files[node].netplan
        if intent.source:
            return intent.source, intent.netdef_id
        return (ONLY_NETPLAN_FILE, intent.netdef_id) if list(files) == [ONLY_NETPLAN_FILE] else None

    def _file_with(self, node: str, token: str) -> str | None:
        holders = [p for p in self.files[node].netplan if _has_token(self._text(node, p) or "", token)]
        return holders[0] if len(holders) == 1 else None

    # --- steps -----------------------------------------------------------------------------------------------
    def add(self, step: Step) -> None:
        self.steps.append(step)

    def skip(self, finding: Finding, reason: str) -> None:
        self.not_planned.append(NotPlanned(finding.finding_id, reason))

    def first(self, node: str, action: str) -> bool:
        """True the first time `action` is asked for on `node`."""
        if (node, action) in self.done:
            return False
        self.done.add((node, action))
        return True

    def address_of(self, node: str, fn: Function) -> str | None:
        return self.addresses.get((node, fn.netdev)) or (fn.ipv4[0] if fn.ipv4 else None)

    def peer_of(self, node: str, fn: Function) -> Function | None:
        """The twin fn faces: on the same path, else the peer node's function of the same name."""
        for path in self.link.paths:
            if node == "a" and path.a.netdev == fn.netdev:
                return path.b
            if node == "b" and path.b.netdev == fn.netdev:
                return path.a
        return self.link.node(_other(node)).function(fn.netdev)


def _has_token(text: str, token: str) -> bool:
    return re.search(rf"(?<![0-9A-Za-z.:/]){re.escape(token)}(?![0-9A-Za-z.:/])", text) is not None


def _node_of(subject: str) -> str | None:
    """The node a finding's subject names: `node a`, `a:netdev`, `a:rdma_dev`."""
    if subject.startswith("node "):
        return subject[5:]
    head = subject.split(":", 1)[0]
    return head if head in ("a", "b") and ":" in subject else None


def _ping(fn: Function, peer_ip: str | None, size: int | None = None) -> tuple[str, ...]:
    if peer_ip is None:
        return ()
    jumbo = f"-M do -s {size - 28} " if size else ""
    return (f"ping {jumbo}-c 3 -W 1 -I {q(fn.netdev)} {q(peer_ip.split('/', 1)[0])}",)


def _free_subnet(link: LinkFacts, near: ipaddress.IPv4Network,
                 in_use: Iterable[ipaddress.IPv4Network] = ()) -> ipaddress.IPv4Network | None:
    """The first subnet of `near`'s size after it that no address of either node is in, nor any of `in_use`: in a
    ring of four or more a node reaches a far cable's subnet through a route via its neighbour (repair/transit.py),
    which a connected subnet of the same name would shadow."""
    taken = [ipaddress.ip_interface(c).network for n in (link.a, link.b) for f in n.functions for c in f.ipv4]
    taken += in_use
    step = near.num_addresses
    for k in range(1, 256):
        start = int(near.network_address) + k * step
        if start + step > 1 << 32:
            return None
        candidate = ipaddress.IPv4Network((start, near.prefixlen))
        # Stay in the private range the layout was in (192.168.100.0/24 -> 192.168.101.0/24).
        if candidate.is_private == near.is_private and not any(candidate.overlaps(t) for t in taken):
            return candidate
    return None


def _live_after(p: _Planner, node: str, fn: Function) -> set[str]:
    """fn's IPv4 addresses (link-local aside) once the plan's earlier steps have run: a readdress replaced one."""
    old, new = p.moved.get((node, fn.netdev), ("", ""))
    return {new if c == old else c for c in fn.ipv4 if not ipaddress.ip_interface(c).ip.is_link_local}


def _readdress(p: _Planner, finding: Finding, node: str, fn: Function, old: str, new: str) -> None:
    """Move fn from `old` to `new`: live, then in the netplan file that holds `old`. Where no file holds it but a
    definition configures fn (the files say another address: NETPLAN_NOT_APPLIED), that definition is made to say
    the addresses fn has once moved, never the old ones the live state had."""
    peer = p.peer_of(node, fn)
    peer_ip = p.address_of(_other(node), peer) if peer else None
    touches = [TOUCH_INTERFACE + fn.netdev]
    persistent = None
    holder = p._file_with(node, old)
    located = p._netplan_file_of(node, fn)
    intent = p.intent_of(node, fn)
    p.moved[(node, fn.netdev)] = (old, new)
    if holder is not None:
        try:
            persistent = p._change(node, holder, "netplan", FileEdit("netplan_replace_address", old=old, new=new),
                                   "600", (lambda t: check_netplan(t, located[1], None, None)) if located else None)
            touches.append(TOUCH_FILE + holder)
        except EditError as exc:
            p.skip(finding, f"node {node}: {holder}: {exc}; the new address {new} is set live only")
    elif located is None or intent is None:
        p.skip(finding, f"node {node}: no single netplan file holds {old}: the new address {new} is set live only")
    p.addresses[(node, fn.netdev)] = new
    same_subnet = peer_ip and ipaddress.ip_interface(peer_ip).network == ipaddress.ip_interface(new).network
    p.add(Step(node=node, finding=finding.finding_id,
               runtime=(f"sudo ip addr del {q(old)} dev {q(fn.netdev)}",
                        f"sudo ip addr add {q(new)} dev {q(fn.netdev)}"),
               persistent=persistent,
               verify=(f"ip -br addr show dev {q(fn.netdev)}", *(_ping(fn, peer_ip) if same_subnet else ())),
               touches=tuple(touches)))
    if holder is None and located is not None and intent is not None and p.first(node, f"netplan {fn.netdev}"):
        live, wanted = _live_after(p, node, fn), set(intent.addresses)
        _persist_live(p, finding, node, located, sorted(wanted - live), sorted(live - wanted))


def _shared(node: NodeFacts) -> tuple[str, list[Function]] | None:
    by_subnet: dict[str, list[Function]] = {}
    for fn in node.used_functions:
        for subnet in fn.subnets:
            if not ipaddress.ip_network(subnet).is_link_local:
                by_subnet.setdefault(subnet, []).append(fn)
    return next(((s, fns) for s, fns in sorted(by_subnet.items()) if len(fns) > 1), None)


def plan_twins_same_subnet(p: _Planner, finding: Finding) -> None:
    """Both twins of a node in one subnet: the twin on the second PCI domain moves to a subnet of its own, the
    one its peer twin is in when that differs, else the first free one after the shared subnet (NVIDIA's current
    layout: 192.168.100.0/24 and 192.168.101.0/24), keeping its host number."""
    node = _node_of(finding.subject)
    facts = p.link.node(node) if node else None
    shared = _shared(facts) if facts else None
    if node is None or facts is None or shared is None:
        p.skip(finding, "no two addressed twins share a subnet in the facts")
        return
    subnet, fns = shared
    network = ipaddress.IPv4Network(subnet)
    keep, *movers = sorted(fns, key=lambda f: (f.domain or "", f.netdev))
    for fn in movers:
        old = next(c for c in fn.ipv4 if ipaddress.ip_interface(c).network == network)
        peer = p.peer_of(node, fn)
        peer_addr = p.address_of(_other(node), peer) if peer else None
        target = ipaddress.IPv4Interface(peer_addr).network if peer_addr else None
        if target is None or target == network or target.prefixlen < 16:
            target = _free_subnet(p.link, network, p.in_use)
        if target is None:
            p.skip(finding, f"node {node}: no free subnet of {network.prefixlen} bits after {subnet}")
            continue
        host = int(ipaddress.ip_interface(old).ip) - int(network.network_address)
        taken = {peer_addr.split("/", 1)[0]} if peer_addr else set()
        candidate = ipaddress.ip_address(int(target.network_address) + host)
        while str(candidate) in taken or candidate not in target or candidate in (target.network_address,
                                                                                   target.broadcast_address):
            host = host % (target.num_addresses - 2) + 1
            candidate = ipaddress.ip_address(int(target.network_address) + host)
        new = f"{candidate}/{target.prefixlen}"
        p.in_use.add(target)
        if p.first(node, f"address {fn.netdev}"):
            _readdress(p, finding, node, fn, old, new)
    del keep


def plan_single_pcie_path(p: _Planner, finding: Finding) -> None:
    """Of SINGLE_PCIE_PATH's causes: a peer IP bound to the wrong twin's MAC (the neighbour entry is removed, the
    next packet resolves it again) and NCCL_IB_HCA selecting one twin (set to both); measurements are repaired
    through their cause."""
    node = _node_of(finding.subject)
    if node is None:
        p.skip(finding, "a measurement: its cause's steps repair it, the re-check confirms it")
        return
    facts = p.link.node(node)
    if finding.subject.startswith("node "):
        plan_nccl_hca(p, finding)
        return
    netdev = finding.subject.split(":", 1)[1]
    fn = facts.function(netdev)
    peer = p.peer_of(node, fn) if fn else None
    if fn is None or peer is None or peer.ip is None:
        p.skip(finding, f"node {node}: {netdev} faces no addressed twin")
        return
    entry = next((n for n in facts.neighbours if n.ip == peer.ip and n.dev in (fn.netdev, None)), None)
    if entry is None or not fn.ipv4:
        p.skip(finding, f"node {node}: {netdev}: no wrong neighbour entry (an unaddressed twin is addressed by hand)")
        return
    if p.first(node, f"neigh {peer.ip} {fn.netdev}"):
        p.add(Step(node=node, finding=finding.finding_id,
                   runtime=(f"sudo ip neigh del {q(peer.ip)} dev {q(fn.netdev)}",),
                   persistent=None,
                   verify=(*_ping(fn, peer.ip), f"ip neigh show {q(peer.ip)} dev {q(fn.netdev)}"),
                   touches=(TOUCH_INTERFACE + fn.netdev, f"{TOUCH_NEIGHBOUR}{peer.ip}@{fn.netdev}")))


def _mtu_step(p: _Planner, finding: Finding, node: str, fn: Function, mtu: int) -> None:
    if not p.first(node, f"mtu {fn.netdev}"):
        return
    touches = [TOUCH_INTERFACE + fn.netdev]
    persistent = None
    located = p._netplan_file_of(node, fn)
    try:
        if located is not None:
            path, netdef = located
            persistent = p._change(node, path, "netplan", FileEdit("netplan_set_mtu", netdef=netdef, value=mtu),
                                   "600", lambda t: check_netplan(t, netdef, None, mtu))
        elif _nm_configures(p, node, fn):
            p.skip(finding, f"node {node}: {fn.netdev} is configured by a NetworkManager profile: set its MTU there "
                   f"(sudo nmcli connection modify <profile> 802-3-ethernet.mtu {mtu}); the MTU is set live only")
        elif p.files[node].netplan_read and NEW_NETPLAN_FILE not in p.files[node].netplan:
            current = p.address_of(node, fn)
            addresses = (current,) if current else fn.ipv4
            persistent = p._change(node, NEW_NETPLAN_FILE, "netplan",
                                   FileEdit("netplan_new", netdef=fn.netdev, addresses=addresses, value=mtu),
                                   "600", lambda t: check_netplan(t, fn.netdev, None, mtu))
        else:
            p.skip(finding, f"node {node}: no netplan file configures {fn.netdev} and the files could not be read "
                   "or 40-cx7.yaml exists: the MTU is set live only")
    except EditError as exc:
        p.skip(finding, f"node {node}: {exc}; the MTU is set live only")
    if persistent is not None:
        touches.append(TOUCH_FILE + persistent.path)
    p.mtus[(node, fn.netdev)] = mtu
    peer = p.peer_of(node, fn)
    peer_mtu = p.mtus.get((_other(node), peer.netdev), peer.mtu) if peer else None
    p.add(Step(node=node, finding=finding.finding_id, runtime=(f"sudo ip link set dev {q(fn.netdev)} mtu {mtu}",),
               persistent=persistent,
               verify=(f"ip -o link show dev {q(fn.netdev)}",
                       *(_ping(fn, p.address_of(_other(node), peer), min(mtu, peer_mtu or mtu)) if peer else ())),
               touches=tuple(touches)))


def _nm_configures(p: _Planner, node: str, fn: Function) -> bool:
    return any(f"interface-name={fn.netdev}" in text.split("\n") for text in p.files[node].nm_keyfiles.values())


def _path_by_key(link: LinkFacts, key: str) -> DataPath | None:
    return next((path for path in link.paths if path.key == key), None)


def plan_mtu_mismatch(p: _Planner, finding: Finding) -> None:
    """The two ends of a path at different MTUs: the lower end raised to the higher end's MTU, the one MTU_MISMATCH's
    fix names (the mismatch is the fault; 9000 is community practice, not NVIDIA's, so it is not imposed here). A
    cluster's hop below its largest MTU (one port, `a:netdev`, planned on the cable it is on): raised to that MTU,
    the one its fix names."""
    node = _node_of(finding.subject)
    if node is not None:
        fn = p.link.node(node).function(finding.subject.split(":", 1)[1])
        if fn is None or fn.mtu is None or p.largest_mtu is None or fn.mtu >= p.largest_mtu:
            p.skip(finding, "the port, its MTU or the cluster's largest MTU is not in the facts")
            return
        _mtu_step(p, finding, node, fn, p.largest_mtu)
        return
    path = _path_by_key(p.link, finding.subject)
    if path is None or path.a.mtu is None or path.b.mtu is None:
        p.skip(finding, "the path or its MTUs are not in the facts")
        return
    target = max(path.a.mtu, path.b.mtu)
    for node, fn in (("a", path.a), ("b", path.b)):
        if fn.mtu != target:
            _mtu_step(p, finding, node, fn, target)


def plan_busbw_mtu(p: _Planner, finding: Finding) -> None:
    """NCCL_BUSBW_LOW with every end at a standard MTU: MTU 9000 is the likely cure (~3 %); other causes are
    repaired through their own findings."""
    ends = [(n, f) for path in p.link.paths for n, f in (("a", path.a), ("b", path.b))]
    if not ends or any(f.mtu is None or f.mtu >= JUMBO_MTU for _, f in ends):
        p.skip(finding, "not an MTU matter: its cause's steps repair it, the re-check confirms it")
        return
    for node, fn in ends:
        _mtu_step(p, finding, node, fn, JUMBO_MTU)


def plan_fec(p: _Planner, finding: Finding) -> None:
    """A path end whose active FEC is not RS: RS set live (ethtool); netplan and NetworkManager keyfiles have no
    FEC setting, so nothing persists it (a reboot renegotiates, normally to RS)."""
    path = _path_by_key(p.link, finding.subject)
    if path is None:
        p.skip(finding, "the path is not in the facts")
        return
    for node, fn in (("a", path.a), ("b", path.b)):
        if fn.fec_active is not None and "RS" not in fn.fec_active and p.first(node, f"fec {fn.netdev}"):
            peer = p.peer_of(node, fn)
            # mlx5 toggles the port on a FEC change (mlx5e_set_fecparam -> mlx5_toggle_port_link): the path is
            # down for a few seconds, and is verified once carrier and the renegotiated FEC are back.
            p.add(Step(node=node, finding=finding.finding_id,
                       runtime=(f"sudo ethtool --set-fec {q(fn.netdev)} encoding rs",), persistent=None,
                       verify=(f"the port goes down and up (mlx5 toggles the link): wait up to {FEC_SETTLE_S} s for "
                               f"cat /sys/class/net/{q(fn.netdev)}/carrier to read 1",
                               f"ethtool --show-fec {q(fn.netdev)}  (Active FEC encoding: RS)",
                               *_ping(fn, peer.ip if peer else None)),
                       touches=(TOUCH_INTERFACE + fn.netdev,)))


def _persist_live(p: _Planner, finding: Finding, node: str, located: tuple[str, str], drop: list[str],
                  add: list[str]) -> None:
    """The netplan file made to say the live addresses: each old one replaced by a new one, then the rest."""
    path, netdef = located
    edits = []
    while drop and add:
        edits.append(FileEdit("netplan_replace_address", old=drop.pop(0), new=add.pop(0)))
    edits += [FileEdit("netplan_remove_address", old=o) for o in drop]
    edits += [FileEdit("netplan_add_address", netdef=netdef, new=n) for n in add]
    for edit in edits:
        try:
            change = p._change(node, path, "netplan", edit, "600", lambda t: check_netplan(t, netdef, None, None))
        except EditError as exc:
            p.skip(finding, f"node {node}: {path}: {exc}")
            return
        p.add(Step(node=node, finding=finding.finding_id, runtime=(), persistent=change,
                   verify=(f"sudo netplan get ethernets.{q(netdef)}",), touches=(TOUCH_FILE + path,)))


def plan_netplan_not_applied(p: _Planner, finding: Finding) -> None:
    """The files and the live twin disagree. A twin that faces its peer live keeps what works and the file is made
    to say it (applying the file would cut the path); a twin that faces nothing gets the file's addresses live."""
    node = _node_of(finding.subject)
    netdev = finding.subject.split(":", 1)[1] if node else ""
    facts = p.link.node(node) if node else None
    fn = facts.function(netdev) if facts else None
    intent = next((i for i in facts.netplan if i.netdev == netdev), None) if facts else None
    located = p._netplan_file_of(node, fn) if node and fn else None
    if node is None or fn is None or intent is None or located is None:
        p.skip(finding, "the netplan definition or its file is not in the facts")
        return
    path, netdef = located
    live = _live_after(p, node, fn)  # a twin an earlier step moved (TWINS_SAME_SUBNET) keeps its new address
    wanted = set(intent.addresses)
    in_path = any(fn.netdev in (dp.a.netdev, dp.b.netdev) and (dp.a if node == "a" else dp.b) == fn
                  for dp in p.link.paths)
    addressed = p.first(node, f"netplan {fn.netdev}")  # once per twin: a readdress may have made its file say it
    if addressed and in_path and live != wanted:
        _persist_live(p, finding, node, (path, netdef), sorted(wanted - live), sorted(live - wanted))
    elif addressed and not in_path and wanted and (fn.carrier is True):
        runtime = [f"sudo ip addr del {q(c)} dev {q(fn.netdev)}" for c in sorted(live - wanted)]
        runtime += [f"sudo ip addr add {q(c)} dev {q(fn.netdev)}" for c in sorted(wanted - live)]
        if runtime:
            peer = p.peer_of(node, fn)
            p.addresses[(node, fn.netdev)] = sorted(wanted)[0]
            p.add(Step(node=node, finding=finding.finding_id, runtime=tuple(runtime), persistent=None,
                       verify=(f"ip -br addr show dev {q(fn.netdev)}",
                               *(_ping(fn, p.address_of(_other(node), peer)) if peer else ())),
                       touches=(TOUCH_INTERFACE + fn.netdev,)))
    if intent.mtu is not None and fn.mtu is not None and intent.mtu != fn.mtu:
        if fn.mtu > intent.mtu:
            _mtu_step(p, finding, node, fn, fn.mtu)
        else:
            _mtu_step(p, finding, node, fn, intent.mtu)


def plan_nm_runtime(p: _Planner, finding: Finding) -> None:
    """A NetworkManager profile kept only under /run: copied to /etc/NetworkManager/system-connections (mode 600),
    which NetworkManager reads at every start. On Ubuntu 23.10 and later it saves new or modified profiles as
    /etc/netplan/90-NM-<uuid>.yaml instead, but still reads the keyfiles there and moves one into netplan only when
    it is next modified ("The new NetworkManager will remove connection profiles that you eventually modify from
    /etc/NetworkManager", netplan docs, netplan-everywhere); the copy survives a reboot either way."""
    node = _node_of(finding.subject)
    netdev = finding.subject.split(":", 1)[1] if node else ""
    facts = p.link.node(node) if node else None
    profile = next((pr for pr in facts.nm_runtime if pr.netdev == netdev), None) if facts else None
    if node is None or profile is None:
        p.skip(finding, "the profile is not in the facts")
        return
    target = f"{NM_ETC}/{profile.path.rsplit('/', 1)[-1]}"
    shown = p.files[node].nm_keyfiles.get(profile.path)
    if target in p.files[node].nm_keyfiles or shown is None:
        p.skip(finding, f"node {node}: {target} exists or the profile's keyfile was not captured")
        return
    if not p.first(node, f"nm {profile.path}"):
        return
    change = FileChange(path=target, manager="NetworkManager", diff=unified_diff(target, None, shown), mode="600",
                        edit=FileEdit("copy_from", old=profile.path), before_sha256=None)
    why = plan_path_problem(change)
    if why is not None:
        p.skip(finding, f"node {node}: {why}")
        return
    p.add(Step(node=node, finding=finding.finding_id, runtime=("sudo nmcli connection reload",), persistent=change,
               verify=(f"sudo test -f {q(target)}", "nmcli -f NAME,UUID,FILENAME connection show"),
               touches=(TOUCH_FILE + target,)))


def _conf_step(p: _Planner, finding: Finding, node: str, key: str, edit: FileEdit,
               check: Callable[[str, str], str], source: str | None = None) -> bool:
    """A change of `key` in `source`, by default the nccl.conf that sets it (the one NCCL reads it from);
    `check(sudo, path)` is the command that verifies it. False: not planned (the reason is in not_planned)."""
    source = source or p.link.node(node).nccl_sources.get(key)
    if source not in (NCCL_CONF, NCCL_CONF_USER):
        where = "the job's environment (shell profile, compose file, mpirun -x)" if source == "environment" else \
            repr(source or "nowhere linkcheck reads")
        p.skip(finding, f"node {node}: {key} is set in {where}: change it there")
        return False
    if source not in p.files[node].nccl_conf:
        p.skip(finding, f"node {node}: {source} was not captured")
        return False
    if not p.first(node, f"{edit.kind} {key} {source}"):
        return True
    try:
        change = p._change(node, source, "nccl", edit, "644")
    except EditError as exc:
        p.skip(finding, f"node {node}: {source}: {exc}")
        return False
    sudo = "sudo " if source == NCCL_CONF else ""
    path = source if source == NCCL_CONF else '"$HOME"/.nccl.conf'
    p.add(Step(node=node, finding=finding.finding_id, runtime=(), persistent=change,
               verify=(check(sudo, path),), touches=(TOUCH_FILE + source,)))
    return True


def _unpin(p: _Planner, finding: Finding, node: str) -> None:
    key = GID_PIN
    drop = FileEdit("conf_drop_key", key=key)

    def check(sudo: str, path: str) -> str:
        return f"! {sudo}grep -Eq '^[[:space:]]*(export[[:space:]]+)?{key}[[:space:]]*=' {path}"

    if not gid_index_in_effect(p.link.node(node)).auto_when_unset:
        _pin_old_nccl(p, finding, node)
        return
    unpinned = _conf_step(p, finding, node, key, drop, check)
    # NCCL reads ~/.nccl.conf before /etc/nccl.conf: a pin in /etc/nccl.conf that the user's file shadows takes
    # effect once that one is gone, so it goes too (else the re-check finds the same pin again).
    if (unpinned and p.link.node(node).nccl_sources.get(key) == NCCL_CONF_USER
            and conf_sets_key(p.files[node].nccl_conf.get(NCCL_CONF), key)):
        _conf_step(p, finding, node, key, drop, check, source=NCCL_CONF)


def _pin_old_nccl(p: _Planner, finding: Finding, node: str) -> None:
    """NCCL before 2.21 reads an unset NCCL_IB_GID_INDEX as 0 (NVIDIA/nccl v2.20.5-1 src/transport/net_ib.cc:80), so
    removing a pin would not help: the pin becomes the node's RoCE v2 IPv4 index where all its NCCL HCAs agree."""
    facts = p.link.node(node)
    indices = {f.gid_index for f in nccl_functions(facts)}
    version = facts.identity.nccl_version
    if len(indices) != 1 or None in indices:
        p.skip(finding, f"node {node}: NCCL {version} predates GID auto-selection (2.21) and its HCAs' RoCE v2 IPv4 "
                        "indices differ or are unknown, so no one index serves them: use NCCL 2.21 or later")
        return
    value = str(indices.pop())
    source = facts.nccl_sources.get(GID_PIN) or NCCL_CONF
    _conf_step(p, finding, node, GID_PIN, FileEdit("conf_set_key", key=GID_PIN, new=value),
               lambda sudo, path: f"{sudo}grep -qx {q(GID_PIN + '=' + value)} {path}", source=source)


def plan_gid_pin(p: _Planner, finding: Finding) -> None:
    """The GID index NCCL uses is not the RoCE v2 IPv4 entry: the pin removed where it is set, never re-pinned to
    another index while NCCL resolves it itself (2.21 and later). An index that differs between HCAs while pinned
    (GID_INDEX_DIFFERS) is unpinned on every node that pins one."""
    node = _node_of(finding.subject)
    if finding.rule_id == "GID_INDEX_DIFFERS":
        for name in ("a", "b"):
            if gid_index_in_effect(p.link.node(name)).index is not None:
                _unpin(p, finding, name)
        return
    if node is None:
        p.skip(finding, "the node is not named")
        return
    _unpin(p, finding, node)


def plan_nccl_hca(p: _Planner, finding: Finding) -> None:
    """NCCL_IB_HCA naming an uncabled HCA, or one twin only: the exact names ('=') of the addressed twins of the
    cabled cage, in the file that sets it."""
    node = _node_of(finding.subject)
    facts = p.link.node(node) if node else None
    if node is None or facts is None:
        p.skip(finding, "the node is not named")
        return
    twins = sorted((f for f in facts.used_functions if f.cage in facts.cabled_cages and f.rdma_dev),
                   key=lambda f: (f.bdf or "", f.netdev))
    if len(twins) < 1:
        p.skip(finding, f"node {node}: no addressed twin of the cabled cage to name")
        return
    value = "=" + ",".join(f.rdma_dev or "" for f in twins)
    _conf_step(p, finding, node, "NCCL_IB_HCA", FileEdit("conf_set_key", key="NCCL_IB_HCA", new=value),
               lambda sudo, path: f"{sudo}grep -qx {q('NCCL_IB_HCA=' + value)} {path}")


def reboot_step(node: str, finding: Finding) -> Step:
    """The hot-plug state's repair on one node: rebooted with its cables attached (the state is per machine,
    spark-link s.3b); planned, and applied only with --allow-reboot."""
    return Step(node=node, finding=finding.finding_id, runtime=(REBOOT,), persistent=None,
                verify=("linkcheck check --bench",), touches=(TOUCH_REBOOT,))


def plan_reboot(p: _Planner, finding: Finding) -> None:
    """The hot-plug state: both nodes rebooted with the cable attached."""
    for node in ("a", "b"):
        if p.first(node, "reboot"):
            p.add(reboot_step(node, finding))


PLANNERS: dict[str, Callable[[_Planner, Finding], None]] = {
    "TWINS_SAME_SUBNET": plan_twins_same_subnet,
    "SINGLE_PCIE_PATH": plan_single_pcie_path,
    "NETPLAN_NOT_APPLIED": plan_netplan_not_applied,
    "NM_PROFILE_RUNTIME_ONLY": plan_nm_runtime,
    "MTU_MISMATCH": plan_mtu_mismatch,
    "NCCL_BUSBW_LOW": plan_busbw_mtu,
    "FEC_NOT_RS": plan_fec,
    "GID_INDEX_STALE": plan_gid_pin,
    "GID_INDEX_DIFFERS": plan_gid_pin,
    "NCCL_HCA_UNCABLED": plan_nccl_hca,
    "NCCL_IB_HCA_COPIED": plan_nccl_hca,  # a cluster node's: its own cabled HCAs, as for an uncabled one
    "NCCL_IB_HCA_MISSES_CAGE": plan_nccl_hca,  # a cluster node's: every cabled HCA of its own
    "LINK_HOTPLUG_DEGRADED": plan_reboot,
    "LINK_REPLUGGED_SINCE_BOOT": plan_reboot,
}


def _node_state(name: str, node: NodeFacts, nf: NodeFiles) -> list[object]:
    """What a node's steps are made from: its interfaces, neighbours, NCCL settings, runtime profiles and files."""
    return [[name, node.hostname,
             [(f.netdev, f.mac, f.mtu, list(f.ipv4), f.cage, f.bdf, list(f.fec_active or ()), f.rdma_dev)
              for f in sorted(node.functions, key=lambda f: f.netdev)],
             sorted((n.ip, n.dev or "", n.mac or "") for n in node.neighbours),
             sorted(node.nccl.items()), sorted(node.nccl_sources.items()),
             [(r.path, list(r.addresses)) for r in node.nm_runtime]],
            sorted((p, text_sha256(t)) for p, t in nf.netplan.items()),
            sorted((p, text_sha256(t)) for p, t in nf.nm_keyfiles.items()),
            sorted((p, text_sha256(t) if t is not None else "") for p, t in nf.nccl_conf.items())]


def state_sha256(link: LinkFacts, files: Mapping[str, NodeFiles]) -> str:
    """A digest of everything a plan is made from, so that a plan is applied only to the state it was made for."""
    parts: list[object] = []
    for name in ("a", "b"):
        parts += _node_state(name, link.node(name), files.get(name, NodeFiles()))
    return hashlib.sha256(msgspec.json.encode(parts)).hexdigest()


def cluster_state_sha256(check: ClusterCheck, bundle: Bundle) -> str:
    """The cluster's: each node's state as a pair's digest reads it, with its routes and forwarding (what the
    cluster's own steps are made from), whichever findings fire; so a saved cluster's plan is applied only to the
    cluster and state it was made for, as a pair's is."""
    parts: list[object] = []
    for name in check.view.topology.nodes:
        node = check.facts.nodes.get(name)
        if node is None:
            continue
        parts += _node_state(name, node, node_files(bundle, name))
        fwd = check.facts.forwarding.get(name)
        parts.append([sorted((dst, dev or "") for dst, dev in node.routes),
                      msgspec.to_builtins(fwd) if fwd is not None else None])
    return hashlib.sha256(msgspec.json.encode(parts)).hexdigest()


def firing(findings: Iterable[Finding]) -> list[Finding]:
    """The findings a plan answers: those that warn or fail."""
    return [f for f in findings if f.status in (Status.WARN, Status.FAIL)]


def plan_repairs(link: LinkFacts, findings: Sequence[Finding], files: Mapping[str, NodeFiles],
                 in_use: set[ipaddress.IPv4Network] | None = None, largest_mtu: int | None = None) -> RepairPlan:
    """The plan for the warning and failing findings that have a known repair, node a's steps first, each node's
    in repair order; the others are listed as not planned. For one cable of a cluster: `in_use`, the subnets the
    cluster's other nodes use, to which a subnet this plan moves twins into is added (one set for every cable), and
    `largest_mtu`, its largest hop MTU."""
    p = _Planner(link, files, in_use, largest_mtu)
    firing_now = firing(findings)
    for rule in RULE_ORDER:
        for finding in (f for f in firing_now if f.rule_id == rule):
            PLANNERS[rule](p, finding)
    for finding in firing_now:
        if finding.rule_id not in PLANNERS and finding.explained_by is None:
            p.skip(finding, "no automatic repair: see the finding's fix")
    steps = sorted(p.steps, key=lambda s: s.node)  # stable: each node's steps keep their order
    steps, refused, notes = renderer_rules(steps, files)
    return RepairPlan(steps=tuple(steps), not_planned=(*p.not_planned, *refused),
                      hostnames=(link.a.hostname, link.b.hostname), state_sha256=state_sha256(link, files),
                      notes=tuple(notes))


def netplan_dump(files: NodeFiles) -> str:
    """The captured netplan files as one `tail -n +1` dump again, for linkcheck's netplan parser."""
    return "\n".join(f"==> {path} <==\n{text}" for path, text in sorted(files.netplan.items()))


def renderer_rules(steps: list[Step], files: Mapping[str, NodeFiles]) -> tuple[list[Step], list[NotPlanned],
                                                                                list[str]]:
    """The steps that change netplan files, judged by the node's netplan and renderers: refused on a node with
    systemd-networkd masked and an MTU netplan renders for NetworkManager (the step's own included); otherwise
    noted: a netplan whose `try` revert is not relied upon, the interfaces `netplan try` disconnects."""
    kept: list[Step] = []
    refused: list[NotPlanned] = []
    notes: list[str] = []
    for node in ("a", "b"):
        mine = [s for s in steps if s.node == node]
        netplan = [s for s in mine if s.persistent is not None and s.persistent.manager == "netplan"]
        nf = files.get(node, NodeFiles())
        if not netplan:
            kept += mine
            continue
        dump = netplan_dump(nf)
        renderers = interface_renderers(dump)
        nm_mtu = set(nm_mtu_interfaces(dump))
        for s in netplan:
            edit = s.persistent.edit if s.persistent is not None else None
            new_mtu = edit is not None and (edit.kind == "netplan_set_mtu" or (edit.kind == "netplan_new" and
                                                                               edit.value > 0))
            if new_mtu and edit is not None and renderers.get(edit.netdef, _global_renderer(dump)) == NM:
                nm_mtu.add(edit.netdef)
        why = masked_networkd_refusal(nf.networkd, sorted(nm_mtu))
        if why is not None:
            refused += [NotPlanned(f, f"node {node}: {why}") for f in dict.fromkeys(s.finding for s in netplan)]
            kept += [s for s in mine if s not in netplan]
            continue
        kept += mine
        notes += [n for n in (try_revert_note(node, nf.netplan_version), nm_disconnect_note(node, renderers)) if n]
    return kept, refused, notes


def _global_renderer(dump: str) -> str:
    """The renderer a definition without its own gets (the files' global one, else networkd)."""
    try:
        return parse_netplan(dump).renderer or NETWORKD if dump.strip() else NETWORKD
    except ParseError:
        return NETWORKD

"""The transit steps: what a node that carries other nodes' traffic needs (a ring of four or more, a mixed
layout), each one `fix --apply` applies and takes back with a read-back (repair/apply.py):

- TRANSIT_FORWARDING_OFF: `sysctl -w net.ipv4.ip_forward=1` now, and linkcheck's own drop-in
  /etc/sysctl.d/60-linkcheck-forward.conf for the next boot. Linux's Documentation/networking/ip-sysctl.rst:
  "ip_forward - BOOLEAN / 0 - disabled (default) / not 0 - enabled / Forward Packets between interfaces. This
  variable is special, its change resets all configuration parameters to their default state (RFC1122 for hosts,
  RFC1812 for routers)"; sysctl.d(5): systemd-sysctl reads /etc/sysctl.d/*.conf at boot. Its undo sets the value
  read just before the change.
- NO_ROUTE_TO_NON_NEIGHBOUR: `ip route replace SUBNET via NEIGHBOUR dev DEV` per non-neighbour subnet without a
  route, through the neighbour that shares a cable with both (cluster/facts.py missing_routes); its undo deletes
  exactly that route (or puts back the one it replaced). Persistent where netplan defines the interface: a
  `routes:` item (to, via) in its definition, committed through `netplan try` as the pair's netplan steps are
  (netplan's YAML reference: routes "to", "via"); elsewhere runtime only, and the plan's note says so.
- DOCKER_FORWARD_DROP: `iptables -I DOCKER-USER -i IN -o OUT -j ACCEPT` for each ordered pair of the node's own
  addressed CX-7 interfaces: what it routes from one of its cables to another (ports that carry the cluster's own
  subnets only), and nothing else; its undo deletes that exact rule (`iptables -D` with the same words). By its
  interfaces, not its addresses: the rule that judges the finding reads an address match as deciding only part of
  the traffic (facts/forwarding_facts.py `_PARTIAL`), so an accept by subnet would leave it firing while traffic
  passes.
  docs.docker.com (engine/network/firewall-iptables): DOCKER-USER is "A placeholder for user-defined rules that
  will be processed before rules in the DOCKER-FORWARD and DOCKER chains"; moby libnetwork firewall_linux.go
  (arrangeUserFilterRule) creates the chain, its RETURN rule and the jump from FORWARD when Docker starts, and
  "will not delete or modify any pre-existing rules from the DOCKER-USER filter chain". The rules live in the
  kernel only: a reboot loses them, and the chain Docker creates at its next start is empty. The plan's note says
  so.

spark-link.md s.10 (corrected 2026-12-06): these matter only where IP traffic crosses a node (NCCL's sockets on the
CX-7 addresses); the rules fire (warn) only then, and only what fires is planned.
"""

from __future__ import annotations

import ipaddress
import itertools
from shlex import quote as q

from linkcheck.cluster.facts import ClusterFacts, missing_routes
from linkcheck.facts.forwarding_facts import docker_user_accept, forward_ports
from linkcheck.facts.model import NodeFacts
from linkcheck.model import Finding
from linkcheck.repair.edits import EditError, apply_edit, unified_diff
from linkcheck.repair.files import ONLY_NETPLAN_FILE, NodeFiles, text_sha256
from linkcheck.repair.model import TOUCH_FILE, TOUCH_INTERFACE, FileChange, FileEdit, NotPlanned, RepairPlan, Step
from linkcheck.repair.paths import SYSCTL_FORWARD_CONF

FORWARD_KEY = "net.ipv4.ip_forward"
DOCKER_NOTE = ("DOCKER-USER accepts are runtime only: a reboot loses them, and Docker creates the chain empty when it "
               "starts again (persist them with iptables-persistent, as the finding's fix says)")
ROUTE_NOTE = ("persist it as a `routes:` item (to, via) under the interface in the node's netplan, as the finding's "
              "fix says")
TRANSIT_RULES = ("TRANSIT_FORWARDING_OFF", "NO_ROUTE_TO_NON_NEIGHBOUR", "DOCKER_FORWARD_DROP")


def _forwarding(node: str, finding: Finding, captured: str | None) -> Step | NotPlanned:
    """ip_forward on now, and the drop-in that keeps it on at boot (the file as the inspection saw it, if any)."""
    edit = FileEdit("conf_set_key", key=FORWARD_KEY, new="1")
    try:
        after = apply_edit(captured, edit)
    except EditError as exc:
        return NotPlanned(finding.finding_id, f"node {node}: {SYSCTL_FORWARD_CONF}: {exc}")
    change = FileChange(SYSCTL_FORWARD_CONF, "sysctl", unified_diff(SYSCTL_FORWARD_CONF, captured, after), "644",
                        edit, None)
    return Step(node=node, finding=finding.finding_id, runtime=(f"sudo sysctl -w {FORWARD_KEY}=1",),
                persistent=change, verify=(f"sysctl -n {FORWARD_KEY}",), touches=(TOUCH_FILE + SYSCTL_FORWARD_CONF,))


def _dev_for(facts: ClusterFacts, node: str, via: str) -> str | None:
    """The node's CX-7 interface on the gateway's subnet."""
    gateway = ipaddress.ip_address(via)
    for fn in facts.nodes[node].functions:
        if any(gateway in ipaddress.ip_interface(c).network for c in fn.ipv4):
            return fn.netdev
    return None


def _route_change(node: NodeFacts, files: NodeFiles, dev: str, subnet: str, via: str,
                  texts: dict[str, str]) -> FileChange | str:
    """The route as a `routes:` item in the netplan definition of `dev`, on the file as the steps before left it
    (`texts`); why not, when it cannot be made there."""
    intent = next((i for i in node.netplan if i.netdev == dev), None)
    path = intent.source if intent is not None and intent.source else \
        ONLY_NETPLAN_FILE if intent is not None and list(files.netplan) == [ONLY_NETPLAN_FILE] else None
    if intent is None or path is None or path not in files.netplan:
        return f"no netplan file defines {dev}"
    edit = FileEdit("netplan_add_route", netdef=intent.netdef_id, new=subnet, old=via)
    before = texts.get(path, files.netplan[path])
    try:
        after = apply_edit(before, edit)
    except EditError as exc:
        return f"{path}: {exc}"
    texts[path] = after
    return FileChange(path, "netplan", unified_diff(path, before, after), "600", edit,
                      text_sha256(files.netplan[path]))


def _routes(facts: ClusterFacts, node: str, finding: Finding, files: NodeFiles) -> tuple[list[Step], list[str]]:
    """One step per missing route: `ip route replace` now and, where netplan defines the interface, the route in
    its definition (netplan try commits it as the pair's netplan steps are); the notes of routes kept runtime
    only. NotPlanned as the only step when a route has no neighbour to go through."""
    steps: list[Step] = []
    notes: list[str] = []
    texts: dict[str, str] = {}
    for missing in missing_routes(facts, node):
        dev = _dev_for(facts, node, missing.via) if missing.via else None
        if dev is None or missing.via is None:
            raise _NoWay(f"node {node}: no neighbour shares a cable with both it and {missing.to}, to route "
                         f"{missing.subnet} through")
        change = _route_change(facts.nodes[node], files, dev, missing.subnet, missing.via, texts)
        if isinstance(change, str):
            notes.append(f"node {node}: the route to {missing.subnet} is runtime only ({change}): {ROUTE_NOTE}")
        touches = (TOUCH_INTERFACE + dev, *((TOUCH_FILE + change.path,) if isinstance(change, FileChange) else ()))
        steps.append(Step(node=node, finding=finding.finding_id,
                          runtime=(f"sudo ip route replace {q(missing.subnet)} via {q(str(missing.via))} "
                                   f"dev {q(dev)}",),
                          persistent=change if isinstance(change, FileChange) else None,
                          verify=(f"ip route show {q(missing.subnet)}",), touches=touches))
    if not steps:
        raise _NoWay(f"node {node}: its missing routes are not known")
    return steps, notes


class _NoWay(Exception):
    """A cluster finding with no step to plan: why."""


def _accepts(facts: ClusterFacts, node: str, finding: Finding) -> Step | NotPlanned:
    fwd = facts.forwarding.get(node)
    if fwd is None or fwd.docker_user is not True:
        return NotPlanned(finding.finding_id, f"node {node}: there is no DOCKER-USER chain to accept in (the "
                          "FORWARD chain's own rules are Docker's, rebuilt when it restarts)")
    ports = forward_ports(facts.nodes[node])
    pairs = list(itertools.permutations(ports, 2))
    if not pairs:
        return NotPlanned(finding.finding_id, f"node {node}: fewer than two addressed CX-7 interfaces to route "
                          "between")
    return Step(node=node, finding=finding.finding_id,
                runtime=tuple(docker_user_accept("-I", q(i), q(o)) for i, o in pairs),
                persistent=None,
                verify=tuple(docker_user_accept("-C", q(i), q(o)) for i, o in pairs),
                touches=tuple(TOUCH_INTERFACE + p for p in ports))


def transit_plan(facts: ClusterFacts, node: str, finding: Finding, files: NodeFiles) -> RepairPlan:
    """The plan of one of a node's TRANSIT_RULES findings: its steps and what the plan must say of them, or why
    none is planned. `files`: the node's captured files (its netplan; the forwarding drop-in is not captured, so
    its diff is against no file, and `fix --apply` edits the node's own copy)."""
    notes: list[str] = []
    got: Step | NotPlanned
    if finding.rule_id == "NO_ROUTE_TO_NON_NEIGHBOUR":
        try:
            steps, notes = _routes(facts, node, finding, files)
        except _NoWay as exc:
            return RepairPlan(not_planned=(NotPlanned(finding.finding_id, str(exc)),))
        return RepairPlan(steps=tuple(steps), notes=tuple(notes))
    if finding.rule_id == "TRANSIT_FORWARDING_OFF":
        got = _forwarding(node, finding, None)
    else:
        got, notes = _accepts(facts, node, finding), [DOCKER_NOTE]
    if isinstance(got, NotPlanned):
        return RepairPlan(not_planned=(got,))
    return RepairPlan(steps=(got,), notes=tuple(notes))

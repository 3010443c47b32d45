"""A cluster's repair plan: each cable planned by the pair's planner (repair/plan.py); the pair's traps judged on a
cable (diagnose/engine.py CABLE_TRAPS), and the cluster's own findings of one port, planned on the cable they concern
(the one named, the one a device is on, the one of a subnet named); each node's own findings on that node. Every
cable's plan also sees what two nodes' view cannot: the subnets the whole cluster uses and its largest hop MTU. A step
two cables ask of one node is kept once. A pair's plan is the one cable's."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping, Sequence

import msgspec
from msgspec.structs import replace

from linkcheck.bundle.format import Bundle
from linkcheck.cluster.cables import CableTest, cable_tests
from linkcheck.cluster.facts import hop_mtus
from linkcheck.cluster.schedule import schedule
from linkcheck.diagnose.engine import CABLE_TRAPS
from linkcheck.facts.model import LinkFacts
from linkcheck.model import Finding
from linkcheck.outcome import NODE_CAUSE_RULE, ClusterCheck
from linkcheck.repair.files import node_files
from linkcheck.repair.model import NotPlanned, RepairPlan, Step
from linkcheck.repair.plan import PLANNERS, cluster_state_sha256, firing, plan_repairs, reboot_step
from linkcheck.repair.transit import TRANSIT_RULES, transit_plan

ROLES = ("a", "b")
# The cluster's own rules of one port (`c:netdev`) that the pair's planner repairs on the cable the port is on: a hop
# below the cluster's largest MTU (repair/plan.py plan_mtu_mismatch).
_PORT_RULES = frozenset({"MTU_MISMATCH"})
_ROLE_RE = re.compile(r"(?<![\w-])node ([ab])(?![\w-])")  # the planner's reasons name a node `node a:`


def _role_subject(subject: str, roles: Mapping[str, str]) -> str:
    """A finding's subject with the cluster's node names in the planner's roles: `node c` -> `node b`,
    `c:enp1s0f0np0` -> `b:enp1s0f0np0`; a path key or a cable's label names no node and stays."""
    if subject.startswith("node "):
        name = subject[5:]
        return f"node {roles[name]}" if name in roles else subject
    head, sep, rest = subject.partition(":")
    return f"{roles[head]}:{rest}" if sep and head in roles else subject


def _role_id(finding_id: str, roles: Mapping[str, str]) -> str:
    """A finding id (`RULE:subject`) with its subject in the planner's roles."""
    rule, _, subject = finding_id.partition(":")
    return f"{rule}:{_role_subject(subject, roles)}"


def _as_roles(link: LinkFacts) -> LinkFacts:
    return replace(link, a=replace(link.a, name="a"), b=replace(link.b, name="b"))


class _Around(msgspec.Struct, frozen=True):
    """What every cable's plan of one cluster shares (plan_repairs): the subnets in use, which each readdress adds
    its new one to, and the largest hop MTU."""

    in_use: set[ipaddress.IPv4Network]
    largest_mtu: int | None


def _around(check: ClusterCheck) -> _Around:
    subnets = {ipaddress.IPv4Interface(c).network for node in check.facts.nodes.values() for fn in node.functions
               for c in fn.ipv4}
    return _Around(subnets, max(hop_mtus(check.facts), default=None))


def _plan_cable(bundle: Bundle, nodes: tuple[str, str], link: LinkFacts, findings: Sequence[Finding],
                shown_as: Mapping[str, str], around: _Around) -> RepairPlan:
    """The pair's plan for one cable's findings, its steps and findings named as the cluster names them:
    `shown_as` maps each finding's id (RULE:subject, as the cable judged it) to the id the cluster's plan shows."""
    roles = dict(zip(nodes, ROLES, strict=True))
    names = dict(zip(ROLES, nodes, strict=True))
    back: dict[str, str] = {}
    in_roles = []
    for f in findings:
        role_finding = replace(f, subject=_role_subject(f.subject, roles),
                               explained_by=f.explained_by and _role_id(f.explained_by, roles))
        back[role_finding.finding_id] = shown_as[f.finding_id]
        in_roles.append(role_finding)
    files = {role: node_files(bundle, name) for role, name in names.items()}
    plan = plan_repairs(_as_roles(link), in_roles, files, around.in_use, around.largest_mtu)
    steps = tuple(replace(s, node=names[s.node], finding=back.get(s.finding, s.finding)) for s in plan.steps)
    def named(text: str) -> str:  # the planner's words name its roles: `node a:` is the cable's first node
        return _ROLE_RE.sub(lambda m: f"node {names[m.group(1)]}", text)

    skipped = tuple(replace(n, finding=back.get(n.finding, n.finding), reason=named(n.reason))
                    for n in plan.not_planned)
    return replace(plan, steps=steps, not_planned=skipped, notes=tuple(named(n) for n in plan.notes))


def pair_plan(bundle: Bundle, link: LinkFacts, findings: Sequence[Finding]) -> RepairPlan:
    """A pair's plan (its one cable), whatever its nodes are named (a and b, or `--node spark-1=...`, a hostfile's):
    planned in the planner's roles and named back as the pair names its nodes, its files read under those names."""
    return _plan_cable(bundle, (link.a.name, link.b.name), link, findings, {f.finding_id: f.finding_id
                                                                           for f in findings}, _Around(set(), None))


def _same_step(step: Step) -> tuple[object, ...]:
    """What makes two cables' steps one: the node and what the step does (a reboot asked twice is one reboot)."""
    return (step.node, step.runtime, step.persistent, step.touches)


def cluster_plan(check: ClusterCheck, bundle: Bundle) -> RepairPlan:
    """The repair plan of a cluster's check: every failing or warning cable planned by the pair's planner (its
    finding ids named with the cable's label), the pair's traps on the cable they were judged on, each node's own
    finding planned on one of its cables, the cluster's other findings listed as not planned with their fix. One
    node's steps stay in the order they were planned; a step two cables ask of one node is kept once."""
    plans: list[RepairPlan] = []
    around = _around(check)
    for result in check.cables:
        now = firing(result.findings)
        if not now or "?" in result.test.nodes:  # a cage whose far end was not inspected plans nothing
            continue
        if check.node_cause(result) is not None:  # the slow node's own repair (below) stands for its cables'
            continue
        shown_as = {f.finding_id: f"{f.finding_id} (cable {result.test.label})" for f in now}
        plans.append(_plan_cable(bundle, result.test.nodes, result.link, now, shown_as, around))
    trap_plans, unplaced = _trap_plans(check, bundle, around)
    node_plans, skipped = _node_plans(check, bundle, around)
    plans += trap_plans + node_plans
    skipped += unplaced
    steps: dict[tuple[object, ...], Step] = {}
    for plan in plans:
        for step in plan.steps:
            steps.setdefault(_same_step(step), step)
    order = list(check.view.topology.nodes)
    ordered = sorted(steps.values(), key=lambda s: order.index(s.node) if s.node in order else len(order))
    return RepairPlan(steps=tuple(ordered), not_planned=(*(n for p in plans for n in p.not_planned), *skipped),
                      state_sha256=cluster_state_sha256(check, bundle),
                      notes=tuple(dict.fromkeys(n for p in plans for n in p.notes)))


def _on_a_cable(finding: Finding) -> bool:
    """A finding of the cluster's view that the pair's planner repairs on one cable (_trap_plans): a pair's trap,
    or the cluster's own rule of one port (`c:netdev`)."""
    port = finding.rule_id in _PORT_RULES and not finding.subject.startswith("node ")
    return finding.rule_id in CABLE_TRAPS or port


def _node_plans(check: ClusterCheck, bundle: Bundle, around: _Around) -> tuple[list[RepairPlan], list[NotPlanned]]:
    """The plans of the cluster's own findings, each of one node; the findings with no repair."""
    plans: list[RepairPlan] = []
    skipped: list[NotPlanned] = []
    for f in firing(check.view.diagnosis.findings):
        if _on_a_cable(f):
            continue  # planned on its cable (_trap_plans)
        node = f.subject[5:] if f.subject.startswith("node ") else None
        other = next((n for n in check.facts.nodes if n != node), None)
        if f.rule_id == NODE_CAUSE_RULE and node is not None:
            plans.append(RepairPlan(steps=(reboot_step(node, f),)))  # alone: its cables' findings are its own
        elif f.rule_id in PLANNERS and node is not None and node in check.facts.nodes and other is not None:
            # A node's own setting reads only that node's facts and files: any other node completes the pair.
            link = LinkFacts(a=check.facts.nodes[node], b=check.facts.nodes[other])
            plans.append(_plan_cable(bundle, (node, other), link, [f], {f.finding_id: f.finding_id}, around))
        elif f.rule_id in TRANSIT_RULES and node is not None and node in check.facts.nodes:
            plans.append(transit_plan(check.facts, node, f, node_files(bundle, node)))
        elif f.explained_by is None:
            fix = f": see the finding's fix: {f.fix[0]}" if f.fix else ""
            skipped.append(NotPlanned(f.finding_id, "no automatic repair" + fix))
    return plans, skipped


def _trap_cable(finding: Finding, tests: Sequence[CableTest]) -> tuple[CableTest, str] | None:
    """The cable a trap's finding was judged on, and its subject as that cable's pair named it: the cable its subject
    names (`LABEL: path` or `LABEL: pair`); for a node's device (`c:netdev`), the cable that device is on, and for a
    node's finding that names a subnet, the cable of that subnet (a ring node's twin planned on its other cable would
    be taken for one that faces nothing there, or be moved into that cable's subnet); else the first cable of the node
    it names (`node c`): a node's own finding is the same on each of its cables (diagnose/engine.py _cable_traps keeps
    it once)."""
    label, sep, rest = finding.subject.partition(": ")
    if sep:
        named = next((t for t in tests if t.label == label), None)
        return (named, rest) if named is not None else None
    node = finding.subject[5:] if finding.subject.startswith("node ") else finding.subject.partition(":")[0]
    mine = [t for t in tests if node in t.nodes]
    if not mine:
        return None
    device = "" if finding.subject.startswith("node ") else finding.subject.partition(":")[2]
    subnet = _subnet_named(finding)
    on = next((t for t in mine if (device and device in _netdevs_on(t, node))
               or (subnet and subnet in {p.subnet for p in t.link.paths})), mine[0])
    return on, finding.subject


def _subnet_named(finding: Finding) -> str | None:
    """The subnet a node's finding names in its evidence (TWINS_SAME_SUBNET's shared one): its cable is the one whose
    paths are in that subnet, which a ring node's other cable is not."""
    for evidence in finding.evidence:
        if isinstance(evidence.value, str) and "/" in evidence.value:
            try:
                return str(ipaddress.ip_network(evidence.value))
            except ValueError:
                continue
    return None


def _netdevs_on(test: CableTest, node: str) -> set[str]:
    """The node's devices on the test's cable (netdevs and RDMA devices): its ends of the test's data paths, and
    their cages' other twins (an unaddressed or down twin is in no path, but on the same cable)."""
    ends = [p.a if node == test.a else p.b for p in test.link.paths]
    cages = {f.cage for f in ends if f.cage}
    on = [*ends, *(f for f in test.link.node(node).functions if f.cage and f.cage in cages)]
    return {name for f in on for name in (f.netdev, f.rdma_dev) if name}


def _trap_plans(check: ClusterCheck, bundle: Bundle, around: _Around) -> tuple[list[RepairPlan], list[NotPlanned]]:
    """The pair's traps that fired on the cluster's cables, planned by the pair's planner on those cables, together
    per cable as a pair's findings are (one explains another there: GID_INDEX_STALE, GID_INDEX_DIFFERS); one whose
    cable is not found is listed as not planned, never dropped."""
    traps = [f for f in firing(check.view.diagnosis.findings) if _on_a_cable(f)]
    if not traps:
        return [], []
    lost = [f.subject for f in check.view.topology.flagged("uninspected")]
    tests = cable_tests(check.facts, schedule(check.view.topology), skip=lost)
    per_cable: dict[str, tuple[CableTest, list[Finding], dict[str, str]]] = {}
    unplaced: list[NotPlanned] = []
    for f in traps:
        found = _trap_cable(f, tests)
        if found is None:
            unplaced.append(NotPlanned(f.finding_id, "no cable of its node to plan it on: see the finding's fix"))
            continue
        test, subject = found
        as_judged = replace(f, subject=subject,
                            explained_by=f.explained_by and _on_cable_id(f.explained_by, test.label))
        _, findings, shown_as = per_cable.setdefault(test.label, (test, [], {}))
        findings.append(as_judged)
        shown_as[as_judged.finding_id] = f.finding_id
    return [_plan_cable(bundle, test.nodes, test.link, findings, shown_as, around)
            for test, findings, shown_as in per_cable.values()], unplaced


def _on_cable_id(finding_id: str, label: str) -> str:
    """A finding id the cluster names (`RULE:LABEL: subject`) as the cable's pair named it (`RULE:subject`)."""
    rule, _, subject = finding_id.partition(":")
    return f"{rule}:{subject.removeprefix(label + ': ')}"

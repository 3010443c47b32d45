"""A cluster's repair plan: each cable planned by the pair's planner, each node's own settings on the node.

A pair is a cluster of one cable. The planner (repair/plan.py) speaks of a pair's two ends as `a` and `b`; a cable
gives its two nodes those roles (its pair view, cluster/cables.py, the node named first as `a`), its findings are
planned as a pair's are, and the steps are named back after the cluster's nodes. A finding of one node (its own
`NCCL_IB_HCA`) is planned with that node as `a` (the repair reads only that node's facts and files). A step two
cables ask of one node (the reboot of the hot-plug state) is planned once; a node slow with every partner is
rebooted alone, its cables' findings being its own. What `fix --apply` cannot take back (a cluster's forwarding,
routes and firewall) is listed as not planned, with the finding's own fix.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence

from msgspec.structs import replace

from linkcheck.bundle.format import Bundle
from linkcheck.facts.model import LinkFacts
from linkcheck.model import Finding, Status
from linkcheck.outcome import NODE_CAUSE_RULE, ClusterCheck
from linkcheck.repair.files import node_files
from linkcheck.repair.model import TOUCH_REBOOT, NotPlanned, RepairPlan, Step
from linkcheck.repair.plan import PLANNERS, REBOOT, plan_repairs

ROLES = ("a", "b")
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


def _firing(findings: Iterable[Finding]) -> list[Finding]:
    return [f for f in findings if f.status in (Status.WARN, Status.FAIL)]


def _plan_cable(bundle: Bundle, nodes: tuple[str, str], link: LinkFacts, findings: Sequence[Finding],
                shown_as: Mapping[str, str]) -> RepairPlan:
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
    plan = plan_repairs(_as_roles(link), in_roles, files)
    steps = tuple(replace(s, node=names[s.node], finding=back.get(s.finding, s.finding)) for s in plan.steps)
    skipped = tuple(replace(n, finding=back.get(n.finding, n.finding),
                            reason=_ROLE_RE.sub(lambda m: f"node {names[m.group(1)]}", n.reason))
                    for n in plan.not_planned)
    return replace(plan, steps=steps, not_planned=skipped)


def _reboot(node: str, finding: Finding) -> Step:
    """A node slow with every partner is in the hot-plug state on its own (the state is per machine, spark-link
    s.3b; the rule's fix): that node rebooted with its cables attached, as the pair's planner reboots a pair."""
    return Step(node=node, finding=finding.finding_id, runtime=(REBOOT,), persistent=None,
                verify=("linkcheck check --bench",), touches=(TOUCH_REBOOT,))


def _same_step(step: Step) -> tuple[object, ...]:
    """What makes two cables' steps one: the node and what the step does (a reboot asked twice is one reboot)."""
    return (step.node, step.runtime, step.persistent, step.touches)


def cluster_plan(check: ClusterCheck, bundle: Bundle) -> RepairPlan:
    """The repair plan of a cluster's check: every failing or warning cable planned by the pair's planner (its
    finding ids named with the cable's label), each node's own finding planned on one of its cables, the cluster's
    other findings listed as not planned with their fix. One node's steps stay in the order they were planned; a
    step two cables ask of one node is kept once."""
    plans: list[RepairPlan] = []
    digests: list[str] = []
    for result in check.cables:
        firing = _firing(result.findings)
        if not firing or "?" in result.test.nodes:  # a cage whose far end was not inspected plans nothing
            continue
        if check.node_cause(result) is not None:  # the slow node's own repair (below) stands for its cables'
            continue
        shown_as = {f.finding_id: f"{f.finding_id} (cable {result.test.label})" for f in firing}
        plan = _plan_cable(bundle, result.test.nodes, result.link, firing, shown_as)
        plans.append(plan)
        digests.append(plan.state_sha256)
    skipped: list[NotPlanned] = []
    for f in _firing(check.view.diagnosis.findings):
        node = f.subject[5:] if f.subject.startswith("node ") else None
        other = next((n for n in check.facts.nodes if n != node), None)
        if f.rule_id == NODE_CAUSE_RULE and node is not None:
            plans.append(RepairPlan(steps=(_reboot(node, f),)))
        elif f.rule_id in PLANNERS and node is not None and node in check.facts.nodes and other is not None:
            # A node's own setting reads only that node's facts and files: any other node completes the pair.
            link = LinkFacts(a=check.facts.nodes[node], b=check.facts.nodes[other])
            plan = _plan_cable(bundle, (node, other), link, [f], {f.finding_id: f.finding_id})
            plans.append(plan)
            digests.append(plan.state_sha256)
        elif f.explained_by is None:
            fix = f": see the finding's fix: {f.fix[0]}" if f.fix else ""
            skipped.append(NotPlanned(f.finding_id, "no step `fix --apply` can take back (its commands change "
                                      "addresses, MTU, FEC, neighbours and files, not sysctl, routes or iptables)"
                                      + fix))
    steps: dict[tuple[object, ...], Step] = {}
    for plan in plans:
        for step in plan.steps:
            steps.setdefault(_same_step(step), step)
    order = list(check.view.topology.nodes)
    ordered = sorted(steps.values(), key=lambda s: order.index(s.node) if s.node in order else len(order))
    digest = hashlib.sha256("".join(digests).encode()).hexdigest()
    return RepairPlan(steps=tuple(ordered), not_planned=(*(n for p in plans for n in p.not_planned), *skipped),
                      state_sha256=digest)

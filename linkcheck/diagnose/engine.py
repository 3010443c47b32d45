"""Run rules over the facts, a pair's (LinkFacts) or a cluster's (ClusterFacts): every rule of the facts' scopes
yields findings (pass, warn, fail or skip), and the findings a verdict."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import msgspec

from linkcheck.cluster.cables import cable_tests
from linkcheck.cluster.facts import ClusterFacts
from linkcheck.cluster.schedule import schedule
from linkcheck.diagnose.checks.registry import CHECKS
from linkcheck.diagnose.conditions import UnknownFact, evaluate
from linkcheck.diagnose.facts_schema import BENCH_GROUPS, CLUSTER_SCOPES, Subject, subjects
from linkcheck.diagnose.observation import Observation, ShellText, sh
from linkcheck.diagnose.playbook import PLACEHOLDER_RE
from linkcheck.diagnose.rule import Condition, Rule
from linkcheck.errors import ExitCode
from linkcheck.facts.drift import PAIR_DRIFT, ClusterDrift
from linkcheck.facts.model import LinkFacts
from linkcheck.model import Evidence, Finding, Severity, Status, Verdict

BENCH_HINT = {
    "bench_rdma": "no RDMA traffic test in this bundle (run `linkcheck check --bench`)",
    "bench_nccl": "no NCCL test in this bundle (run `linkcheck check --bench`)",
    "bench_latency": "no latency test in this bundle (ib_write_lat per path, the small all_reduce)",
}
_BENCH_KIND = {"bench_rdma": "rdma", "bench_nccl": "nccl", "bench_latency": "latency"}
# Tests that run only when asked for (the latency test: check --latency, bench latency, a profile's `latency: true`):
# without them their rules say nothing.
OPT_IN_GROUPS = frozenset({"bench_latency"})


EXIT_CODES = {Verdict.PASS: ExitCode.PASS, Verdict.WARN: ExitCode.WARN, Verdict.FAIL: ExitCode.FAIL,
              Verdict.INCONCLUSIVE: ExitCode.INCONCLUSIVE}  # the exit code of a verdict


class Diagnosis(msgspec.Struct, frozen=True):
    """All findings, the verdict and the exit code the CLI returns."""

    findings: tuple[Finding, ...]
    verdict: Verdict
    notes: tuple[str, ...] = ()

    @property
    def exit_code(self) -> ExitCode:
        return EXIT_CODES[self.verdict]


PASS_MESSAGE = "ok"


def shell_words(values: dict[str, Any]) -> dict[str, Any]:
    """The values of a fix line, which a person may paste into a shell: each one shell word, quoted with
    shlex.quote (a plain name stays as it is), so that a value from a node holding a quote, `;` or `$(` cannot
    break out of the command. A ShellText, composed by a check with its own parts quoted, is kept as it is."""
    return {k: v if v is None or isinstance(v, ShellText) else sh(v) for k, v in values.items()}


def render(template: str, values: dict[str, Any]) -> str:
    """Fill {placeholders}; an unknown value prints as '?' rather than failing the report."""

    def sub(match: re.Match[str]) -> str:
        value = values.get(match.group(1))
        return "?" if value is None else str(value)

    return PLACEHOLDER_RE.sub(sub, template)


def _finding(rule: Rule, obs: Observation) -> Finding:
    values = {**{f"thresholds.{k}": v for k, v in rule.thresholds.items()}, **obs.value_map(), "subject": obs.subject}
    if obs.skip is not None:
        return Finding(rule.id, Status.SKIP, rule.severity, obs.subject, rule.title, f"not judged: {obs.skip}",
                       evidence=obs.evidence, required=rule.required if obs.required is None else obs.required,
                       skip_reason=obs.skip,
                       references=rule.references)
    severity = obs.severity or rule.severity
    if not obs.fired:
        return Finding(rule.id, Status.PASS, rule.severity, obs.subject, rule.title, PASS_MESSAGE,
                       evidence=obs.evidence, references=rule.references)
    if severity is Severity.INFO:
        # Worth saying, never a problem: it passes and the report shows it as a note.
        return Finding(rule.id, Status.PASS, severity, obs.subject, rule.title, render(rule.message, values),
                       evidence=obs.evidence, references=rule.references)
    status = Status.FAIL if severity is Severity.ERROR else Status.WARN
    return Finding(rule.id, status, severity, obs.subject, rule.title, render(rule.message, values),
                   evidence=obs.evidence, fix=tuple(render(f, shell_words(values)) for f in rule.fix),
                   mechanism=rule.mechanism, references=rule.references)


def _holds(cond: Condition, values: dict[str, Any], thresholds: Mapping[str, Any]) -> bool:
    """A grade's or a computed value's condition: one that cannot be decided does not hold."""
    try:
        return evaluate(cond, values, thresholds)
    except UnknownFact:
        return False


def _computed(rule: Rule, facts: dict[str, Any]) -> dict[str, Any]:
    """The rule's facts with its computed values (the first choice that holds, rendered) and its thresholds."""
    values = {**{f"thresholds.{k}": v for k, v in rule.thresholds.items()}, **facts}
    for name, choices in rule.values.items():
        choice = next((c for c in choices if c.when is None or _holds(c.when, facts, rule.thresholds)), None)
        values[name] = None if choice is None else render(choice.text, values)
    return values


def _evidence(rule: Rule, values: dict[str, Any]) -> tuple[Evidence, ...]:
    """What the rule says to show, or the facts its condition compares."""
    if not rule.evidence:
        assert rule.when is not None
        return tuple(Evidence(f, values.get(f), rule.scope) for f in sorted(rule.when.facts()))
    out: list[Evidence] = []
    for spec in rule.evidence:
        items = values.get(spec.fact) if spec.each else {None: values.get(spec.fact)}
        for entry, value in (items or {}).items():
            at = {**values, "entry": entry} if spec.each else values
            name = render(spec.name, at) if spec.name else ("{entry}" if spec.each else spec.fact)
            out.append(Evidence(render(name, at), value, render(spec.source, at) if spec.source else rule.scope))
    return tuple(out)


def _condition_observations(rule: Rule, judged: Iterable[Subject]) -> Iterator[Observation]:
    for subject, nodes, facts in judged:
        values = _computed(rule, facts)
        named = render(rule.subject, values) if rule.subject else subject
        try:
            if rule.where is not None and not evaluate(rule.where, facts, rule.thresholds):
                continue
            assert rule.when is not None
            fired = evaluate(rule.when, facts, rule.thresholds)
        except UnknownFact as unknown:
            why = render(rule.unknown, values) if rule.unknown else f"{unknown.fact} is unknown"
            yield Observation(named, False, nodes, values, skip=why)
            continue
        severity = next((g.severity for g in rule.grades if _holds(g.when, facts, rule.thresholds)), None)
        yield Observation(named, fired, nodes, values, _evidence(rule, values), severity=severity)


def _unavailable(rule: Rule, facts: LinkFacts | ClusterFacts) -> list[tuple[str, list[str]]]:
    """Per node, why the fact groups the rule needs are not there (none: all are)."""
    if isinstance(facts, ClusterFacts):
        return [(name, [why for group, why in facts.unavailable(name).items() if group in rule.needs])
                for name in facts.topology.nodes]
    return [(node.name, [node.unavailable[n] for n in rule.needs if n in node.unavailable])
            for node in (facts.a, facts.b)]


def _both(facts: LinkFacts | ClusterFacts) -> set[str]:
    """A pair's two nodes as it names them (a and b, or a cluster's cable's ends, or any two names); none of a
    cluster's."""
    return {facts.a.name, facts.b.name} if isinstance(facts, LinkFacts) else set()


def _concerned(nodes: tuple[str, ...], facts: LinkFacts | ClusterFacts) -> set[str]:
    """The nodes an observation is about: a named check's default, the pair's roles `a` and `b` (observation.py),
    is both of the pair's nodes whatever they are named."""
    return _both(facts) if isinstance(facts, LinkFacts) and nodes == ("a", "b") else set(nodes)


def _blocked(rule: Rule, facts: LinkFacts | ClusterFacts, bench_error: str | None) -> tuple[list[Finding], set[str]]:
    """Skip findings for needs that are not met, and the nodes whose observations must be dropped: a pair's traffic
    tests as a whole, then each node's own fact groups (a pair's two, every node of a cluster)."""
    skips: list[Finding] = []
    nodes: set[str] = set()
    # A pair's traffic tests as a whole; a cluster's rules judge its tests per cable, through their subjects.
    present = facts.bench_present if isinstance(facts, LinkFacts) else frozenset(_BENCH_KIND.values())
    for need in rule.needs:
        if need in BENCH_GROUPS and _BENCH_KIND[need] not in present:
            if need in OPT_IN_GROUPS and not bench_error:
                nodes |= _both(facts)  # a test run only when asked for: its absence is no gap, so no finding
                continue
            # A traffic test that was asked for and failed is "could not measure", not "not run".
            hint = f"traffic test gave no result: {bench_error}" if bench_error else BENCH_HINT[need]
            skips.append(Finding(rule.id, Status.SKIP, rule.severity, "pair", rule.title, hint,
                                 required=bench_error is not None, skip_reason=hint))
            nodes |= _both(facts)
    for name, reasons in _unavailable(rule, facts):
        if reasons and name not in nodes:
            skips.append(Finding(rule.id, Status.SKIP, rule.severity, f"node {name}", rule.title,
                                 f"not judged: {reasons[0]}", required=rule.required, skip_reason=reasons[0]))
            nodes.add(name)
    return skips, nodes


def run_rule(rule: Rule, facts: LinkFacts | ClusterFacts, bench_error: str | None = None) -> list[Finding]:
    """One rule over the facts of its scope: a skip per node that lacks a fact group the rule needs (that node's
    subjects dropped), then a finding per remaining subject."""
    skips, blocked = _blocked(rule, facts, bench_error)
    if isinstance(facts, LinkFacts) and blocked >= _both(facts):
        return skips[:1] if any(s.subject == "pair" for s in skips) else skips
    observations = (CHECKS[rule.check].observe(facts, dict(rule.thresholds)) if rule.check
                    else list(_condition_observations(rule, subjects(rule.scope, facts))))
    return skips + [_finding(rule, o) for o in observations if not blocked & _concerned(o.nodes, facts)]


def verdict_of(findings: list[Finding], collection_failed: bool) -> Verdict:
    statuses = {f.status for f in findings}
    if Status.FAIL in statuses:
        return Verdict.FAIL
    if collection_failed or any(f.status is Status.SKIP and f.required for f in findings):
        return Verdict.INCONCLUSIVE
    return Verdict.WARN if Status.WARN in statuses else Verdict.PASS


def _about(effect: str, cause: str) -> bool:
    """The cause's subject is the effect's, or one the effect's subject starts with (`nccl` for `nccl all_gather
    busbw`, a path for `PATH alone a->b`)."""
    return effect == cause or effect.startswith(cause + " ")


def _cause(finding: Finding, rule: Rule, firing: list[Finding]) -> Finding | None:
    """The first finding that the rule's `explained_by` names for this one: per named rule in order, a firing
    finding of it on the same subject, else (unless the rule asks for the same subject) its first firing finding."""
    for explanation in rule.explained_by:
        candidates = [c for c in firing if c.rule_id == explanation.rule and c is not finding]
        same = [c for c in candidates if _about(finding.subject, c.subject)]
        if same or (candidates and not explanation.same_subject):
            return (same or candidates)[0]
    return None


def explain(findings: list[Finding], rules: list[Rule]) -> list[Finding]:
    """The findings, each warning or failure that a firing finding of a rule in its rule's `explained_by` explains
    marked `explained_by` that finding's id; never in a circle (a finding is not marked by one it explains)."""
    by_id = {r.id: r for r in rules}
    firing = [f for f in findings if f.status in (Status.WARN, Status.FAIL)]
    causes: dict[str, str] = {}
    out = []
    for finding in findings:
        rule = by_id.get(finding.rule_id)
        cause = _cause(finding, rule, firing) if rule is not None and finding.status in (Status.WARN, Status.FAIL) \
            else None
        chain, seen = cause.finding_id if cause is not None else None, {finding.finding_id}
        while chain is not None and chain not in seen:
            seen.add(chain)
            chain = causes.get(chain)
        if cause is None or chain is not None:  # no cause, or one that leads back to this finding
            out.append(finding)
            continue
        causes[finding.finding_id] = cause.finding_id
        out.append(msgspec.structs.replace(finding, explained_by=cause.finding_id))
    return out


def _on_cable(finding: Finding, label: str) -> Finding:
    """A pair rule's finding on one cable of a cluster, its subject (and the finding that explains it) named by the
    cable."""
    def name(subject: str) -> str:
        return label if subject == "pair" else f"{label}: {subject}"

    explained = finding.explained_by
    if explained is not None:
        rule, _, subject = explained.partition(":")
        explained = f"{rule}:{name(subject)}"
    return msgspec.structs.replace(finding, subject=name(finding.subject), explained_by=explained)


def _cable_drift(drift: ClusterDrift, rules: list[Rule]) -> list[Finding]:
    """The pair's DRIFT_* rules on each cable of a cluster that carries its part of the baseline, as on a pair, each
    finding named by the cable. The rules they name as causes run beside them on the cable, so that a cause explains
    a drift as it does on a pair; their own findings are the cable's test's, already reported with it."""
    drift_rules = [r for r in rules if r.id.startswith(PAIR_DRIFT) and r.scope not in CLUSTER_SCOPES]
    causes = {c.rule for r in drift_rules for c in r.explained_by}
    judged = drift_rules + [r for r in rules if r.id in causes and r.scope not in CLUSTER_SCOPES]
    out: list[Finding] = []
    for cable in drift.compared:
        found = explain([f for rule in judged for f in run_rule(rule, cable.link)], judged)
        out += [_on_cable(f, cable.label) for f in found if f.rule_id.startswith(PAIR_DRIFT)]
    return out


# The pair's rules that judge one test's traffic: why a cable is slow, named per cable (app/offline.py judge_test).
# The latency rules judge a test's own ib_write_lat runs, and the small all_reduce across every node, as a pair's.
CABLE_RULES = ("LINK_HOTPLUG_DEGRADED", "SINGLE_PCIE_PATH", "LINK_BELOW_NOMINAL", "RDMA_LATENCY_HIGH",
               "NCCL_ALLREDUCE_LATENCY_HIGH")
# The pair's rules of a node's own configuration and of its end of a cable, which a cluster has no rule of its own for:
# each judged on every cable of a cluster as on a pair (the cable's two nodes, its data paths), so that a node of a ring
# or a switch meets the traps a pair's does, at the pair's severity. A twin without carrier (LINK_DOWN) and twins
# sharing a subnet (TWINS_SAME_SUBNET) are among them: the topology still flags both (its view, its exit code), and
# CABLING_FAULT leaves those flags to these rules where they judge them (diagnose/facts_schema.py _pair_trap), so that
# one trap is one finding. A pair's other rules have a layout of their own for a cluster (NODES_DIFFER, NCCL_*,
# MTU_MISMATCH, LINK_CHANGED, DRIFT_*, the containers'), or are judged per test with its traffic (CABLE_RULES).
# NCCL_HCA_UNCABLED is left out: a ring node's other cage is another cable, a down port in the list is skipped
# (src/transport/net_ib.cc ncclIbInit: `if (portAttr.state != IBV_PORT_ACTIVE) continue;`, before NCCL_IB_HCA's
# matchIfList), and a node listing all four HCAs is common on a switch (NVIDIA's spark_cluster_setup.py); a
# cluster's NCCL_IB_HCA that names only another node's cabled HCAs is NCCL_IB_HCA_COPIED's.
CABLE_TRAPS = ("GID_INDEX_STALE", "GID_INDEX_DIFFERS", "GID_INDEX_EMPTY_PIN", "PCIE_LINK_DEGRADED", "FEC_NOT_RS",
               "NETPLAN_NOT_APPLIED", "NM_PROFILE_RUNTIME_ONLY", "LINK_REPLUGGED_SINCE_BOOT", "CABLE_NOT_APPROVED",
               "LINK_DOWN", "TWINS_SAME_SUBNET", "NCCL_HCA_PAIRING")
# Through a switch a path's two ends are two hops, each with its own FEC negotiated with the switch: comparing them
# says nothing of either. NVIDIA's approved cables are the QSFP112 DACs between two Sparks (spark-link s.4, User
# Guide [S1]); a node's cable to a switch is the switch's to approve (a 400G breakout to two 200G ports, [S37b]).
_DIRECT_ONLY = frozenset({"FEC_NOT_RS", "CABLE_NOT_APPROVED"})
# So is what LINK_DOWN says of the pair itself (the cable joining different cages, no twin sharing a subnet across
# it): two nodes on a switch share no cable, each cabled on whichever cage it uses.
_DIRECT_ONLY_SUBJECTS = frozenset({("LINK_DOWN", "pair")})
# NCCL pairs two ranks' devices by index (net_ib ncclIbInit: ACTIVE ports in ibv_get_device_list() order, NCCL_IB_HCA
# a filter), which one cable's two nodes must satisfy only where each node's every live port is on that cable (a pair,
# or a node with one cage on a switch): a ring node's other cage is live too, and a ring routes by subnet
# (NCCL_IB_SUBNET_AWARE_ROUTING; NCCL_SUBNET_ROUTING_MISSING judges that instead).
_ONE_CAGE_ONLY = frozenset({"NCCL_HCA_PAIRING"})


def _by_cable(subject: str, label: str) -> str:
    """A finding's subject in a cluster: one that names the pair or a path (netdev<->netdev, the same names on every
    node) is named by its cable; one that names a node or a node's device already says where it is."""
    return f"{label}: {subject}" if subject == "pair" or "<->" in subject else subject


# Which of two findings of one subject a cluster keeps: the one that says more is wrong.
_WORSE = {Status.PASS: 0, Status.SKIP: 1, Status.WARN: 2, Status.FAIL: 3}


def _cable_traps(facts: ClusterFacts, rules: list[Rule]) -> list[Finding]:
    """The pair's CABLE_TRAPS on every cable of the cluster (every first-pass test of its schedule; through a switch,
    every two switched nodes), each node that was inspected. A node's own finding is kept once, its worst: it is the
    same on each of its cables but where a cable's traffic makes it a note (a late plug-in, measured on one cable and
    not on the other, still warns)."""
    judged = [r for r in rules if r.id in CABLE_TRAPS and r.scope not in CLUSTER_SCOPES]
    if not judged:
        return []
    lost = [f.subject for f in facts.topology.flagged("uninspected")]
    kept: dict[str, int] = {}
    out: list[Finding] = []
    measured = {t.label for t in facts.tests if t.pass_no == 1 and t.state != "inconclusive"}
    for test in cable_tests(facts, schedule(facts.topology), skip=lost):
        one_cage = all(len(facts.nodes[n].cabled_cages) <= 1 for n in test.nodes)
        own = [r for r in judged if not (test.switched and r.id in _DIRECT_ONLY)
               and (one_cage or r.id not in _ONE_CAGE_ONLY)]
        # A cable whose traffic was measured says so, as a pair's bundle with its runs does: the throughput rules
        # then judge its speed, and what inspection alone only suspects (a late plug-in) is a note.
        link = msgspec.structs.replace(test.link, bench_present=frozenset({"rdma"})) if test.label in measured \
            else test.link
        for finding in explain([f for rule in own for f in run_rule(rule, link)], own):
            if test.switched and (finding.rule_id, finding.subject) in _DIRECT_ONLY_SUBJECTS:
                continue
            explained = finding.explained_by
            if explained is not None:
                rule_id, _, subject = explained.partition(":")
                explained = f"{rule_id}:{_by_cable(subject, test.label)}"
            named = msgspec.structs.replace(finding, subject=_by_cable(finding.subject, test.label),
                                            explained_by=explained)
            at = kept.get(named.finding_id)
            if at is None:
                kept[named.finding_id] = len(out)
                out.append(named)
            elif _WORSE[named.status] > _WORSE[out[at].status]:
                out[at] = named
    return out


def diagnose(facts: LinkFacts | ClusterFacts, rules: list[Rule], *,
             collection_errors: dict[str, str] | None = None) -> Diagnosis:
    """Evaluate every rule of the facts' scopes (a pair's rules over a pair, a cluster's over a cluster, and the
    pair's drift rules over each cable of a cluster that carries a baseline), then mark what the rules say explains
    what; a rule that crashes on odd facts is a bug, so it is not swallowed here. A collection error, or a node of a
    cluster that could not be inspected, leaves the verdict inconclusive."""
    cluster = isinstance(facts, ClusterFacts)
    bench_error = (collection_errors or {}).get("bench")
    # A rule's id may name two layouts, a pair's and a cluster's: only the facts' own are judged and explained.
    own = [rule for rule in rules if (rule.scope in CLUSTER_SCOPES) == cluster]
    findings: list[Finding] = []
    for rule in own:
        findings.extend(run_rule(rule, facts, bench_error))
    findings = explain(findings, own)
    if isinstance(facts, ClusterFacts):
        findings += _cable_traps(facts, rules)  # the pair's rules of a node and its end of a cable, on each cable
    if isinstance(facts, ClusterFacts) and facts.drift is not None:
        findings += _cable_drift(facts.drift, rules)  # the pair's rules, on each cable
    notes = tuple(e for _, e in sorted((collection_errors or {}).items()))
    notes += tuple(f"{f.rule_id} ({f.subject}): {f.message}" for f in findings
                   if f.status is Status.PASS and f.message != PASS_MESSAGE)
    lost = isinstance(facts, ClusterFacts) and bool(facts.topology.flagged("uninspected"))
    return Diagnosis(tuple(findings), verdict_of(findings, bool(collection_errors) or lost), notes)

"""`linkcheck topology`: inspect every node of a cluster at once and say how it is cabled.

One inspection round trip per node, all nodes in parallel (the collector the pair uses, with the cluster's own
specs added: forwarding, iptables), then the topology inferred from their facts, the rounds in which every cable
can be measured, and the cluster's rules (linkcheck/playbooks/cluster.yaml) judged over both. No traffic is sent.
Text from the nodes (hostnames, interface names) is data: it is shown, never interpreted.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
from msgspec.structs import replace

from linkcheck.cluster.facts import ClusterFacts, forwarding
from linkcheck.cluster.hosts import ClusterHost
from linkcheck.cluster.schedule import Schedule, schedule
from linkcheck.cluster.topology import Topology, infer_topology
from linkcheck.collect.collector import close_transports, collect, open_transports
from linkcheck.collect.specs import CLUSTER_SPECS, SPECS
from linkcheck.config import SshOptions
from linkcheck.diagnose.engine import Diagnosis, diagnose_cluster
from linkcheck.diagnose.playbook import load_playbooks
from linkcheck.diagnose.rule import Rule
from linkcheck.errors import ExitCode
from linkcheck.facts.build import build_node_facts
from linkcheck.facts.model import NODE_GROUPS
from linkcheck.model import Capture, Status
from linkcheck.records import plain
from linkcheck.strict_json import dumps


class ClusterView(msgspec.Struct, frozen=True):
    """What `topology` learned: the hosts, the topology, the rounds, the cluster rules' findings, and the nodes
    that could not be read."""

    hosts: tuple[ClusterHost, ...]
    topology: Topology
    schedule: Schedule
    diagnosis: Diagnosis
    errors: dict[str, str] = {}

    @property
    def exit_code(self) -> ExitCode:
        """3 when a node could not be read; else the findings' verdict (2 a failure, 1 a warning), at least 1
        when the cabling is flagged; 0 otherwise."""
        if self.errors:
            return ExitCode.INCONCLUSIVE
        code = self.diagnosis.exit_code
        if code is ExitCode.PASS and self.topology.flags:
            return ExitCode.WARN
        return code


def discover(hosts: Sequence[ClusterHost], ssh: SshOptions, rules: list[Rule] | None = None) -> ClusterView:
    """Inspect every host at once, infer how the cluster is cabled and judge the cluster's rules."""
    transports = open_transports([h.target for h in hosts], known_hosts=ssh.known_hosts,
                                 accept_new_host_keys=ssh.accept_new_host_keys, ssh_config=ssh.config,
                                 connect_timeout_s=ssh.connect_timeout_s)
    try:
        result = collect(transports, specs=SPECS + CLUSTER_SPECS, timeout_s=ssh.inspection_timeout_s,
                         per_command_timeout_s=ssh.command_timeout_s)
    finally:
        close_transports(transports)
    errors = {name: str(error) for name, error in result.errors.items()}
    return judge(hosts, result.captures, errors, rules)


def cluster_facts(names: Sequence[str], captures: Sequence[Capture], errors: dict[str, str]) -> ClusterFacts:
    """Every node's facts from its captures, the topology inferred from them, each node's forwarding state."""
    facts = {}
    routing = {}
    for name in names:
        own = [c for c in captures if c.node == name and not c.meta]
        node = build_node_facts(name, own)
        if name in errors and not own:  # nothing came back: every fact group unknown, for that reason
            node = replace(node, unavailable={g: errors[name] for g in NODE_GROUPS})
        facts[name] = node
        routing[name] = forwarding(name, own)
    return ClusterFacts(nodes=facts, topology=infer_topology(facts), forwarding=routing)


def judge(hosts: Sequence[ClusterHost], captures: Sequence[Capture], errors: dict[str, str],
          rules: list[Rule] | None = None) -> ClusterView:
    """The view of what the nodes answered: topology, rounds, and the cluster rules' findings."""
    facts = cluster_facts([h.name for h in hosts], captures, errors)
    diagnosis = diagnose_cluster(facts, load_playbooks(kind="cluster") if rules is None else rules)
    return ClusterView(hosts=tuple(hosts), topology=facts.topology, schedule=schedule(facts.topology),
                       diagnosis=diagnosis, errors=errors)


def view_json(view: ClusterView) -> str:
    """The view as one JSON document: the nodes, then the topology (layout, supported, cables with their twin
    paths, segments, flags), the schedule's rounds, the verdict and every finding of the cluster's rules."""
    nodes = [{"name": h.name, "target": str(h.target), "origin": h.origin, "error": view.errors.get(h.name)}
             for h in view.hosts]
    topology = plain(view.topology, properties=True)
    topology.pop("nodes")
    return dumps({"nodes": nodes, **topology, "schedule": plain(view.schedule),
                  "verdict": view.diagnosis.verdict.value,
                  "findings": [f.to_dict() for f in view.diagnosis.findings]}, indent=2)


def view_text(view: ClusterView) -> str:
    """The view for a person: the layout, each cable and its twin paths, each switch segment, flags, rounds, then
    each finding that is not a pass (with its fix), the notes and the verdict."""
    topo = view.topology
    lines = [f"layout: {topo.layout} ({len(topo.nodes)} nodes; "
             f"{'a layout NVIDIA documents' if topo.supported else 'departs from NVIDIA layouts'})"]
    lines += [f"node {name}: not inspected: {reason}" for name, reason in sorted(view.errors.items())]
    for cable in topo.cables:
        lines.append(f"cable {cable.key}")
        lines += [f"  {p.key}  {p.subnet}{'  (neighbour MAC confirmed)' if p.neighbour_confirmed else ''}"
                  for p in cable.paths]
    for segment in topo.segments:
        lines.append(f"switch segment {segment.subnet}: {', '.join(e.label for e in segment.endpoints)}")
    lines += [f"{flag.kind}: {flag.message}" for flag in topo.flags]
    for r in view.schedule.rounds:
        idle = f"  (idle: {', '.join(r.idle)})" if r.idle else ""
        lines.append(f"round {r.number}: {'; '.join(m.label for m in r.matches)}{idle}")
    for finding in view.diagnosis.findings:
        if finding.status is Status.PASS:
            continue
        lines.append(f"{finding.status.value.upper()} {finding.rule_id} ({finding.subject}): "
                     f"{finding.skip_reason or finding.message}")
        lines += [f"  fix: {step}" for step in finding.fix]
    lines += [f"note: {note}" for note in view.diagnosis.notes]
    lines.append(f"verdict: {view.diagnosis.verdict.value}")
    return "\n".join(lines)

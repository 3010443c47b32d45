"""What `linkcheck topology` prints: the nodes, the layout, each cable and its twin paths, the switch segments,
flags, rounds and the cluster rules' findings, as text or JSON. Text from the nodes (hostnames, interface names) is
data: shown, never interpreted."""

from __future__ import annotations

from linkcheck.cluster.topology import Topology, TwinPath, infer_topology
from linkcheck.model import Status
from linkcheck.outcome import ClusterView, Outcome
from linkcheck.records import plain
from linkcheck.report.safe_text import shown
from linkcheck.strict_json import dumps
from linkcheck.values import evidence_line


def pair_topology(outcome: Outcome) -> Topology:
    """The pair as a cluster of its two nodes sees it (cluster/topology.py): its layout, its cable."""
    link = outcome.link
    return infer_topology({link.a.name: link.a, link.b.name: link.b})  # named as the pair names its nodes


def pair_cable(outcome: Outcome, topology: Topology | None = None) -> str:
    """The pair's one cable as a cluster names it (`a:p1<->b:p1`, cluster/topology.py), so that a pair's series and
    a cluster's carry the same `cable` label; `a<->b` (the nodes' names) where the facts show no one cable."""
    cables = (topology or pair_topology(outcome)).cables
    return cables[0].key if len(cables) == 1 else f"{outcome.link.a.name}<->{outcome.link.b.name}"


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


def _confirmed(path: TwinPath) -> str:
    """What else than the addressing says the twin path is there: the neighbour tables, LLDP."""
    by = [what for what, yes in (("neighbour MAC", path.neighbour_confirmed), ("LLDP", path.lldp_confirmed)) if yes]
    return f"  ({' and '.join(by)} confirmed)" if by else ""


def view_text(view: ClusterView, show_all: bool = False) -> str:
    """The view for a person: the layout, each cable and its twin paths, each switch segment, flags, rounds, then
    each finding that is not a pass (with its fix; with `show_all` the passes too), the notes and the verdict."""
    topo = view.topology
    lines = [f"layout: {topo.layout} ({len(topo.nodes)} nodes; "
             f"{topo.standing})"]
    lines += [f"node {name}: not inspected: {reason}" for name, reason in sorted(view.errors.items())]
    for cable in topo.cables:
        lines.append(f"cable {cable.key}")
        lines += [f"  {p.key}  {p.subnet}{_confirmed(p)}" for p in cable.paths]
    for segment in topo.segments:
        through = f" (LLDP: {', '.join(segment.switches)})" if segment.switches else ""
        lines.append(f"switch segment {segment.subnet}: {', '.join(e.label for e in segment.endpoints)}{through}")
    lines += [f"{flag.kind}: {flag.message}" for flag in topo.flags]
    for r in view.schedule.rounds:
        idle = f"  (idle: {', '.join(r.idle)})" if r.idle else ""
        lines.append(f"round {r.number}: {'; '.join(m.label for m in r.matches)}{idle}")
    unread: dict[str, int] = {}
    for finding in view.diagnosis.findings:
        if finding.status is Status.PASS and not show_all:
            continue
        node = finding.subject.removeprefix("node ")
        if finding.status is Status.SKIP and node in view.errors:
            unread[node] = unread.get(node, 0) + 1  # its one "not inspected" line above says why
            continue
        lines.append(f"{finding.status.value.upper()} {finding.rule_id} ({finding.subject}): "
                     f"{finding.skip_reason or finding.message}")
        if finding.status in (Status.FAIL, Status.WARN):
            lines += [f"  evidence: {evidence_line(ev)}" for ev in finding.evidence]
        lines += [f"  fix: {step}" for step in finding.fix]
    lines += [f"SKIP node {node}: {count} rule(s) not judged: the node was not inspected (above)"
              for node, count in unread.items()]
    lines += [f"note: {note}" for note in view.diagnosis.notes]
    lines.append(f"verdict: {view.diagnosis.verdict.value}")
    return "\n".join(shown(line) for line in lines)  # one line each, whatever a node's text holds

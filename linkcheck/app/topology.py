"""`linkcheck topology`: inspect every node of a cluster at once and say how it is cabled.

One inspection round trip per node, all nodes in parallel (the collector the pair uses), then the topology
inferred from their facts and the rounds in which every cable can be measured. Nothing is diagnosed and no traffic
is sent. Text from the nodes (hostnames, interface names) is data: it is shown, never interpreted.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
from msgspec.structs import replace

from linkcheck.cluster.hosts import ClusterHost
from linkcheck.cluster.schedule import Schedule, schedule
from linkcheck.cluster.topology import Topology, infer_topology
from linkcheck.collect.collector import close_transports, collect, open_transports
from linkcheck.config import SshOptions
from linkcheck.errors import ExitCode
from linkcheck.facts.build import build_node_facts
from linkcheck.facts.model import NODE_GROUPS
from linkcheck.records import plain
from linkcheck.strict_json import dumps


class ClusterView(msgspec.Struct, frozen=True):
    """What `topology` learned: the hosts, the topology, the rounds, and the nodes that could not be read."""

    hosts: tuple[ClusterHost, ...]
    topology: Topology
    schedule: Schedule
    errors: dict[str, str] = {}

    @property
    def exit_code(self) -> ExitCode:
        """3 when a node could not be read, 1 when the cabling is flagged, 0 otherwise."""
        if self.errors:
            return ExitCode.INCONCLUSIVE
        return ExitCode.WARN if self.topology.flags else ExitCode.PASS


def discover(hosts: Sequence[ClusterHost], ssh: SshOptions) -> ClusterView:
    """Inspect every host at once and infer how the cluster is cabled."""
    transports = open_transports([h.target for h in hosts], known_hosts=ssh.known_hosts,
                                 accept_new_host_keys=ssh.accept_new_host_keys, ssh_config=ssh.config,
                                 connect_timeout_s=ssh.connect_timeout_s)
    try:
        result = collect(transports, timeout_s=ssh.inspection_timeout_s, per_command_timeout_s=ssh.command_timeout_s)
    finally:
        close_transports(transports)
    errors = {name: str(error) for name, error in result.errors.items()}
    facts = {}
    for host in hosts:
        own = [c for c in result.captures if c.node == host.name and not c.meta]
        node = build_node_facts(host.name, own)
        if host.name in errors and not own:  # nothing came back: every fact group unknown, for that reason
            node = replace(node, unavailable={g: errors[host.name] for g in NODE_GROUPS})
        facts[host.name] = node
    topology = infer_topology(facts)
    return ClusterView(hosts=tuple(hosts), topology=topology, schedule=schedule(topology), errors=errors)


def view_json(view: ClusterView) -> str:
    """The view as one JSON document: the nodes, then the topology (layout, supported, cables with their twin
    paths, segments, flags) and the schedule's rounds."""
    nodes = [{"name": h.name, "target": str(h.target), "origin": h.origin, "error": view.errors.get(h.name)}
             for h in view.hosts]
    topology = plain(view.topology, properties=True)
    topology.pop("nodes")
    return dumps({"nodes": nodes, **topology, "schedule": plain(view.schedule)}, indent=2)


def view_text(view: ClusterView) -> str:
    """The view for a person: the layout, each cable and its twin paths, each switch segment, flags, rounds."""
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
    return "\n".join(lines)

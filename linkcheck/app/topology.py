"""`linkcheck topology`: inspect every node of a cluster at once and say how it is cabled.

One inspection round trip per node, all nodes in parallel (the collector the pair uses, with the cluster's own
specs added: forwarding, iptables), then the topology inferred from their facts, the rounds in which every cable
can be measured, and the cluster's rules (linkcheck/playbooks/cluster.yaml) judged over both. No traffic is sent.
Text from the nodes (hostnames, interface names) is data: it is shown, never interpreted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from msgspec.structs import replace

from linkcheck.bundle.verify import load_trusted
from linkcheck.cluster.facts import ClusterFacts, ExpectedCluster
from linkcheck.cluster.hosts import ClusterHost, saved_hosts
from linkcheck.cluster.schedule import schedule
from linkcheck.cluster.topology import infer_topology
from linkcheck.collect.collector import close_transports, collect, open_transports
from linkcheck.collect.specs import CLUSTER_SPECS, SPECS
from linkcheck.config import SshOptions
from linkcheck.diagnose.engine import diagnose
from linkcheck.diagnose.playbook import load_playbooks
from linkcheck.diagnose.rule import Rule
from linkcheck.facts.build import build_node_facts
from linkcheck.facts.forwarding_facts import forwarding
from linkcheck.facts.lldp_facts import lldp_neighbours
from linkcheck.facts.model import NODE_GROUPS
from linkcheck.model import Capture
from linkcheck.outcome import ClusterView
from linkcheck.parsers.lldp import LldpNeighbour
from linkcheck.transport.base import Transport


def open_cluster(hosts: Sequence[ClusterHost], ssh: SshOptions) -> dict[str, Transport]:
    """One SSH transport per host, with linkcheck's host-key policy (opened lazily, all at once when used)."""
    return open_transports([h.target for h in hosts], known_hosts=ssh.known_hosts,
                           accept_new_host_keys=ssh.accept_new_host_keys, ssh_config=ssh.config,
                           connect_timeout_s=ssh.connect_timeout_s)


def inspect_nodes(transports: dict[str, Transport], ssh: SshOptions,
                  hosts: Sequence[ClusterHost] = ()) -> tuple[list[Capture], dict[str, str], bool]:
    """Every node's inspection (the pair's specs and the cluster's), all nodes at once; the nodes that failed, and
    whether Ctrl-C stopped it (what arrived until then is kept)."""
    result = collect(transports, specs=SPECS + CLUSTER_SPECS, timeout_s=ssh.inspection_timeout_s,
                     per_command_timeout_s=ssh.command_timeout_s,
                     containers={h.name: h.target.containers for h in hosts})
    return result.captures, {name: str(error) for name, error in result.errors.items()}, result.interrupted


def inspect_cluster(transports: dict[str, Transport], ssh: SshOptions,
                    hosts: Sequence[ClusterHost] = ()) -> tuple[list[Capture], dict[str, str]]:
    """`inspect_nodes` for what only reads the nodes (`topology`, `init`): Ctrl-C, which the collector turns into a
    partial result, is raised again, since nothing is judged or recorded of a part of the cluster the user stopped
    reading."""
    captures, errors, interrupted = inspect_nodes(transports, ssh, hosts)
    if interrupted:
        raise KeyboardInterrupt
    return captures, errors


def discover(hosts: Sequence[ClusterHost], ssh: SshOptions, rules: list[Rule] | None = None,
             expected: ExpectedCluster | None = None) -> ClusterView:
    """Inspect every host at once, infer how the cluster is cabled and judge the cluster's rules (against the
    cabling linkcheck.yaml recorded, when `expected` is given)."""
    transports = open_cluster(hosts, ssh)
    try:
        captures, errors = inspect_cluster(transports, ssh, hosts)
    finally:
        close_transports(transports)
    return judge(hosts, captures, errors, rules, expected)


def cluster_facts(names: Sequence[str], captures: Sequence[Capture], errors: dict[str, str],
                  expected: ExpectedCluster | None = None) -> ClusterFacts:
    """Every node's facts from its captures, the topology inferred from them, each node's forwarding state."""
    facts = {}
    routing = {}
    lldp: dict[str, tuple[LldpNeighbour, ...]] = {}
    unread: dict[str, str] = {}
    for name in names:
        own = [c for c in captures if c.node == name and not c.meta]
        node = build_node_facts(name, own)
        if name in errors and not own:  # nothing came back: every fact group unknown, for that reason
            node = replace(node, unavailable={g: errors[name] for g in NODE_GROUPS})
        facts[name] = node
        routing[name] = forwarding(name, own)
        lldp[name], why = lldp_neighbours(name, own)
        if why is not None:
            unread[name] = why
    return ClusterFacts(nodes=facts, topology=infer_topology(facts, lldp), forwarding=routing, expected=expected,
                        lldp_unread=unread)


def judge(hosts: Sequence[ClusterHost], captures: Sequence[Capture], errors: dict[str, str],
          rules: list[Rule] | None = None, expected: ExpectedCluster | None = None) -> ClusterView:
    """The view of what the nodes answered: topology, rounds, and the cluster rules' findings."""
    return judge_facts(hosts, cluster_facts([h.name for h in hosts], captures, errors, expected), errors, rules)


def judge_facts(hosts: Sequence[ClusterHost], facts: ClusterFacts, errors: dict[str, str],
                rules: list[Rule] | None = None) -> ClusterView:
    """The view of a cluster's facts (its traffic tests' outcomes included, when it has them)."""
    # Every rule: the cluster's own over the cluster, the pair's traps on each cable (diagnose/engine.py CABLE_TRAPS).
    diagnosis = diagnose(facts, load_playbooks(kind="all") if rules is None else rules)
    return ClusterView(hosts=tuple(hosts), topology=facts.topology, schedule=schedule(facts.topology),
                       diagnosis=diagnosis, errors=errors)


def saved_view(path: Path, rules: list[Rule] | None = None, *, allow_unverified: bool = False,
               warn: Callable[[str], None] | None = None, expected: ExpectedCluster | None = None) -> ClusterView:
    """The view of a saved bundle, as `topology` would have shown it when the bundle was taken: a cluster's nodes as
    its cluster.json names them, a pair's as its manifest does (layout `pair`). Refused (exit 4) when `verify`
    rejects the bundle, unless `allow_unverified` (its unverified files left unread)."""
    bundle = load_trusted(path, allow_unverified=allow_unverified, warn=warn)
    hosts = saved_hosts(path, bundle.nodes, bundle.captures)
    errors = {n: e for n, e in bundle.collection_errors.items() if n in {h.name for h in hosts}}
    return judge(hosts, bundle.captures, errors, rules, expected)


def saved_node_names(path: Path) -> tuple[str, ...]:
    """The nodes a saved bundle's check named, in its order (a pair's own bundle: its manifest's a and b). Read only
    to say so: no rule is judged, and a file that does not verify is left unread, not trusted."""
    bundle = load_trusted(path, allow_unverified=True)
    return tuple(h.name for h in saved_hosts(path, bundle.nodes, bundle.captures))

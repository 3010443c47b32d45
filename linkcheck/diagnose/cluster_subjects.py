"""The subjects of a cluster's rules and their flattened facts (the names in cluster_scopes.CLUSTER_FACTS)."""

from __future__ import annotations

import shlex
from collections.abc import Iterator, Mapping
from typing import Any

from linkcheck.cluster.facts import (
    SUBNET_ROUTING_NCCL,
    ClusterFacts,
    Forwarding,
    accepts_forwarded,
    cable_outcome,
    cabling_changes,
    forward_decision,
    hca_copy,
    missing_routes,
    nccl_algo_ring_only,
    nccl_before,
    partners,
    ring_recabling,
    runtime_connect_off,
    sockets_on_fabric,
    swap_partner,
    transits,
)
from linkcheck.cluster.nccl import RING_ENV, ClusterNccl
from linkcheck.cluster.topology import Cable
from linkcheck.diagnose.facts_schema import Subject, function_values, settings_values
from linkcheck.diagnose.observation import ShellText

# Flags that other rules judge (the layout, a ring's cabling) or that only describe (neither is a fault here). A node
# that was not inspected is no cabling fault, nor a port that most likely faces it: the layout is then unknown
# (CLUSTER_LAYOUT_UNSUPPORTED's skip), and those ports' tests inconclusive.
_FLAGS_JUDGED_ELSEWHERE = {"unsupported", "mixed", "ring_same_port", "uninspected", "far_unknown"}


def _cluster(facts: ClusterFacts) -> Iterator[Subject]:
    topo = facts.topology
    reasons = [f.message for f in topo.flagged("unsupported")]
    changes = cabling_changes(facts)
    recorded: dict[str, Any] = {"recorded": changes is not None}
    if changes is not None and facts.expected is not None:
        recorded |= {"config": facts.expected.source, "cabling_changed": changes.any,
                     "cables_gone": ", ".join(changes.cables_gone) or None,
                     "cables_new": ", ".join(changes.cables_new) or None,
                     "switch_gone": ", ".join(changes.switch_gone) or None,
                     "switch_new": ", ".join(changes.switch_new) or None}
    lost = [f.subject for f in topo.flagged("uninspected")]
    yield "cluster", topo.nodes, {"layout": topo.layout, "supported": topo.supported, "node_count": len(topo.nodes),
                                  "nodes": ", ".join(topo.nodes), "unsupported_reason": "; ".join(reasons) or None,
                                  "uninspected": ", ".join(lost) or None,
                                  "ring": topo.layout.startswith("ring"), **recorded, **_nccl_run_values(facts.nccl)}


def _nccl_run_values(run: ClusterNccl | None) -> dict[str, Any]:
    """The NCCL run across every node, as a whole: its bus bandwidth and which nodes' ranks fell back."""
    if run is None:
        return {"nccl_run": False}
    # NVIDIA's figure is judged with NVIDIA's statistic (the mean of out-of-place and in-place at 16 GiB, as
    # spark_cluster_setup.py reads it: facts.bench_facts.nvidia_busbw); the peak stays beside it as evidence
    nvidia = run.nvidia_busbw_gbs if run.nvidia_busbw_gbs is not None else run.busbw_gbs
    return {"nccl_run": True, "nccl_busbw_gbs": run.busbw_gbs, "nccl_avg_busbw_gbs": run.avg_busbw_gbs,
            "nccl_nvidia_busbw_gbs": None if nvidia is None else round(nvidia, 3),
            "nccl_wrong": run.wrong, "nccl_largest_bytes": run.largest_bytes, "nccl_problem": run.problem,
            "nccl_transport_only": run.transport_only, "nccl_ranks": len(run.ranks),
            "nccl_fallback_nodes": ", ".join(run.fell_back) or None, "nccl_fallback_count": len(run.fell_back),
            "nccl_proven": all(r.ib_proven for r in run.ranks)}


def _nccl_rank_values(run: ClusterNccl | None, name: str) -> dict[str, Any]:
    """One node's rank: what its own NCCL log lines show. Unknown (the rules skip) when its host printed no line."""
    rank = run.rank(name) if run is not None else None
    if run is None or rank is None:
        return {"nccl_run": run is not None}
    seen = rank.seen
    return {"nccl_run": True, "nccl_rank_seen": seen, "nccl_host": rank.host,
            "nccl_given_hca": rank.given_hca, "nccl_own_hcas": ",".join(rank.own_hcas) or None,
            "nccl_problem": run.problem,
            "nccl_fallback_nodes": ", ".join(run.fell_back) or None, "nccl_fallback_count": len(run.fell_back),
            "nccl_fell_back": rank.fell_back if seen else None,
            # No Channel line: nothing proves the transport (the run ended before NCCL connected).
            "nccl_ib_proven": rank.ib_proven if seen and rank.channel_transports else None,
            "nccl_network": rank.network, "nccl_ib_devices": ",".join(rank.ib_devices) or None,
            "nccl_no_ib_device": rank.no_ib_device if seen else None,
            "nccl_socket_devices": ",".join(rank.socket_devices) or None,
            "nccl_channels": len(rank.channel_transports) if seen else None,
            "nccl_socket_channels": rank.socket_channels if seen else None,
            "nccl_foreign": ",".join(rank.foreign_devices) or None}


def _nodes(facts: ClusterFacts) -> Iterator[Subject]:
    # A node that was not inspected shows no cable: who lies between whom is then not known.
    whole = not facts.topology.incomplete
    carried = transits(facts.topology)
    ring = facts.topology.layout.startswith("ring")
    for name, node in facts.nodes.items():
        copy = hca_copy(facts, name)
        nccl_version = node.identity.nccl_version
        fwd = facts.forwarding.get(name)
        unavailable = facts.unavailable(name)
        missing = missing_routes(facts, name) if "routes" not in unavailable and whole else []
        on_fabric = sockets_on_fabric(node)
        commands = [f"sudo ip route add {shlex.quote(m.subnet)} via {shlex.quote(m.via)}" for m in missing if m.via]
        known_firewall = fwd is not None and "firewall" not in unavailable
        netdevs = [f.netdev for f in node.functions]
        yield f"node {name}", (name,), {
            "name": name, "hostname": node.hostname,
            "ip_forward": fwd.ip_forward if fwd else None,
            "transit": name in carried if whole else None,
            "transit_for": ", ".join(carried.get(name, ())) or None,
            "unreached": ", ".join(f"{m.to} ({m.subnet})" for m in missing) or None,
            "unreached_count": None if "routes" in unavailable or not whole else len(missing),
            # Whether NCCL's sockets are known to use the CX-7 addresses (NCCL_SOCKET_IFNAME names a CX-7 netdev),
            # or known not to: only then must IP traffic cross a node between two others.
            "sockets_on_fabric": on_fabric is True, "sockets_off_fabric": on_fabric is False,
            # Composed here with each part quoted, so the fix shows it as a command; without a neighbour to route
            # through (none shares a cable with both), the command's shape with what to fill in.
            "route_add": ShellText("; ".join(commands) or "sudo ip route add SUBNET via ADDRESS (of a neighbour "
                                   "that forwards)") if missing else None,
            "forward_policy": fwd.forward_policy if known_firewall and fwd else None,
            "forward_accepted": accepts_forwarded(fwd, netdevs) if known_firewall and fwd else None,
            "forward_decided_by": _decided_by(fwd, netdevs) if known_firewall and fwd else None,
            "docker_user": fwd.docker_user if fwd else None,
            "forward_rules": "\n".join(" ".join(("-A", r.chain, *r.words)) for r in fwd.forward_rules)
            if known_firewall and fwd else None,
            "ring": ring, "ring_size": len(facts.topology.nodes) if ring else None,
            "nccl_version": nccl_version, "nccl_too_old": nccl_before(nccl_version, SUBNET_ROUTING_NCCL),
            # Copied: it selects HCAs off this node's cabled cages, and exactly another node's cabled ones.
            "hca_copied": bool(copy.foreign and copy.fits) if copy else None,
            "hca_foreign": (",".join(copy.foreign) or None) if copy else None,
            "hca_own": ",".join(copy.own) if copy else None,
            "hca_fits": (", ".join(copy.fits) or None) if copy else None,
            "nccl_algo_ring": nccl_algo_ring_only(node.nccl.get("NCCL_ALGO")),
            "runtime_connect_off": runtime_connect_off(node.nccl) is not None,
            **_ring_settings(node.nccl, node.nccl_sources),
            "runtime_connect_setting": runtime_connect_off(node.nccl),
            **_traffic_values(facts, name),
            **_nccl_rank_values(facts.nccl, name),
            **settings_values(node),
        }


def _ring_settings(settings: Mapping[str, str], sources: Mapping[str, str]) -> dict[str, Any]:
    """NVIDIA's ring settings (linkcheck.cluster.nccl.RING_ENV) the node's NCCL settings lack, each as it is
    (`NCCL_IB_MERGE_NICS is not set`, `NCCL_NET_PLUGIN=libnccl-net.so (environment)`)."""
    lacking = []
    for name, value in RING_ENV:
        have = settings.get(name)
        if have is None:
            lacking.append(f"{name} is not set")
        elif have.strip() != value:
            lacking.append(f"{name}={have} ({sources.get(name, 'set')})")
    return {"ring_settings_lacking": "; ".join(lacking) or None, "ring_settings_lacking_count": len(lacking)}


def _decided_by(fwd: Forwarding, netdevs: list[str]) -> str | None:
    decision = forward_decision(fwd, netdevs)
    return decision[1] if decision is not None else None


def _traffic_values(facts: ClusterFacts, name: str) -> dict[str, Any]:
    met = partners(facts, name)
    if met is None:
        return {"traffic": False}
    lowest = {t.partner(name): t.lowest_gbps for t in facts.tests if name in t.nodes and t.state == "slow"}
    return {"traffic": True, "partners_tested": len(met.tested), "partners_slow": len(met.slow),
            "slow_with": ", ".join(f"{p} ({_gbps(lowest.get(p))})" for p in met.slow) or None,
            "slow_everywhere": met.slow_everywhere}


def _gbps(value: float | None) -> str:
    return "no number" if value is None else f"{value:.1f} Gb/s"


# Pair rules that name why a test is slow; LINK_BELOW_NOMINAL only says that it is.
_SLOW_ALONE = "LINK_BELOW_NOMINAL"


def _cable_traffic(facts: ClusterFacts, cable: Cable) -> dict[str, Any]:
    outcome = cable_outcome(facts, cable.key)
    if outcome is None or outcome.state == "inconclusive":
        return {"tested": False}
    slow = outcome.state == "slow"
    elsewhere = [any(t.state == "pass" and n in t.nodes and t.label != cable.key for t in facts.tests)
                 for n in outcome.nodes]
    swap = swap_partner(facts, cable) if slow else None
    return {"tested": True, "slow": slow, "lowest_gbps": outcome.lowest_gbps,
            "traps": ", ".join(outcome.traps) or None,
            "trap_named": any(t != _SLOW_ALONE for t in outcome.traps),
            "ends_pass_elsewhere": all(elsewhere), "swap_with": swap.key if swap else None}


def _ports(facts: ClusterFacts) -> Iterator[Subject]:
    """Each addressed CX-7 function on a cable or a switch segment: one hop of the cluster's traffic."""
    topo = facts.topology
    hops: dict[str, str] = {}
    switched: set[str] = set()
    for cable in topo.cables:
        for path in cable.paths:
            hops.update({e.label: f"cable {cable.key}" for e in (path.a, path.b)})
    for segment in topo.segments:
        for end in segment.endpoints:
            hops[end.label] = f"switch segment {segment.subnet}"
            switched.add(end.label)
    mtus = {fn.mtu for node in facts.nodes.values() for fn in node.functions if fn.label in hops and fn.mtu}
    for name, node in facts.nodes.items():
        for fn in node.functions:
            if fn.label not in hops:
                continue
            values: dict[str, Any] = function_values(fn, node)
            values.update(switched=fn.label in switched, hop=hops[fn.label], cluster_mtu=max(mtus, default=None),
                          mtu_uniform=len(mtus) <= 1,
                          speed_gbps=fn.speed_mbps / 1000 if fn.speed_mbps is not None else None)
            yield fn.label, (name,), values


def _cables(facts: ClusterFacts) -> Iterator[Subject]:
    topo = facts.topology
    recable = ring_recabling(topo)
    for cable in topo.cables:
        to = recable.get(cable.key)
        yield f"cable {cable.key}", (cable.a, cable.b), {
            "key": cable.key, "a": cable.a, "a_cage": cable.a_cage, "b": cable.b, "b_cage": cable.b_cage,
            "ring": topo.layout.startswith("ring"),
            "same_port": cable.a_cage is not None and cable.a_cage == cable.b_cage,
            "recable": to is not None, "recable_p0": to[0] if to else None, "recable_p1": to[1] if to else None,
            "path_count": len(cable.paths),
            "confirmed": all(p.neighbour_confirmed or p.lldp_confirmed for p in cable.paths),
            **_cable_traffic(facts, cable)}


def _flags(facts: ClusterFacts) -> Iterator[Subject]:
    for flag in facts.topology.flags:
        if flag.kind in _FLAGS_JUDGED_ELSEWHERE:
            continue
        nodes = tuple(n for n in facts.topology.nodes if flag.subject.split(":", 1)[0] == n)
        yield f"{flag.kind} {flag.subject}", nodes or facts.topology.nodes, {
            "kind": flag.kind, "about": flag.subject, "message": flag.message}


_SUBJECTS = {"cluster": _cluster, "cluster_node": _nodes, "port": _ports, "cable": _cables, "flag": _flags}


def cluster_subjects(scope: str, facts: ClusterFacts) -> Iterator[Subject]:
    """The subjects a `when` rule of a cluster's `scope` judges, in the hosts' order."""
    return _SUBJECTS[scope](facts)

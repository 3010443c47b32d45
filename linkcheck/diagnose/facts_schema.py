"""The fact paths a playbook may name, per scope, and how a subject is flattened into those paths: one table of
subjects for a pair's scopes (over its LinkFacts) and a cluster's (over its ClusterFacts, every inspected node and the
topology inferred from them). A rule of a cluster's scope judges a cluster, never a pair, and a pair's rule a pair."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterator, Mapping
from itertools import permutations
from typing import Any, cast

from linkcheck.cluster.facts import (
    ClusterFacts,
    cable_outcome,
    cabling_changes,
    hca_copy,
    hop_mtus,
    hops,
    missing_routes,
    partners,
    ring_recabling,
    swap_partner,
    transits,
)
from linkcheck.cluster.topology import Cable, Flag
from linkcheck.diagnose.observation import ShellText
from linkcheck.facts.drift import changes
from linkcheck.facts.forwarding_facts import (
    CLUSTER_GROUPS,
    Forwarding,
    accepts_forwarded,
    docker_user_accept,
    forward_decision,
    forward_ports,
)
from linkcheck.facts.model import (
    NODE_GROUPS,
    AllReduceRun,
    DataPath,
    Function,
    LatencyRun,
    LinkFacts,
    NcclRun,
    NodeFacts,
)
from linkcheck.facts.nccl_hca import (
    SUBNET_ROUTING_NCCL,
    gid_index_in_effect,
    nccl_algo_ring_only,
    nccl_before,
    nccl_functions,
    runtime_connect_off,
    select_hcas,
    sockets_on_fabric,
    unset_command,
)
from linkcheck.facts.nccl_ranks import RING_ENV, ClusterNccl
from linkcheck.values import byte_size

# The scopes of a cluster's rules and the facts each one has: fact -> number | bool | text | other, per scope.
CLUSTER_FACTS: dict[str, dict[str, str]] = {
    # One subject, `cluster`: the layout and whether NVIDIA documents it.
    "cluster": {"layout": "text", "supported": "bool", "node_count": "number", "nodes": "text",
                "unsupported_reason": "text", "ring": "bool", "uninspected": "text",
                # Against the cabling `linkcheck init` recorded (linkcheck.yaml `cluster:`), when there is one.
                "recorded": "bool", "config": "text", "cabling_changed": "bool", "cables_gone": "text",
                "cables_new": "text", "switch_gone": "text", "switch_new": "text",
                # The NCCL run across every node (linkcheck.bench.nccl): its result, and the nodes whose own
                # rank fell back to sockets.
                "nccl_run": "bool", "nccl_busbw_gbs": "number", "nccl_nvidia_busbw_gbs": "number",
                "nccl_avg_busbw_gbs": "number",
                "nccl_wrong": "number", "nccl_largest_bytes": "number", "nccl_problem": "text",
                "nccl_transport_only": "bool", "nccl_ranks": "number", "nccl_fallback_nodes": "text",
                "nccl_fallback_count": "number", "nccl_proven": "bool"},
    # One subject per node: whether it must carry traffic between two others and whether it can; also its NCCL
    # settings as nccl.VAR and nccl_source.VAR, as a pair's node has them.
    "cluster_node": {"name": "text", "hostname": "text", "ip_forward": "bool", "transit": "bool",
                     "transit_for": "text", "unreached": "text", "unreached_count": "number", "route_add": "text",
                     "forward_policy": "text", "forward_accepted": "bool", "forward_decided_by": "text",
                     "docker_user": "bool", "docker_accept": "text", "sockets_on_fabric": "bool",
                     "sockets_off_fabric": "bool",
                     "forward_rules": "text",
                     # NCCL on a ring: its library version, whether that is older than 2.30.7 (no subnet-aware
                     # routing), NCCL_IB_HCA against the node's own cabled HCAs and the other nodes', and whether
                     # NCCL_ALGO leaves only Ring.
                     "ring": "bool", "ring_size": "number", "nccl_version": "text", "nccl_too_old": "bool",
                     "hca_copied": "bool", "hca_foreign": "text", "hca_own": "text", "hca_fits": "text",
                     "hca_missed": "text",
                     "nccl_algo_ring": "bool", "runtime_connect_off": "bool", "runtime_connect_setting": "text",
                     "ring_settings_lacking": "text", "ring_settings_lacking_count": "number",
                     # The traffic tests (check --quick/--bench over a cluster): the partners whose test with this
                     # node measured, those that were slow, and whether it is slow with every partner while other
                     # nodes pass with each other.
                     "traffic": "bool", "partners_tested": "number", "partners_slow": "number",
                     "slow_with": "text", "slow_everywhere": "bool",
                     # Its rank in the NCCL run across every node, from the lines its host printed: the NCCL_IB_HCA
                     # it was given and its own cabled HCAs, whether its NCCL fell back to sockets, whether every
                     # channel ran over NET/IB, and the devices and channels behind that.
                     "nccl_run": "bool", "nccl_rank_seen": "bool", "nccl_host": "text", "nccl_given_hca": "text",
                     "nccl_own_hcas": "text", "nccl_problem": "text", "nccl_fallback_nodes": "text",
                     "nccl_fallback_count": "number", "nccl_fell_back": "bool", "nccl_ib_proven": "bool",
                     "nccl_network": "text", "nccl_ib_devices": "text", "nccl_no_ib_device": "bool",
                     "nccl_socket_devices": "text", "nccl_channels": "number", "nccl_socket_channels": "number",
                     "nccl_foreign": "text"},
    # One subject per CX-7 function that is addressed and on a cable or a switch segment (a hop), `a:netdev`; the
    # function's own facts come from the `function` scope.
    "port": {"switched": "bool", "hop": "text", "cluster_mtu": "number", "mtu_uniform": "bool",
             "speed_gbps": "number"},
    # One subject per cable, `cable a:p0<->b:p1`.
    "cable": {"key": "text", "a": "text", "a_cage": "text", "b": "text", "b_cage": "text", "ring": "bool",
              "same_port": "bool", "recable": "bool", "recable_p0": "text", "recable_p1": "text",
              "path_count": "number", "confirmed": "bool",
              # Its traffic test: measured, slow, the lowest rate, the pair rules that fired on it, whether a named
              # trap explains it, whether both its nodes pass elsewhere, and a passing cable to swap it with.
              "tested": "bool", "slow": "bool", "lowest_gbps": "number", "traps": "text", "trap_named": "bool",
              "ends_pass_elsewhere": "bool", "swap_with": "text"},
    # One subject per fault the topology flags (dangling, unaddressed, isolated, link_down, ...), `kind subject`.
    "flag": {"kind": "text", "about": "text", "message": "text"},
}
CLUSTER_SCOPES = tuple(CLUSTER_FACTS)

PAIR_SCOPES = ("function", "path", "node", "nccl", "pair", "baseline_hca", "latency", "allreduce")
SCOPES = PAIR_SCOPES + CLUSTER_SCOPES
BENCH_GROUPS = {"bench_rdma", "bench_nccl", "bench_latency"}
FACT_GROUPS = NODE_GROUPS | BENCH_GROUPS | CLUSTER_GROUPS
PIN = "NCCL_IB_GID_INDEX"
HCA = "NCCL_IB_HCA"

_FUNCTION_FIELDS = tuple(name for name in Function.__struct_fields__ if name != "cable")
# Derived for a function: which NCCL_IB_HCA lists it (a setting of its node), the other devices that setting
# selects, and the node's cabled cages.
FUNCTION_DERIVED = frozenset({"nccl_listed", "nccl_listed_others", "node_cabled_cages"})
FUNCTION_FACTS = frozenset(_FUNCTION_FIELDS + ("domain", "ip", "label", "used", "cabled", "cable_pn")) | \
    FUNCTION_DERIVED
NODE_FIELDS = frozenset({"name", "hostname", "uptime_s", "mem_available_kib", "arp_ignore"})
# Derived from the node's functions: the first subnet that two of its addressed twins share, and those twins.
# The NCCL version found on it and whether NCCL picks the RoCE GID itself when NCCL_IB_GID_INDEX is unset (2.21 on).
NODE_DERIVED = frozenset({"shared_subnet", "shared_netdevs", "nccl_version", "gid_auto"})
NODE_FACTS = NODE_FIELDS | NODE_DERIVED
# Per NCCL setting VAR of a node: nccl.VAR (its value), nccl_source.VAR (where it is set) and, in the node scope,
# nccl_unset.VAR (the command that removes it there).
NCCL_PREFIXES = ("nccl.", "nccl_source.")
NODE_NCCL_PREFIXES = (*NCCL_PREFIXES, "nccl_unset.")
# low.* / high.*: the end with the lower and the higher MTU (when both are known), so a rule can name who to fix.
PATH_SIDES = ("a", "b", "low", "high")
PATH_FACTS = frozenset({"subnet", "key"} | {f"{side}.{f}" for side in PATH_SIDES for f in FUNCTION_FACTS})

# The NCCL test's result and transport, one subject `nccl` (every fact unknown when the bundle has no result).
NCCL_FACTS = frozenset({"busbw_gbs", "avg_busbw_gbs", "wrong", "network", "uses_socket", "problem",
                        "largest_bytes"})

# One subject per ib_write_lat run (a path and a message size), `<path> ib_write_lat <size> B`.
LATENCY_FACTS = frozenset({"path", "size_bytes", "typical_us", "p99_us", "max_us", "client_node", "device",
                           "problem"})
# The small-message all_reduce, one subject `all_reduce small messages` (none without the test): its time at the
# largest size of the sweep, every size's time as text, and the transport.
ALLREDUCE_FACTS = frozenset({"time_us", "size_bytes", "times", "wrong", "network", "uses_socket", "problem"})

# The pair as a whole, one subject `pair`: the RoCE v2 IPv4 GID index of each HCA that NCCL uses, and, with a
# baseline, what differs from it (unknown without one).
_DRIFT = ("changes", "count", "unread", "diff")
PAIR_FACTS = frozenset({"gid_indices", "gid_index_list", "gid_index_count", "gid_pinned", "baseline", "baseline_saved"}
                       | {f"{kind}_{f}" for kind in ("identity", "config") for f in _DRIFT})
# One subject per HCA that the baseline records a RoCE v2 IPv4 GID index for (none without a baseline).
BASELINE_HCA_FACTS = frozenset({"key", "node", "hca", "was", "now", "move", "pin", "pin_source", "baseline"})


def is_known_fact(scope: str, fact: str) -> bool:
    def setting(prefixes: tuple[str, ...]) -> bool:
        return any(fact.startswith(p) and len(fact) > len(p) for p in prefixes)

    if scope == "function":
        return fact in FUNCTION_FACTS or setting(NCCL_PREFIXES)
    if scope == "path":
        return fact in PATH_FACTS
    if scope == "node":
        return fact in NODE_FACTS or setting(NODE_NCCL_PREFIXES)
    if scope == "port":
        return fact in FUNCTION_FACTS or fact in CLUSTER_FACTS["port"] or setting(NCCL_PREFIXES)
    if scope == "cluster_node":
        return fact in CLUSTER_FACTS[scope] or setting(NCCL_PREFIXES)
    if scope in CLUSTER_FACTS:
        return fact in CLUSTER_FACTS[scope]
    return fact in _OTHER_FACTS.get(scope, ())


_OTHER_FACTS = {"nccl": NCCL_FACTS, "pair": PAIR_FACTS, "baseline_hca": BASELINE_HCA_FACTS, "latency": LATENCY_FACTS,
                "allreduce": ALLREDUCE_FACTS}


def placeholders_for_scope(scope: str) -> frozenset[str]:
    if scope == "port":
        return FUNCTION_FACTS | frozenset(CLUSTER_FACTS["port"])
    if scope in CLUSTER_FACTS:
        return frozenset(CLUSTER_FACTS[scope])
    return {"function": FUNCTION_FACTS, "path": PATH_FACTS, "node": NODE_FACTS, **_OTHER_FACTS}.get(scope, frozenset())


def settings_values(node: NodeFacts) -> dict[str, Any]:
    """The node's NCCL settings as `nccl.VAR` and where each is set as `nccl_source.VAR`."""
    values: dict[str, Any] = {f"nccl.{k}": v for k, v in node.nccl.items()}
    values.update({f"nccl_source.{k}": v for k, v in node.nccl_sources.items()})
    return values


def _listed(fn: Function, node: NodeFacts) -> tuple[bool, str | None]:
    """Whether a set NCCL_IB_HCA selects this function's device among the node's, and the others it selects."""
    setting = node.nccl.get(HCA)
    if not setting or not setting.strip() or not fn.rdma_dev:
        return False, None
    listed = set(select_hcas(setting, [f.rdma_dev for f in node.functions if f.rdma_dev]))
    return fn.rdma_dev in listed, ",".join(sorted(d for d in listed if d != fn.rdma_dev)) or None


def function_values(fn: Function, node: NodeFacts) -> dict[str, Any]:
    values: dict[str, Any] = {name: getattr(fn, name) for name in _FUNCTION_FIELDS}
    values.update(domain=fn.domain, ip=fn.ip, label=fn.label, used=bool(fn.ipv4),
                  cabled=fn.cage in node.cabled_cages, cable_pn=fn.cable.vendor_pn if fn.cable else None)
    values["ipv4"] = ", ".join(fn.ipv4) or None
    values["nccl_listed"], values["nccl_listed_others"] = _listed(fn, node)
    values["node_cabled_cages"] = ", ".join(node.cabled_cages) or None
    values.update(settings_values(node))
    return values


def path_values(path: DataPath, link: LinkFacts) -> dict[str, Any]:
    values: dict[str, Any] = {"subnet": path.subnet, "key": path.key}
    ends = [("a", path.a), ("b", path.b)]
    if path.a.mtu is not None and path.b.mtu is not None:
        low, high = sorted((path.a, path.b), key=lambda f: f.mtu or 0)
        ends += [("low", low), ("high", high)]
    for side, fn in ends:
        for name, value in function_values(fn, link.node(fn.node)).items():
            values[f"{side}.{name}"] = value
    return values


def _shared_subnet(node: NodeFacts) -> tuple[str | None, str | None]:
    by_subnet: dict[str, list[str]] = {}
    for fn in node.used_functions:
        for subnet in fn.subnets:
            by_subnet.setdefault(subnet, []).append(fn.netdev)
    shared = sorted((s, n) for s, n in by_subnet.items() if len(n) > 1)
    return (shared[0][0], " and ".join(shared[0][1])) if shared else (None, None)


def node_values(node: NodeFacts) -> dict[str, Any]:
    values: dict[str, Any] = {name: getattr(node, name) for name in NODE_FIELDS}
    values["shared_subnet"], values["shared_netdevs"] = _shared_subnet(node)
    values["nccl_version"] = node.identity.nccl_version
    values["gid_auto"] = gid_index_in_effect(node).auto_when_unset
    values.update(settings_values(node))
    values.update({f"nccl_unset.{k}": ShellText(unset_command(k, node.nccl_sources.get(k, "not set")))
                   for k in node.nccl})
    return values


def nccl_values(run: NcclRun | None) -> dict[str, Any]:
    return {name: getattr(run, name) if run is not None else None for name in NCCL_FACTS}


def latency_values(run: LatencyRun) -> dict[str, Any]:
    return {"path": run.path_key, "size_bytes": run.size_bytes, "typical_us": run.typical_us, "p99_us": run.p99_us,
            "max_us": run.max_us, "client_node": run.client_node, "device": run.device, "problem": run.problem}


ALLREDUCE_SUBJECT = "all_reduce small messages"


def allreduce_values(run: AllReduceRun) -> dict[str, Any]:
    largest = run.largest
    times = ", ".join(f"{r.size_bytes} B {r.time_us:g} us" for r in sorted(run.rows, key=lambda r: r.size_bytes))
    return {"time_us": largest.time_us if largest else None, "size_bytes": largest.size_bytes if largest else None,
            "times": times or None, "wrong": run.wrong, "network": run.network, "uses_socket": run.uses_socket,
            "problem": run.problem}


def _ends(link: LinkFacts) -> tuple[str, str]:
    """The nodes a subject of both ends concerns, as the pair names them (a and b, a cable's ends, any two names):
    a node whose facts are missing drops it (engine.py `_blocked`)."""
    return link.a.name, link.b.name


def _latency(link: LinkFacts) -> Iterator[Subject]:
    for run in link.bench.latency:
        yield f"{run.path_key} ib_write_lat {byte_size(run.size_bytes)}", _ends(link), latency_values(run)


def _allreduce(link: LinkFacts) -> Iterator[Subject]:
    if link.bench.allreduce is not None:
        yield ALLREDUCE_SUBJECT, _ends(link), allreduce_values(link.bench.allreduce)


def _drift(link: LinkFacts, kind: str) -> dict[str, Any]:
    """What differs from the baseline in its identity or configuration fields: the changes as text, their number
    (unknown when nothing differs but something could not be read in one of the runs), the fields not read, and
    each change as {baseline, now}."""
    facts = link.baseline
    if facts is None:
        return {f"{kind}_{f}": None for f in _DRIFT}
    base, now = facts.baseline.snapshot, facts.current
    old, new = (base.identity, now.identity) if kind == "identity" else (base.configuration, now.configuration)
    changed, unread = changes(old, new, base, now)
    return {f"{kind}_changes": "; ".join(map(str, changed)),
            f"{kind}_count": len(changed) if changed or not unread else None,
            f"{kind}_unread": ", ".join(unread) or None,
            f"{kind}_diff": {c.field: {"baseline": c.baseline, "now": c.now} for c in changed}}


def pair_values(link: LinkFacts) -> dict[str, Any]:
    indices = {f"{fn.node}:{fn.rdma_dev}": fn.gid_index
               for node in (link.a, link.b) for fn in nccl_functions(node) if fn.gid_index is not None}
    values: dict[str, Any] = {
        "gid_indices": dict(sorted(indices.items())),
        "gid_index_list": ", ".join(f"{k}={v}" for k, v in sorted(indices.items())) or None,
        "gid_index_count": len(set(indices.values())),
        "gid_pinned": any(gid_index_in_effect(node).index is not None for node in (link.a, link.b)),
        "baseline": link.baseline.baseline.name if link.baseline else None,
        "baseline_saved": link.baseline.baseline.created if link.baseline else None,
    }
    return {**values, **_drift(link, "identity"), **_drift(link, "config")}


Subject = tuple[str, tuple[str, ...], dict[str, Any]]  # its name, the nodes it is about, its facts


def _functions(link: LinkFacts) -> Iterator[Subject]:
    for node in (link.a, link.b):
        for fn in node.functions:
            yield fn.label, (node.name,), function_values(fn, node)


def _baseline_hcas(link: LinkFacts) -> Iterator[Subject]:
    """Each HCA whose RoCE v2 IPv4 GID index the baseline records."""
    facts = link.baseline
    if facts is None:
        return
    for key, was in sorted(facts.baseline.snapshot.gid_index.items()):
        node = link.node(key.split(":", 1)[0])
        now = facts.current.gid_index.get(key)
        used = gid_index_in_effect(node)  # an empty or negative pin is no pin on NCCL >= 2.21; unset is 0 before
        yield key, (node.name,), {
            "key": key, "node": node.name, "hca": key.split(":", 1)[1], "was": was, "now": now,
            "move": {"baseline": was, "now": now}, "pin": None if used.index is None else str(used.index),
            "pin_source": used.source, "baseline": facts.baseline.name}


# -- a cluster's subjects ----------------------------------------------------------------------------------------

# Flags that other rules judge (the layout, a ring's cabling) or that only describe (neither is a fault here). A node
# that was not inspected is no cabling fault, nor a port that most likely faces it: the layout is then unknown
# (CLUSTER_LAYOUT_UNSUPPORTED's skip), and those ports' tests inconclusive. A cable's twins in one subnet are the
# pair's TWINS_SAME_SUBNET, judged on each cable's pair view at the pair's severity (diagnose/engine.py CABLE_TRAPS):
# one trap, one finding, whatever the layout; so is a twin without carrier where LINK_DOWN judges it (`_pair_trap`).
# An unaddressed twin and a neighbour entry holding the far node's other twin stay cabling faults: SINGLE_PCIE_PATH,
# which names them too, is judged with each test (CABLE_RULES), and a bundle without tests (`topology`, `collect`)
# has none.
_FLAGS_JUDGED_ELSEWHERE = {"unsupported", "mixed", "ring_same_port", "uninspected", "far_unknown",
                           "twins_share_subnet"}


def _pair_trap(facts: ClusterFacts, flag: Flag) -> bool:
    """Whether LINK_DOWN (diagnose/checks/link.py) judges a `link_down` flag on the cable's pair view: each end without
    carrier a twin of one of its node's cabled cages, or of a node with none. A cable pulled from a ring node whose
    other cage is cabled is not LINK_DOWN's: it stays a cabling fault."""
    if flag.kind != "link_down":
        return False
    path = next((p for cable in facts.topology.cables for p in cable.paths if p.key == flag.subject), None)
    down = [e for e in (path.a, path.b) if e.up is False] if path is not None else []
    return bool(down) and all(e.node in facts.nodes and (e.cage in facts.nodes[e.node].cabled_cages
                                                        or not facts.nodes[e.node].cabled_cages) for e in down)


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


def _docker_accept(node: NodeFacts) -> ShellText:
    """The DOCKER-USER accepts that let the node route between its cables, as its repair inserts them: each ordered
    pair of its addressed CX-7 ports by name (cluster/facts.py forward_ports), written out for one pair of ports and
    as a loop over the ports for more."""
    ports = forward_ports(node)
    if len(ports) < 2:
        return ShellText(f"{docker_user_accept('-I', 'IN', 'OUT')} for each ordered pair of its addressed CX-7 "
                         "interfaces (fewer than two are addressed now)")
    if len(ports) == 2:
        return ShellText(" && ".join(docker_user_accept("-I", shlex.quote(i), shlex.quote(o))
                                     for i, o in permutations(ports, 2)))
    words = " ".join(shlex.quote(p) for p in ports)
    accept = docker_user_accept("-I", '"$i"', '"$o"')
    return ShellText(f'for i in {words}; do for o in {words}; do [ "$i" = "$o" ] || {accept}; done; done')


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
            "docker_accept": _docker_accept(node),
            "forward_rules": "\n".join(" ".join(("-A", r.chain, *r.words)) for r in fwd.forward_rules)
            if known_firewall and fwd else None,
            "ring": ring, "ring_size": len(facts.topology.nodes) if ring else None,
            "nccl_version": nccl_version, "nccl_too_old": nccl_before(nccl_version, SUBNET_ROUTING_NCCL),
            # Copied: it selects HCAs off this node's cabled cages, and exactly another node's cabled ones.
            "hca_copied": bool(copy.foreign and copy.fits) if copy else None,
            "hca_foreign": (",".join(copy.foreign) or None) if copy else None,
            "hca_own": ",".join(copy.own) if copy else None,
            "hca_fits": (", ".join(copy.fits) or None) if copy else None,
            # Its cabled cages of which NCCL_IB_HCA selects no device: a cable NCCL on this node cannot use.
            "hca_missed": (" and ".join(copy.missed) or None) if copy else None,
            "nccl_algo_ring": nccl_algo_ring_only(node.nccl.get("NCCL_ALGO")),
            "runtime_connect_off": runtime_connect_off(node.nccl) is not None,
            **_ring_settings(node.nccl, node.nccl_sources),
            "runtime_connect_setting": runtime_connect_off(node.nccl),
            **_traffic_values(facts, name),
            **_nccl_rank_values(facts.nccl, name),
            **settings_values(node),
        }


def _ring_settings(settings: Mapping[str, str], sources: Mapping[str, str]) -> dict[str, Any]:
    """NVIDIA's ring settings (linkcheck.facts.nccl_ranks.RING_ENV) the node's NCCL settings lack, each as it is
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
    on = hops(facts.topology)
    switched = {end.label for segment in facts.topology.segments for end in segment.endpoints}
    mtus = hop_mtus(facts)
    for name, node in facts.nodes.items():
        for fn in node.functions:
            if fn.label not in on:
                continue
            values: dict[str, Any] = function_values(fn, node)
            values.update(switched=fn.label in switched, hop=on[fn.label], cluster_mtu=max(mtus, default=None),
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
        if flag.kind in _FLAGS_JUDGED_ELSEWHERE or _pair_trap(facts, flag):
            continue
        nodes = tuple(n for n in facts.topology.nodes if flag.subject.split(":", 1)[0] == n)
        yield f"{flag.kind} {flag.subject}", nodes or facts.topology.nodes, {
            "kind": flag.kind, "about": flag.subject, "message": flag.message}


PairSubjects = Callable[[LinkFacts], Iterator[Subject]]
ClusterSubjects = Callable[[ClusterFacts], Iterator[Subject]]
# The subjects of every scope: a pair's over its LinkFacts, a cluster's (CLUSTER_SCOPES) over its ClusterFacts.
_SUBJECTS: dict[str, PairSubjects | ClusterSubjects] = {
    "function": _functions,
    "path": lambda link: ((p.key, _ends(link), path_values(p, link)) for p in link.paths),
    "node": lambda link: ((f"node {n.name}", (n.name,), node_values(n)) for n in (link.a, link.b)),
    "nccl": lambda link: iter([("nccl", _ends(link), nccl_values(link.bench.nccl))]),
    "pair": lambda link: iter([("pair", _ends(link), pair_values(link))]),
    "baseline_hca": _baseline_hcas,
    "latency": _latency,
    "allreduce": _allreduce,
    "cluster": _cluster,
    "cluster_node": _nodes,
    "port": _ports,
    "cable": _cables,
    "flag": _flags,
}


def subjects(scope: str, facts: LinkFacts | ClusterFacts) -> Iterator[Subject]:
    """The subjects a `when` rule of `scope` judges, in order: a pair's each twin, path or node, the NCCL test, the
    pair, each HCA of the baseline's GID table; a cluster's in the hosts' order."""
    if isinstance(facts, ClusterFacts) != (scope in CLUSTER_SCOPES):
        raise TypeError(f"scope {scope} judges a {'cluster' if scope in CLUSTER_SCOPES else 'pair'}")
    if isinstance(facts, ClusterFacts):
        return cast(ClusterSubjects, _SUBJECTS[scope])(facts)
    return cast(PairSubjects, _SUBJECTS[scope])(facts)

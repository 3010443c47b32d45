"""The fact paths a playbook may name, per scope, and how a subject is flattened into those paths."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from linkcheck.cluster.facts import CLUSTER_GROUPS
from linkcheck.diagnose.cluster_scopes import CLUSTER_FACTS, CLUSTER_SCOPES
from linkcheck.diagnose.observation import ShellText
from linkcheck.facts.drift import changes
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
from linkcheck.facts.nccl_hca import gid_index_in_effect, nccl_functions, select_hcas, unset_command
from linkcheck.values import byte_size

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


def _latency(link: LinkFacts) -> Iterator[Subject]:
    for run in link.bench.latency:
        yield f"{run.path_key} ib_write_lat {byte_size(run.size_bytes)}", ("a", "b"), latency_values(run)


def _allreduce(link: LinkFacts) -> Iterator[Subject]:
    if link.bench.allreduce is not None:
        yield ALLREDUCE_SUBJECT, ("a", "b"), allreduce_values(link.bench.allreduce)


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


_SUBJECTS = {
    "function": _functions,
    "path": lambda link: ((p.key, ("a", "b"), path_values(p, link)) for p in link.paths),
    "node": lambda link: ((f"node {n.name}", (n.name,), node_values(n)) for n in (link.a, link.b)),
    "nccl": lambda link: iter([("nccl", ("a", "b"), nccl_values(link.bench.nccl))]),
    "pair": lambda link: iter([("pair", ("a", "b"), pair_values(link))]),
    "baseline_hca": _baseline_hcas,
    "latency": _latency,
    "allreduce": _allreduce,
}


def subjects(scope: str, link: LinkFacts) -> Iterator[Subject]:
    """The subjects a `when` rule of `scope` judges, in order: each twin, path or node, the NCCL test, the pair, each
    HCA of the baseline's GID table."""
    return _SUBJECTS[scope](link)

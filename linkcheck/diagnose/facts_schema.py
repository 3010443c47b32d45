"""The fact paths a playbook may name, per scope, and how a subject is flattened into those paths."""

from __future__ import annotations

from typing import Any

from linkcheck.facts.model import NODE_GROUPS, DataPath, Function, LinkFacts, NcclRun, NodeFacts

SCOPES = ("function", "path", "node", "nccl", "pair")
BENCH_GROUPS = {"bench_rdma", "bench_nccl"}
FACT_GROUPS = NODE_GROUPS | BENCH_GROUPS

_FUNCTION_FIELDS = tuple(name for name in Function.__struct_fields__ if name != "cable")
FUNCTION_FACTS = frozenset(_FUNCTION_FIELDS + ("domain", "ip", "label", "used", "cabled", "cable_pn"))
NODE_FIELDS = frozenset({"name", "hostname", "uptime_s", "mem_available_kib", "arp_ignore"})
# Derived from the node's functions: the first subnet that two of its addressed twins share, and those twins.
NODE_DERIVED = frozenset({"shared_subnet", "shared_netdevs"})
NODE_FACTS = NODE_FIELDS | NODE_DERIVED
# low.* / high.*: the end with the lower and the higher MTU (when both are known), so a rule can name who to fix.
PATH_SIDES = ("a", "b", "low", "high")
PATH_FACTS = frozenset({"subnet", "key"} | {f"{side}.{f}" for side in PATH_SIDES for f in FUNCTION_FACTS})

# The NCCL test's result and transport, one subject `nccl` (every fact unknown when the bundle has no result).
NCCL_FACTS = frozenset({"busbw_gbs", "avg_busbw_gbs", "wrong", "network", "uses_socket", "problem",
                        "largest_bytes"})


def is_known_fact(scope: str, fact: str) -> bool:
    if scope == "function":
        return fact in FUNCTION_FACTS
    if scope == "path":
        return fact in PATH_FACTS
    if scope == "node":
        return fact in NODE_FACTS or (fact.startswith("nccl.") and len(fact) > 5)
    if scope == "nccl":
        return fact in NCCL_FACTS
    return False


def placeholders_for_scope(scope: str) -> frozenset[str]:
    return {"function": FUNCTION_FACTS, "path": PATH_FACTS, "node": NODE_FACTS, "nccl": NCCL_FACTS}.get(
        scope, frozenset())


def function_values(fn: Function, node: NodeFacts) -> dict[str, Any]:
    values: dict[str, Any] = {name: getattr(fn, name) for name in _FUNCTION_FIELDS}
    values.update(domain=fn.domain, ip=fn.ip, label=fn.label, used=bool(fn.ipv4),
                  cabled=fn.cage in node.cabled_cages, cable_pn=fn.cable.vendor_pn if fn.cable else None)
    values["ipv4"] = ", ".join(fn.ipv4) or None
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
    values.update({f"nccl.{k}": v for k, v in node.nccl.items()})
    return values


def nccl_values(run: NcclRun | None) -> dict[str, Any]:
    return {name: getattr(run, name) if run is not None else None for name in NCCL_FACTS}

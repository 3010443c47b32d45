"""CLUSTER_NODES_DIFFER: every node of a cluster compared field by field, each difference naming which node has
what, so a mixed build is named before a cable is blamed."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import msgspec

from linkcheck.cluster.facts import ClusterFacts
from linkcheck.diagnose.checks.nodes import node_fields
from linkcheck.diagnose.observation import Observation
from linkcheck.model import Evidence, Severity


class ClusterNodesDifferValues(msgspec.Struct, frozen=True):
    """The fields that differ across the cluster, as one table (`field: value on nodes; value on nodes`)."""

    count: int
    table: str


def _who(values: Mapping[str, str | None]) -> str:
    """`28.45.4028 on a, b; 28.39.1002 on c`: each value with the nodes that have it, the commonest first."""
    holders: dict[str, list[str]] = defaultdict(list)
    for node, value in values.items():
        holders[value if value is not None else "unknown"].append(node)
    ranked = sorted(holders.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    return "; ".join(f"{value} on {', '.join(nodes)}" for value, nodes in ranked)


def cluster_nodes_differ(facts: ClusterFacts, thresholds: Mapping[str, Any]) -> list[Observation]:
    """A warning for a field that differs between nodes and changes behaviour (CX-7 firmware, driver, kernel, OS,
    BIOS, perftest, NCCL); a note for one harmless by design (board PSID, product). A node that could not tell is
    left out of that field's comparison, never counted as a difference."""
    names = tuple(facts.nodes)
    fields = {name: node_fields(facts.nodes[name]) for name in names}
    products = {fields[n]["product"][0] for n in names if fields[n]["product"][0]}
    found: list[tuple[str, dict[str, str | None], str, bool]] = []
    for field, (_, source, harmless) in fields[names[0]].items() if names else ():
        values = {n: fields[n][field][0] for n in names}
        if len({v for v in values.values() if v is not None}) > 1:
            # Two OEMs' boards run their own BIOS lines: a difference there says nothing.
            found.append((field, values, source, harmless or (field == "BIOS" and len(products) > 1)))
    serious = [f for f in found if not f[3]]
    shown = serious or found
    table = " | ".join(f"{field}: {_who(values)}" for field, values, _, _ in shown)
    return [Observation(
        subject="cluster", fired=bool(found), nodes=names, severity=None if serious else Severity.INFO,
        values=ClusterNodesDifferValues(count=len(shown), table=table),
        evidence=tuple(Evidence(field, dict(values), source) for field, values, source, _ in found))]

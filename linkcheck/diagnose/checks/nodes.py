"""NODES_DIFFER: the two nodes compared field by field, so a difference is named before it is blamed.

NODES_DIFFER over a cluster (the rule's cluster layout, formerly CLUSTER_NODES_DIFFER): every node compared field by
field, each difference naming which node has what, so a mixed build is named before a cable is blamed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import msgspec

from linkcheck.cluster.facts import ClusterFacts
from linkcheck.diagnose.observation import Observation
from linkcheck.facts.model import LinkFacts, NodeFacts
from linkcheck.model import Evidence, Severity

# NCCL settings whose difference between the ranks is only noted: logging, names that differ by design (the
# management NIC of each node; HCA names when the cable joins different cages), and NCCL_IB_HCA, whose meaning
# across the pair NCCL_HCA_PAIRING and NCCL_HCA_UNCABLED judge.
HARMLESS_NCCL = ("NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE", "NCCL_SOCKET_IFNAME", "NCCL_IB_HCA")


class NodesDifferValues(msgspec.Struct, frozen=True):
    """The fields that differ between the two nodes, as one table."""

    count: int
    table: str


class _Difference(msgspec.Struct, frozen=True):
    field: str
    a: object
    b: object
    source: str
    harmless: bool


def _one(values: set[str | None]) -> str | None:
    known = sorted(v for v in values if v)
    return ", ".join(known) or None


def node_fields(node: NodeFacts) -> dict[str, tuple[str | None, str, bool]]:
    """field -> (value, source, harmless when it differs)."""
    cx7 = [f for f in node.functions if f.cage in node.cabled_cages] or list(node.functions)
    ident = node.identity
    # The DMI serial and the boot id always differ: they are evidence, never compared.
    return {
        "CX-7 firmware": (_one({f.firmware for f in cx7}), "ethtool -i", False),
        "CX-7 driver": (_one({f.driver for f in cx7}), "ethtool -i", False),
        "board PSID": (_one({f.psid for f in cx7}), "ethtool -i, sysfs board_id", True),  # OEM boards differ by design
        "kernel": (node.kernel_release, "uname -r", False),
        "OS": (node.os_name, "/etc/os-release", False),
        "product": (joined(ident.vendor, ident.product), "DMI sys_vendor, product_name", True),  # mixed OEM pairs work
        "BIOS": (ident.bios_version, "DMI bios_version", False),
        "perftest": (ident.perftest_version, "ib_write_bw -V", False),
        "NCCL": (ident.nccl_version, "libnccl.so file name", False),
    }


def joined(*parts: str | None) -> str | None:
    return " ".join(p for p in parts if p) or None


def _differences(link: LinkFacts) -> list[_Difference]:
    out = []
    fields_a, fields_b = node_fields(link.a), node_fields(link.b)
    other_product = fields_a["product"][0] != fields_b["product"][0]
    for name, (value_a, source, harmless) in fields_a.items():
        value_b = fields_b[name][0]
        if value_a is not None and value_b is not None and value_a != value_b:
            # Two OEMs' boards run their own BIOS lines: a difference there says nothing.
            out.append(_Difference(name, value_a, value_b, source, harmless or (name == "BIOS" and other_product)))
    nccl_known = "nccl_settings" not in link.a.unavailable and "nccl_settings" not in link.b.unavailable
    for key in sorted(set(link.a.nccl) | set(link.b.nccl)):
        value_a, value_b = link.a.nccl.get(key), link.b.nccl.get(key)
        if value_a != value_b and nccl_known:
            where = f"{link.a.nccl_sources.get(key, 'unset')} / {link.b.nccl_sources.get(key, 'unset')}"
            out.append(_Difference(key, value_a, value_b, where, key in HARMLESS_NCCL))
    for path in link.paths:
        if path.a.mtu is not None and path.b.mtu is not None and path.a.mtu != path.b.mtu:
            # Noted here for the table; MTU_MISMATCH judges it.
            out.append(_Difference(f"MTU of {path.key}", path.a.mtu, path.b.mtu, "ip addr", True))
        if path.a.gid_index is not None and path.b.gid_index is not None and path.a.gid_index != path.b.gid_index:
            # NCCL resolves the index per HCA; GID_INDEX_DIFFERS judges it when something pins it.
            out.append(_Difference(f"RoCE v2 GID index on {path.key}", path.a.gid_index, path.b.gid_index,
                                   "sysfs gid_attrs", True))
    return out


def nodes_differ(link: LinkFacts, thresholds: Mapping[str, Any]) -> list[Observation]:
    """A warning for differences that change behaviour (firmware, driver, kernel, OS, BIOS, perftest, NCCL, NCCL
    settings), a note for those that are harmless by design (PSID, product, MTU and GID index judged elsewhere);
    mixed builds make every failure have a second candidate cause."""
    found = _differences(link)
    serious = [d for d in found if not d.harmless]
    table = "; ".join(f"{d.field}: a {d.a if d.a is not None else 'unset'}, b {d.b if d.b is not None else 'unset'}"
                      for d in (serious or found))
    return [Observation(
        subject="pair", fired=bool(found), severity=None if serious else Severity.INFO,
        values=NodesDifferValues(count=len(serious or found), table=table),
        evidence=tuple(Evidence(d.field, [d.a, d.b], d.source) for d in found))]


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

"""The NCCL a job really loads, on each node and inside each container asked for (`--container`): written once over a
list of nodes, with one thin entry for a pair's facts and one for a cluster's.

A bundle without these reads (no nccl_libs, no container_nccl, no gpu_state capture) gives no subject at all, so none
of these checks fires, skips or changes a verdict on it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from linkcheck.cluster.facts import ClusterFacts
from linkcheck.diagnose.observation import Observation
from linkcheck.facts.model import LinkFacts, NcclView, NodeFacts
from linkcheck.facts.nccl_hca import select_hcas
from linkcheck.model import Evidence, Severity
from linkcheck.parsers.nccl_probe import NcclLibFile
from linkcheck.values import byte_size

# NCCL_IB_SUBNET_AWARE_ROUTING is a parameter from NCCL 2.30.7-1 (src/transport/net_ib/connect.cc; absent in 2.30.4-1).
SUBNET_ROUTING = (2, 30, 7)
COMPARED = ("NCCL_IB_HCA", "NCCL_IB_GID_INDEX", "NCCL_SOCKET_IFNAME")


def _pair(link: LinkFacts) -> tuple[NodeFacts, ...]:
    return (link.a, link.b)


def _nodes(facts: ClusterFacts) -> tuple[NodeFacts, ...]:
    return tuple(facts.nodes.values())


def version_tuple(text: str | None) -> tuple[int, ...] | None:
    match = re.match(r"^(\d+)\.(\d+)\.(\d+)", text or "")
    return tuple(int(g) for g in match.groups()) if match else None


def describe(lib: NcclLibFile) -> str:
    """`/path (2.28.9 from file name, build a7f420a1..., pip wheel, 219 MB)`."""
    parts = [f"{lib.version} from {lib.version_from}" if lib.version else "version unknown",
             f"build {lib.build_id}" if lib.build_id else "build ID unknown", lib.origin]
    if lib.size_bytes is not None:
        parts.append(byte_size(lib.size_bytes))
    return f"{lib.real_path if lib.real_path != lib.path else lib.path} ({', '.join(parts)})"


# -- the library differs between nodes --------------------------------------------------------------------------------

class BuildDiffersValues(msgspec.Struct, frozen=True):
    where: str
    count: int
    table: str


def _groups(nodes: Sequence[NodeFacts]) -> dict[str, dict[str, NcclView]]:
    """What is compared across nodes: the hosts, each container name found on two or more nodes, and, when every
    node has exactly one container read under different names, those containers."""
    groups: dict[str, dict[str, NcclView]] = {}
    for node in nodes:
        for view in node.nccl_views:
            if view.state == "read" and view.library is not None:
                groups.setdefault(view.where, {})[node.name] = view
    read = [[v for v in n.containers if v.state == "read" and v.library is not None] for n in nodes]
    if len(nodes) > 1 and all(len(r) == 1 for r in read) and len({r[0].container for r in read}) > 1:
        groups["the serving containers"] = {n.name: r[0] for n, r in zip(nodes, read, strict=True)}
    return {where: views for where, views in groups.items() if len(views) > 1}


def build_differs(nodes: Sequence[NodeFacts]) -> list[Observation]:
    out = []
    for where, views in _groups(nodes).items():
        known = {n: v for n, v in views.items() if v.library is not None and v.library.build_id}
        if len(known) < 2:
            continue
        ids = {v.library.build_id for v in known.values() if v.library is not None}
        table = "; ".join(f"{n}: {describe(v.library)}" + (f" in {v.container}" if v.container else "")
                          for n, v in known.items() if v.library is not None)
        out.append(Observation(
            subject=f"NCCL in {where}", fired=len(ids) > 1, nodes=tuple(known),
            values=BuildDiffersValues(where=where, count=len(ids), table=table),
            evidence=tuple(Evidence(f"libnccl on {n}" + (f" in {v.container}" if v.container else ""),
                                    describe(v.library), v.chosen_by or "") for n, v in known.items()
                           if v.library is not None)))
    return out


def nccl_build_differs(link: LinkFacts, thresholds: Mapping[str, Any]) -> list[Observation]:
    return build_differs(_pair(link))


def cluster_nccl_build_differs(facts: ClusterFacts, thresholds: Mapping[str, Any]) -> list[Observation]:
    return build_differs(_nodes(facts))


# -- a container's settings against its host's ------------------------------------------------------------------------

class ContradictValues(msgspec.Struct, frozen=True):
    node: str
    container: str
    contradictions: str
    where_set: str


def _devices(node: NodeFacts) -> list[str]:
    return [f.rdma_dev for f in node.functions if f.rdma_dev]


def settings_contradict(nodes: Sequence[NodeFacts]) -> list[Observation]:
    out = []
    for node in nodes:
        for view in node.containers:
            if view.state != "read":
                continue
            found, where = [], []
            for key in COMPARED:
                mine, host = view.settings.get(key), node.nccl.get(key)
                if mine is None:
                    continue
                source = view.setting_sources.get(key, "?")
                if host is not None and mine != host:
                    found.append(f"{key}={mine} in the container, {host} on the host "
                                 f"({node.nccl_sources.get(key, '?')})")
                    where.append(f"{key}: {source}")
                elif key == "NCCL_IB_HCA" and _devices(node) and not select_hcas(mine, _devices(node)):
                    found.append(f"{key}={mine} selects none of the node's RDMA devices ({', '.join(_devices(node))})")
                    where.append(f"{key}: {source}")
            out.append(Observation(
                subject=f"container {view.container} on {node.name}", fired=bool(found), nodes=(node.name,),
                values=ContradictValues(node=node.name, container=view.container or "",
                                        contradictions="; ".join(found), where_set=", ".join(where)),
                evidence=tuple(Evidence(f"{k} in {view.container}", view.settings.get(k),
                                        view.setting_sources.get(k, "not set")) for k in COMPARED)
                + tuple(Evidence(f"{k} on {node.name}", node.nccl.get(k), node.nccl_sources.get(k, "not set"))
                        for k in COMPARED)))
    return out


def container_settings_contradict(link: LinkFacts, thresholds: Mapping[str, Any]) -> list[Observation]:
    return settings_contradict(_pair(link))


def cluster_container_settings_contradict(facts: ClusterFacts, thresholds: Mapping[str, Any]) -> list[Observation]:
    return settings_contradict(_nodes(facts))


# -- a container that could not be read -------------------------------------------------------------------------------

class NotReadValues(msgspec.Struct, frozen=True):
    node: str
    container: str
    note: str


def not_read(nodes: Sequence[NodeFacts]) -> list[Observation]:
    """A note (never a failure of the link) for each container asked for that could not be looked into."""
    return [Observation(subject=f"container {v.container} on {n.name}", fired=v.state != "read", nodes=(n.name,),
                        severity=Severity.INFO,
                        values=NotReadValues(node=n.name, container=v.container or "", note=v.note or v.state),
                        evidence=(Evidence("container", v.container, f"{v.engine or 'docker, podman'} on {n.name}"),))
            for n in nodes for v in n.containers]


def container_not_read(link: LinkFacts, thresholds: Mapping[str, Any]) -> list[Observation]:
    return not_read(_pair(link))


def cluster_container_not_read(facts: ClusterFacts, thresholds: Mapping[str, Any]) -> list[Observation]:
    return not_read(_nodes(facts))


# -- subnet-aware routing on a ring -----------------------------------------------------------------------------------

class SubnetRoutingValues(msgspec.Struct, frozen=True):
    node: str
    container: str
    library: str
    version: str
    problem: str
    ring_size: int


def cluster_container_subnet_routing(facts: ClusterFacts, thresholds: Mapping[str, Any]) -> list[Observation]:
    """On a ring, each container's NCCL must have NCCL_IB_SUBNET_AWARE_ROUTING (2.30.7 and later) and be told to use
    it; the host's own NCCL is judged by NCCL_SUBNET_ROUTING_MISSING."""
    if not facts.topology.layout.startswith("ring"):
        return []
    out = []
    for node in _nodes(facts):
        for view in node.containers:
            if view.state != "read" or view.library is None:
                continue
            version = version_tuple(view.library.version)
            if version is None:
                out.append(Observation(subject=f"container {view.container} on {node.name}", fired=False,
                                       nodes=(node.name,), skip=f"the version of {view.library.path} is unknown",
                                       required=False))
                continue
            too_old = version < SUBNET_ROUTING
            setting = view.settings.get("NCCL_IB_SUBNET_AWARE_ROUTING")
            problem = (f"NCCL {view.library.version} predates NCCL_IB_SUBNET_AWARE_ROUTING (it exists from 2.30.7)"
                       if too_old else "NCCL_IB_SUBNET_AWARE_ROUTING is not set to 1 in the container"
                       if setting != "1" else "")
            out.append(Observation(
                subject=f"container {view.container} on {node.name}", fired=bool(problem), nodes=(node.name,),
                severity=None if too_old else Severity.WARNING,
                values=SubnetRoutingValues(node=node.name, container=view.container or "",
                                           library=describe(view.library), version=view.library.version or "?",
                                           problem=problem, ring_size=len(facts.topology.nodes)),
                evidence=(Evidence(f"libnccl in {view.container}", describe(view.library), view.chosen_by or ""),
                          Evidence("NCCL_IB_SUBNET_AWARE_ROUTING", setting,
                                   view.setting_sources.get("NCCL_IB_SUBNET_AWARE_ROUTING", "not set")))))
    return out


# -- a version on the known-bad list ----------------------------------------------------------------------------------

class KnownBadValues(msgspec.Struct, frozen=True):
    node: str
    where: str
    tool: str
    version: str
    symptom: str
    source: str
    fixed: str
    workaround: str


def _versions(node: NodeFacts) -> list[tuple[str, str, str, str]]:
    """(where, tool, version, what it was read from) of every NCCL the node's probe read (the host's, each
    container's). The older nccl_install capture is left to NODES_DIFFER: a bundle without the probe judges nothing."""
    return [(view.where, "nccl", view.library.version, describe(view.library)) for view in node.nccl_views
            if view.state == "read" and view.library is not None and view.library.version]


def _matches(entry: Mapping[str, Any], tool: str, version: str) -> bool:
    if entry.get("tool") != tool:
        return False
    return any(version == v or version.startswith(f"{v}+") or version.startswith(f"{v}-")
               for v in entry.get("versions", ()))


def known_bad(nodes: Sequence[NodeFacts], entries: Sequence[Mapping[str, Any]]) -> list[Observation]:
    out = []
    for node in nodes:
        views = {v.where: v for v in node.nccl_views}
        for where, tool, version, read_from in _versions(node):
            hits = [e for e in entries if _matches(e, tool, version)]
            settings = views[where].settings if where in views else node.nccl
            for entry in hits:
                unless = entry.get("unless") or {}
                mitigated = bool(unless) and all(settings.get(k) == v for k, v in unless.items())
                out.append(Observation(
                    subject=f"{tool} {version} in {where} on {node.name}", fired=True, nodes=(node.name,),
                    severity=Severity.INFO if mitigated else None,
                    values=KnownBadValues(node=node.name, where=where, tool=tool, version=version,
                                          symptom=str(entry.get("symptom", "")), source=str(entry.get("source", "")),
                                          fixed=str(entry.get("fixed") or "no fixed version named"),
                                          workaround=("set: " + ", ".join(f"{k}={v}" for k, v in unless.items())
                                                      + (" (set here)" if mitigated else ""))
                                          if unless else str(entry.get("workaround") or "none named")),
                    evidence=(Evidence(f"{tool} in {where} on {node.name}", version, read_from),
                              Evidence("known-bad entry", str(entry.get("source", "")),
                                       str(entry.get("defined_at", "known-bad list"))))))
    return out


def nccl_known_bad(link: LinkFacts, thresholds: Mapping[str, Any]) -> list[Observation]:
    return known_bad(_pair(link), thresholds.get("known_bad", ()))


def cluster_nccl_known_bad(facts: ClusterFacts, thresholds: Mapping[str, Any]) -> list[Observation]:
    return known_bad(_nodes(facts), thresholds.get("known_bad", ()))


# -- a rank waiting in a collective, told from a dead link -----------------------------------------------------------

class WaitingValues(msgspec.Struct, frozen=True):
    node: str
    readings: str


def _link_healthy(node: NodeFacts) -> bool:
    """Every addressed CX-7 function of the node has carrier and an ACTIVE RDMA port (where those were read)."""
    used = node.used_functions
    return bool(used) and all(f.carrier is not False and f.rdma_state in (None, "ACTIVE") for f in used)


def gpu_waiting(nodes: Sequence[NodeFacts], thresholds: Mapping[str, Any]) -> list[Observation]:
    busy, idle_w = float(thresholds["min_utilization_pct"]), float(thresholds["max_power_w"])
    out = []
    for node in nodes:
        if not node.gpus or not _link_healthy(node):
            continue  # nothing read, or the link rules have a fault of their own to name
        spinning = [g for g in node.gpus if g.utilization_pct is not None and g.power_w is not None
                    and g.utilization_pct >= busy and g.power_w <= idle_w]
        text = "; ".join(f"GPU {i}: {g.utilization_pct:g} % at {g.power_w:g} W" for i, g in enumerate(node.gpus)
                         if g.utilization_pct is not None and g.power_w is not None)
        out.append(Observation(subject=f"node {node.name} GPU", fired=bool(spinning), nodes=(node.name,),
                               values=WaitingValues(node=node.name, readings=text or "no reading"),
                               evidence=(Evidence(f"GPU on {node.name}", text or None,
                                                  "nvidia-smi --query-gpu=utilization.gpu,power.draw"),)))
    return out


def gpu_waiting_in_collective(link: LinkFacts, thresholds: Mapping[str, Any]) -> list[Observation]:
    return gpu_waiting(_pair(link), thresholds)


def cluster_gpu_waiting_in_collective(facts: ClusterFacts, thresholds: Mapping[str, Any]) -> list[Observation]:
    return gpu_waiting(_nodes(facts), thresholds)

"""The CLUSTER_DRIFT_* checks: a cluster against its own baseline (`--baseline NAME`), the nodes and the cabling; each
cable's own fields are judged by the pair's DRIFT_* rules on that cable. Without a baseline they observe nothing, so
they add no finding."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from linkcheck.cluster.drift import CableDrift, NodeDrift
from linkcheck.cluster.facts import ClusterFacts
from linkcheck.diagnose.observation import Observation
from linkcheck.model import Evidence, Severity


class NodeDriftValues(msgspec.Struct, frozen=True):
    """One node against the baseline: its name, what happened to it, who it was and who it is now."""

    baseline: str
    saved: str
    node: str
    what: str
    was: str
    now: str


class NodeSettingsValues(msgspec.Struct, frozen=True):
    """A node's kernel, OS or NCCL settings against the baseline: the changes as text and their number."""

    baseline: str
    saved: str
    node: str
    count: int
    changes: str


class CablingValues(msgspec.Struct, frozen=True):
    """A cable missing or new since the baseline, or the layout changed."""

    baseline: str
    saved: str
    cable: str
    what: str
    was: str
    now: str


_NODE_WHAT = {"replaced": "is another machine than in", "missing": "is not in this run but was in",
              "new": "is in this run but not in"}
_CABLE_WHAT = {"missing": "is not found now but was in", "new": "is found now but was not in",
               "layout": "layout differs from"}


def _node_observation(d: NodeDrift, baseline: str, saved: str) -> Observation:
    return Observation(
        f"node {d.node}", True, nodes=(d.node,) if d.kind != "missing" else (),
        severity=Severity.WARNING if d.kind == "new" else None,
        values=NodeDriftValues(baseline=baseline, saved=saved, node=d.node, what=_NODE_WHAT[d.kind], was=d.was,
                               now=d.now),
        evidence=(Evidence(f"node {d.node}", {"baseline": d.was, "now": d.now}, f"baseline {baseline}"),))


def cluster_drift_node(facts: ClusterFacts, thresholds: Mapping[str, Any]) -> list[Observation]:
    """A node replaced (another machine id, or another hostname and no ConnectX-7 MAC in common), missing or new
    (a warning)."""
    drift = facts.drift
    if drift is None:
        return []
    return [_node_observation(d, drift.baseline, drift.saved) for d in drift.nodes if d.kind in _NODE_WHAT]


def cluster_drift_node_settings(facts: ClusterFacts, thresholds: Mapping[str, Any]) -> list[Observation]:
    """A node whose kernel, OS or NCCL settings differ from the baseline's, each change with both values; a node
    whose settings one run could not read is not judged (a skip)."""
    drift = facts.drift
    if drift is None:
        return []
    out = []
    for d in drift.nodes:
        if d.kind != "settings":
            continue
        if not d.changes:
            out.append(Observation(f"node {d.node}", False, nodes=(d.node,),
                                   skip=f"not read in this run or in baseline {drift.baseline}: {', '.join(d.unread)}"))
            continue
        out.append(Observation(
            f"node {d.node}", True, nodes=(d.node,),
            values=NodeSettingsValues(baseline=drift.baseline, saved=drift.saved, node=d.node, count=len(d.changes),
                                      changes="; ".join(map(str, d.changes))),
            evidence=tuple(Evidence(c.field, {"baseline": c.baseline, "now": c.now}, f"baseline {drift.baseline}")
                           for c in d.changes)))
    return out


def _cable_observation(c: CableDrift, baseline: str, saved: str) -> Observation:
    return Observation(
        c.cable, True, nodes=c.nodes, severity=Severity.WARNING if c.kind == "new" else None,
        values=CablingValues(baseline=baseline, saved=saved, cable=c.cable, what=_CABLE_WHAT[c.kind], was=c.was,
                             now=c.now),
        evidence=(Evidence(c.cable, {"baseline": c.was, "now": c.now}, f"baseline {baseline}"),))


def cluster_drift_cabling(facts: ClusterFacts, thresholds: Mapping[str, Any]) -> list[Observation]:
    """A cable (or a test through the switch) in the baseline and not found now, one found now and not in the
    baseline (a warning), and a layout that changed."""
    drift = facts.drift
    if drift is None:
        return []
    return [_cable_observation(c, drift.baseline, drift.saved) for c in drift.cables]

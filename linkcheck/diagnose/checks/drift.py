"""The named check against the pair's own baseline (`--baseline`): throughput, per figure and graded (what differs
in identity, configuration and GID index are `when:` conditions on the pair and baseline_hca facts).

Without a baseline it observes nothing, so it adds no finding.

The checks of a cluster's drift (CLUSTER_DRIFT_NODE, and the cluster layouts of DRIFT_CONFIG and DRIFT_IDENTITY): a
cluster against its own baseline (`--baseline NAME`), the nodes and the cabling; each cable's own fields are judged by
the pair's DRIFT_* rules on that cable. Without a baseline they observe nothing either.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import msgspec

from linkcheck.cluster.facts import ClusterFacts
from linkcheck.diagnose.observation import Observation
from linkcheck.facts.drift import CableDrift, NodeDrift, nccl_ratio, parameter_differences, rdma_ratios
from linkcheck.facts.model import LinkFacts
from linkcheck.model import Evidence, Severity

if TYPE_CHECKING:
    from linkcheck.facts.drift import Ratio
    from linkcheck.facts.snapshot_model import BaselineFacts


class ThroughputValues(msgspec.Struct, frozen=True):
    """A traffic figure now against the baseline's."""

    baseline: str
    what: str
    now: float
    was: float
    unit: str
    ratio: float
    band: str


def _band(ratio: float, thresholds: Mapping[str, Any]) -> tuple[bool, Severity | None, str]:
    if ratio < float(thresholds["fail_below_ratio"]):
        return True, None, f"below the {thresholds['fail_below_ratio']}x failure line"
    if ratio < float(thresholds["warn_below_ratio"]):
        return True, Severity.WARNING, f"below the {thresholds['warn_below_ratio']}x warning line"
    return False, None, "within the baseline's band"


def _ratio_observation(r: Ratio, name: str, thresholds: Mapping[str, Any]) -> Observation:
    unit = "GB/s" if r.metric == "nccl_busbw" else "Gb/s"
    if r.now is None or r.ratio is None:
        return Observation(r.subject, False, skip=f"no result for it in this bundle (baseline {name}: "
                                                   f"{r.baseline:.2f} {unit})")
    fired, severity, band = _band(r.ratio, thresholds)
    return Observation(
        r.subject, fired, severity=severity,
        values=ThroughputValues(baseline=name, what=r.subject, now=round(r.now, 2), was=round(r.baseline, 2),
                                unit=unit, ratio=round(r.ratio, 3), band=band),
        evidence=(Evidence(r.subject, {"baseline": r.baseline, "now": r.now, "ratio": round(r.ratio, 4)},
                           f"baseline {name}"),))


def _performance_skip(facts: BaselineFacts, link: LinkFacts, kind: str) -> str | None:
    base, now, name = facts.baseline.snapshot.performance, facts.current.performance, facts.baseline.name
    label = "RDMA" if kind == "rdma" else "NCCL"
    if kind not in link.bench_present:
        return f"no {label} traffic test in this bundle to compare with baseline {name}"
    params = (base.rdma_parameters, now.rdma_parameters) if kind == "rdma" else (base.nccl_parameters,
                                                                               now.nccl_parameters)
    differing = parameter_differences(*params)
    if differing:
        return f"the {label} test parameters differ from baseline {name}: {'; '.join(differing)}"
    return None


def drift_throughput(link: LinkFacts, thresholds: Mapping[str, Any]) -> list[Observation]:
    facts = link.baseline
    if facts is None:
        return []
    base, now, name = facts.baseline.snapshot.performance, facts.current.performance, facts.baseline.name
    out: list[Observation] = []
    if not base.rdma_gbps and base.nccl_busbw_gbs is None:
        return [Observation("pair", False, skip=f"baseline {name} holds no traffic test")]
    if base.rdma_gbps:
        skip = _performance_skip(facts, link, "rdma")
        # A run the plan left out (the quick tier's alone rounds) is listed as not run, not compared.
        planned_out = {f"{n.path_key} {n.mode} {n.direction}" for n in link.bench.not_run}
        out += ([Observation("rdma", False, skip=skip)] if skip else
                [_ratio_observation(r, name, thresholds) for r in rdma_ratios(base, now)
                 if r.subject not in planned_out])
    nccl = nccl_ratio(base, now)
    if nccl is not None:
        skip = _performance_skip(facts, link, "nccl")
        out.append(Observation(nccl.subject, False, skip=skip) if skip else _ratio_observation(nccl, name, thresholds))
    return out


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

"""Named checks against the pair's own baseline (`--baseline`): identity, configuration, GID index, throughput.

Without a baseline they observe nothing, so they add no finding; the baseline code loads only when one is given.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import msgspec

from linkcheck.diagnose.observation import Observation
from linkcheck.facts.drift import changes, nccl_ratio, parameter_differences, rdma_ratios
from linkcheck.facts.model import LinkFacts
from linkcheck.model import Evidence, Severity

if TYPE_CHECKING:
    from linkcheck.facts.drift import Change, Ratio
    from linkcheck.facts.snapshot_model import BaselineFacts

PIN = "NCCL_IB_GID_INDEX"


class ChangeValues(msgspec.Struct, frozen=True):
    """What differs from the baseline, each as 'field baseline -> now'."""

    baseline: str
    saved: str
    changes: str
    count: int


class GidMoveValues(msgspec.Struct, frozen=True):
    """One HCA's RoCE v2 IPv4 GID index in the baseline and now, and whether something pins it."""

    baseline: str
    node: str
    hca: str
    was: int
    now: int
    pin: str
    consequence: str


class ThroughputValues(msgspec.Struct, frozen=True):
    """A traffic figure now against the baseline's."""

    baseline: str
    what: str
    now: float
    was: float
    unit: str
    ratio: float
    band: str


def _evidence(items: list[Change], name: str) -> tuple[Evidence, ...]:
    return tuple(Evidence(c.field, {"baseline": c.baseline, "now": c.now}, f"baseline {name}") for c in items)


def _changed(link: LinkFacts, kind: str) -> list[Observation]:
    facts = link.baseline
    if facts is None:
        return []  # no --baseline: nothing to compare with
    base, now = facts.baseline.snapshot, facts.current
    old, new = (base.identity, now.identity) if kind == "identity" else (base.configuration, now.configuration)
    changed, unread = changes(old, new, base, now)
    name = facts.baseline.name
    if not changed and unread:
        return [Observation("pair", False, skip=f"not read in this run or in baseline {name}: {', '.join(unread)}")]
    return [Observation("pair", bool(changed), evidence=_evidence(changed, name),
                        values=ChangeValues(baseline=name, saved=facts.baseline.created, count=len(changed),
                                            changes="; ".join(map(str, changed))))]


def drift_identity(link: LinkFacts, thresholds: Mapping[str, Any]) -> list[Observation]:
    return _changed(link, "identity")


def drift_config(link: LinkFacts, thresholds: Mapping[str, Any]) -> list[Observation]:
    return _changed(link, "configuration")


def drift_gid_index(link: LinkFacts, thresholds: Mapping[str, Any]) -> list[Observation]:
    facts = link.baseline
    if facts is None:
        return []
    name, out = facts.baseline.name, []
    for hca, was in sorted(facts.baseline.snapshot.gid_index.items()):
        node = link.node(hca.split(":", 1)[0])
        now = facts.current.gid_index.get(hca)
        if was is None or now is None:
            why = "no RoCE v2 IPv4 GID index was resolved for it " + ("now" if was is not None else f"in {name}")
            out.append(Observation(hca, False, nodes=(node.name,), skip=why))
            continue
        pin = node.nccl.get(PIN)
        source = node.nccl_sources.get(PIN, "?")
        consequence = (f"{PIN}={pin} is pinned (from {source}), so NCCL uses index {pin} on this HCA"
                       if pin is not None else f"nothing pins {PIN}, so NCCL resolves the new index itself")
        out.append(Observation(
            hca, was != now, nodes=(node.name,), severity=None if pin is not None else Severity.INFO,
            values=GidMoveValues(baseline=name, node=node.name, hca=hca.split(":", 1)[1], was=was, now=now,
                                 pin="unset" if pin is None else pin, consequence=consequence),
            evidence=(Evidence(f"RoCE v2 IPv4 GID index of {hca}", {"baseline": was, "now": now}, f"baseline {name}"),
                      Evidence(PIN, pin, source if pin is not None else "not set"))))
    return out


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

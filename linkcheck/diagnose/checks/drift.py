"""The named check against the pair's own baseline (`--baseline`): throughput, per figure and graded (what differs
in identity, configuration and GID index are `when:` conditions on the pair and baseline_hca facts).

Without a baseline it observes nothing, so it adds no finding.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import msgspec

from linkcheck.diagnose.observation import Observation
from linkcheck.facts.drift import nccl_ratio, parameter_differences, rdma_ratios
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

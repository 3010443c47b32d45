"""Compare a bundle's snapshot with a baseline: is it the same pair, what changed, how fast it is relative to it;
and attach a baseline to a diagnosis (another pair's is refused).

The same model for a cluster: each cable carries its part of the baseline as a pair's facts carry theirs (judged by
the pair's DRIFT_* rules on that cable), and what differs beyond the cables' own fields is kept beside them: the
nodes (replaced, missing, new, their node-wide settings) and the cabling (a cable missing or new, the layout), judged
by CLUSTER_DRIFT_NODE (playbooks/cluster-drift.yaml) and the cluster layouts of DRIFT_CONFIG and DRIFT_IDENTITY
(playbooks/drift.yaml). Computed by linkcheck.baseline.drift and attached to the
cluster's facts before its one diagnosis, as attach_baseline does for a pair's.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import msgspec
from msgspec.structs import replace

from linkcheck.errors import BaselineError
from linkcheck.facts.model import LinkFacts
from linkcheck.facts.snapshot import NCCL_LIBRARY, snapshot_of
from linkcheck.facts.snapshot_model import Baseline, BaselineFacts, Fields, PairKey, Performance, Snapshot, usable_rate

if TYPE_CHECKING:
    from linkcheck.bundle.format import Bundle

ABSENT = "absent"
PAIR_DRIFT = "DRIFT_"  # the pair's drift rules (playbooks/drift.yaml), which a cluster runs on each of its cables


class Change(msgspec.Struct, frozen=True):
    """One field that differs: its name, the baseline's value and the value now."""

    field: str
    baseline: str
    now: str

    def __str__(self) -> str:
        return f"{self.field} {self.baseline} -> {self.now}"


def _node_differences(name: str, base: PairKey, now: PairKey, shown: str | None = None) -> list[str]:
    """Why node `name` of `now` is not the baseline's node: the machine id decides where both have one,
    otherwise the hostname or any shared ConnectX-7 MAC (a renamed node or a swapped NIC is still the pair).
    `shown`: the node's name in the text (default `name`, the side)."""
    ids = (getattr(base, f"{name}_machine_id"), getattr(now, f"{name}_machine_id"))
    label = shown or name
    if None not in ids:
        return [] if ids[0] == ids[1] else [f"{label} machine id {ids[0]} -> {ids[1]}"]
    hosts = (getattr(base, f"{name}_hostname"), getattr(now, f"{name}_hostname"))
    macs: tuple[set[str], set[str]] = (set(getattr(base, f"{name}_macs")), set(getattr(now, f"{name}_macs")))
    if (hosts[0] is not None and hosts[0] == hosts[1]) or macs[0] & macs[1]:
        return []
    return [f"{label} hostname {hosts[0] or '?'} -> {hosts[1] or '?'} and no ConnectX-7 MAC in common "
            f"({len(macs[0])} in the baseline, {len(macs[1])} now)"]


def node_differences(base: PairKey, now: PairKey, shown: str) -> list[str]:
    """Why node a of `now` is not node a of `base` (one node of a cluster, each key holding it as node a), the
    node named `shown`; empty when it is the same node."""
    return _node_differences("a", base, now, shown)


def pair_differences(base: PairKey, now: PairKey) -> list[str]:
    """Empty when `now` is the baseline's pair; else the identity fields that say it is another one."""
    out = _node_differences("a", base, now) + _node_differences("b", base, now)
    if out and not _node_differences("a", base, swapped(now)) + _node_differences("b", base, swapped(now)):
        out.append("(nodes a and b are swapped relative to the baseline: give --node a/b as when it was saved)")
    return out


def swapped(key: PairKey) -> PairKey:
    """The same pair with its nodes a and b the other way round."""
    return PairKey(a_hostname=key.b_hostname, a_macs=key.b_macs, b_hostname=key.a_hostname, b_macs=key.a_macs,
                   cable_sn=key.cable_sn, a_machine_id=key.b_machine_id, b_machine_id=key.a_machine_id)


def _unknown(key: str, *snapshots: Snapshot) -> bool:
    return any(key.startswith(prefix) for snap in snapshots for prefix in snap.unknown)


def changes(base: Fields, now: Fields, recorded: Snapshot, current: Snapshot) -> tuple[list[Change], list[str]]:
    """Fields that differ (a field present on one side only is 'absent' on the other), and fields not judged
    because one run could not read them."""
    changed: list[Change] = []
    unread: list[str] = []
    for key in sorted(set(base) | set(now)):
        old, new = base.get(key, ABSENT), now.get(key, ABSENT)
        if f".{NCCL_LIBRARY}." in key and ABSENT in (old, new):
            continue  # a container read in one run only (asked for once, or a baseline older than the probe)
        if old is None or new is None or _unknown(key, recorded, current):
            if old != new:
                unread.append(key)
            continue
        if old != new:
            changed.append(Change(key, old, new))
    return changed, unread


def parameter_differences(base: dict[str, str], now: dict[str, str]) -> list[str]:
    return [f"{k} {base.get(k, ABSENT)} in the baseline, {now.get(k, ABSENT)} now"
            for k in sorted(set(base) | set(now)) if base.get(k) != now.get(k)]


class Ratio(msgspec.Struct, frozen=True):
    """One traffic figure now against the baseline's."""

    subject: str
    metric: str  # rdma | rdma_total | nccl_busbw
    baseline: float
    now: float | None

    @property
    def ratio(self) -> float | None:
        """now / baseline; None when either is not a usable rate (the quotient would be infinite or NaN)."""
        if self.now is None or not usable_rate(self.baseline) or not math.isfinite(self.now) or self.now < 0:
            return None
        ratio = self.now / self.baseline
        return ratio if math.isfinite(ratio) else None


def rdma_ratios(base: Performance, now: Performance) -> list[Ratio]:
    out = [Ratio(key.replace("|", " "), "rdma", gbps, now.rdma_gbps.get(key))
           for key, gbps in sorted(base.rdma_gbps.items())]
    out += [Ratio(f"concurrent total {d}", "rdma_total", gbps, now.concurrent_total_gbps.get(d))
            for d, gbps in sorted(base.concurrent_total_gbps.items())]
    return out


def nccl_ratio(base: Performance, now: Performance) -> Ratio | None:
    if base.nccl_busbw_gbs is None:
        return None
    return Ratio("nccl all_gather busbw", "nccl_busbw", base.nccl_busbw_gbs, now.nccl_busbw_gbs)


def comparable_ratios(baseline: Baseline, current: Snapshot) -> list[Ratio]:
    """The ratios whose test parameters match the baseline's (for reports such as the Prometheus file)."""
    base, now = baseline.snapshot.performance, current.performance
    out: list[Ratio] = []
    if now.rdma_gbps and not parameter_differences(base.rdma_parameters, now.rdma_parameters):
        out += [r for r in rdma_ratios(base, now) if r.now is not None]
    nccl = nccl_ratio(base, now)
    if nccl is not None and nccl.now is not None and not parameter_differences(base.nccl_parameters,
                                                                               now.nccl_parameters):
        out.append(nccl)
    return out


def attach_baseline(bundle: Bundle, link: LinkFacts, baseline: Baseline) -> LinkFacts:
    """The link facts with the baseline to compare with; a baseline of another pair compares nothing."""
    current = snapshot_of(bundle, link, verdict="")
    differences = pair_differences(baseline.snapshot.pair, current.pair)
    if differences:
        raise BaselineError(baseline.path or baseline.name,
                            f"baseline {baseline.name!r} is of another pair: {'; '.join(differences)}",
                            fix="compare with a baseline of this pair (linkcheck baseline list), or save one")
    return replace(link, baseline=BaselineFacts(baseline=baseline, current=current))


class NodeDrift(msgspec.Struct, frozen=True):
    """One node that is not as the baseline recorded it.

    `kind`: replaced (another machine under the node's name), missing (in the baseline, not named now), new (named
    now, not in the baseline) or settings (its kernel, OS or NCCL settings changed); `was` and `now` say who the
    node is (hostname, MACs) or what changed."""

    node: str
    kind: str
    was: str
    now: str
    changes: tuple[Change, ...] = ()
    unread: tuple[str, ...] = ()  # fields one of the runs could not read (settings only)


class CableDrift(msgspec.Struct, frozen=True):
    """A cable (or a test through the switch) missing since the baseline, or new; or the layout changed
    (`kind` layout, the cable `cluster`)."""

    cable: str
    kind: str  # missing | new | layout
    was: str
    now: str
    nodes: tuple[str, ...] = ()


class CableBaseline(msgspec.Struct, frozen=True):
    """One cable of the run as a pair: its test's label and its pair view restricted to its own cages, with its
    part of the baseline attached (`link.baseline`), which the pair's DRIFT_* rules judge on that cable."""

    label: str
    link: LinkFacts


class ClusterDrift(msgspec.Struct, frozen=True):
    """The cluster against its baseline: the baseline's name, when it was saved, the nodes and cables that
    differ, and each cable of both runs with its part of the baseline attached."""

    baseline: str
    saved: str
    nodes: tuple[NodeDrift, ...] = ()
    cables: tuple[CableDrift, ...] = ()
    compared: tuple[CableBaseline, ...] = ()

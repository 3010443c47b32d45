"""A baseline as data: what one passing run of a pair looked like, in the kinds that are compared differently."""

from __future__ import annotations

import math

import msgspec

SCHEMA = "linkcheck-baseline"
SCHEMA_VERSION = 1
# The lowest rate a baseline may hold: perftest's smallest non-zero figure is 0.01 MiB/s (~8e-5 Gb/s); below
# this, now / baseline could overflow to infinity.
MIN_RATE_GBPS = 1e-6


def usable_rate(value: float) -> bool:
    """A rate a ratio can be taken against: finite and at least MIN_RATE_GBPS (0, a negative rate, NaN or an
    infinity would make now / baseline infinite or NaN)."""
    return math.isfinite(value) and value >= MIN_RATE_GBPS

# A field whose value could not be read (a node not inspected, sudo refused): never compared.


Fields = dict[str, "str | None"]


class PairKey(msgspec.Struct, frozen=True):
    """Who the pair is: per node its machine id (when the bundle has one), hostname and ConnectX-7 MACs; the cable."""

    a_hostname: str | None
    a_macs: tuple[str, ...]
    b_hostname: str | None
    b_macs: tuple[str, ...]
    cable_sn: str | None
    a_machine_id: str | None = None
    b_machine_id: str | None = None


class Performance(msgspec.Struct, frozen=True):
    """Traffic results with the parameters they were measured with (other parameters make them incomparable)."""

    rdma_gbps: dict[str, float] = msgspec.field(default_factory=dict)  # "path|mode|direction" -> lowest Gb/s
    concurrent_total_gbps: dict[str, float] = msgspec.field(default_factory=dict)  # direction -> Gb/s
    nccl_busbw_gbs: float | None = None
    rdma_parameters: dict[str, str] = msgspec.field(default_factory=dict)  # size_bytes, duration_s, qps
    nccl_parameters: dict[str, str] = msgspec.field(default_factory=dict)  # min_bytes, max_bytes, step_factor, gpus

    def usable(self) -> Performance:
        """Only the rates a ratio can be taken against (what a saved baseline keeps; see `usable_rate`)."""
        busbw = self.nccl_busbw_gbs if self.nccl_busbw_gbs is not None and usable_rate(self.nccl_busbw_gbs) else None
        rdma = {k: v for k, v in self.rdma_gbps.items() if usable_rate(v)}
        return Performance(rdma_gbps=rdma,
                           concurrent_total_gbps={k: v for k, v in self.concurrent_total_gbps.items()
                                                  if usable_rate(v)},
                           nccl_busbw_gbs=busbw, rdma_parameters=self.rdma_parameters if rdma else {},
                           nccl_parameters=self.nccl_parameters if busbw is not None else {})


class Snapshot(msgspec.Struct, frozen=True):
    """One run's state: identity and configuration compared exactly, GID indices recorded, performance relative.

    `unknown` lists key prefixes (a node, its NCCL settings) that could not be read in this run."""

    pair: PairKey
    identity: Fields
    configuration: Fields
    gid_index: dict[str, int | None]  # "a:rocep1s0f1" -> resolved RoCE v2 IPv4 GID index
    performance: Performance
    verdict: str
    unknown: tuple[str, ...] = ()


class SavedBaseline(msgspec.Struct, frozen=True):
    """What every saved baseline, a pair's or a cluster's, says of itself: its name, when and by which linkcheck it
    was saved, from which bundle, and whether a run that did not pass was recorded with --force."""

    name: str
    created: str
    tool_version: str
    source_bundle: str
    bundle_created: str
    forced: bool


class Baseline(SavedBaseline, frozen=True):
    """A pair's saved snapshot, and where it is stored."""

    snapshot: Snapshot
    path: str = ""


class BaselineFacts(msgspec.Struct, frozen=True):
    """The baseline a diagnosis compares with, and the same fields read from the bundle being diagnosed."""

    baseline: Baseline
    current: Snapshot

"""Whether an acceptance run is the standard one, and if not, what makes it weaker.

The standard is the built-in profile of the run's layout (`dgx-spark-pair`, `dgx-spark-ring3`, `dgx-spark-switch`):
its test (`-D`, repetitions, message size, queue pairs,
the NCCL sweep) and its thresholds. A run is NON-STANDARD when a reader of its record could take it for more than
it was: shorter ib_write_bw rounds or fewer repetitions (`accept --duration`, `--repetitions`, or a profile's
`test`), another message size or number of queue pairs (the published figures are 1 MiB and 1 QP; more QPs read
higher), a smaller NCCL sweep, a check of the standard left out, a band judged by a looser threshold (a lower
floor, a higher ceiling, a part number the standard does not approve) or a rule the standard requires dropped.
Anything stronger (longer rounds, more repetitions, tighter thresholds, more checks) stays standard.

A layout no built-in profile accepts (a ring of four or more: NVIDIA documents a ring of exactly three) is compared
with the ring of three's and is NON-STANDARD for its layout alone.

The verdict is not changed: the record says NON-STANDARD with each difference, and every report shows it.
"""

from __future__ import annotations

import functools
from typing import Any

from linkcheck.accept.profile import DEFAULT_PROFILE, Profile, ProfileCheck, Threshold, layout_profile, resolve_profile
from linkcheck.values import byte_size, text

STANDARD = DEFAULT_PROFILE
RING_STANDARD = "dgx-spark-ring3"


@functools.cache
def standard_profile(layout: str = "pair") -> Profile:
    """The built-in profile a run on `layout` is compared with (read once per process per layout)."""
    return resolve_profile(layout_profile(layout) or (RING_STANDARD if layout.startswith("ring") else STANDARD))


def _value(t: Threshold) -> str:
    if isinstance(t.value, tuple):
        return ", ".join(t.value)
    if t.value is True:
        return "the same"
    return f"{t.operator} {text(t.value)} {t.unit}"


def _test(profile: Profile, repetitions: int, standard: Profile) -> list[str]:
    run, std = profile.test, standard.test
    out = []
    if run.duration_s < std.duration_s:
        out.append(f"ib_write_bw -D {run.duration_s} s (standard {std.duration_s} s)")
    if repetitions < std.repetitions:
        out.append(f"{repetitions} repetition{'s' if repetitions != 1 else ''} (standard {std.repetitions})")
    if run.size_bytes != std.size_bytes:
        out.append(f"ib_write_bw -s {byte_size(run.size_bytes)} (standard {byte_size(std.size_bytes)})")
    if run.qps != std.qps:
        out.append(f"ib_write_bw -q {run.qps} (standard {std.qps})")
    if run.nccl_max_bytes < std.nccl_max_bytes:
        out.append(f"all_gather_perf up to {byte_size(run.nccl_max_bytes)} (standard "
                   f"{byte_size(std.nccl_max_bytes)})")
    return out


def _looser(kind: str, mine: Threshold, std: Threshold) -> bool:
    """`mine` lets through a measurement that `std` would not."""
    if kind == "min":
        return bool(mine.value < std.value)
    if kind == "max":
        return bool(mine.value > std.value)
    if kind == "in":
        return not set(mine.value) <= set(std.value)
    return False  # `same` has one band, the same everywhere


def _check(mine: ProfileCheck | None, std: ProfileCheck) -> list[str]:
    if mine is None:
        return [f"{std.id} not judged (standard {'; '.join(_value(t) for t in std.thresholds)})"]
    out = []
    for band in std.thresholds:
        own = next((t for t in mine.thresholds if t.band == band.band), None)
        if own is None:
            out.append(f"{std.id} {band.band} not judged (standard {_value(band)})")
        elif _looser(std.spec.kind, own, band):
            out.append(f"{std.id} {band.band} {_value(own)} (standard {_value(band)})")
    return out


def differences(profile: Profile, repetitions: int, standard: Profile | None = None) -> tuple[str, ...]:
    """What makes this run weaker than the standard acceptance, one line each; () when it is not."""
    std = standard or standard_profile(profile.layout)
    out = [] if std.layout == profile.layout else [f"layout {profile.layout}: no built-in profile accepts it "
                                                   f"(compared with {std.name}, layout {std.layout})"]
    out += _test(profile, repetitions, std)
    for check in std.checks:
        out += _check(profile.check(check.id), check)
    out += [f"{rule} not required (standard requires it)" for rule in std.require if rule not in profile.require]
    return tuple(out)


def standard_record(profile: Profile, repetitions: int) -> dict[str, Any]:
    """acceptance.json's `standard`: the profile the run was compared with, whether it is weaker
    (`non_standard`) and each difference."""
    std = standard_profile(profile.layout)
    found = differences(profile, repetitions, std)
    return {"profile": std.name, "sha256": std.sha256, "non_standard": bool(found), "differences": list(found)}

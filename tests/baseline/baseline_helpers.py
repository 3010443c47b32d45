"""Bundles derived from a fixture for the baseline tests: traffic rows scaled, cable serials replaced."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from msgspec.structs import replace

from linkcheck.bundle.format import load_bundle, write_bundle
from linkcheck.model import Capture

ROW = re.compile(r"^(\s*\d+\s+\d+\s+)([\d.]+)(\s+)([\d.]+)(.*)$", re.M)  # bytes iters peak avg msgrate


def _scaled_rows(text: str, factor: float) -> str:
    return ROW.sub(lambda m: f"{m.group(1)}{float(m.group(2)) * factor:.2f}{m.group(3)}"
                   f"{float(m.group(4)) * factor:.2f}{m.group(5)}", text)


def is_client(device: str, mode: str, direction: str) -> Callable[[Capture], bool]:
    """The ib_write_bw client capture of one run: its local RDMA device, mode and direction."""
    return lambda c: (c.meta.get("kind") == "rdma" and c.meta.get("role") == "client"
                      and c.meta.get("local_rdma_dev") == device and c.meta.get("mode") == mode
                      and c.meta.get("direction") == direction)


def derived_bundle(source: Path, target: Path, *, factor: float = 1.0,
                   which: Callable[[Capture], bool] = lambda c: False, cable_sn: str | None = None) -> Path:
    """A copy of `source` with the chosen perftest clients' rows times `factor` and, when given, every cable
    serial replaced; the manifest's sha256 table is rewritten by write_bundle, so the bundle loads clean."""
    bundle = load_bundle(source)
    captures = []
    for cap in bundle.captures:
        if which(cap):
            cap = replace(cap, stdout=_scaled_rows(cap.stdout, factor))
        if cable_sn is not None and cap.spec == "ethtool_m":
            cap = replace(cap, stdout=re.sub(r"(Vendor SN\s*:\s*)\S+", rf"\g<1>{cable_sn}", cap.stdout))
        captures.append(cap)
    write_bundle(replace(bundle, captures=captures, path=None), target)
    return target

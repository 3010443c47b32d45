"""The named check on RoCE GID indices: the index NCCL uses (a pin, or NCCL < 2.21's default 0) that is not an HCA's
RoCE v2 IPv4 GID (an empty pin and indices that differ across HCAs are `when:` conditions on the node and pair
facts)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from linkcheck.diagnose.observation import Observation, ShellText, sh
from linkcheck.facts.model import Function, LinkFacts, NodeFacts
from linkcheck.facts.nccl_hca import GID_PIN, GidInEffect, gid_index_in_effect, nccl_functions, unset_command
from linkcheck.model import Evidence, Severity


class StalePinValues(msgspec.Struct, frozen=True):
    """The GID index NCCL uses against the one resolved for an HCA."""

    node: str
    hca: str | None
    netdev: str
    ip: str | None
    pinned: str
    resolved: int | str
    source: str
    remove_pin: ShellText


def _remedy(node: NodeFacts, used: GidInEffect, resolved: int | None) -> ShellText:
    """Removing a pin hands the choice to NCCL from 2.21 on; before 2.21 it leaves index 0, so there the remedy is a
    newer NCCL or the right index."""
    right = "the RoCE v2 IPv4 index" if resolved is None else resolved
    if used.auto_when_unset:
        return ShellText(unset_command(GID_PIN, used.source, f"remove {GID_PIN}"))
    newer = f"NCCL {node.identity.nccl_version} predates GID auto-selection (2.21)"
    if not used.pinned:
        return ShellText(f"{newer}: use NCCL 2.21 or later, or set {GID_PIN}={right}")
    return ShellText(f"{newer}, so removing the pin leaves index 0: set {GID_PIN}={right} where it is set "
                     f"({sh(used.source)}), or use NCCL 2.21 or later and remove it")


def _stale(node: NodeFacts, fn: Function, used: GidInEffect) -> Observation:
    resolved = fn.gid_index
    pin = node.nccl.get(GID_PIN)
    shown = str(used.index) if pin is None or not used.pinned else pin
    values = StalePinValues(node=node.name, hca=fn.rdma_dev, netdev=fn.netdev, ip=fn.ip, pinned=shown,
                            resolved="none" if resolved is None else resolved, source=used.source,
                            remove_pin=_remedy(node, used, resolved))
    evidence = (
        Evidence(GID_PIN, pin, node.nccl_sources.get(GID_PIN, "not set")),
        Evidence("GID index NCCL uses", used.index, used.source),
        Evidence(f"RoCE v2 GID index of {fn.ip} on {fn.rdma_dev}", resolved, "sysfs gid_attrs"),
    ) + ((Evidence(f"empty GID slots on {fn.rdma_dev}", list(fn.gid_holes), "sysfs gids"),) if fn.gid_holes else ())
    # A default that no one set is a warning: no source settles whether the link-local entry at index 0 connects
    # across this cable (RoCE v1 stays in one L2 segment); a pin NCCL returns unchecked is an error.
    return Observation(subject=f"{node.name}:{fn.rdma_dev}", fired=used.index != resolved, nodes=(node.name,),
                       values=values, evidence=evidence, severity=None if used.pinned else Severity.WARNING)


def gid_index_stale(link: LinkFacts, thresholds: Mapping[str, Any]) -> list[Observation]:
    out: list[Observation] = []
    for node in (link.a, link.b):
        used = gid_index_in_effect(node)
        if used.index is None:
            out.append(Observation(subject=f"node {node.name}", fired=False, nodes=(node.name,),
                                   evidence=(Evidence(GID_PIN, node.nccl.get(GID_PIN), used.source),
                                             Evidence("NCCL version", node.identity.nccl_version, "libnccl.so")),))
            continue
        out.extend(_stale(node, fn, used) for fn in nccl_functions(node))
    return out

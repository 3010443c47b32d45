"""The named check on RoCE GID indices: a pin that does not point at an HCA's RoCE v2 IPv4 GID (an empty pin and
indices that differ across HCAs are `when:` conditions on the node and pair facts)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from linkcheck.diagnose.observation import Observation, ShellText
from linkcheck.facts.model import Function, LinkFacts, NodeFacts
from linkcheck.facts.nccl_hca import nccl_functions, unset_command
from linkcheck.integers import ascii_int
from linkcheck.model import Evidence


class StalePinValues(msgspec.Struct, frozen=True):
    """A pinned GID index against the one resolved for an HCA."""

    node: str
    hca: str | None
    netdev: str
    ip: str | None
    pinned: str
    resolved: int | str
    source: str
    remove_pin: ShellText


PIN = "NCCL_IB_GID_INDEX"


def _remove_pin(source: str, default: str) -> ShellText:
    """How to remove the pin where it is set; a source of another name is quoted, being the node's text."""
    return ShellText(unset_command(PIN, source, default))


def _stale(node: NodeFacts, fn: Function, pin: str, source: str) -> Observation:
    pinned = ascii_int(pin.strip(), -(1 << 31), (1 << 31) - 1)
    resolved = fn.gid_index
    values = StalePinValues(node=node.name, hca=fn.rdma_dev, netdev=fn.netdev, ip=fn.ip, pinned=pin,
                            resolved="none" if resolved is None else resolved, source=source,
                            remove_pin=_remove_pin(source, f"remove {PIN}"))
    evidence = (
        Evidence(PIN, pin, source),
        Evidence(f"RoCE v2 GID index of {fn.ip} on {fn.rdma_dev}", resolved, "sysfs gid_attrs"),
    ) + ((Evidence(f"empty GID slots on {fn.rdma_dev}", list(fn.gid_holes), "sysfs gids"),) if fn.gid_holes else ())
    return Observation(subject=f"{node.name}:{fn.rdma_dev}", fired=pinned is None or pinned != resolved,
                       nodes=(node.name,), values=values, evidence=evidence)


def gid_index_stale(link: LinkFacts, thresholds: Mapping[str, Any]) -> list[Observation]:
    out: list[Observation] = []
    for node in (link.a, link.b):
        pin = node.nccl.get(PIN)
        if pin is None or not pin.strip():
            out.append(Observation(subject=f"node {node.name}", fired=False, nodes=(node.name,),
                                   evidence=(Evidence(PIN, pin, node.nccl_sources.get(PIN, "not set")),)))
            continue
        out.extend(_stale(node, fn, pin, node.nccl_sources.get(PIN, "?")) for fn in nccl_functions(node))
    return out

"""Named checks on RoCE GID indices: stale pins, empty pins, and indices that differ across HCAs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from linkcheck.diagnose.nccl_hca import select_hcas
from linkcheck.diagnose.observation import Observation, ShellText, sh
from linkcheck.facts.model import Function, LinkFacts, NodeFacts
from linkcheck.model import Evidence, Severity


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


class EmptyPinValues(msgspec.Struct, frozen=True):
    """An empty NCCL_IB_GID_INDEX and where it is set."""

    node: str
    source: str
    remove_pin: ShellText


class IndexSpreadValues(msgspec.Struct, frozen=True):
    """The resolved indices across HCAs and nodes."""

    indices: str
    distinct: str


PIN = "NCCL_IB_GID_INDEX"
_REMOVE = {
    "/etc/nccl.conf": f"sudo sed -i '/^{PIN}=/d' /etc/nccl.conf",
    "~/.nccl.conf": f"sed -i '/^{PIN}=/d' ~/.nccl.conf",
    "environment": f"unset {PIN}  # and remove it from the job's environment (shell profile, compose file, mpirun -x)",
}


def _remove_pin(source: str, default: str) -> ShellText:
    """How to remove the pin where it is set; a source of another name is quoted, being the node's text."""
    return ShellText(_REMOVE[source] if source in _REMOVE else f"{default} from {sh(source)}")


def nccl_functions(node: NodeFacts) -> list[Function]:
    """The addressed twins whose RDMA device NCCL_IB_HCA lets NCCL use."""
    used = [f for f in node.used_functions if f.rdma_dev]
    chosen = set(select_hcas(node.nccl.get("NCCL_IB_HCA"), [f.rdma_dev or "" for f in used]))
    return [f for f in used if f.rdma_dev in chosen]


def _stale(node: NodeFacts, fn: Function, pin: str, source: str) -> Observation:
    pinned = int(pin) if pin.strip().lstrip("-").isdigit() else None
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


def gid_index_empty_pin(link: LinkFacts, thresholds: Mapping[str, Any]) -> list[Observation]:
    out = []
    for node in (link.a, link.b):
        pin = node.nccl.get(PIN)
        source = node.nccl_sources.get(PIN, "not set")
        out.append(Observation(
            subject=f"node {node.name}", fired=pin is not None and not pin.strip(), nodes=(node.name,),
            values=EmptyPinValues(node=node.name, source=source, remove_pin=_remove_pin(source, f"remove {PIN}")),
            evidence=(Evidence(PIN, pin, source),)))
    return out


def gid_index_differs(link: LinkFacts, thresholds: Mapping[str, Any]) -> list[Observation]:
    indices = {f"{fn.node}:{fn.rdma_dev}": fn.gid_index
               for node in (link.a, link.b) for fn in nccl_functions(node) if fn.gid_index is not None}
    distinct = sorted(set(indices.values()))
    listing = ", ".join(f"{k}={v}" for k, v in sorted(indices.items()))
    # Unpinned, NCCL (>= 2.21) resolves the index per HCA, so differing indices are worth a note only.
    pinned = any(node.nccl.get(PIN, "").strip() for node in (link.a, link.b))
    return [Observation(subject="pair", fired=len(distinct) > 1, severity=None if pinned else Severity.INFO,
                        values=IndexSpreadValues(indices=listing, distinct=", ".join(map(str, distinct))),
                        evidence=tuple(Evidence(f"RoCE v2 IPv4 GID index of {k}", v, "sysfs gid_attrs")
                                       for k, v in sorted(indices.items())))]

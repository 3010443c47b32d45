"""Read a pair's identity, configuration, GID indices and traffic results from a diagnosed bundle."""

from __future__ import annotations

import hashlib
import re
import shlex
from collections.abc import Sequence
from typing import TYPE_CHECKING

from linkcheck.facts.model import Function, LinkFacts, NodeFacts
from linkcheck.facts.snapshot_model import Fields, PairKey, Performance, Snapshot

if TYPE_CHECKING:
    from linkcheck.bundle.format import Bundle
    from linkcheck.model import Capture


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _twins(node: NodeFacts) -> list[Function]:
    """The twins that matter for the pair: those of the cabled cage and those carrying an address."""
    return [f for f in node.functions if f.cage in node.cabled_cages or f.ipv4]


def _cable(node: NodeFacts) -> Function | None:
    return next((f for f in _twins(node) if f.cable is not None), None)


def pair_key(link: LinkFacts) -> PairKey:
    cable = _cable(link.a) or _cable(link.b)
    return PairKey(
        a_hostname=link.a.hostname, a_macs=tuple(sorted(f.mac for f in link.a.functions if f.mac)),
        b_hostname=link.b.hostname, b_macs=tuple(sorted(f.mac for f in link.b.functions if f.mac)),
        cable_sn=cable.cable.vendor_sn if cable and cable.cable else None)


def pair_id(key: PairKey) -> str:
    """A file-system name for the pair: both hostnames and a digest of the nodes' identity (not the cable,
    which is identity drift of the same pair)."""
    nodes = [key.a_machine_id or key.a_hostname or "?", key.b_machine_id or key.b_hostname or "?"]
    digest = hashlib.sha256("\n".join(nodes).encode()).hexdigest()[:8]
    slug = "+".join(re.sub(r"[^A-Za-z0-9_.-]", "_", h or "unknown")[:40] for h in (key.a_hostname, key.b_hostname))
    return f"{slug}-{digest}"


def _peer_macs(link: LinkFacts) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for path in link.paths:
        out[path.a.label] = path.b.mac
        out[path.b.label] = path.a.mac
    return out


def _identity(link: LinkFacts) -> Fields:
    peers = _peer_macs(link)
    fields: Fields = {}
    for node in (link.a, link.b):
        fields[f"{node.name}.hostname"] = node.hostname
        for fn in _twins(node):
            fields[f"{fn.label}.pci"] = fn.bdf
            fields[f"{fn.label}.cage"] = fn.cage
            fields[f"{fn.label}.mac"] = fn.mac
            if fn.label in peers:
                fields[f"{fn.label}.peer_mac"] = peers[fn.label]
        cable = _cable(node)
        info = cable.cable if cable else None
        if "cable" not in node.unavailable:
            fields[f"cable.{node.name}.part_number"] = info.vendor_pn if info else None
            fields[f"cable.{node.name}.serial"] = info.vendor_sn if info else None
    if "addresses" not in link.a.unavailable and "addresses" not in link.b.unavailable:
        fields["pairing"] = "; ".join(sorted(f"a:{p.a.netdev}<->b:{p.b.netdev}" for p in link.paths)) or "no path"
    return fields


def _pcie(fn: Function) -> str | None:
    if fn.pcie_speed_gts is None or fn.pcie_width is None:
        return None
    return f"{fn.pcie_speed_gts:g} GT/s x{fn.pcie_width}"


NCCL_LIBRARY = "nccl_library"


def _configuration(link: LinkFacts) -> Fields:
    fields: Fields = {}
    for node in (link.a, link.b):
        fields[f"{node.name}.kernel"] = node.kernel_release
        fields[f"{node.name}.os"] = node.os_name
        for fn in _twins(node):
            fields.update({f"{fn.label}.ipv4": ",".join(fn.ipv4) or "none", f"{fn.label}.mtu": _text(fn.mtu),
                           f"{fn.label}.speed_mbps": _text(fn.speed_mbps), f"{fn.label}.pcie": _pcie(fn),
                           f"{fn.label}.firmware": fn.firmware, f"{fn.label}.driver": fn.driver})
        for key, value in sorted(node.nccl.items()):
            fields[f"{node.name}.nccl.{key}"] = value
        # The libnccl a job loads on the node and in each container read (--container): a new build is a change.
        for view in node.nccl_views:
            if view.state == "read" and view.library is not None:
                lib = view.library
                fields[f"{node.name}.{NCCL_LIBRARY}.{view.where}"] = (
                    f"{lib.real_path} ({lib.version or 'version unknown'}, build {lib.build_id or 'unknown'})")
    return fields


def _unknown(link: LinkFacts) -> tuple[str, ...]:
    """Key prefixes this run could not read, so that their absence is not taken for a change."""
    out: list[str] = []
    for node in (link.a, link.b):
        if "netdevs" in node.unavailable:
            out += [f"{node.name}:", f"cable.{node.name}."]
        if "nccl_settings" in node.unavailable:
            out.append(f"{node.name}.nccl.")
    return tuple(out)


_FLAGS = {"-s": "size_bytes", "--size": "size_bytes", "-D": "duration_s", "--duration": "duration_s",
          "-q": "qps", "--qp": "qps"}
_NCCL_FLAGS = {"-b": "min_bytes", "--minbytes": "min_bytes", "-e": "max_bytes", "--maxbytes": "max_bytes",
               "-f": "step_factor", "--stepfactor": "step_factor", "-g": "gpus", "--ngpus": "gpus"}


def _flags(command: str, names: dict[str, str], defaults: dict[str, str]) -> dict[str, str]:
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    found = dict(defaults)
    for flag, value in zip(words, words[1:], strict=False):
        if flag in names:
            found[names[flag]] = value
    return found


def _parameters(captures: Sequence[Capture], kind: str) -> dict[str, str]:
    """The test parameters from the clients' command lines; values that differ between runs are listed."""
    names, defaults = (_FLAGS, {"qps": "1"}) if kind == "rdma" else (_NCCL_FLAGS, {})
    seen: dict[str, set[str]] = {}
    for cap in captures:
        if cap.meta.get("kind") == kind and cap.meta.get("role") == "client" and cap.command:
            for name, value in _flags(cap.command, names, defaults).items():
                seen.setdefault(name, set()).add(value)
    return {name: ",".join(sorted(values)) for name, values in sorted(seen.items())}


def performance(bundle: Bundle, link: LinkFacts) -> Performance:
    return performance_of(bundle.captures, link)


def performance_of(captures: Sequence[Capture], link: LinkFacts) -> Performance:
    """The link's traffic results, with the parameters its runs' command lines in `captures` give."""
    rdma: dict[str, float] = {}
    for run in link.bench.rdma:
        if run.gbps is not None:
            key = f"{run.path_key}|{run.mode}|{run.direction}"
            rdma[key] = min(run.gbps, rdma.get(key, run.gbps))
    totals = {d: t for d, t in link.bench.totals("concurrent").items() if t is not None}
    nccl = link.bench.nccl.busbw_gbs if link.bench.nccl is not None else None
    return Performance(rdma_gbps=rdma, concurrent_total_gbps=totals, nccl_busbw_gbs=nccl,
                       rdma_parameters=_parameters(captures, "rdma") if rdma else {},
                       nccl_parameters=_parameters(captures, "nccl") if nccl is not None else {})


def snapshot_of(bundle: Bundle, link: LinkFacts, verdict: str) -> Snapshot:
    """The pair's state as this bundle shows it."""
    return snapshot_from(bundle.captures, link, verdict)


def snapshot_from(captures: Sequence[Capture], link: LinkFacts, verdict: str) -> Snapshot:
    """The pair's state as `link` shows it, its test parameters read from the runs' command lines in `captures`
    (a cluster's cable: its own test's captures)."""
    gids = {f"{fn.node}:{fn.rdma_dev}": fn.gid_index
            for node in (link.a, link.b) if "gids" not in node.unavailable
            for fn in node.used_functions if fn.rdma_dev}
    return Snapshot(pair=pair_key(link), identity=_identity(link), configuration=_configuration(link),
                    gid_index=gids, performance=performance_of(captures, link), verdict=verdict, unknown=_unknown(link))

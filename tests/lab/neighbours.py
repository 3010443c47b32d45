"""The node model's neighbour (ARP) entries, installed as permanent entries in each node's namespace.

linkcheck reads `ip -j neigh show` (the real one in the lab), so each model entry (addresses already
mapped) becomes `ip neigh replace <ip> lladdr <mac> dev <if> nud permanent`; permanent, so ARP never
corrects a deliberately wrong entry (single-pcie-path: node b resolves a's twin IP to the MAC of a's
other twin).

On a GB10 both twins of a cage share the one cable, and the NIC hands a frame to the function that owns
its destination MAC; so traffic sent with the other twin's MAC still arrives, over the other PCIe link.
Lab twins are separate veth pairs, whose far end would drop such a frame (not its MAC). So for an entry
whose MAC is another link of the peer node, frames to that MAC leaving the entry's interface are
redirected (tc clsact egress, u32 on the Ethernet destination, mirred) out of the local link cabled to
that other link: they arrive at the function owning the MAC, as on the hardware.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tests.lab import netns
from tests.lab.addresses import require_lab_cidr
from tests.lab.errors import LabError
from tests.lab.spec import MAC_RE

if TYPE_CHECKING:
    from tests.lab.node import LabNode

TC = "tc"


@dataclass(frozen=True)
class Entry:
    """One neighbour entry of a node's model, in lab addresses."""

    dst: str
    dev: str
    lladdr: str


def model_entries(node: LabNode) -> list[Entry]:
    """The neighbour entries of the node's (mapped) model, checked against its links; [] without a model."""
    if node.model_json is None:
        return []
    model = json.loads(node.model_json.read_text(encoding="utf-8"))
    ifnames = {link.ifname for link in node.spec.links}
    out = []
    for raw in model.get("neighbours", []):
        entry = Entry(str(raw.get("dst", "")), str(raw.get("dev", "")), str(raw.get("lladdr", "")).lower())
        where = f"node {node.name} neighbour {entry.dst} dev {entry.dev}"
        require_lab_cidr(entry.dst + "/32", where)
        if entry.dev not in ifnames:
            raise LabError(f"{where}: the node has no data link {entry.dev!r}")
        if not MAC_RE.match(entry.lladdr):
            raise LabError(f"{where}: MAC {entry.lladdr!r} must be aa:bb:cc:dd:ee:ff")
        out.append(entry)
    return out


def install_neighbours(nodes: Mapping[str, LabNode]) -> None:
    """Install every node's model entries, and the redirects that keep wrong-twin entries working."""
    for node in nodes.values():
        entries = model_entries(node)
        for e in entries:
            netns.run([netns.IP, "-n", node.netns, "neigh", "replace", e.dst, "lladdr", e.lladdr,
                       "dev", e.dev, "nud", "permanent"])
        _redirect(node, nodes, entries)


def redirect_target(node: LabNode, nodes: Mapping[str, LabNode], entry: Entry) -> str | None:
    """The local link cabled to the peer link owning `entry.lladdr`, when that is not `entry.dev`'s peer."""
    link = next(k for k in node.spec.links if k.ifname == entry.dev)
    if link.peer is None or link.peer[0] not in nodes:
        return None
    peer_node = nodes[link.peer[0]]
    owner = next((k for k in peer_node.spec.links if (k.mac or "").lower() == entry.lladdr), None)
    if owner is None or owner.ifname == link.peer[1]:
        return None  # the right MAC, or nobody's: frames go where the hardware would send them
    via = next((k for k in node.spec.links if k.peer == (peer_node.name, owner.ifname)), None)
    return via.ifname if via is not None else None


def _redirect(node: LabNode, nodes: Mapping[str, LabNode], entries: Sequence[Entry]) -> None:
    devs: set[str] = set()
    for e in entries:
        via = redirect_target(node, nodes, e)
        if via is None:
            continue
        if e.dev not in devs:
            _tc(node, ["qdisc", "replace", "dev", e.dev, "clsact"])
            devs.add(e.dev)
        _tc(node, ["filter", "add", "dev", e.dev, "egress", "protocol", "all", "prio", "1", "u32",
                   "match", "ether", "dst", e.lladdr, "action", "mirred", "egress", "redirect", "dev", via])


def _tc(node: LabNode, args: Sequence[str]) -> None:
    try:
        netns.run([TC, "-n", node.netns, *args])
    except LabError as exc:
        raise LabError(f"node {node.name}: a wrong-twin neighbour entry needs tc with clsact, u32 and mirred "
                       f"(the traffic to it would be dropped otherwise): {exc}") from exc

"""Named checks on the physical link and addressing: carrier, cages, cable identity (twins sharing a subnet
is a `when:` condition on the node facts `shared_subnet` and `shared_netdevs`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from linkcheck.diagnose.observation import Observation, ShellText, sh
from linkcheck.facts.model import LinkFacts, NodeFacts
from linkcheck.model import Evidence, Severity
from linkcheck.values import yes_no


class LinkDownValues(msgspec.Struct, frozen=True):
    """What is down, and where to look."""

    node: str
    netdev: str
    what: str


class CableValues(msgspec.Struct, frozen=True):
    """The cable's identity against NVIDIA's list."""

    node: str
    pn: str
    vendor: str
    sn: str
    note: str
    approved: ShellText


class LinkChangedValues(msgspec.Struct, frozen=True):
    """What moved since linkcheck.yaml recorded the link."""

    what: str
    config: str


def _node_link_down(node: NodeFacts) -> list[Observation]:
    if not node.functions:
        return [Observation(subject=f"node {node.name}", fired=True, nodes=(node.name,),
                            values=LinkDownValues(node=node.name, what="no ConnectX-7 function is present (the CX-7 is "
                                                       "removed from the PCI bus when no cable is attached at boot)",
                                                  netdev="<cx7-netdev>"),
                            evidence=(Evidence("ConnectX-7 netdevs", [], "sysfs_net"),))]
    if not node.cabled_cages and all(f.carrier is None for f in node.functions):
        # The netdevs are known (e.g. from ethtool's arguments) but not one carrier: unknown is not down.
        return [Observation(subject=f"node {node.name}", fired=False, nodes=(node.name,),
                            skip="no twin's carrier could be read (sysfs_net, ip addr and ethtool)")]
    if not node.cabled_cages:
        downs = [f.netdev for f in node.functions]
        return [Observation(subject=f"node {node.name}", fired=True, nodes=(node.name,),
                            values=LinkDownValues(node=node.name, what="no twin reports carrier (cable unplugged?)",
                                                  netdev=downs[0]),
                            evidence=tuple(Evidence(f"{f.netdev} carrier", f.carrier, "sysfs")
                                           for f in node.functions))]
    out = []
    for fn in node.functions:
        if fn.cage not in node.cabled_cages:
            continue
        down = fn.carrier is False or (fn.rdma_state is not None and fn.rdma_state != "ACTIVE")
        out.append(Observation(
            subject=fn.label, fired=down, nodes=(node.name,),
            values=LinkDownValues(node=node.name, netdev=fn.netdev,
                                  what=f"{fn.netdev} ({fn.rdma_dev}) in cabled cage {fn.cage} is down: "
                                       f"carrier {yes_no(fn.carrier)}, RDMA port {fn.rdma_state}"),
            evidence=(Evidence(f"{fn.netdev} carrier", fn.carrier, "sysfs"),
                      Evidence(f"{fn.rdma_dev} port state", fn.rdma_state, "sysfs infiniband"))))
    return out


def link_down(link: LinkFacts, thresholds: Mapping[str, Any]) -> list[Observation]:
    out = _node_link_down(link.a) + _node_link_down(link.b)
    cages_a, cages_b = link.a.cabled_cages, link.b.cabled_cages
    if cages_a and cages_b:
        # A cable from p1 on one node to p0 on the other carries full traffic: link state and traffic judge
        # the link, and the asymmetry is only a note.
        out.append(Observation(
            subject="pair", fired=cages_a != cages_b, severity=Severity.INFO,
            values=LinkDownValues(
                node=link.b.name, netdev="-", what=f"the cable joins different cages ({link.a.name} "
                     f"{', '.join(cages_a)}, {link.b.name} {', '.join(cages_b)}); this works, but NVIDIA's guides ask "
                     "for the same physical port on both, and netplan files written for one node do not fit the other"),
            evidence=(Evidence(f"cabled cages on {link.a.name}", list(cages_a), "phys_port_name + carrier"),
                      Evidence(f"cabled cages on {link.b.name}", list(cages_b), "phys_port_name + carrier"))))
    if cages_a and cages_b and not link.paths and _addressed(link.a) and _addressed(link.b):
        out.append(_no_path(link))
    return out


def _addressed(node: NodeFacts) -> bool:
    return "addresses" not in node.unavailable and any(f.cage in node.cabled_cages for f in node.functions)


def _no_path(link: LinkFacts) -> Observation:
    """Both nodes cabled, but no twin on a shares a subnet with a twin on b: nothing can cross the cable."""
    listing = {n.name: [f"{f.netdev} {','.join(f.ipv4) or 'no IPv4'}" for f in n.functions
                        if f.cage in n.cabled_cages] for n in (link.a, link.b)}
    return Observation(
        subject="pair", fired=True,
        values=LinkDownValues(node=link.a.name, netdev="-",
                              what=f"no data path: no twin of the cabled cage on {link.a.name} "
                                   f"({'; '.join(listing[link.a.name])}) shares a subnet with one on {link.b.name} "
                                   f"({'; '.join(listing[link.b.name])})"),
        evidence=tuple(Evidence(f"cabled twins on {k}", v, "ip addr") for k, v in listing.items()))


def cable_not_approved(link: LinkFacts, thresholds: Mapping[str, Any]) -> list[Observation]:
    approved = {str(pn).strip().upper() for pn in thresholds["approved_part_numbers"]}
    known = {str(pn).strip().upper() for pn in thresholds.get("field_reported_part_numbers", [])}
    out = []
    for node in (link.a, link.b):
        cables = [f.cable for f in node.functions if f.cable and f.cage in node.cabled_cages]
        if not cables:
            continue
        cable = cables[0]
        pn = (cable.vendor_pn or "").strip()
        note = ("cannot be identified: the EEPROM gives no vendor part number" if not pn
                else "is reported working in the field but is not on NVIDIA's list" if pn.upper() in known
                else "is not on NVIDIA's approved list")
        out.append(Observation(
            subject=f"node {node.name}", fired=pn.upper() not in approved, nodes=(node.name,),
            values=CableValues(node=node.name, pn=pn or "unknown", vendor=cable.vendor_name or "unknown",
                               sn=cable.vendor_sn or "unknown", note=note,
                               approved=ShellText(", ".join(map(sh, sorted(thresholds["approved_part_numbers"]))))),
            evidence=(Evidence("Vendor name", cable.vendor_name, "ethtool -m"),
                      Evidence("Vendor PN", cable.vendor_pn, "ethtool -m"),
                      Evidence("Vendor SN", cable.vendor_sn, "ethtool -m"),
                      Evidence("EEPROM memory map", cable.memory_map, "ethtool -m"))))
    return out


def link_changed(link: LinkFacts, thresholds: Mapping[str, Any]) -> list[Observation]:
    """The live link against linkcheck.yaml's `link:` section (what `init` recorded): name what moved."""
    expected = link.expected
    if expected is None:
        return []  # no linkcheck.yaml with a `link:` section is in use: there is nothing to compare with
    moved: list[str] = []
    live_cage = ",".join(link.a.cabled_cages) or None
    if expected.cage is not None and live_cage != expected.cage:
        moved.append(f"the cabled cage on node a is {live_cage or 'none'}, recorded {expected.cage}")
    live = {(p.a.netdev, p.b.netdev): p.subnet for p in link.paths}
    recorded = {(p.a, p.b): p.subnet for p in expected.paths}
    for a, b in sorted(set(recorded) - set(live)):
        moved.append(f"recorded path a:{a} <-> b:{b} is gone")
    for a, b in sorted(set(live) - set(recorded)):
        moved.append(f"new path a:{a} <-> b:{b} ({live[(a, b)]})")
    for key in sorted(set(live) & set(recorded)):
        if recorded[key] is not None and recorded[key] != live[key]:
            moved.append(f"path a:{key[0]} <-> b:{key[1]} moved from {recorded[key]} to {live[key]}")
    return [Observation(
        subject="pair", fired=bool(moved),
        values=LinkChangedValues(what="; ".join(moved), config=expected.source),
        evidence=(Evidence("recorded cage", expected.cage, expected.source),
                  Evidence("live cabled cages on a", list(link.a.cabled_cages), "phys_port_name + carrier"),
                  Evidence("recorded paths", [f"{a}<->{b} {s}" for (a, b), s in sorted(recorded.items())],
                           expected.source),
                  Evidence("live paths", [f"{a}<->{b} {s}" for (a, b), s in sorted(live.items())], "ip addr")))]

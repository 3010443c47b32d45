"""NETPLAN_NOT_APPLIED: what the netplan files say about each CX-7 netdev against what is live; NM_PROFILE_RUNTIME_ONLY:
its addressing kept only in a NetworkManager profile under /run, which the next boot loses."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

import msgspec

from linkcheck.diagnose.observation import Observation, ShellText, sh
from linkcheck.facts.model import Function, LinkFacts, NetplanIntent, NmRuntimeProfile, NodeFacts
from linkcheck.model import Evidence
from linkcheck.values import UNSET, text


class NetplanValues(msgspec.Struct, frozen=True):
    """The files' intent and the live state of one netdev, side by side, and the fix."""

    node: str
    netdev: str
    files: str
    live: str
    differences: str
    remedy: ShellText


def _link_local(fn: Function) -> bool:
    return any(ipaddress.ip_interface(c).ip.is_link_local for c in fn.ipv4)


def _differences(intent: NetplanIntent, fn: Function) -> tuple[list[str], list[str]]:
    """(what the files set that is not live, what is live that the files do not set)."""
    missing, extra = [], []
    # networkd and NetworkManager configure a link only once it has carrier: a twin of the empty cage
    # lacking its addresses is the files applied, not ignored.
    up = fn.carrier is True
    if not intent.dhcp4:
        wanted = set(intent.addresses)
        live = {c for c in fn.ipv4 if not ipaddress.ip_interface(c).ip.is_link_local}
        missing += [f"address {c}" for c in sorted(wanted - live)] if up else []
        extra += [f"address {c}" for c in sorted(live - wanted)]
    if up and intent.mtu is not None and fn.mtu is not None and intent.mtu != fn.mtu:
        missing.append(f"MTU {intent.mtu} (live {fn.mtu})")
    if intent.link_local is not None and fn.carrier:
        if "ipv4" in intent.link_local and not intent.addresses and not _link_local(fn):
            missing.append("an IPv4 link-local address (link-local: [ipv4])")
        if "ipv4" not in intent.link_local and _link_local(fn):
            extra.append("an IPv4 link-local address that link-local does not ask for")
    return missing, extra


def _remedy(intent: NetplanIntent, missing: list[str], extra: list[str]) -> ShellText:
    where = sh(intent.source) if intent.source else "/etc/netplan/*.yaml"
    netdef = sh(intent.netdef_id)
    if missing and not extra:
        return ShellText("sudo netplan apply  (the files already say it; try it first with sudo netplan try)")
    if extra and not missing:
        return ShellText(f"make it persistent: add it under {netdef} in {where}, then sudo netplan apply "
                         "(addresses set with ip addr add or a NetworkManager profile outside netplan are lost at "
                         "reboot)")
    return ShellText(f"decide which is right, edit {netdef} in {where} to match it, then sudo netplan apply")


def _judge(node: NodeFacts, intent: NetplanIntent) -> Observation | None:
    fn = node.function(intent.netdev)
    if fn is None:
        return None
    missing, extra = _differences(intent, fn)
    files = (f"{intent.netdef_id}: addresses {', '.join(intent.addresses) or '-'}, mtu {intent.mtu or 'unset'}, "
             f"dhcp4 {text(intent.dhcp4, missing=UNSET)}, link-local {text(intent.link_local, missing=UNSET)}"
             + (f", renderer {intent.renderer}" if intent.renderer else ""))
    live = f"addresses {', '.join(fn.ipv4) or '-'}, mtu {fn.mtu or '?'}"
    parts = [f"the files set {m} that is not live" for m in missing] + [f"live has {e} the files do not set"
                                                                         for e in extra]
    return Observation(
        subject=fn.label, fired=bool(parts), nodes=(node.name,),
        values=NetplanValues(node=node.name, netdev=fn.netdev, files=files, live=live, differences="; ".join(parts),
                             remedy=_remedy(intent, missing, extra)),
        evidence=(Evidence(f"netplan {intent.netdef_id}", files, intent.source or "netplan files"),
                  Evidence(f"live {fn.netdev}", live, "ip addr")))


def netplan_not_applied(link: LinkFacts, thresholds: Mapping[str, Any]) -> list[Observation]:
    """Each CX-7 netdev that a netplan definition configures, compared with its live addresses and MTU."""
    out = []
    for node in (link.a, link.b):
        if "netplan" in node.unavailable or "addresses" in node.unavailable:
            continue  # the files could not be read (sudo refused): nothing to compare, and not required
        out += [o for o in (_judge(node, i) for i in node.netplan) if o is not None]
    return out


class RuntimeProfileValues(msgspec.Struct, frozen=True):
    """A CX-7 netdev addressed by a NetworkManager profile that lives only under /run."""

    node: str
    netdev: str
    profile: str
    path: str
    addresses: str
    persistent: str


def _runtime_observation(node: NodeFacts, prof: NmRuntimeProfile) -> Observation:
    addresses = ", ".join(prof.addresses) or f"ipv4.method {prof.method or 'unset'}"
    where = ("also configured by netplan or an /etc keyfile, which a reboot applies" if prof.persistent
             else "nothing under /etc/netplan or /etc/NetworkManager configures it")
    return Observation(
        subject=f"{node.name}:{prof.netdev}", fired=not prof.persistent, nodes=(node.name,),
        values=RuntimeProfileValues(node=node.name, netdev=prof.netdev, profile=prof.profile_id or prof.path,
                                    path=prof.path, addresses=addresses, persistent=where),
        evidence=(Evidence(f"NetworkManager profile {prof.profile_id or '?'}", f"{prof.path}: {addresses}",
                           "nm_connections"),
                  Evidence("persistent configuration", where, "netplan files, /etc/NetworkManager")))


def nm_profile_runtime_only(link: LinkFacts, thresholds: Mapping[str, Any]) -> list[Observation]:
    """Each CX-7 netdev whose live IPv4 comes from a /run-only NetworkManager profile (netplan's own generated
    `netplan-*.nmconnection` files there are regenerated at boot and do not count); a node without one passes."""
    out = []
    for node in (link.a, link.b):
        if "nm_profiles" in node.unavailable:
            continue
        found = [_runtime_observation(node, p) for p in node.nm_runtime]
        out += found or [Observation(subject=f"node {node.name}", fired=False, nodes=(node.name,),
                                     values=RuntimeProfileValues(node=node.name, netdev="-", profile="-", path="-",
                                                                 addresses="-", persistent="-"))]
    return out

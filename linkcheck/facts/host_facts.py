"""Host-level facts of a node: NCCL settings and where each came from, uptime, memory, dmesg, neighbours."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from linkcheck.facts.model import DmesgHint, Neighbour
from linkcheck.facts.sources import NodeSources

HOTPLUG_KINDS = {"cx7_cable_plugin", "module_cable_plugged", "cx7_cable_unplug", "module_cable_unplugged"}

# Later sources override earlier ones: NCCL reads the config files but never overrides the environment.
NCCL_SOURCES = (("nccl_conf", "/etc/nccl.conf"), ("nccl_conf_user", "~/.nccl.conf"), ("nccl_env", "environment"))


def _nccl(src: NodeSources, missing: Callable[[str, str], None]) -> tuple[dict[str, str], dict[str, str]]:
    values: dict[str, str] = {}
    sources: dict[str, str] = {}
    for spec, label in NCCL_SOURCES:
        settings = src.get(spec)
        if settings is None:
            if spec == "nccl_env":
                missing("nccl_settings", src.reason(spec))
            continue
        for key, value in settings.values:
            values[key] = value
            sources[key] = label
    return values, sources


def host_facts(src: NodeSources, missing: Callable[[str, str], None]) -> dict[str, Any]:
    """Keyword arguments for NodeFacts beyond the functions."""
    nccl, nccl_sources = _nccl(src, missing)
    uptime = src.get("uptime")
    mem = src.get("meminfo")
    dmesg = src.get("dmesg")
    if dmesg is None:
        missing("dmesg", src.reason("dmesg"))
    neigh = src.get("ip_neigh")
    routes = src.get("ip_route")
    sysctl = src.get("sysctl")
    return {
        "nccl": nccl,
        "nccl_sources": nccl_sources,
        "uptime_s": uptime.uptime_s if uptime else None,
        "mem_available_kib": mem.mem_available_kib if mem else None,
        "dmesg": dmesg_hints(dmesg) if dmesg else (),
        "neighbours": neighbours(neigh) if neigh else (),
        "routes": tuple((r.dst, r.dev) for r in routes) if routes else (),
        "arp_ignore": sysctl.get("net.ipv4.conf.all.arp_ignore") if sysctl else None,
    }


def dmesg_hints(log: Any) -> tuple[DmesgHint, ...]:
    return tuple(DmesgHint(e.kind, e.time_s, e.text) for e in log.events if e.kind in HOTPLUG_KINDS)


def neighbours(entries: Any) -> tuple[Neighbour, ...]:
    return tuple(Neighbour(n.dst, n.dev, n.lladdr.lower() if n.lladdr else None) for n in entries)

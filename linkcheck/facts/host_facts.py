"""Host-level facts of a node: NCCL settings and where each came from, uptime, memory, dmesg, neighbours."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import msgspec

from linkcheck.facts.model import DmesgHint, Neighbour
from linkcheck.facts.nccl_hca import version_tuple
from linkcheck.facts.sources import NcclSpec, NodeSources
from linkcheck.model import Capture

if TYPE_CHECKING:
    from linkcheck.parsers.iproute import IpNeighbour
    from linkcheck.parsers.kernel import DmesgLog

HOTPLUG_KINDS = {"cx7_cable_plugin", "module_cable_plugged", "cx7_cable_unplug", "module_cable_unplugged"}

# NCCL's order (NVIDIA/nccl src/misc/param.cc initEnvFunc, setEnvFile: setenv(name, value, 0) never overrides): the
# environment, then the user's file, then /etc/nccl.conf. The user's file is the one NCCL_CONF_FILE names when it is
# set and non-empty (NCCL 2.23 and later), else ~/.nccl.conf of the job's $HOME (NCCL 2.30 and later; the passwd
# home of its user before): linkcheck reads the SSH user's. Later entries here override earlier ones.
NCCL_CONF_FILE_SINCE = (2, 23)


def _nccl_sources(src: NodeSources) -> tuple[tuple[NcclSpec, str], ...]:
    env = src.nccl_settings("nccl_env")
    named = env.get("NCCL_CONF_FILE") if env is not None else None
    install = src.nccl_install()
    version = version_tuple(install.nccl_version if install else None)
    reads_it = version is None or version >= NCCL_CONF_FILE_SINCE  # unknown: assumed a current NCCL
    user: tuple[NcclSpec, str] = (("nccl_conf_file", named) if named and reads_it
                                  else ("nccl_conf_user", "~/.nccl.conf"))
    return (("nccl_conf", "/etc/nccl.conf"), user, ("nccl_env", "environment"))


def _nccl(src: NodeSources, missing: Callable[[str, str], None]) -> tuple[dict[str, str], dict[str, str]]:
    values: dict[str, str] = {}
    sources: dict[str, str] = {}
    for spec, label in _nccl_sources(src):
        settings = src.nccl_settings(spec)
        if settings is None:
            if spec == "nccl_env":
                missing("nccl_settings", src.reason(spec))
            continue
        for key, value in settings.values:
            values[key] = value
            sources[key] = label
    return values, sources


class HostFacts(msgspec.Struct, frozen=True):
    """The NodeFacts fields that come from the host rather than from its CX-7 functions."""

    nccl: dict[str, str]
    nccl_sources: dict[str, str]
    uptime_s: float | None
    mem_available_kib: int | None
    dmesg: tuple[DmesgHint, ...]
    neighbours: tuple[Neighbour, ...]
    routes: tuple[tuple[str, str | None], ...]
    arp_ignore: str | None
    kernel_release: str | None
    os_name: str | None
    iommu_cmdline: tuple[str, ...] | None


def host_facts(src: NodeSources, missing: Callable[[str, str], None]) -> HostFacts:
    """Keyword arguments for NodeFacts beyond the functions."""
    nccl, nccl_sources = _nccl(src, missing)
    uptime = src.uptime()
    mem = src.meminfo()
    dmesg = src.dmesg()
    if dmesg is None:
        missing("dmesg", src.reason("dmesg"))
    neigh = src.ip_neigh()
    routes = src.ip_route()
    sysctl = src.sysctl()
    os_release = src.os_release()
    return HostFacts(
        nccl=nccl,
        nccl_sources=nccl_sources,
        uptime_s=uptime.uptime_s if uptime else None,
        mem_available_kib=mem.mem_available_kib if mem else None,
        dmesg=dmesg_hints(dmesg) if dmesg else (),
        neighbours=neighbours(neigh) if neigh else (),
        routes=tuple((r.dst, r.dev) for r in routes) if routes else (),
        arp_ignore=sysctl.get("net.ipv4.conf.all.arp_ignore") if sysctl else None,
        kernel_release=_first_line(src.capture("kernel_release")),
        iommu_cmdline=_words(src.capture("cmdline_iommu")),
        os_name=os_release.pretty_name if os_release else None,
    )


def _first_line(cap: Capture | None) -> str | None:
    """`uname -r` and the like: one line of text, no parser needed."""
    line = cap.stdout.strip().splitlines()[0].strip() if cap is not None and cap.ok and cap.stdout.strip() else ""
    return line or None


def _words(cap: Capture | None) -> tuple[str, ...] | None:
    """The IOMMU words of the kernel command line, one a line; None when they were not read."""
    if cap is None or not cap.ok:
        return None
    return tuple(w for w in (ln.strip() for ln in cap.stdout.splitlines()) if w and len(w) <= 200)


def dmesg_hints(log: DmesgLog) -> tuple[DmesgHint, ...]:
    return tuple(DmesgHint(e.kind, e.time_s, e.text) for e in log.events if e.kind in HOTPLUG_KINDS)


def neighbours(entries: tuple[IpNeighbour, ...]) -> tuple[Neighbour, ...]:
    return tuple(Neighbour(n.dst, n.dev, n.lladdr.lower() if n.lladdr else None) for n in entries)

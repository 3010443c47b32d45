"""Named checks on traffic results: hot-plug degraded state, below-nominal paths, NCCL transport and busbw."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import msgspec

from linkcheck.diagnose.checks.fec import fec_evidence
from linkcheck.diagnose.observation import Observation, ShellText, sh
from linkcheck.facts.bench_facts import NVIDIA_MESSAGE_BYTES
from linkcheck.facts.model import DataPath, LinkFacts, RdmaRun
from linkcheck.facts.nccl_hca import nccl_functions
from linkcheck.model import Evidence, Severity
from linkcheck.values import byte_size, pcie


class HotplugValues(msgspec.Struct, frozen=True):
    """The ~13 Gb/s signature on one path, its likely cause and what to do."""

    path: str
    gbps: str
    host_a: str
    host_b: str
    cause: str
    remedy: ShellText


class BelowNominalValues(msgspec.Struct, frozen=True):
    """A path below a healthy one."""

    path: str
    gbps: str
    pct: str


class BusbwValues(msgspec.Struct, frozen=True):
    """The collective's bus bandwidth by NVIDIA's statistic, the size it was taken at, the peak, the band."""

    busbw: str
    size: str
    peak: str
    wrong: int
    band: str


PLUG_KINDS = ("cx7_cable_plugin", "module_cable_plugged")
FLAPPED = "the link flapped or a GID changed during the traffic test; its numbers cannot be trusted"


def _runs(link: LinkFacts, path: DataPath) -> list[RdmaRun]:
    return [r for r in link.bench.rdma if r.path_key == path.key]


def _best(runs: list[RdmaRun]) -> float | None:
    rates = [r.gbps for r in runs if r.gbps is not None]
    return max(rates) if rates else None


def _looks_healthy(path: DataPath) -> bool:
    """Status fields say 200G and Gen5 x4 (unknown counts as healthy: only throughput reveals the state)."""
    ends = (path.a, path.b)
    speed_ok = all(f.speed_mbps is None or f.speed_mbps >= 200000 for f in ends)
    pcie_ok = all((f.pcie_width is None or f.pcie_width >= 4) and (f.pcie_speed_gts is None or f.pcie_speed_gts >= 32)
                  for f in ends)
    return speed_ok and pcie_ok


def _hotplug_evidence(link: LinkFacts, late_s: float) -> tuple[Evidence, ...]:
    out = []
    for node in (link.a, link.b):
        for hint in node.dmesg:
            if hint.kind in PLUG_KINDS and (hint.time_s or 0) > late_s:
                out.append(Evidence(f"dmesg on {node.name} ({hint.time_s:.0f} s after boot)", hint.text, "dmesg"))
    return tuple(out)


class ReplugValues(msgspec.Struct, frozen=True):
    """A cable plug-in that the kernel logged long after boot, on one node."""

    node: str
    host_a: str
    host_b: str
    after_s: str
    uptime: str


def replugged_since_boot(link: LinkFacts, thresholds: Mapping[str, Any]) -> list[Observation]:
    """From inspection alone: a cable plug-in logged long after boot (the hot-plug path) warns that the link
    may be in the slow state; a traffic test decides, so with one in the bundle this is only a note."""
    late = thresholds["late_plug_after_boot_s"]
    out = []
    for node in (link.a, link.b):
        if "dmesg" in node.unavailable:
            continue  # a heuristic without its log says nothing, neither pass nor skip (it is not required)
        hints = [h for h in _hotplug_evidence(link, late) if h.fact.startswith(f"dmesg on {node.name} ")]
        plugs = [h.time_s for h in node.dmesg if h.kind in PLUG_KINDS and (h.time_s or 0) > late]
        out.append(Observation(
            subject=f"node {node.name}", fired=bool(plugs), nodes=(node.name,),
            severity=Severity.INFO if "rdma" in link.bench_present else None,
            values=ReplugValues(node=node.name, host_a=link.a.hostname or "node a", host_b=link.b.hostname or "node b",
                                after_s=f"{max((p or 0) for p in plugs):.0f}" if plugs else "-",
                                uptime=f"{node.uptime_s:.0f}" if node.uptime_s is not None else "?"),
            evidence=tuple(hints)))
    return out


def _per_path(link: LinkFacts, thresholds: Mapping[str, Any], judge: Any) -> list[Observation]:
    if link.bench.flapped:
        return [Observation(subject="rdma", fired=False, skip=FLAPPED)]
    out = []
    for path in link.paths:
        runs = _runs(link, path)
        best = _best(runs)
        problems = sorted({r.problem for r in runs if r.problem})
        if best is None or problems:
            # One failed or flapped run makes the path's numbers untrustworthy: fail closed.
            why = "; ".join(problems) or "no ib_write_bw result for this path"
            out.append(Observation(subject=path.key, fired=False, skip=why))
            continue
        out.append(judge(path, runs, best))
    return out


def run_evidence(runs: list[RdmaRun], link: LinkFacts) -> tuple[Evidence, ...]:
    """One line per ib_write_bw run, its direction named by the link's nodes (a pair's `a->b`, a cluster's `b->c`);
    where repetitions ran the same mode and direction more than once, each line says which run it is
    (`ib_write_bw alone a->b (run 2 of 3)`), so no two lines read the same."""
    counts = Counter((r.mode, r.direction) for r in runs)
    seen: Counter[tuple[str, str]] = Counter()
    out = []
    for r in runs:
        key = (r.mode, r.direction)
        seen[key] += 1
        which = f" (run {seen[key]} of {counts[key]})" if counts[key] > 1 else ""
        out.append(Evidence(f"ib_write_bw {r.mode} {link.named(r.direction)}{which}", r.gbps, "Gb/s"))
    return tuple(out)


# The IOMMU group types that translate a device's DMA (Linux drivers/iommu/iommu.c iommu_group_show_type():
# "identity" is passthrough, "DMA" and "DMA-FQ" translate, with strict or lazy (flush queue) invalidation).
IOMMU_TRANSLATED = frozenset({"DMA", "DMA-FQ"})
REBOOT_BOTH = "with the cable attached, reboot both nodes: on {a} and on {b}: sudo systemctl reboot --no-block"
IOMMU_PASSTHROUGH = ("on both nodes: put the IOMMU in passthrough for DMA: add iommu.passthrough=1 to "
                     "GRUB_CMDLINE_LINUX_DEFAULT in /etc/default/grub, sudo update-grub, then sudo systemctl reboot "
                     "--no-block; afterwards cat /sys/bus/pci/devices/{bdf}/iommu_group/type reads identity")


def _slow_cause(link: LinkFacts, path: DataPath,
                hints: tuple[Evidence, ...]) -> tuple[str, ShellText, tuple[Evidence, ...]]:
    """What a path at ~13 Gb/s points at: the hot-plug state (a late cable plug-in in the kernel log, or nothing
    else to go on), or, with no late plug-in in either node's log and the CX-7's DMA translated by the IOMMU, the
    IOMMU mode, which a reboot does not clear; with the log unread, both."""
    hosts = {"a": sh(link.a.hostname or "node a"), "b": sh(link.b.hostname or "node b")}
    reboot = REBOOT_BOTH.format(**hosts)
    translated = [f for f in (path.a, path.b) if f.iommu_type in IOMMU_TRANSLATED]
    evidence = tuple(Evidence(f"IOMMU group type of {f.label} ({f.bdf})", f.iommu_type, "sysfs iommu_group/type")
                     for f in (path.a, path.b) if f.iommu_type is not None)
    evidence += tuple(Evidence(f"IOMMU words of /proc/cmdline on {n.name}", list(n.iommu_cmdline), "cmdline_iommu")
                      for n in (link.a, link.b) if n.iommu_cmdline is not None)
    hotplug = ("the NIC came up through the hot-plug path and stays slow until both nodes reboot with the cable "
               "attached", reboot)
    if hints or not translated:
        return hotplug[0], ShellText(hotplug[1]), evidence
    iommu = (f"the IOMMU translates the CX-7's DMA ({', '.join(f'{f.label} {f.iommu_type}' for f in translated)}); "
             "ServeTheHome reports a ~12.7 Gb/s per-port cap in the GB10's default IOMMU mode that a reboot does not "
             "clear (assumed to be this state: no source measured the two causes side by side)")
    remedy = IOMMU_PASSTHROUGH.format(bdf=sh(translated[0].bdf) if translated[0].bdf else "<bdf>")
    if any("dmesg" in n.unavailable for n in (link.a, link.b)):
        return (f"either {hotplug[0]} (the kernel log could not be read), or {iommu}",
                ShellText(f"{remedy}; if it stays, {reboot}"), evidence)
    return f"the kernel log shows no late cable plug-in, and {iommu}", ShellText(remedy), evidence


def hotplug_degraded(link: LinkFacts, thresholds: Mapping[str, Any]) -> list[Observation]:
    low, high = thresholds["degraded_min_gbps"], thresholds["degraded_max_gbps"]
    hints = _hotplug_evidence(link, thresholds["late_plug_after_boot_s"])

    def judge(path: DataPath, runs: list[RdmaRun], best: float) -> Observation:
        fired = low <= best <= high and _looks_healthy(path)
        cause, remedy, iommu = _slow_cause(link, path, hints)
        return Observation(
            subject=path.key, fired=fired,
            values=HotplugValues(path=path.key, gbps=f"{best:.1f}", host_a=link.a.hostname or "node a",
                                 host_b=link.b.hostname or "node b", cause=cause, remedy=remedy),
            evidence=run_evidence(runs, link)
            + (Evidence("link speed", [path.a.speed_mbps, path.b.speed_mbps], "ethtool Mb/s"),
               Evidence("PCIe", [pcie(f.pcie_speed_gts, f.pcie_width) for f in (path.a, path.b)], "sysfs"))
            + fec_evidence(path) + (hints if fired else ()) + (iommu if fired else ()))

    return _per_path(link, thresholds, judge)


def below_nominal(link: LinkFacts, thresholds: Mapping[str, Any]) -> list[Observation]:
    low, high = thresholds["degraded_min_gbps"], thresholds["degraded_max_gbps"]

    def judge(path: DataPath, runs: list[RdmaRun], best: float) -> Observation:
        hotplug = low <= best <= high and _looks_healthy(path)
        return Observation(
            subject=path.key, fired=best < thresholds["nominal_min_gbps"] and not hotplug,
            values=BelowNominalValues(path=path.key, gbps=f"{best:.1f}", pct=f"{100 * best / 200:.0f}"),
            evidence=run_evidence(runs, link)
            + fec_evidence(path))

    return _per_path(link, thresholds, judge)


def _busbw_pointers(link: LinkFacts) -> list[str]:
    """What the evidence points at when the collective is below a healthy pair but not broken."""
    run = link.bench.nccl
    hints = []
    if run is not None and run.network is not None and (len(run.ib_devices) < 2 or len(set(run.channel_net_devs)) == 1):
        hints.append(f"NCCL used one HCA ({', '.join(run.ib_devices) or 'one device'}): one PCIe x4 path carries it")
    for node in (link.a, link.b):
        chosen = nccl_functions(node)
        if len(node.used_functions) >= 2 and len(chosen) < 2:
            names = ", ".join(f.rdma_dev or "?" for f in chosen) or "no"
            hints.append(f"NCCL_IB_HCA on node {node.name} selects {names} addressed twin only")
    used = [f for n in (link.a, link.b) for f in n.used_functions]
    small = sorted({f"{f.label} {f.mtu}" for f in used if f.mtu and f.mtu < 4200})
    if used and all(f.mtu is not None and f.mtu <= 1500 for f in used):
        hints.append("every end runs MTU 1500, so RoCE sends 1024-byte frames: MTU 9000 on both twins of both "
                     "nodes is the likely cure (published: 21.95 GB/s at MTU 1500 against 22.68 at 9000; MTU 9000 "
                     "is community practice, not NVIDIA's: its playbooks set no MTU)")
    elif small:
        hints.append(f"MTU below 4200 ({', '.join(small)}) limits RoCE to 1024-byte frames "
                     "(about 22.0 against 22.7 GB/s at MTU 9000)")
    totals = [t for t in link.bench.totals("concurrent").values() if t is not None]
    if totals and min(totals) >= 180:
        hints.append(f"ib_write_bw carried {min(totals):.0f} Gb/s on both paths at once, so the link itself is fine: "
                     "a collective this slow has cleared after rebooting both nodes, or came from a development NCCL "
                     "build")
    if run is not None and run.largest_bytes is not None and run.largest_bytes < (1 << 30):
        hints.append(f"the largest size tested was {run.largest_bytes / (1 << 20):.0f} MiB; below 1 GiB bus bandwidth "
                     "is latency-bound (rerun with -b 16G -e 16G)")
    return hints


def nccl_busbw_low(link: LinkFacts, thresholds: Mapping[str, Any]) -> list[Observation]:
    """Bands from published pairs: healthy at or above min_busbw_gbs, a failure below fail_below_busbw_gbs
    (or any #wrong), a warning in between that names what the evidence points at."""
    run = link.bench.nccl
    if run is None or run.busbw_gbs is None:
        why = run.problem if run and run.problem else "no all_gather_perf result"
        return [Observation(subject="nccl", fired=False, skip=why)]
    if run.transport_only and run.wrong == 0:
        largest = f"{run.largest_bytes >> 20} MiB" if run.largest_bytes else "a short sweep"
        return [Observation(subject="nccl", fired=False, required=False,
                            skip=f"a transport proof up to {largest} (check --quick --nccl): bus bandwidth is judged "
                                 "on messages of 1 GiB or more (linkcheck check --bench)")]
    healthy, broken = thresholds["min_busbw_gbs"], thresholds["fail_below_busbw_gbs"]
    # NVIDIA's figure is judged with NVIDIA's statistic; a sweep below 1 GiB has none, and its peak is judged
    # only against the broken band (latency-bound sizes say nothing of a healthy link)
    busbw = run.nvidia_busbw_gbs if run.nvidia_busbw_gbs is not None else run.busbw_gbs
    small_sweep = run.largest_bytes is not None and run.largest_bytes < (1 << 30)
    at = byte_size(run.nvidia_size_bytes) if run.nvidia_size_bytes else "its largest size"
    if run.wrong > 0:
        band, severity = f"{run.wrong} values came back wrong: the collective corrupted data", Severity.ERROR
    elif busbw < broken and not small_sweep:
        band, severity = (f"below {broken} GB/s, the range of the socket fallback (~2 GB/s), the hot-plug state "
                          "(~3 GB/s) and a development NCCL build (3.04 GB/s)"), Severity.ERROR
    elif busbw < healthy:
        pointers = _busbw_pointers(link)
        if run.nvidia_size_bytes != NVIDIA_MESSAGE_BYTES:
            pointers.insert(0, f"NVIDIA measures at 16 GiB only; this figure is taken at {at}, assumed comparable")
        band = (f"below the {healthy} GB/s warn line"
                + (f"; the evidence points at: {'; '.join(pointers)}" if pointers else ""))
        severity = Severity.WARNING
    else:
        band, severity = "", None
    evidence = (Evidence(f"NVIDIA's statistic: mean of out-of-place and in-place bus bandwidth at {at}",
                         None if run.nvidia_busbw_gbs is None else round(run.nvidia_busbw_gbs, 3),
                         "GB/s, all_gather_perf (spark_cluster_setup.py reads # Avg bus bandwidth of a 16 GiB run)"),
                Evidence("peak bus bandwidth (messages >= 1 GiB)", run.busbw_gbs, "GB/s, all_gather_perf"),
                Evidence("# Avg bus bandwidth", run.avg_busbw_gbs, "GB/s, mean over all sizes"),
                Evidence("largest message", run.largest_bytes, "bytes"),
                Evidence("#wrong", run.wrong, "all_gather_perf"))
    return [Observation(subject="nccl", fired=severity is not None, severity=severity,
                        values=BusbwValues(busbw=f"{busbw:.2f}", size=at,
                                           peak="?" if run.busbw_gbs is None else f"{run.busbw_gbs:.2f}",
                                           wrong=run.wrong, band=band),
                        evidence=evidence)]

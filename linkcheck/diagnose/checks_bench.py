"""Named checks on traffic results: hot-plug degraded state, below-nominal paths, NCCL transport and busbw."""

from __future__ import annotations

from typing import Any

from linkcheck.diagnose.observation import Observation
from linkcheck.facts.model import DataPath, LinkFacts, RdmaRun
from linkcheck.model import Evidence

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
            if hint.kind in ("cx7_cable_plugin", "module_cable_plugged") and (hint.time_s or 0) > late_s:
                out.append(Evidence(f"dmesg on {node.name} ({hint.time_s:.0f} s after boot)", hint.text, "dmesg"))
    return tuple(out)


def _per_path(link: LinkFacts, thresholds: dict[str, Any], judge: Any) -> list[Observation]:
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


def hotplug_degraded(link: LinkFacts, thresholds: dict[str, Any]) -> list[Observation]:
    low, high = thresholds["degraded_min_gbps"], thresholds["degraded_max_gbps"]
    hints = _hotplug_evidence(link, thresholds["late_plug_after_boot_s"])

    def judge(path: DataPath, runs: list[RdmaRun], best: float) -> Observation:
        fired = low <= best <= high and _looks_healthy(path)
        return Observation(
            subject=path.key, fired=fired,
            values={"path": path.key, "gbps": f"{best:.1f}", "host_a": link.a.hostname or "node a",
                    "host_b": link.b.hostname or "node b"},
            evidence=tuple(Evidence(f"ib_write_bw {r.mode} {r.direction}", r.gbps, "Gb/s") for r in runs)
            + (Evidence("link speed", [path.a.speed_mbps, path.b.speed_mbps], "ethtool Mb/s"),
               Evidence("PCIe", [f"{f.pcie_speed_gts} GT/s x{f.pcie_width}" for f in (path.a, path.b)], "sysfs"))
            + (hints if fired else ()))

    return _per_path(link, thresholds, judge)


def below_nominal(link: LinkFacts, thresholds: dict[str, Any]) -> list[Observation]:
    low, high = thresholds["degraded_min_gbps"], thresholds["degraded_max_gbps"]

    def judge(path: DataPath, runs: list[RdmaRun], best: float) -> Observation:
        hotplug = low <= best <= high and _looks_healthy(path)
        return Observation(
            subject=path.key, fired=best < thresholds["nominal_min_gbps"] and not hotplug,
            values={"path": path.key, "gbps": f"{best:.1f}", "pct": f"{100 * best / 200:.0f}"},
            evidence=tuple(Evidence(f"ib_write_bw {r.mode} {r.direction}", r.gbps, "Gb/s") for r in runs))

    return _per_path(link, thresholds, judge)


def nccl_socket_fallback(link: LinkFacts, thresholds: dict[str, Any]) -> list[Observation]:
    run = link.bench.nccl
    if run is None or run.network is None and not run.uses_socket:
        return [Observation(subject="nccl", fired=False, skip="no NCCL_DEBUG=INFO transport line in the log")]
    return [Observation(subject="nccl", fired=run.uses_socket or run.network == "Socket",
                        values={"network": run.network or "unknown"},
                        evidence=(Evidence("Using network", run.network, "NCCL log"),
                                  Evidence("NET/IB devices", list(run.ib_devices), "NCCL log")))]


def nccl_busbw_low(link: LinkFacts, thresholds: dict[str, Any]) -> list[Observation]:
    run = link.bench.nccl
    if run is None or run.busbw_gbs is None:
        why = run.problem if run and run.problem else "no all_gather_perf result"
        return [Observation(subject="nccl", fired=False, skip=why)]
    minimum = thresholds["min_busbw_gbs"]
    return [Observation(subject="nccl", fired=run.busbw_gbs < minimum or run.wrong > 0,
                        values={"busbw": f"{run.busbw_gbs:.2f}", "wrong": run.wrong},
                        evidence=(Evidence("peak bus bandwidth", run.busbw_gbs, "GB/s, all_gather_perf"),
                                  Evidence("# Avg bus bandwidth", run.avg_busbw_gbs, "GB/s, all sizes"),
                                  Evidence("#wrong", run.wrong, "all_gather_perf")))]

"""A pair's traffic test in order: the RDMA rounds (bench/rounds.py), then NCCL, then the latency test, under one
guard (bench/guard.py) that ends every process we started, whatever happens; and what the test reads of each node's
perftest.
"""

from __future__ import annotations

import re

from msgspec.structs import replace

from linkcheck.bench import remote
from linkcheck.bench.guard import Progress, TrafficResult, run_guarded
from linkcheck.bench.latency import (
    LatencyOptions,
    latency_budget_s,
    pair_allreduce,
    plan_latency,
    refuse_busy_latency,
    run_latency,
)
from linkcheck.bench.nccl import NcclOptions, run_nccl
from linkcheck.bench.perftest import ToolInfo, refuse_busy
from linkcheck.bench.plan import BenchPath, RdmaOptions, Round, bench_paths, follow_ups, phases, plan_rounds
from linkcheck.bench.rounds import concurrent_rates, low_paths, not_run, rounds_budget_s, run_rounds, untested_runs
from linkcheck.errors import LinkcheckError, ParseError
from linkcheck.facts.model import LinkFacts
from linkcheck.model import Capture
from linkcheck.parsers.identity import parse_perftest_version
from linkcheck.transport.base import Transport


def detect_tools(transports: dict[str, Transport], run_id: str = "") -> tuple[dict[str, ToolInfo], list[Capture]]:
    """`ib_write_bw -V` on each node (it exits 1 by design); JSON output only where it is valid JSON."""
    answers = remote.on_each_node(transports, lambda name, t: t.run("ib_write_bw -V", timeout_s=15))
    caps = [Capture(name, "perftest_version", "ib_write_bw -V", result.stdout, result.stderr, result.exit_status,
                    result.duration_s, meta={"kind": "version", "run_id": run_id})
            for name, result in answers.items()]
    return {cap.node: tool_info(cap) for cap in caps}, caps


def tool_info(cap: Capture) -> ToolInfo:
    """What one node's `ib_write_bw -V` says: the version, and whether --out_json writes valid JSON there."""
    if cap.exit_status == 127 or (cap.skipped or "").startswith("tool missing"):
        raise LinkcheckError(f"node {cap.node}: ib_write_bw not found", fix="sudo apt-get install perftest")
    try:
        version = parse_perftest_version(cap.stdout + cap.stderr)
        return ToolInfo(version.version, version.json_valid)
    except ParseError:
        return ToolInfo(None, False)


def inspected_tools(captures: list[Capture], nodes: list[str]) -> dict[str, ToolInfo] | None:
    """Each node's perftest as the inspection already read it (`ib_write_bw -V` is one of its commands); None
    when a node's answer is not there, so the traffic test asks again."""
    found = {c.node: c for c in captures if c.spec == "perftest_version" and c.exit_status is not None}
    if any(node not in found for node in nodes):
        return None
    return {node: tool_info(found[node]) for node in nodes}


def repetition_captures(captures: list[Capture], n: int) -> list[Capture]:
    """One repetition's captures with their round ids made its own (`<round>-rep<n>`; the mode stays the id's first
    word), so the facts keep the repetitions apart."""
    return [replace(c, meta={**c.meta, "round": f"{c.meta['round']}-rep{n}"}) if c.meta.get("round") else c
            for c in captures]


_REPETITION = re.compile(r"-rep([0-9]+)$")


def repetition_of(round_id: str) -> int | None:
    """The repetition a round id is of (`repetition_captures`' `-rep<n>`); None for a run that was not repeated."""
    found = _REPETITION.search(round_id)
    return int(found.group(1)) if found else None


def _budget_s(rounds: list[Round], rdma: RdmaOptions | None, nccl: NcclOptions | None,
              latency: tuple[int, LatencyOptions] | None = None) -> float:
    """How long the node-side watchdogs stay up: every round, the NCCL run and the latency test at their longest."""
    return (60 + (rounds_budget_s(rounds, rdma) if rdma else 0) + (nccl.timeout_s + 60 if nccl else 0)
            + (latency_budget_s(*latency) if latency else 0))


def _run(transports: dict[str, Transport], registry: remote.ProcessRegistry, link: LinkFacts,
         rdma: RdmaOptions | None, nccl: NcclOptions | None, progress: Progress, out: TrafficResult,
         flaps: list[str], tools: dict[str, ToolInfo] | None, latency: LatencyOptions | None) -> None:
    paths: tuple[BenchPath, ...] = bench_paths(link)
    rounds = plan_rounds(paths, rdma) if rdma is not None else []
    if rdma is not None:
        if tools is None:
            tools, caps = detect_tools(transports, registry.run_id)
            out.captures += caps
        out.captures += untested_runs(link, rdma, registry.run_id)
        refuse_busy(transports, rounds)  # before anything is started
    lat_runs = plan_latency(paths, latency) if latency is not None else []
    if lat_runs:
        refuse_busy_latency(transports, lat_runs)
    registry.prepare(_budget_s(rounds, rdma, nccl, (len(lat_runs), latency) if latency is not None else None))
    if rounds:
        assert rdma is not None and tools is not None
        planned, candidates = phases(rounds, rdma)
        run_rounds(transports, registry, planned, rdma, tools, out, progress, flaps)
        if candidates:
            rates = concurrent_rates(out.captures, link)
            low = low_paths(rates, rdma)
            again, skipped = follow_ups(candidates, low)
            left_out = not_run(skipped, rdma, tools, registry.run_id, rates, low)
            out.captures += left_out
            if left_out:
                progress.not_run(left_out)
            if again:
                progress.rounds_added(len(again))
                run_rounds(transports, registry, again, rdma, tools, out, progress, flaps)
    if nccl is not None:
        run_nccl(transports, registry, link, paths, nccl, out.captures, progress)
    if latency is not None:
        # Last, and one run at a time: nothing else of ours is on the link while a latency is measured.
        progress.latency_started(len(lat_runs))
        first = len(out.captures)
        try:
            job = pair_allreduce(paths, latency, registry.run_id) if latency.allreduce else None
            run_latency(transports, registry, lat_runs, latency, out.captures, job)
        finally:
            progress.latency_done(out.captures[first:])


def run_traffic(transports: dict[str, Transport], link: LinkFacts, *, rdma: RdmaOptions | None,
                nccl: NcclOptions | None, progress: Progress | None = None,
                tools: dict[str, ToolInfo] | None = None, latency: LatencyOptions | None = None) -> TrafficResult:
    """RDMA rounds, then NCCL, then the latency test; stops at the first error, ending all our processes on every
    node. `tools`: each node's perftest as the inspection read it (else `ib_write_bw -V` runs first)."""
    return run_guarded(transports, lambda registry, out, flaps: _run(
        transports, registry, link, rdma, nccl, progress or Progress(), out, flaps, tools, latency))



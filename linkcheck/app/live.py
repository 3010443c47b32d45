"""Live runs: inspect both nodes, optionally run the traffic tests, save the bundle, diagnose what was saved."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import msgspec
from msgspec.structs import replace

from linkcheck.accept.budget import latency_seconds, nccl_seconds, rdma_rounds, rounds_seconds
from linkcheck.app.offline import configured_rules, diagnose_facts
from linkcheck.bench.guard import Progress, Schedule
from linkcheck.bench.latency import LatencyOptions
from linkcheck.bench.nccl import NcclOptions, size_max_bytes
from linkcheck.bench.plan import RdmaOptions, bench_paths
from linkcheck.bench.runner import inspected_tools, repetition_captures, run_traffic
from linkcheck.bundle.anonymize import anonymize_bundle
from linkcheck.bundle.format import Bundle, write_bundle
from linkcheck.bundle.save_dir import default_save_dir
from linkcheck.collect.collector import close_transports, collect, open_transports
from linkcheck.config import Config
from linkcheck.diagnose.rule import Rule
from linkcheck.errors import LinkcheckError, UnreachableError
from linkcheck.facts.model import LinkFacts
from linkcheck.facts.pair import build_link_facts, with_traffic
from linkcheck.facts.snapshot_model import Baseline
from linkcheck.model import Capture
from linkcheck.outcome import Outcome
from linkcheck.transport.base import Transport


class TrafficRequest(msgspec.Struct, frozen=True):
    """Which traffic tests to run after the inspection (None = skip that test).

    `repetitions` > 1 (`accept`) runs the RDMA rounds that many times, then NCCL and the latency test once; each
    repetition's captures carry their own `round` ids (`<round>-rep<n>`), so the facts keep them apart."""

    rdma: RdmaOptions | None = None
    nccl: NcclOptions | None = None
    repetitions: int = 1
    latency: LatencyOptions | None = None


class LiveResult(msgspec.Struct, frozen=True):
    """The saved bundle's folder, the diagnosis of exactly what was saved, and whether Ctrl-C stopped it."""

    saved: Path
    outcome: Outcome | None
    interrupted: bool = False


def _open(config: Config) -> dict[str, Transport]:
    return open_transports(list(config.nodes.values()), known_hosts=config.ssh.known_hosts,
                           accept_new_host_keys=config.ssh.accept_new_host_keys, ssh_config=config.ssh.config,
                           connect_timeout_s=config.ssh.connect_timeout_s)


def inspect(config: Config, transports: dict[str, Transport]) -> tuple[Bundle, bool]:
    """Inspect both nodes in parallel; unreachable nodes are recorded in collection_errors. Ctrl-C keeps what
    arrived (the bundle then says it is partial); the flag says whether that happened."""
    result = collect(transports, timeout_s=config.ssh.inspection_timeout_s,
                     per_command_timeout_s=config.ssh.command_timeout_s,
                     containers={name: target.containers for name, target in config.nodes.items()})
    nodes: dict[str, dict[str, object]] = {name: {"target": str(t)} for name, t in sorted(config.nodes.items())}
    for cap in result.captures:
        if cap.spec == "hostname" and cap.ok and cap.node in nodes:
            nodes[cap.node]["hostname"] = cap.stdout.strip()
    errors = {n: str(e) for n, e in sorted(result.errors.items())}
    if result.interrupted:
        errors["interrupted"] = "interrupted (Ctrl-C) during the inspection; this bundle is partial"
    # Stamped when the answers are in, so the report on screen and the saved bundle name the same moment.
    created = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    return Bundle(captures=result.captures, nodes=nodes, created=created, collection_errors=errors), result.interrupted


def collect_bundle(config: Config) -> Bundle:
    transports = _open(config)
    try:
        return inspect(config, transports)[0]
    finally:
        close_transports(transports)


def _traffic(transports: dict[str, Transport], bundle: Bundle, link: LinkFacts, request: TrafficRequest,
             progress: Progress | None) -> tuple[Bundle, bool]:
    """The bundle with the traffic tests' captures added, and whether Ctrl-C stopped them."""
    if bundle.collection_errors:
        why = "traffic tests not run: a node could not be inspected"
        return replace(bundle, collection_errors={**bundle.collection_errors, "bench": why}), False
    captures: list[Capture] = []
    reps = request.repetitions if request.rdma is not None else 1
    if progress is not None:
        _say_plan(progress, link, request)
    tools = inspected_tools(bundle.captures, list(transports))
    for n in range(1, reps + 1):  # the first error or Ctrl-C ends the repetitions
        last = n == reps
        result = run_traffic(transports, link, rdma=request.rdma, nccl=request.nccl if last else None,
                             progress=progress, tools=tools, latency=request.latency if last else None)
        captures += result.captures if reps == 1 else repetition_captures(result.captures, n)
        if result.error or result.interrupted:
            break
    error = f"repetition {n} of {reps}: {result.error}" if reps > 1 and result.error else result.error
    errors = {**bundle.collection_errors, **({"bench": error} if error else {})}
    return replace(bundle, captures=[*bundle.captures, *captures], collection_errors=errors), result.interrupted


def _say_plan(progress: Progress, link: LinkFacts, request: TrafficRequest) -> None:
    """The plan's shape as the inspection found it (paths, NCCL size under the memory cap); a link the traffic
    test refuses says nothing here: the test itself says why."""
    try:
        paths = len(bench_paths(link))
        nccl = size_max_bytes(link, request.nccl.max_bytes) if request.nccl is not None else None
    except LinkcheckError:
        return
    rdma = request.rdma
    per_run = rdma_rounds(paths, adaptive=rdma.adaptive) if rdma is not None else 0
    round_s = rounds_seconds(per_run, rdma.duration_s) / per_run if rdma is not None and per_run else 0.0
    latency = request.latency
    progress.plan_known(Schedule(paths, nccl, per_run * (request.repetitions if rdma else 1), round_s,
                                 nccl_seconds(nccl) if nccl is not None else 0.0,
                                 latency_seconds(paths, len(latency.sizes), latency.allreduce) if latency else 0.0))


def _to_save(bundle: Bundle, directory: Path | None, *, anonymize: bool) -> tuple[Bundle, Path]:
    """The bundle as it will be saved (anonymized on request) and its folder."""
    if anonymize:
        bundle = anonymize_bundle(bundle)
    target = directory or default_save_dir()
    return replace(bundle, path=target), target


def _refuse_if_nothing_answered(bundle: Bundle) -> None:
    """No capture from any node: one line per node, and no empty bundle folder left behind."""
    if not bundle.captures and bundle.collection_errors:
        raise UnreachableError(bundle.collection_errors)


def low_path_gbps(rules: list[Rule], default: float) -> float:
    """Where the quick tier calls a path low: the same line LINK_BELOW_NOMINAL judges it by (a user's
    threshold override included), so a path the diagnosis would judge below nominal is always run alone."""
    rule = next((r for r in rules if r.id == "LINK_BELOW_NOMINAL"), None)
    value = rule.thresholds.get("nominal_min_gbps") if rule else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default


def run_live(config: Config, save_dir: Path | None, *, anonymize: bool, diagnose: bool,
             traffic: TrafficRequest | None = None, progress: Progress | None = None,
             baseline: Baseline | None = None) -> LiveResult:
    """Collect (and test traffic), save, and diagnose the saved bundle with the configured playbooks, against
    `baseline` when one is given (its drift rules then speak in that one diagnosis).

    The playbooks load first, so a broken one stops the run before anything touches the nodes."""
    rules = configured_rules([], config) if diagnose else []
    if traffic is not None and traffic.rdma is not None and traffic.rdma.adaptive:
        traffic = replace(traffic, rdma=replace(traffic.rdma, low_gbps=low_path_gbps(rules, traffic.rdma.low_gbps)))
    transports = _open(config)
    try:
        bundle, interrupted = inspect(config, transports)
        if not interrupted:
            _refuse_if_nothing_answered(bundle)
        # The facts are built once: the traffic plan reads them, then the diagnosis adds the traffic results.
        link = build_link_facts(bundle.captures, bundle.collection_errors, config.expected_link)
        if not interrupted and traffic is not None and (traffic.rdma or traffic.nccl or traffic.latency):
            bundle, interrupted = _traffic(transports, bundle, link, traffic, progress)
    finally:
        close_transports(transports)
    saving, saved = _to_save(bundle, save_dir, anonymize=anonymize)
    if not diagnose or (interrupted and not bundle.captures):
        write_bundle(saving, saved)
        return LiveResult(saved, None, interrupted)
    write_bundle(saving, saved)  # first: a failed write is said before any verdict is shown
    # The report on screen keeps the real names: only what is saved is anonymised.
    outcome = diagnose_facts(replace(bundle, path=saved), with_traffic(link, bundle.captures), rules, baseline)
    return LiveResult(saved, outcome, interrupted)

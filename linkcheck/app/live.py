"""Live runs: inspect both nodes, optionally run the traffic tests, save the bundle, diagnose what was saved."""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

# Only light imports here: the inspection should start before the rest of linkcheck is loaded.
from linkcheck.bundle.save_dir import default_save_dir

if TYPE_CHECKING:
    from concurrent.futures import Future

    from linkcheck.bench.nccl import NcclOptions
    from linkcheck.bench.plan import RdmaOptions
    from linkcheck.bench.runner import Progress
    from linkcheck.bundle.format import Bundle
    from linkcheck.config import Config
    from linkcheck.diagnose.rule import Rule
    from linkcheck.facts.model import LinkFacts
    from linkcheck.facts.snapshot_model import Baseline
    from linkcheck.model import Capture
    from linkcheck.outcome import Outcome
    from linkcheck.transport.base import Transport


@dataclass(frozen=True)
class TrafficRequest:
    """Which traffic tests to run after the inspection (None = skip that test).

    `repetitions` > 1 (`accept`) runs the RDMA rounds that many times, then NCCL once; each repetition's
    captures carry their own `round` ids (`<round>-rep<n>`), so the facts keep them apart."""

    rdma: RdmaOptions | None = None
    nccl: NcclOptions | None = None
    repetitions: int = 1


@dataclass(frozen=True)
class LiveResult:
    """The saved bundle's folder, the diagnosis of exactly what was saved, and whether Ctrl-C stopped it."""

    saved: Path
    outcome: Outcome | None
    interrupted: bool = False


def _open(config: Config) -> dict[str, Transport]:
    from linkcheck.collect.collector import open_transports

    return open_transports(list(config.nodes.values()), known_hosts=config.ssh.known_hosts,
                           accept_new_host_keys=config.ssh.accept_new_host_keys, ssh_config=config.ssh.config,
                           connect_timeout_s=config.ssh.connect_timeout_s)


def inspect(config: Config, transports: dict[str, Transport]) -> Bundle:
    """Inspect both nodes in parallel; unreachable nodes are recorded in collection_errors."""
    from linkcheck.collect.collector import collect

    result = collect(transports, timeout_s=config.ssh.inspection_timeout_s,
                     per_command_timeout_s=config.ssh.command_timeout_s)
    from linkcheck.bundle.format import Bundle  # loaded meanwhile by the diagnosis imports, not before the logins

    nodes: dict[str, dict[str, object]] = {name: {"target": str(t)} for name, t in sorted(config.nodes.items())}
    for cap in result.captures:
        if cap.spec == "hostname" and cap.ok:
            nodes[cap.node]["hostname"] = cap.stdout.strip()
    # Stamped when the answers are in, so the report on screen and the saved bundle name the same moment.
    created = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    return Bundle(captures=result.captures, nodes=nodes, created=created,
                  collection_errors={n: str(e) for n, e in sorted(result.errors.items())})


def collect_bundle(config: Config) -> Bundle:
    from linkcheck.collect.collector import close_transports

    transports = _open(config)
    try:
        return inspect(config, transports)
    finally:
        close_transports(transports)


def _traffic(transports: dict[str, Transport], bundle: Bundle, link: LinkFacts, request: TrafficRequest,
             progress: Progress | None) -> tuple[Bundle, bool]:
    """The bundle with the traffic tests' captures added, and whether Ctrl-C stopped them."""
    from linkcheck.bench.runner import run_traffic

    if bundle.collection_errors:
        why = "traffic tests not run: a node could not be inspected"
        return replace(bundle, collection_errors={**bundle.collection_errors, "bench": why}), False
    captures: list[Capture] = []
    reps = request.repetitions if request.rdma is not None else 1
    for n in range(1, reps + 1):  # the first error or Ctrl-C ends the repetitions
        result = run_traffic(transports, link, rdma=request.rdma, nccl=request.nccl if n == reps else None,
                             progress=progress)
        captures += result.captures if reps == 1 else _repetition(result.captures, n)
        if result.error or result.interrupted:
            break
    error = f"repetition {n} of {reps}: {result.error}" if reps > 1 and result.error else result.error
    errors = {**bundle.collection_errors, **({"bench": error} if error else {})}
    return replace(bundle, captures=[*bundle.captures, *captures], collection_errors=errors), result.interrupted


def _repetition(captures: list[Capture], n: int) -> list[Capture]:
    """One repetition's captures with their round ids made its own (the mode stays the id's first word)."""
    return [replace(c, meta={**c.meta, "round": f"{c.meta['round']}-rep{n}"}) if c.meta.get("round") else c
            for c in captures]


def _to_save(bundle: Bundle, directory: Path | None, *, anonymize: bool) -> tuple[Bundle, Path]:
    """The bundle as it will be saved (anonymized on request) and its folder."""
    if anonymize:
        from linkcheck.bundle.anonymize import anonymize_bundle

        bundle = anonymize_bundle(bundle)
    target = directory or default_save_dir()
    return replace(bundle, path=target), target


def _rules(config: Config) -> list[Rule]:
    from linkcheck.app.offline import configured_rules

    return configured_rules([], config)


@contextmanager
def _responsive_threads(interval_s: float = 0.0005) -> Iterator[None]:
    """While the main thread imports, an SSH thread whose answer has arrived waits for the GIL up to the
    switch interval (5 ms by default), once per packet of the handshake; a short interval keeps the
    connection's pace."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(interval_s)
    try:
        yield
    finally:
        sys.setswitchinterval(previous)


def _warm_diagnosis_imports() -> None:
    """Import the diagnosis path now: done while the nodes are still answering, it costs no wall time."""
    from linkcheck.collect.specs import SPECS
    from linkcheck.facts.sources import preload_parsers

    preload_parsers(spec.id for spec in SPECS)


def _interrupted_inspection(config: Config, pending: Future[Bundle]) -> Bundle:
    """Ctrl-C during the inspection: the part that arrived, once the closed connections end it (or none)."""
    from concurrent.futures import TimeoutError as FutureTimeout

    from linkcheck.bundle.format import Bundle

    try:
        bundle = pending.result(timeout=10)
    except (FutureTimeout, Exception):  # nothing usable came back: the bundle still says what happened
        bundle = Bundle(captures=[], nodes={n: {"target": str(t)} for n, t in sorted(config.nodes.items())})
    why = "interrupted (Ctrl-C) during the inspection; this bundle is partial"
    return replace(bundle, collection_errors={**bundle.collection_errors, "interrupted": why})


def _refuse_if_nothing_answered(bundle: Bundle) -> None:
    """No capture from any node: one line per node, and no empty bundle folder left behind."""
    from linkcheck.errors import UnreachableError

    if not bundle.captures and bundle.collection_errors:
        raise UnreachableError(bundle.collection_errors)


def run_live(config: Config, save_dir: Path | None, *, anonymize: bool, diagnose: bool,
             traffic: TrafficRequest | None = None, progress: Progress | None = None,
             baseline: Baseline | None = None) -> LiveResult:
    """Collect (and test traffic), save, and diagnose the saved bundle with the configured playbooks, against
    `baseline` when one is given (its drift rules then speak in that one diagnosis).

    The inspection starts first, in the background, because it is mostly waiting on the nodes; the
    playbooks load and the diagnosis code imports meanwhile. A broken playbook still stops the run
    before anything but the (read-only) inspection has touched the nodes.
    """
    from concurrent.futures import ThreadPoolExecutor

    from linkcheck.collect.collector import close_transports

    transports = _open(config)
    interrupted = False
    try:
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="inspect") as pool, _responsive_threads():
            pending = pool.submit(inspect, config, transports)
            try:
                rules = _rules(config) if diagnose else []
                if diagnose:
                    _warm_diagnosis_imports()
                bundle = pending.result()
            except KeyboardInterrupt:
                close_transports(transports)  # the scripts end; what they sent so far is kept
                bundle, interrupted = _interrupted_inspection(config, pending), True
            except BaseException:
                close_transports(transports)  # ends the remote scripts at once instead of waiting them out
                raise
        if not interrupted:
            _refuse_if_nothing_answered(bundle)
        from linkcheck.facts.pair import build_link_facts, with_traffic

        # The facts are built once: the traffic plan reads them, then the diagnosis adds the traffic results.
        link = build_link_facts(bundle.captures, bundle.collection_errors, config.expected_link)
        if not interrupted and traffic is not None and (traffic.rdma or traffic.nccl):
            bundle, interrupted = _traffic(transports, bundle, link, traffic, progress)
    finally:
        close_transports(transports)
    from linkcheck.bundle.format import write_bundle

    saving, saved = _to_save(bundle, save_dir, anonymize=anonymize)
    bundle = replace(bundle, path=saved)  # the report on screen keeps the real names: only what is saved is anonymised
    if not diagnose or (interrupted and not bundle.captures):
        write_bundle(saving, saved)
        return LiveResult(saved, None, interrupted)
    from linkcheck.app.offline import diagnose_facts

    # Creating the bundle's files is mostly waiting on the file system, so the diagnosis of that very
    # bundle runs meanwhile; the bundle is written in full even if the diagnosis fails.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="save") as pool:
        writing = pool.submit(write_bundle, saving, saved)
        outcome = diagnose_facts(bundle, with_traffic(link, bundle.captures), rules, baseline)
        writing.result()
    return LiveResult(saved, outcome, interrupted)

"""Live runs: inspect both nodes, save the bundle (optionally anonymised), diagnose it like a saved one."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from linkcheck.collect.bundle import Bundle, write_bundle
from linkcheck.config import Config
from linkcheck.diagnose.playbook import load_playbooks, with_thresholds
from linkcheck.pipeline import Outcome, diagnose_captures


@dataclass(frozen=True)
class LiveResult:
    """The saved bundle's folder and the diagnosis of exactly what was saved."""

    saved: Path
    outcome: Outcome | None


def default_save_dir() -> Path:
    return Path(f"linkcheck-{dt.datetime.now().strftime('%Y%m%d-%H%M%S')}")


def collect_bundle(config: Config) -> Bundle:
    """Inspect both nodes in parallel; unreachable nodes are recorded in collection_errors."""
    from linkcheck.collect.collector import close_transports, collect, open_transports

    transports = open_transports(
        config.nodes.values(), known_hosts=config.ssh.known_hosts,
        accept_new_host_keys=config.ssh.accept_new_host_keys, ssh_config=config.ssh.config,
        connect_timeout_s=config.ssh.connect_timeout_s)
    try:
        result = collect(transports, timeout_s=config.ssh.inspection_timeout_s,
                         per_command_timeout_s=config.ssh.command_timeout_s)
    finally:
        close_transports(transports)
    nodes = {name: {"target": str(target)} for name, target in sorted(config.nodes.items())}
    for cap in result.captures:
        if cap.spec == "hostname" and cap.ok:
            nodes[cap.node]["hostname"] = cap.stdout.strip()
    return Bundle(captures=result.captures, nodes=nodes,
                  collection_errors={n: str(e) for n, e in sorted(result.errors.items())})


def save(bundle: Bundle, directory: Path | None, *, anonymize: bool) -> tuple[Bundle, Path]:
    if anonymize:
        from linkcheck.collect.anonymize import anonymize_bundle

        bundle = anonymize_bundle(bundle)
    target = directory or default_save_dir()
    write_bundle(bundle, target)
    bundle.path = target
    return bundle, target


def run_live(config: Config, save_dir: Path | None, *, anonymize: bool, diagnose: bool) -> LiveResult:
    """Collect, save, and (for `check`) diagnose the saved bundle with the configured playbooks."""
    rules = []
    if diagnose:  # load the rules first, so a broken playbook fails before we touch the nodes
        rules = with_thresholds(load_playbooks(list(config.playbooks)), config.thresholds,
                                config.source or "linkcheck.yaml")
    bundle, saved = save(collect_bundle(config), save_dir, anonymize=anonymize)
    return LiveResult(saved, diagnose_captures(bundle, rules) if diagnose else None)

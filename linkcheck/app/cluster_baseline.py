"""A cluster's baselines: save one from a cluster's bundle, and judge a cluster (a saved bundle, or the live check's
result) against one."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from linkcheck.app.cluster_check import cluster_bundle
from linkcheck.app.offline import configured_rules
from linkcheck.baseline import store
from linkcheck.baseline.drift import cluster_snapshot, compare
from linkcheck.baseline.store import ClusterBaseline
from linkcheck.bundle.verify import load_trusted
from linkcheck.cluster_outcome import ClusterCheck
from linkcheck.config import Config
from linkcheck.diagnose.rule import Rule
from linkcheck.errors import UsageError


def save_cluster_baseline(name: str, path: Path, *, force: bool, playbooks: list[Path] | None = None,
                          config: Config | None = None) -> tuple[Path, str]:
    """Judge the cluster's bundle and store its state as baseline `name`; only a passing run, unless `force`.

    Returns where it was stored and the run's verdict."""
    store.check_name(name)
    bundle = load_trusted(path, overridable=False)  # no --allow-unverified here
    rules = configured_rules(list(playbooks or []), config, kind="all")
    check = cluster_bundle(path, rules, expected=config.expected_cluster if config else None)
    verdict = check.verdict.value
    if verdict != "pass" and not force:
        raise UsageError(f"{path}: the cluster's verdict is {verdict}, not pass; a baseline is the known-good state "
                         "(fix the findings first, or pass --force to record it anyway)")
    snapshot = cluster_snapshot(check, bundle.captures, verdict)
    baseline = store.new_cluster_baseline(name, snapshot, path, bundle.created, forced=verdict != "pass")
    return store.save(baseline, overwrite=force), verdict


def cluster_bundle_against(path: Path, rules: list[Rule], baseline: ClusterBaseline, *, allow_unverified: bool = False,
                           warn: Callable[[str], None] | None = None, config: Config | None = None) -> ClusterCheck:
    """A saved cluster bundle judged again, and against `baseline` (`diagnose CLUSTER_BUNDLE --baseline NAME`)."""
    check = cluster_bundle(path, rules, allow_unverified=allow_unverified, warn=warn,
                           expected=config.expected_cluster if config else None)
    captures = load_trusted(path, allow_unverified=allow_unverified).captures  # the runs' parameters
    return compare(check, baseline, captures, rules)

"""The pipeline's library entry points: bundle -> facts -> findings, shared by every CLI command."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from linkcheck.bundle.format import Bundle
from linkcheck.bundle.verify import load_trusted
from linkcheck.diagnose.engine import diagnose
from linkcheck.diagnose.playbook import load_playbooks, of_kind, with_thresholds
from linkcheck.diagnose.rule import Rule
from linkcheck.facts.drift import attach_baseline
from linkcheck.facts.model import ExpectedLink, LinkFacts
from linkcheck.facts.pair import build_link_facts
from linkcheck.outcome import Outcome

if TYPE_CHECKING:
    from linkcheck.config import Config
    from linkcheck.facts.snapshot_model import Baseline


def diagnose_captures(bundle: Bundle, rules: list[Rule], expected: ExpectedLink | None = None,
                      baseline: Baseline | None = None) -> Outcome:
    return diagnose_facts(bundle, build_link_facts(bundle.captures, bundle.collection_errors, expected), rules,
                          baseline)


def diagnose_facts(bundle: Bundle, link: LinkFacts, rules: list[Rule], baseline: Baseline | None = None) -> Outcome:
    """Diagnose facts already built from `bundle` (a live run builds them once, for its traffic plan too), against
    `baseline` when one is given: its drift rules then speak in this one diagnosis."""
    if baseline is not None:
        link = attach_baseline(bundle, link, baseline)
    problems = {f"bundle: {p}": p for p in bundle.problems}
    errors = {**bundle.collection_errors, **problems}
    return Outcome(bundle, link, diagnose(link, rules, collection_errors=errors), tuple(rules))


def configured_rules(playbooks: list[Path], config: Config | None,
                     kind: Literal["pair", "cluster", "all"] = "pair") -> list[Rule]:
    """Built-in rules, the given playbooks and the config's, with the config's threshold overrides: the same
    set for `check` and for `diagnose` of its bundle (`kind` pair), or for `topology` (cluster). The overrides
    are checked against every rule, so one linkcheck.yaml may tune both a pair's rules and a cluster's."""
    if config is None:
        return load_playbooks(playbooks, kind=kind)
    everything = with_thresholds(load_playbooks([*playbooks, *config.playbooks], kind="all"), config.thresholds,
                                 config.source or "linkcheck.yaml")
    return of_kind(everything, kind)


def diagnose_bundle(path: Path, playbooks: list[Path] | None = None, config: Config | None = None,
                    baseline: Baseline | None = None, *, allow_unverified: bool = False,
                    warn: Callable[[str], None] | None = None, overridable: bool = True) -> Outcome:
    """Load a saved bundle and diagnose it with the built-in playbooks plus the user's and the config's, and
    against `baseline` when one is given. A bundle that `verify` rejects is refused (BundleError), or with
    `allow_unverified` diagnosed without its unverified files, each problem passed to `warn`; `overridable` as
    for `load_trusted`."""
    rules = configured_rules(list(playbooks or []), config)
    bundle = load_trusted(path, allow_unverified=allow_unverified, warn=warn, overridable=overridable)
    return diagnose_captures(bundle, rules, config.expected_link if config else None, baseline)

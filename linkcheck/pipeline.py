"""The pipeline's library entry points: bundle -> facts -> findings, shared by every CLI command."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from linkcheck.collect.bundle import Bundle, load_bundle
from linkcheck.diagnose.engine import Diagnosis, diagnose
from linkcheck.diagnose.playbook import Rule, load_playbooks
from linkcheck.facts.model import LinkFacts
from linkcheck.facts.pair import build_link_facts
from linkcheck.model import Record


@dataclass(frozen=True, repr=False, eq=False)
class Outcome(Record):
    """What one diagnosis run produced, for the reporters."""

    bundle: Bundle
    link: LinkFacts
    diagnosis: Diagnosis


def diagnose_captures(bundle: Bundle, rules: list[Rule]) -> Outcome:
    link = build_link_facts(bundle.captures, bundle.collection_errors)
    problems = {f"bundle: {p}": p for p in bundle.problems}
    errors = {**bundle.collection_errors, **problems}
    return Outcome(bundle, link, diagnose(link, rules, collection_errors=errors))


def diagnose_bundle(path: Path, playbooks: list[Path] | None = None) -> Outcome:
    """Load a saved bundle and diagnose it with the built-in playbooks plus the user's."""
    rules = load_playbooks(playbooks)
    return diagnose_captures(load_bundle(path), rules)

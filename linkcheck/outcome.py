"""Outcome: what one diagnosis produced (the bundle, its facts, the findings and the rules that judged them),
the one record every reporter reads."""

from __future__ import annotations

import msgspec

from linkcheck.bundle.format import Bundle
from linkcheck.diagnose.engine import Diagnosis
from linkcheck.diagnose.rule import Rule
from linkcheck.facts.model import LinkFacts


class Outcome(msgspec.Struct, frozen=True):
    """What one diagnosis run produced, for the reporters."""

    bundle: Bundle
    link: LinkFacts
    diagnosis: Diagnosis
    rules: tuple[Rule, ...] = ()  # what judged it: reports name each finding's playbook (its stage)

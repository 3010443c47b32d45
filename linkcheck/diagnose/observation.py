"""What a named check reports per subject, before the engine turns it into a Finding."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from linkcheck.facts.model import LinkFacts
from linkcheck.model import Evidence, Severity


@dataclass(frozen=True, slots=True)
class Observation:
    """One subject's outcome: fired or not, the values for the message and fix, the evidence."""

    subject: str
    fired: bool
    nodes: tuple[str, ...] = ("a", "b")
    values: dict[str, Any] = field(default_factory=dict)
    evidence: tuple[Evidence, ...] = ()
    skip: str | None = None
    # A check that grades its finding (a warning band below a failure band) lowers the rule's severity here.
    severity: Severity | None = None


CheckFunc = Callable[[LinkFacts, dict[str, Any]], list[Observation]]


@dataclass(frozen=True, slots=True)
class CheckDef:
    """A named check: the function, the placeholders it fills, the thresholds it reads."""

    func: CheckFunc
    placeholders: frozenset[str]
    thresholds: frozenset[str] = frozenset()

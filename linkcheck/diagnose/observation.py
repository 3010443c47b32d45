"""What a named check reports per subject, before the engine turns it into a Finding."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from linkcheck.facts.model import LinkFacts
from linkcheck.model import Evidence, Severity


class CheckValues:
    """Base of a named check's values: a frozen dataclass whose fields are exactly the placeholders that the
    messages and fixes of its rules may use, so the loader knows them from the type and none goes unfilled."""

    __slots__ = ()

    @classmethod
    def names(cls) -> frozenset[str]:
        return frozenset(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]

    def as_dict(self) -> dict[str, object]:
        return {name: getattr(self, name) for name in self.names()}


@dataclass(frozen=True, slots=True)
class Observation:
    """One subject's outcome: fired or not, the values for the message and fix, the evidence.

    Named checks give their typed values record; condition rules give the subject's flattened facts."""

    subject: str
    fired: bool
    nodes: tuple[str, ...] = ("a", "b")
    values: CheckValues | Mapping[str, object] | None = None
    evidence: tuple[Evidence, ...] = ()
    skip: str | None = None
    # A check that grades its finding (a warning band below a failure band) lowers the rule's severity here.
    severity: Severity | None = None

    def value_map(self) -> dict[str, object]:
        if isinstance(self.values, CheckValues):
            return self.values.as_dict()
        return dict(self.values or {})


CheckFunc = Callable[[LinkFacts, dict[str, Any]], list[Observation]]


@dataclass(frozen=True, slots=True)
class CheckDef:
    """A named check: the function, the type of the values it fills, the thresholds it reads."""

    func: CheckFunc
    values: type[CheckValues]
    thresholds: frozenset[str] = frozenset()

    @property
    def placeholders(self) -> frozenset[str]:
        return self.values.names()

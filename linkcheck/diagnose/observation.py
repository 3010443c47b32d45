"""What a named check reports per subject, before the engine turns it into a Finding."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from typing import Any, cast

import msgspec

from linkcheck.cluster.facts import ClusterFacts
from linkcheck.facts.model import LinkFacts
from linkcheck.model import Evidence, Severity


class ShellText(str):
    """A fix value that linkcheck composed as shell text (a command or a sentence around one) with each of its
    node-derived parts quoted by `sh`: the fix renderer takes it as it is, where it quotes any other value."""


def sh(value: object) -> str:
    """One word of a command line, whatever the value holds (a quote, `;`, `$(...)`, a space)."""
    return shlex.quote(str(value))


class Observation(msgspec.Struct, frozen=True):
    """One subject's outcome: fired or not, the values for the message and fix, the evidence.

    Named checks give their typed values record (a record whose fields are exactly the placeholders that the
    messages and fixes of its rules may use); condition rules give the subject's flattened facts."""

    subject: str
    fired: bool
    nodes: tuple[str, ...] = ("a", "b")
    values: msgspec.Struct | Mapping[str, object] | None = None
    evidence: tuple[Evidence, ...] = ()
    skip: str | None = None
    # A check that grades its finding (a warning band below a failure band) lowers the rule's severity here.
    severity: Severity | None = None
    # A skip that must not make the verdict inconclusive although its rule is required (what was never asked).
    required: bool | None = None

    def value_map(self) -> dict[str, object]:
        if isinstance(self.values, msgspec.Struct):
            return msgspec.structs.asdict(self.values)
        return dict(self.values or {})


CheckFunc = Callable[[LinkFacts, Mapping[str, Any]], list[Observation]]
ClusterCheckFunc = Callable[[ClusterFacts, Mapping[str, Any]], list[Observation]]


class CheckDef(msgspec.Struct, frozen=True):
    """A named check: the function, the record of the values it fills, the thresholds it reads, and whether it reads
    a cluster's facts (for rules of a cluster's scopes) or a pair's."""

    func: CheckFunc | ClusterCheckFunc
    values: type
    thresholds: frozenset[str] = frozenset()
    cluster: bool = False

    @property
    def placeholders(self) -> frozenset[str]:
        # The values record's fields are the placeholders it fills; the loader refuses a
        # rule that uses any other placeholder, so none goes unfilled.
        return frozenset(getattr(self.values, "__struct_fields__", ()))

    def observe(self, facts: LinkFacts | ClusterFacts, thresholds: Mapping[str, Any]) -> list[Observation]:
        """The check over the facts it reads; the loader keeps a cluster's checks to a cluster's scopes."""
        if isinstance(facts, ClusterFacts) != self.cluster:
            kind = "cluster" if self.cluster else "pair"
            raise TypeError(f"a {kind}'s check ({self.values.__name__}) was given the other's facts")
        if isinstance(facts, ClusterFacts):
            return cast(ClusterCheckFunc, self.func)(facts, thresholds)
        return cast(CheckFunc, self.func)(facts, thresholds)

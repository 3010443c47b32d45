"""A rule as data: its condition tree and everything a user needs when it fires (the playbook loader builds them)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from linkcheck.model import Severity


class Condition(msgspec.Struct, frozen=True):
    """`all`/`any` of children, or one operator applied to a fact (or two facts for `differs`)."""

    op: str
    fact: str | None = None
    value: Any = None
    children: tuple[Condition, ...] = ()

    def facts(self) -> set[str]:
        own = {self.fact} if self.fact else set()
        if self.op == "differs":
            own |= set(self.value)
        return own.union(*(c.facts() for c in self.children))


class Choice(msgspec.Struct, frozen=True):
    """One text a computed value may take: the first choice whose condition holds (or that has none) gives it."""

    text: str
    when: Condition | None = None


class Grade(msgspec.Struct, frozen=True):
    """A severity the finding takes instead of the rule's when this condition holds too (the first that holds)."""

    when: Condition
    severity: Severity


class EvidenceSpec(msgspec.Struct, frozen=True):
    """One evidence line a `when` rule shows: a fact's value (or, with `each`, one line per entry of a mapping fact,
    `{entry}` naming it), under a name and a source that may hold placeholders."""

    fact: str
    name: str = ""  # default: the fact path ({entry} with each)
    source: str = ""  # default: the rule's scope
    each: bool = False


class Explanation(msgspec.Struct, frozen=True):
    """A rule whose firing finding explains this rule's: the report lists this one under it. `same_subject`: only a
    finding on the same subject (or one its subject starts with, `nccl` for `nccl all_gather busbw`) explains."""

    rule: str
    same_subject: bool = False


class Rule(msgspec.Struct, frozen=True):
    """One diagnosis with everything a user needs when it fires."""

    id: str
    title: str
    severity: Severity
    scope: str
    message: str
    mechanism: str = ""
    check: str | None = None
    when: Condition | None = None
    where: Condition | None = None
    needs: tuple[str, ...] = ()
    thresholds: Mapping[str, Any] = {}  # a shared default: read-only, as Mapping says
    fix: tuple[str, ...] = ()
    references: tuple[str, ...] = ()
    required: bool = True
    source: str = ""
    threshold_sources: Mapping[str, str] = {}  # threshold name -> where its value comes from
    unknown: str = ""  # a `when` rule's skip reason when a fact it needs is unknown (else "<fact> is unknown")
    subject: str = ""  # a `when` rule's subject as a template (else the scope's: a twin, a path, a node, ...)
    values: Mapping[str, tuple[Choice, ...]] = {}  # a `when` rule's computed texts, by name, for its placeholders
    grades: tuple[Grade, ...] = ()
    evidence: tuple[EvidenceSpec, ...] = ()  # a `when` rule's evidence (else the facts its condition compares)
    explained_by: tuple[Explanation, ...] = ()
    aliases: tuple[str, ...] = ()  # former ids, accepted for one release (playbook.resolve_id)

    def conditions(self) -> list[Condition]:
        """Every condition of the rule: when, where, and those of its grades and computed values."""
        found = [c for c in (self.when, self.where) if c is not None] + [g.when for g in self.grades]
        return found + [c.when for choices in self.values.values() for c in choices if c.when is not None]

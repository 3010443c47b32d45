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

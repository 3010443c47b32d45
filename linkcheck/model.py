"""Shared value types that cross module boundaries: captures, findings, statuses, and their Record base."""

from __future__ import annotations

import _thread
import dataclasses
import enum
from dataclasses import dataclass, field
from typing import Any


class Record:
    """Base of the frozen records: `==`, `hash()` and `repr()` exactly as `@dataclass(frozen=True)` writes them.

    Subclasses are declared `@dataclass(frozen=True, repr=False, eq=False)` and inherit these three.
    dataclasses compiles each generated method with its own exec(); sharing these three cuts a third of
    what defining a record costs, and a diagnosis defines about fifty of them. Semantics are Python 3.11's:
    `==` compares the `compare` fields as tuples when both classes are the same, `hash()` hashes the
    tuple of the `hash` (default: `compare`) fields, `repr()` shows the `repr` fields and "..." on recursion.
    """

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            names = _field_names(self.__class__)[0]
            return tuple(getattr(self, n) for n in names) == tuple(getattr(other, n) for n in names)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, n) for n in _field_names(self.__class__)[1]))

    def __repr__(self) -> str:
        key = id(self), _thread.get_ident()
        if key in _REPR_RUNNING:
            return "..."
        _REPR_RUNNING.add(key)
        try:
            names = _field_names(self.__class__)[2]
            return f"{self.__class__.__qualname__}({', '.join(f'{n}={getattr(self, n)!r}' for n in names)})"
        finally:
            _REPR_RUNNING.discard(key)


_REPR_RUNNING: set[tuple[int, int]] = set()
_NAMES: dict[type, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {}


def _field_names(cls: type) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """Names of the fields that `==`, `hash()` and `repr()` use, in declaration order; computed once per class."""
    names = _NAMES.get(cls)
    if names is None:
        fields = dataclasses.fields(cls)
        names = _NAMES[cls] = (
            tuple(f.name for f in fields if f.compare),
            tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash)),
            tuple(f.name for f in fields if f.repr),
        )
    return names


class Status(str, enum.Enum):
    """Outcome of one rule on one subject."""

    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    SKIP = "skip"


class Severity(str, enum.Enum):
    """How bad a rule's problem is when it fires: `warning` yields warn, `error` yields fail."""

    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


class Verdict(str, enum.Enum):
    """The one-word answer for the whole link."""

    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    INCONCLUSIVE = "inconclusive"


@dataclass(frozen=True, repr=False, eq=False)
class Capture(Record):
    """One command's raw result on one node, exactly as it came back.

    `exit_status` is None when the command never ran or its status was lost (truncated answer);
    `skipped` then says why (tool missing, sudo refused, node unreachable, ...).
    """

    node: str
    spec: str
    command: str
    stdout: str
    stderr: str = ""
    exit_status: int | None = 0
    duration_s: float = 0.0
    arg: str | None = None
    skipped: str | None = None
    # Structured identity of benchmark captures (path, mode, direction, role, device, ...).
    meta: dict[str, str] = field(default_factory=dict, compare=False)

    @property
    def key(self) -> tuple[str, str, str | None]:
        return (self.node, self.spec, self.arg)

    @property
    def ok(self) -> bool:
        """True when the command ran and exited 0; its stdout is then worth parsing."""
        return self.skipped is None and self.exit_status == 0


@dataclass(frozen=True, repr=False, eq=False)
class Evidence(Record):
    """One observed value that decided a finding, with where it came from."""

    fact: str
    value: Any
    source: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"fact": self.fact, "value": self.value, "source": self.source}


@dataclass(frozen=True, repr=False, eq=False)
class Finding(Record):
    """The result of one rule on one subject (a node, an HCA, a path or the pair)."""

    rule_id: str
    status: Status
    severity: Severity
    subject: str
    title: str
    message: str
    evidence: tuple[Evidence, ...] = ()
    fix: tuple[str, ...] = ()
    mechanism: str = ""
    references: tuple[str, ...] = ()
    required: bool = True
    skip_reason: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.rule_id,
            "status": self.status.value,
            "severity": self.severity.value,
            "subject": self.subject,
            "title": self.title,
            "message": self.message,
            "evidence": [e.to_dict() for e in self.evidence],
            "fix": list(self.fix),
            "mechanism": self.mechanism,
            "references": list(self.references),
            "skip_reason": self.skip_reason,
        }

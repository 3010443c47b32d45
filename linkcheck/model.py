"""Shared value types that cross module boundaries: captures, findings, statuses, the most nodes a check holds."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

import msgspec

# NVIDIA documents a pair, a ring of three, and a switch (its helper stops at four); owners run up to eight nodes on a
# switch, the most a cluster check is planned for (docs/cluster.md): the most nodes named, or a bundle's record holds.
MAX_NODES = 8


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


class Capture(msgspec.Struct, frozen=True):
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
    meta: dict[str, str] = {}

    @property
    def key(self) -> tuple[str, str, str | None]:
        return (self.node, self.spec, self.arg)

    @property
    def ok(self) -> bool:
        """True when the command ran and exited 0; its stdout is then worth parsing."""
        return self.skipped is None and self.exit_status == 0


class Evidence(msgspec.Struct, frozen=True):
    """One observed value that decided a finding, with where it came from."""

    fact: str
    value: Any
    source: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"fact": self.fact, "value": self.value, "source": self.source}


class Finding(msgspec.Struct, frozen=True):
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
    extra: Mapping[str, Any] = {}  # a shared default: read-only
    explained_by: str | None = None  # the finding id of the finding that explains this one (the rules declare which)

    @property
    def finding_id(self) -> str:
        """`RULE_ID:subject`, what `explained_by` names."""
        return f"{self.rule_id}:{self.subject}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.rule_id,
            "finding_id": self.finding_id,
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
            "explained_by": self.explained_by,
        }

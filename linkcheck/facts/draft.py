"""A node's facts while they are being gathered: its sources, the functions found so far, what is missing."""

from __future__ import annotations

from typing import Any

from msgspec.structs import replace

from linkcheck.facts.model import Function
from linkcheck.facts.sources import NodeSources
from linkcheck.model import Capture


class NodeDraft:
    """What every fact-building step reads and fills; NodeFacts is made from it once all steps ran."""

    def __init__(self, name: str, captures: list[Capture]) -> None:
        self.src = NodeSources(name, captures)
        self.name = name
        self.unavailable: dict[str, str] = {}
        self.functions: dict[str, Function] = {}

    def missing(self, group: str, reason: str) -> None:
        """Record why a fact group is unknown; the first reason given is kept."""
        self.unavailable.setdefault(group, reason)

    def update(self, netdev: str, **changes: Any) -> None:
        self.functions[netdev] = replace(self.functions[netdev], **changes)

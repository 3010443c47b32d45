"""Turn a node's captures into parsed records, remembering why any record is unavailable."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from linkcheck.errors import ParseError
from linkcheck.model import Capture
from linkcheck.parsers import PARSERS, get_parser

# Specs whose failure means "nothing configured", not "could not measure".
ABSENT_MEANS_EMPTY = {"nccl_conf", "nccl_conf_user"}
# The parser kind of each spec whose id is not itself a kind.
PARSER_KIND = {"sysfs_net": "sysfs", "sysfs_infiniband": "sysfs", "sysfs_pci": "sysfs", "nccl_conf_user": "nccl_conf"}


def preload_parsers(spec_ids: Iterable[str]) -> None:
    """Import the parsers these specs' captures will need before the captures arrive.

    A live run calls this while the nodes are still answering: the imports (a dozen dataclasses) then
    cost no wall time, instead of delaying the diagnosis once the last answer is in.
    """
    for spec in spec_ids:
        kind = PARSER_KIND.get(spec, spec)
        if kind in PARSERS:
            get_parser(kind)


class NodeSources:
    """Parsed records of one node, parsed once each, with the reason for every one that is missing."""

    def __init__(self, node: str, captures: list[Capture]) -> None:
        self.node = node
        self._captures = {(c.spec, c.arg): c for c in captures if not c.meta}
        self._cache: dict[tuple[str, str | None], Any] = {}
        self.problems: dict[str, str] = {}

    def args(self, spec: str) -> list[str]:
        """The interface names a per-netdev spec was run for."""
        return sorted(arg for (s, arg) in self._captures if s == spec and arg is not None)

    def capture(self, spec: str, arg: str | None = None) -> Capture | None:
        return self._captures.get((spec, arg))

    def get(self, spec: str, arg: str | None = None) -> Any:
        """The parsed record (by the parser of the spec's kind), or None with the reason stored in `problems`."""
        key = (spec, arg)
        if key not in self._cache:
            self._cache[key] = self._parse(spec, arg, PARSER_KIND.get(spec, spec))
        return self._cache[key]

    def reason(self, spec: str, arg: str | None = None) -> str:
        label = f"{spec}[{arg}]" if arg else spec
        return self.problems.get(label, f"{label}: not collected")

    def _parse(self, spec: str, arg: str | None, kind: str) -> Any:
        label = f"{spec}[{arg}]" if arg else spec
        cap = self._captures.get((spec, arg))
        if cap is None:
            self.problems[label] = f"{label}: not collected"
            return None
        if cap.skipped:
            self.problems[label] = f"{label}: {cap.skipped}"
            return None
        if cap.exit_status != 0:
            if spec in ABSENT_MEANS_EMPTY:
                return get_parser(kind)("")
            first = next((ln.strip() for ln in cap.stderr.splitlines() if ln.strip()), "no error text")
            self.problems[label] = f"{label}: exit {cap.exit_status}: {first[:160]}"
            return None
        try:
            return get_parser(kind)(cap.stdout)
        except ParseError as exc:
            self.problems[label] = f"{label}: {exc.reason}" + (f" (line {exc.line_no})" if exc.line_no else "")
            return None

"""A node's LLDP neighbours as facts, read from its `lldp` capture (`lldpctl -f json`), and why none could be read.
The cluster's topology (linkcheck.cluster.topology) matches them to the inspected nodes; LLDP is optional, and the
topology is the addressing's where it was not read."""

from __future__ import annotations

from collections.abc import Sequence

from linkcheck.errors import ParseError
from linkcheck.facts.sources import NodeSources
from linkcheck.model import Capture
from linkcheck.parsers.lldp import LldpNeighbour, lldpd_unreachable, parse_lldpctl_json


def lldp_neighbours(name: str, captures: Sequence[Capture]) -> tuple[tuple[LldpNeighbour, ...], str | None]:
    """The node's LLDP neighbours (`lldpctl -f json`), and why none could be read: lldpctl not installed, lldpd not
    running or its socket closed to the user, output that does not parse. LLDP is optional: the topology is inferred
    without it, and uses it where it is there."""
    src = NodeSources(name, list(captures))
    cap = src.capture("lldp")
    if cap is None or cap.skipped:
        return (), src.reason("lldp")
    if cap.exit_status == 127:
        return (), "lldp: lldpctl is not installed (lldpd is optional; the topology is the addressing's)"
    if cap.exit_status != 0:
        refused = lldpd_unreachable(cap.stderr)
        first = (cap.stderr.strip().splitlines() or ["no message"])[0][:160]
        return (), refused.reason if refused is not None else f"lldp: exit {cap.exit_status}: {first}"
    try:
        return parse_lldpctl_json(cap.stdout).neighbours, None
    except ParseError as exc:
        return (), exc.reason

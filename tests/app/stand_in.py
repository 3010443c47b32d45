"""A live check over a saved pair's inspection instead of SSH: `check_cluster`'s transports are none and its
inspection returns the captures given, so what follows (the plan, the judging, the saving) runs as it does on real
nodes. A stand-in for the nodes, named as one: the lab's real sshd covers the inspection itself."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from linkcheck.app import live
from linkcheck.bundle.format import load_bundle
from linkcheck.cluster.hosts import ClusterHost
from linkcheck.model import Capture
from linkcheck.transport.base import NodeTarget

PAIR = (ClusterHost(NodeTarget(name="a", host="dgx-spark-1"), "--node"),
        ClusterHost(NodeTarget(name="b", host="dgx-spark-2"), "--node"))


def inspection(fixture: Path) -> list[Capture]:
    """The inspection's captures of a saved bundle (its traffic runs left out)."""
    return [c for c in load_bundle(fixture).captures if not c.meta]


def answer_with(monkeypatch: pytest.MonkeyPatch, captures: Sequence[Capture]) -> None:
    """Every live check in this test inspects `captures` (each node's own) and reaches no node."""
    monkeypatch.setattr(live, "open_cluster", lambda hosts, ssh: {})
    monkeypatch.setattr(live, "inspect_nodes", lambda transports, ssh, hosts=(): (list(captures), {}, False))

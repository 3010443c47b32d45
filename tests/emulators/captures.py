"""Turn a scenario into linkcheck Capture objects: inspection captures of both nodes and bench captures."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from linkcheck.collect.specs import SPECS, Spec
from linkcheck.model import Capture
from tests.emulators.node import Node
from tests.emulators.render import cx7_netdevs, render

if TYPE_CHECKING:
    from tests.emulators.scenarios import Scenario

# Typical wall time of each spec on a GB10 (the sysfs GID dump reads ~3000 files one by one).
SPEC_DURATION_S: dict[str, float] = {
    "sysfs_infiniband": 1.842, "sysfs_net": 0.118, "sysfs_pci": 0.047, "ibv_devinfo": 0.061,
    "lspci": 0.094, "show_gids": 0.733, "ibstat": 0.028, "ibdev2netdev": 0.052,
    "rdma_link": 0.009, "ethtool": 0.006, "ethtool_i": 0.003, "ethtool_s": 0.008, "ethtool_m": 0.031,
    "dmesg": 0.012, "ethtool_fec": 0.004,
}


def node_captures(name: str, node: Node, specs: Sequence[Spec] = SPECS) -> list[Capture]:
    """Every spec of `specs` (the pair's inspection by default) on one node, per-netdev specs once per CX-7 netdev,
    in spec order."""
    out: list[Capture] = []
    for spec in specs:
        if spec.per_container:
            continue  # an emulated node runs no container
        args: list[str | None] = list(cx7_netdevs(node)) if spec.per_netdev else [None]
        for arg in args:
            stdout, stderr, rc = render(node, spec.id, arg)
            out.append(Capture(
                node=name, spec=spec.id, command=spec.render(arg), stdout=stdout, stderr=stderr,
                exit_status=rc, duration_s=SPEC_DURATION_S.get(spec.id, 0.004), arg=arg,
            ))
    return out


def scenario_captures(scenario: Scenario) -> list[Capture]:
    """Inspection captures of node "a" then node "b"."""
    return node_captures("a", scenario.node_a) + node_captures("b", scenario.node_b)


def scenario_bench_captures(scenario: Scenario) -> list[Capture]:
    """One capture per bench artifact; `arg` is unique per node and spec, `meta` carries the run identity."""
    out = []
    for art in scenario.bench:
        duration = float(art.meta.get("duration_s") or 0) + 3.2 if art.spec == "ib_write_bw" else 41.7
        out.append(Capture(
            node=art.node, spec=art.spec, command=art.command, stdout=art.stdout, stderr=art.stderr,
            exit_status=art.exit_status, duration_s=duration, arg=art.arg, meta=dict(art.meta),
        ))
    return out

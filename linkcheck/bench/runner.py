"""What the traffic test reads of each node's perftest, and the round ids that keep an acceptance's repetitions
apart. The traffic itself, of any layout, runs in app/live.py `_send`: the RDMA rounds (bench/rounds.py), then NCCL
(bench/nccl.py), then the latency test (bench/latency.py), each under a guard (bench/guard.py) that ends every process
it started, whatever happens.
"""

from __future__ import annotations

import re

from msgspec.structs import replace

from linkcheck.bench import remote
from linkcheck.bench.perftest import ToolInfo
from linkcheck.errors import LinkcheckError, ParseError
from linkcheck.model import Capture
from linkcheck.parsers.identity import parse_perftest_version
from linkcheck.transport.base import Transport


def detect_tools(transports: dict[str, Transport], run_id: str = "") -> tuple[dict[str, ToolInfo], list[Capture]]:
    """`ib_write_bw -V` on each node (it exits 1 by design); JSON output only where it is valid JSON."""
    answers = remote.on_each_node(transports, lambda name, t: t.run("ib_write_bw -V", timeout_s=15))
    caps = [Capture(name, "perftest_version", "ib_write_bw -V", result.stdout, result.stderr, result.exit_status,
                    result.duration_s, meta={"kind": "version", "run_id": run_id})
            for name, result in answers.items()]
    return {cap.node: tool_info(cap) for cap in caps}, caps


def tool_info(cap: Capture) -> ToolInfo:
    """What one node's `ib_write_bw -V` says: the version, and whether --out_json writes valid JSON there."""
    if cap.exit_status == 127 or (cap.skipped or "").startswith("tool missing"):
        raise LinkcheckError(f"node {cap.node}: ib_write_bw not found", fix="sudo apt-get install perftest")
    try:
        version = parse_perftest_version(cap.stdout + cap.stderr)
        return ToolInfo(version.version, version.json_valid)
    except ParseError:
        return ToolInfo(None, False)


def inspected_tools(captures: list[Capture], nodes: list[str]) -> dict[str, ToolInfo] | None:
    """Each node's perftest as the inspection already read it (`ib_write_bw -V` is one of its commands); None
    when a node's answer is not there, so the traffic test asks again."""
    found = {c.node: c for c in captures if c.spec == "perftest_version" and c.exit_status is not None}
    if any(node not in found for node in nodes):
        return None
    return {node: tool_info(found[node]) for node in nodes}


def repetition_captures(captures: list[Capture], n: int) -> list[Capture]:
    """One repetition's captures with their round ids made its own (`<round>-rep<n>`; the mode stays the id's first
    word), so the facts keep the repetitions apart."""
    return [replace(c, meta={**c.meta, "round": f"{c.meta['round']}-rep{n}"}) if c.meta.get("round") else c
            for c in captures]


_REPETITION = re.compile(r"-rep([0-9]+)$")


def repetition_of(round_id: str) -> int | None:
    """The repetition a round id is of (`repetition_captures`' `-rep<n>`); None for a run that was not repeated."""
    found = _REPETITION.search(round_id)
    return int(found.group(1)) if found else None

"""Evidence around the traffic: RDMA port counters, link_downed, carrier_changes and GID tables.

Taken on both nodes before and after each round (one command per node each time). Counter deltas
show which twins carried the traffic; a carrier change, a link_downed tick or a GID table change
during the round makes its numbers inconclusive.
"""

from __future__ import annotations

from collections.abc import Iterable

from linkcheck.bench.remote import run_step
from linkcheck.collect.specs import validate_name
from linkcheck.model import Capture
from linkcheck.transport.base import Transport

COUNTERS = ("port_xmit_data", "port_rcv_data", "link_downed")


def snapshot_command(rdma_devs: Iterable[str], netdevs: Iterable[str], *, gid_tables: bool = True) -> str:
    """One `grep -H .` over every file of interest: a single process, EINVAL lines kept (2>&1)."""
    files = []
    for dev in sorted({validate_name(d) for d in rdma_devs}):
        port = f"/sys/class/infiniband/{dev}/ports/1"
        files += [f"{port}/counters/{c}" for c in COUNTERS] + [f"{port}/state"]
        if gid_tables:
            files += [f"{port}/gids/*", f"{port}/gid_attrs/types/*"]
    for net in sorted({validate_name(n) for n in netdevs}):
        files += [f"/sys/class/net/{net}/carrier_changes", f"/sys/class/net/{net}/carrier"]
    return f"grep -H . {' '.join(files)} 2>&1; true" if files else "true"


def take(transport: Transport, rdma_devs: Iterable[str], netdevs: Iterable[str], *, round_id: str,
         phase: str, run_id: str = "") -> Capture:
    command = snapshot_command(rdma_devs, netdevs)
    result = run_step(transport, command, 20, f"reading the counters {phase} round {round_id}")
    return Capture(transport.name, "sysfs_counters", "counters and GID snapshot", result.stdout, result.stderr,
                   result.exit_status, result.duration_s, arg=f"{round_id}.{phase}",
                   meta={"kind": "snapshot", "round": round_id, "phase": phase, "run_id": run_id})


def changes(before: Capture, after: Capture) -> list[str]:
    """What moved between two snapshots besides the traffic counters: carrier, link_downed, port state, GIDs.

    The same test the facts make (bench_facts), said in words while the run goes on.
    """
    from linkcheck.errors import ParseError
    from linkcheck.parsers.sysfs import parse_sysfs_dump

    if not (before.ok and after.ok):
        return []
    try:
        old = {e.path: e.value for e in parse_sysfs_dump(before.stdout).entries}
        new = {e.path: e.value for e in parse_sysfs_dump(after.stdout).entries}
    except ParseError:
        return []
    moved = [p for p in old if not p.endswith(("port_xmit_data", "port_rcv_data")) and old[p] != new.get(p)]
    return [f"{p.removeprefix('/sys/class/')} {old[p]} -> {new.get(p)}" for p in moved]


def xmit_bytes(dump_text: str) -> dict[str, int]:
    """rdma device -> port_xmit_data in bytes (the PMA counter counts 4-byte words), for live rates."""
    from linkcheck.parsers.sysfs import parse_sysfs_dump

    out = {}
    for entry in parse_sysfs_dump(dump_text).under("/sys/class/infiniband/"):
        if entry.path.endswith("/counters/port_xmit_data") and entry.value and entry.value.isdigit():
            out[entry.path.split("/")[4]] = int(entry.value) * 4
    return out

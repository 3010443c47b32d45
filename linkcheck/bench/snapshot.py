"""Evidence around the traffic: RDMA port counters, link_downed, carrier_changes and GID tables.

Taken on both nodes before and after each round (one command per node each time, both nodes at once;
the snapshot after a round doubles as the one before the next, read in the same command). Counter deltas
show which twins carried the traffic; a carrier change, a link_downed tick or a GID table change
during the round makes its numbers inconclusive.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import msgspec

from linkcheck.bench.remote import on_each_node, run_step
from linkcheck.collect.specs import validate_name
from linkcheck.errors import ParseError
from linkcheck.integers import ascii_int
from linkcheck.model import Capture
from linkcheck.parsers.sysfs import parse_sysfs_dump
from linkcheck.transport.base import RemoteResult, Transport

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


class Wanted(msgspec.Struct, frozen=True):
    """One snapshot to take: a round's phase, and per node the RDMA devices and netdevs it covers."""

    round_id: str
    phase: str
    rdma_devs: Mapping[str, Sequence[str]]
    netdevs: Mapping[str, Sequence[str]]

    def prefixes(self, node: str) -> tuple[str, ...]:
        """The sysfs folders whose lines belong to this snapshot."""
        return (tuple(f"/sys/class/infiniband/{d}/" for d in self.rdma_devs.get(node, ()))
                + tuple(f"/sys/class/net/{n}/" for n in self.netdevs.get(node, ())))


def take(transports: Mapping[str, Transport], wanted: Sequence[Wanted], *, run_id: str = "") -> list[Capture]:
    """Every wanted snapshot, on every node at once, one command per node however many are wanted.

    The end of one round and the start of the next are the same moment (nothing runs in between), so
    their snapshots are read together and each keeps the lines of its own devices. Captures come back
    in the order of `wanted`, then of `transports`.
    """
    def one_node(name: str, transport: Transport) -> list[Capture]:
        devs = [d for w in wanted for d in w.rdma_devs.get(name, ())]
        nets = [n for w in wanted for n in w.netdevs.get(name, ())]
        doing = " and ".join(f"{w.phase} round {w.round_id}" for w in wanted)
        result = run_step(transport, snapshot_command(devs, nets), 20, f"reading the counters {doing}")
        return [_capture(name, result, w, run_id) for w in wanted]

    per_node = list(on_each_node(transports, one_node).values())
    return [node_caps[i] for i in range(len(wanted)) for node_caps in per_node]


def _capture(node: str, result: RemoteResult, wanted: Wanted, run_id: str) -> Capture:
    prefixes = wanted.prefixes(node)
    # `grep -H` prints "<path>:<value>" or "grep: <path>: <error>"; a line naming no file of ours is kept
    lines = [ln for ln in result.stdout.splitlines()
             if ln.removeprefix("grep: ").startswith(prefixes) or not ln.removeprefix("grep: ").startswith("/sys/")]
    stdout = "\n".join(lines) + ("\n" if lines else "")
    return Capture(node, "sysfs_counters", "counters and GID snapshot", stdout, result.stderr,
                   result.exit_status, result.duration_s, arg=f"{wanted.round_id}.{wanted.phase}",
                   meta={"kind": "snapshot", "round": wanted.round_id, "phase": wanted.phase, "run_id": run_id})


def changes(before: Capture, after: Capture) -> list[str]:
    """What moved between two snapshots besides the traffic counters: carrier, link_downed, port state, GIDs.

    The same test the facts make (bench_facts), said in words while the run goes on.
    """
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
    out = {}
    for entry in parse_sysfs_dump(dump_text).under("/sys/class/infiniband/"):
        words = ascii_int(entry.value, 0, (1 << 64) - 1) if entry.value else None
        if entry.path.endswith("/counters/port_xmit_data") and words is not None:
            out[entry.path.split("/")[4]] = words * 4
    return out

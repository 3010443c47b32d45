"""The journals a node holds, read back: what an unfinished run left (said by the next run, and settled when the
node's own `netplan try` script finished it), and `fix --restore`, which puts the latest run's original files
back (bytes, mode, owner) and undoes its runtime change."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import msgspec
from msgspec.structs import replace

from linkcheck.repair import commit
from linkcheck.repair.files import NCCL_CONF_USER
from linkcheck.repair.journal import (
    RESTORED,
    REVERTED,
    FoundJournal,
    describe,
    encode,
    list_command,
    parse_list,
    settled_state,
    write_command,
)
from linkcheck.repair.node import ChangeFailed, RepairNode

Say = Callable[[str], None]


class RestoreOutcome(msgspec.Struct, frozen=True):
    node: str
    run_id: str | None
    state: str  # restored, nothing (no journal, or it had ended as it was), failed
    problems: tuple[str, ...] = ()


def journals(node: RepairNode, root: str) -> list[FoundJournal]:
    """The node's journals, oldest first; none when there are none or sudo is refused. JournalError (exit 4, its
    file and line) for one that is not a journal linkcheck writes: never skipped, so that the latest run is never
    taken for an older one."""
    out = node.sh(list_command(root))
    if out.exit_status != 0:
        return []
    home = commit.resolve_path(node, NCCL_CONF_USER).removesuffix("/.nccl.conf")
    return parse_list(out.stdout, root, home)


def _write(node: RepairNode, found: FoundJournal, state: str, note: str) -> None:
    now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    j = found.journal
    node.sh(write_command(found.directory),
            stdin=encode(replace(j, state=state, history=(*j.history, (state, now)), note=note)))


def report_unfinished(node: RepairNode, root: str, say: Say) -> list[str]:
    """Say what the node's latest run left when it did not end cleanly; settle it when the node's try script
    did. Returns the lines said."""
    found = journals(node, root)
    if not found:
        return []
    latest = found[-1]
    line = describe(latest)
    if line is None:
        return []
    say(line)
    settled = settled_state(latest)
    if settled is not None:
        _write(node, latest, settled, line)
    return [line]


def restore_node(node: RepairNode, root: str, say: Say) -> RestoreOutcome:
    """The latest run not yet restored: its files back, its runtime change undone, its journal marked."""
    found = [f for f in journals(node, root) if f.journal.state != RESTORED]
    if not found:
        return RestoreOutcome(node.name, None, "nothing")
    latest = found[-1]
    j = latest.journal
    if j.state == REVERTED or settled_state(latest) == REVERTED:
        say(f"node {node.name}: run {j.run_id} was reverted already: nothing to restore")
        _write(node, latest, RESTORED, "nothing to restore: reverted")
        return RestoreOutcome(node.name, j.run_id, "nothing")
    problems = commit.restore(node, latest.directory, list(j.files))
    for saved in j.files:
        say(f"node {node.name}: {saved.path} " + ("put back" if saved.existed else "removed (it did not exist)"))
    for op in j.undo:
        say(f"node {node.name}: {op.describe}")
        try:
            node.change(op)
        except ChangeFailed as exc:
            problems.append(str(exc))
    _write(node, latest, RESTORED, "; ".join(problems) or "restored")
    return RestoreOutcome(node.name, j.run_id, "failed" if problems else "restored", tuple(problems))

"""The journals a node holds, read back: what an unfinished run left (said by the next run, and settled when the
node's own `netplan try` script finished it), and `fix --restore`, which puts the latest run's original files
back (bytes, mode, owner) and undoes its runtime change.

Every revert and restore ends with the node's live state read back and compared with the journal's `before`
(linkcheck.repair.livestate); where it differs, the files are put back again, the renderer's configuration is
re-applied (`netplan apply`; `nmcli connection reload` and `up` of the profiles that were active) and the
differences are undone at runtime, then the state is read back again. A node still not as before is
`not-reverted`, with what differs, never `reverted`."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import msgspec
from msgspec.structs import replace

from linkcheck.repair import commit, nm_checkpoint
from linkcheck.repair.files import NCCL_CONF_USER
from linkcheck.repair.journal import (
    NOT_REVERTED,
    RESTORED,
    REVERTED,
    FoundJournal,
    Journal,
    describe,
    encode,
    list_command,
    parse_list,
    settled_state,
    write_command,
)
from linkcheck.repair.livestate import corrections, read_state, wait_matching
from linkcheck.repair.node import ChangeFailed, RepairNode, first_line
from linkcheck.repair.paths import NETPLAN_DIR

Say = Callable[[str], None]


class RestoreOutcome(msgspec.Struct, frozen=True):
    node: str
    run_id: str | None
    state: str  # restored, nothing (no journal, or it had ended as it was), failed
    problems: tuple[str, ...] = ()
    verified: bool | None = None  # the live state read back as the journal's before (None: no before to compare)
    differences: tuple[str, ...] = ()


def journals(node: RepairNode, root: str) -> list[FoundJournal]:
    """The node's journals, oldest first; none when there are none or sudo is refused. JournalError (exit 4, its
    file and line) for one that is not a journal linkcheck writes: never skipped, so that the latest run is never
    taken for an older one."""
    out = node.sh(list_command(root))
    if out.exit_status != 0:
        return []
    home = commit.resolve_path(node, NCCL_CONF_USER).removesuffix("/.nccl.conf")
    return parse_list(out.stdout, root, home)


def _write(node: RepairNode, found: FoundJournal, state: str, note: str, *, verified: bool | None = None,
           differences: tuple[str, ...] = ()) -> None:
    now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    j = found.journal
    node.sh(write_command(found.directory),
            stdin=encode(replace(j, state=state, history=(*j.history, (state, now)), note=note,
                                 verified=verified if verified is not None else j.verified,
                                 differences=differences)))


def reapply_renderer(node: RepairNode, j: Journal) -> list[str]:
    """The renderer's configuration applied again from the files as they are now (the journal's originals):
    `netplan apply` where the run changed netplan files, `nmcli connection reload` and `nmcli connection up` of
    each profile that was active before on the touched interfaces; what failed."""
    problems = []
    if any(s.path.startswith(NETPLAN_DIR + "/") for s in j.files):
        out = node.sh("sudo -n netplan apply", timeout_s=120)
        if out.exit_status != 0:
            problems.append(f"node {node.name}: `netplan apply` failed: {first_line(out)}")
    active = j.before.renderer.nm_active if j.before is not None else None
    keyfiles = any(s.path.startswith("/etc/NetworkManager/") for s in j.files)
    if active or keyfiles:
        names = [entry.rsplit(":", 1)[0] for entry in active or ()]
        problems += nm_checkpoint.activate(node, names)
    return problems


def put_back_verified(node: RepairNode, directory: str, j: Journal, say: Say) -> tuple[bool | None, list[str],
                                                                                         list[str]]:
    """The node's live state read back (waiting, bounded, for NetworkManager's re-activation) and compared with
    the journal's `before`; where it differs, the files put back again, the renderer re-applied and the
    differences undone, then read back again. (verified, differences, problems); verified None: the journal has
    no `before` (an older linkcheck wrote it)."""
    if j.before is None:
        return None, [], []
    diff = wait_matching(node, j.before)
    if not diff:
        say(f"node {node.name}: live state read back as before the run")
        return True, [], []
    say(f"node {node.name}: not as before the run ({'; '.join(diff)}): putting it back")
    problems = commit.restore(node, directory, list(j.files))
    problems += reapply_renderer(node, j)
    devs = [i.dev for i in j.before.interfaces]
    for op in corrections(j.before, read_state(node, devs)):
        say(f"node {node.name}: {op.describe}")
        try:
            node.change(op)
        except ChangeFailed as exc:
            problems.append(str(exc))
    diff = wait_matching(node, j.before)
    if diff:
        say(f"node {node.name}: NOT as before the run: {'; '.join(diff)}")
        return False, diff, problems
    say(f"node {node.name}: live state read back as before the run")
    return True, [], problems


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
    if settled == REVERTED:
        # The node's own script reverted it (nobody confirmed): its live state is checked now, and only checked:
        # what a person changed since is never undone unasked (`fix --restore` puts it back).
        before = latest.journal.before
        diff = wait_matching(node, before) if before is not None else []
        verified = None if before is None else not diff
        if verified is False:
            line = (f"node {node.name}: repair run {latest.journal.run_id} is NOT as it was before "
                    f"({'; '.join(diff)}): `linkcheck fix --restore` puts it back and checks it again")
            say(line)
            _write(node, latest, NOT_REVERTED, line, verified=False, differences=tuple(diff))
            return [line]
        _write(node, latest, settled, line, verified=verified)
    elif settled is not None:
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
    verified, diff, more = put_back_verified(node, latest.directory, j, say)
    problems += more
    if verified is False:
        _write(node, latest, NOT_REVERTED, "; ".join(diff), verified=False, differences=tuple(diff))
        return RestoreOutcome(node.name, j.run_id, "failed", tuple(problems), False, tuple(diff))
    # Verified (or nothing to compare with): a step that failed on the way does not make the end state wrong.
    _write(node, latest, RESTORED, "; ".join(problems) or "restored", verified=verified)
    state = "failed" if problems and not verified else "restored"
    return RestoreOutcome(node.name, j.run_id, state, tuple(problems), verified)

"""The journals a node holds, read back: what an unfinished run left (said by the next run, and settled when the
node's own `netplan try` script finished it), and `fix --restore`, which puts the latest run's original files
back (bytes, mode, owner) and undoes its runtime change.

Every revert and restore ends with the node's live state read back and compared with the journal's `before`
(linkcheck.repair.livestate); where it differs, the files are put back again, a NetworkManager profile file that
appeared in /etc during the run is removed, the renderer's configuration is re-applied (`netplan apply`; `nmcli
connection reload` and `up` of the profiles that were active and still exist, `down` of those active now that were
not) and the differences are undone at runtime, then the state is read back again. A node still not as before is
`not-reverted`, with what differs, never `reverted`.

`fix --restore` re-applies the renderer's configuration whatever the read-back says: the live state can match while
the renderer's generated configuration (systemd-networkd's files under /run/systemd/network, which `netplan apply`
writes) still says what the restored files no longer do, and a renderer restart or the next boot would bring it
back. Its `netplan apply` keeps the apply's rule: never where the management interface is netplan-defined for
NetworkManager (netplan's apply disconnects each such interface), unless --allow-nm-disconnect."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import msgspec
from msgspec.structs import replace

from linkcheck.errors import ParseError
from linkcheck.parsers.netplan import parse_netplan
from linkcheck.repair import commit, nm_checkpoint
from linkcheck.repair.checks import read_invariants
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
from linkcheck.repair.livestate import NodeState, corrections, new_keyfiles, read_state, reads_host, wait_matching
from linkcheck.repair.node import ChangeFailed, RepairNode, first_line
from linkcheck.repair.paths import NETPLAN_DIR
from linkcheck.repair.renderer import interface_renderers, mgmt_disconnect_refusal

Say = Callable[[str], None]
# How long a reload is given to auto-connect a profile before the profiles active are compared with `before`.
REACTIVATE_S = 3.0


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


def mgmt_disconnect_why(node: RepairNode, mgmt_dev: str | None) -> str | None:
    """Why `netplan try`/`apply` must not run on this node: its management interface is netplan-defined for
    NetworkManager (linkcheck.repair.renderer); the files are read as root, never kept."""
    if mgmt_dev is None:
        return None
    dump = node.sh(f"sudo -n sh -c {commit.q('tail -n +1 /etc/netplan/*.yaml')}").stdout
    return mgmt_disconnect_refusal(node.name, mgmt_dev, interface_renderers(dump))


def unapplied_files(node: RepairNode, j: Journal) -> list[str]:
    """Where the netplan files as they are now (the originals, put back) disagree with what ran before the run:
    IPv4 addresses (where the files set any) or an MTU the files set, compared with the journal's `before`, or,
    for an interface it did not read (the run changed none of it at runtime), with the live state now. Empty: no
    `before`, or the files say what ran."""
    if j.before is None:
        return []
    dump = node.sh(f"sudo -n sh -c {commit.q('tail -n +1 /etc/netplan/*.yaml')}").stdout
    try:
        config = parse_netplan(dump)
    except ParseError:
        return []
    unread = [e.ifname for e in config.ethernets if j.before.iface(e.ifname) is None]
    live = read_state(node, unread)
    out = []
    for e in config.ethernets:
        was = j.before.iface(e.ifname) or live.iface(e.ifname)
        if was is None or not was.present:
            continue
        v4 = sorted(a for a in e.addresses if "." in a)
        if v4 and v4 != sorted(a for a in was.addresses if "." in a):
            out.append(f"{e.ifname}: the files say {', '.join(v4)}, {', '.join(was.addresses) or 'none'} ran")
        if e.mtu is not None and e.mtu != was.mtu:
            out.append(f"{e.ifname}: the files say MTU {e.mtu}, {was.mtu} ran")
    return out


def changed_netplan(j: Journal) -> bool:
    return any(s.path.startswith(NETPLAN_DIR + "/") for s in j.files)


def reapply_renderer(node: RepairNode, j: Journal, *, allow_nm_disconnect: bool = True,
                     removed: bool = False) -> list[str]:
    """The renderer's configuration applied again from the files as they are now (the journal's originals):
    `netplan apply` where the run changed netplan files (not where the management interface would be
    disconnected, unless allowed), `nmcli connection reload` and `nmcli connection up` of each profile that was
    active before on the touched interfaces and still exists; what failed."""
    problems = []
    why = None if allow_nm_disconnect or not changed_netplan(j) else mgmt_disconnect_why(
        node, read_invariants(node).mgmt_dev)
    if why is not None:
        problems.append(f"{why.replace('; refused, nothing changed', '')}: `netplan apply` not run, so the "
                        "renderer keeps its configuration until the next apply or boot; run `sudo netplan apply` "
                        "from a console, or `fix --restore --allow-nm-disconnect`")
    elif changed_netplan(j):
        out = node.sh("sudo -n netplan apply", timeout_s=120)
        if out.exit_status != 0:
            problems.append(f"node {node.name}: `netplan apply` failed: {first_line(out)}")
    active = j.before.renderer.nm_active if j.before is not None else None
    keyfiles = removed or any(s.path.startswith("/etc/NetworkManager/") for s in j.files)
    if active or keyfiles:
        names = [entry.rsplit(":", 1)[0] for entry in active or ()]
        problems += nm_checkpoint.activate(node, names, only_existing=True)
    return problems


def remove_new_keyfiles(node: RepairNode, j: Journal, say: Say) -> tuple[bool, list[str]]:
    """The NetworkManager profile files in /etc that were not there before the run and that the run did not write
    (those the journal names are its files, put back already): a checkpoint rollback's persistent copy of a
    generated profile (linkcheck.repair.livestate). (whether any was removed, what failed)."""
    if j.before is None:
        return False, []
    ours = {s.path for s in j.files}
    extra = [p for p in new_keyfiles(j.before, read_state(node, [i.dev for i in j.before.interfaces]))
             if p not in ours]
    if not extra:
        return False, []
    for path in extra:
        say(f"node {node.name}: {path} removed (it appeared during the run)")
    out = node.sh(f"sudo -n rm -f -- {' '.join(commit.q(p) for p in extra)}")
    if out.exit_status != 0:
        return False, [f"node {node.name}: cannot remove {', '.join(extra)}: {first_line(out)}"]
    return True, []


def deactivate_new_profiles(node: RepairNode, before: NodeState, say: Say) -> list[str]:
    """`nmcli connection down` of each profile active now on a touched interface that was not active before the
    run: after the reload NetworkManager auto-connects a profile that linkcheck's `up` unblocked (a person's
    `nmcli connection down` blocks it until then), where the port ran a configuration made by hand. Its
    addresses go with it; the corrections then add the ones from before, and NetworkManager takes the port as
    configured by hand again. Auto-connection is asynchronous: the state is read until it matches or
    REACTIVATE_S passed. What failed."""
    if before.renderer.nm_active is None:
        return []
    wait_matching(node, before, REACTIVATE_S)
    now = read_state(node, [i.dev for i in before.interfaces]).renderer.nm_active
    problems = []
    for entry in [e for e in now or () if e not in before.renderer.nm_active]:
        name = entry.rsplit(":", 1)[0]
        say(f"node {node.name}: nmcli connection down {name} (not active before the run)")
        out = node.sh(f"sudo -n nmcli connection down {commit.q(name)}", timeout_s=60)
        if out.exit_status != 0:
            problems.append(f"node {node.name}: `nmcli connection down {name}` failed: {first_line(out)}")
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
    devs = [i.dev for i in j.before.interfaces]
    removed = remove_new_keyfiles(node, j, say)
    problems += removed[1]
    problems += reapply_renderer(node, j, removed=removed[0])
    problems += deactivate_new_profiles(node, j.before, say)
    for op in corrections(j.before, read_state(node, devs, reads_host(j.before))):
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


def restore_node(node: RepairNode, root: str, say: Say, *, allow_nm_disconnect: bool = False) -> RestoreOutcome:
    """The latest run not yet restored: its files back, the renderer's configuration applied again from them, its
    runtime change undone, the live state read back, its journal marked."""
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
    renderer: list[str] = []
    drift = unapplied_files(node, j) if changed_netplan(j) else []
    if drift:
        # The files put back never ran (the live state before the run was not theirs): applying them now would
        # change the node, not put it back. The renderer keeps the run's configuration, which is what ran.
        say(f"node {node.name}: netplan apply not run: the files put back were not what ran before the run "
            f"({'; '.join(drift)})")
    elif changed_netplan(j):
        say(f"node {node.name}: netplan apply (the renderer's configuration from the files put back)")
        renderer = reapply_renderer(node, j, allow_nm_disconnect=allow_nm_disconnect)
        problems += renderer
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
    if renderer:
        # The files are back but the renderer still runs the run's configuration: not restored, so that the next
        # --restore (with --allow-nm-disconnect, or after a console's `netplan apply`) takes this run again.
        _write(node, latest, j.state, "; ".join(problems), verified=verified)
        return RestoreOutcome(node.name, j.run_id, "failed", tuple(problems), verified)
    # Verified (or nothing to compare with): a step that failed on the way does not make the end state wrong.
    _write(node, latest, RESTORED, "; ".join(problems) or "restored", verified=verified)
    state = "failed" if problems and not verified else "restored"
    return RestoreOutcome(node.name, j.run_id, state, tuple(problems), verified)

"""A NetworkManager keyfile change committed through a NetworkManager checkpoint, NetworkManager's own
transaction: `CheckpointCreate(ao devices, u rollback_timeout, u flags)` over D-Bus (`busctl call`; nmcli has no
checkpoint command), then the files installed, `nmcli connection reload` and `nmcli connection up`, the link
verified again, and `CheckpointDestroy` (keep) or `CheckpointRollback` (put back). NetworkManager rolls the
devices and their profiles back by itself when the timeout expires, whoever created the checkpoint is gone or not.

The checkpoint covers NetworkManager's state, not linkcheck's journal: the script that holds it on the node
(started with `setsid`, so a lost SSH session cannot stop it) therefore puts the journal's original files back and
undoes the runtime change itself whenever the change was not kept, then reloads NetworkManager's profiles, and
writes `try.result` (`accepted` or `reverted`, then `nm-checkpoint`) as the netplan try script does, so the next
run reads both the same way.
"""

from __future__ import annotations

import re
import shlex

from linkcheck.repair.commit import CommitError, FilePlan, restore_lines
from linkcheck.repair.journal import SavedFile
from linkcheck.repair.livestate import nmcli_field
from linkcheck.repair.node import RepairNode, first_line
from linkcheck.repair.runtime import RuntimeOp

q = shlex.quote
NM_BUS = ("busctl", "call", "org.freedesktop.NetworkManager", "/org/freedesktop/NetworkManager",
          "org.freedesktop.NetworkManager")
# NM_CHECKPOINT_CREATE_FLAG_DELETE_NEW_CONNECTIONS: a profile the change adds is deleted by a rollback too.
DELETE_NEW_CONNECTIONS = 0x02
MARK = "nm-checkpoint"
_IFNAME = re.compile(r"^[A-Za-z0-9_.:@-]{1,15}$")


def keyfile_value(text: str, section: str, key: str) -> str | None:
    """A key of a NetworkManager keyfile ([section] key=value), or None."""
    current = ""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("[") and stripped.endswith("]"):
            current = stripped[1:-1]
        elif current == section and "=" in stripped:
            name, _, value = stripped.partition("=")
            if name.strip() == key:
                return value.strip()
    return None


def profiles(files: list[FilePlan]) -> list[tuple[str, str]]:
    """(connection id, interface) of each keyfile the change installs; CommitError for one without both (an
    unnamed profile could not be brought up, a device-less one not covered by a checkpoint)."""
    found = []
    for f in files:
        conn_id = keyfile_value(f.after, "connection", "id")
        dev = keyfile_value(f.after, "connection", "interface-name")
        if not conn_id or not dev or not _IFNAME.match(dev):
            raise CommitError(f"{f.path}: no connection id or interface-name a checkpoint can cover")
        found.append((conn_id, dev))
    return found


def checkpoint_script(directory: str, timeout_s: int, devices: list[str], saved: list[SavedFile],
                      undo: list[RuntimeOp]) -> str:
    """What runs detached on the node (as root): the checkpoint made over `devices` with the rollback timeout,
    `ready` in nm.out, then a wait for linkcheck's `nm.commit` (CheckpointDestroy) or `nm.rollback`
    (CheckpointRollback), or the timeout (NetworkManager rolls back by itself); unless kept, the files back and
    the runtime change undone here."""
    bus = shlex.join(NM_BUS)
    back = "; ".join([*restore_lines(directory, saved), *(f"{shlex.join(op.argv())} || true" for op in undo)])
    devs = " ".join(q(d) for d in devices)
    return (
        f"umask 077; cd {q(directory)} || exit 1; rm -f nm.out nm.checkpoint nm.commit nm.rollback try.result; "
        "paths=''; n=0; "
        f"for dev in {devs}; do "
        f'p=$({bus} GetDeviceByIpIface s "$dev" 2>>nm.out | sed -n \'s/^o "\\(.*\\)"$/\\1/p\'); '
        '[ -n "$p" ] || { echo "no NetworkManager device $dev" >> nm.out; echo failed > try.result; exit 1; }; '
        'paths="$paths $p"; n=$((n+1)); done; '
        f"cp=$({bus} CheckpointCreate aouu $n $paths {int(timeout_s)} {DELETE_NEW_CONNECTIONS} 2>>nm.out "
        "| sed -n 's/^o \"\\(.*\\)\"$/\\1/p'); "
        '[ -n "$cp" ] || { echo "CheckpointCreate failed" >> nm.out; echo failed > try.result; exit 1; }; '
        'echo "$cp" > nm.checkpoint; echo ready >> nm.out; '
        f"end=$(( $(date +%s) + {int(timeout_s)} )); kept=''; "
        'while [ "$(date +%s)" -lt "$end" ]; do '
        f'if [ -e nm.commit ]; then {bus} CheckpointDestroy o "$cp" >>nm.out 2>&1 && kept=yes; break; fi; '
        f'if [ -e nm.rollback ]; then {bus} CheckpointRollback o "$cp" >>nm.out 2>&1; break; fi; '
        "sleep 0.1; done; "
        f'if [ -n "$kept" ]; then printf "accepted\\n{MARK}\\n" > try.result; exit 0; fi; '
        # Not kept: NetworkManager's timeout (or the rollback asked for) put its side back; the files and the
        # runtime change are put back here, and NetworkManager reads the restored profiles again.
        "sleep 1; "
        f"{back + '; ' if back else ''}nmcli connection reload >>nm.out 2>&1 || true; "
        f'printf "reverted\\n{MARK}\\n" > try.result'
    )


def start(node: RepairNode, directory: str, script: str) -> None:
    out = node.sh(f"sudo -n sh -c {q(f'setsid sh -c {q(script)} >/dev/null 2>&1 </dev/null &')}")
    if out.exit_status != 0:
        raise CommitError(f"node {node.name}: cannot start the NetworkManager checkpoint: {first_line(out)}")


def wait(node: RepairNode, directory: str, what: str, timeout_s: float) -> str:
    """`ready` once the checkpoint exists, or the result's first word (`accepted`, `reverted`, `failed`) once
    the script ended (`what`=result); `` at the deadline."""
    d = q(directory)
    cond = f"grep -qx ready {d}/nm.out 2>/dev/null && echo ready && exit 0; " if what == "ready" else ""
    script = (f"i=0; while [ $i -lt {int(timeout_s * 10)} ]; do {cond}"
              f"[ -s {d}/try.result ] && head -n1 {d}/try.result && exit 0; sleep 0.1; i=$((i+1)); done; exit 1")
    out = node.sh(f"sudo -n sh -c {q(script)}", timeout_s=timeout_s + 10)
    return out.stdout.strip() if out.exit_status == 0 else ""


def request(node: RepairNode, directory: str, what: str) -> bool:
    """Ask the script to keep (`commit`) or roll back (`rollback`) the change."""
    return node.sh(f"sudo -n touch {q(directory + '/nm.' + what)}").exit_status == 0


def log_tail(node: RepairNode, directory: str) -> str:
    out = node.sh(f"sudo -n tail -n 3 {q(directory + '/nm.out')}")
    return " / ".join(line.strip() for line in out.stdout.splitlines() if line.strip())[:300]


def existing(node: RepairNode, connections: list[str]) -> list[str]:
    """Those of `connections` NetworkManager has now (`nmcli -t -f NAME connection show`): a profile it generated
    for a port configured by someone else is gone once the port is NetworkManager's again or its file removed."""
    out = node.sh("nmcli -t -f NAME connection show")
    if out.exit_status != 0:
        return connections  # not known: `up` says what is wrong
    names = {nmcli_field(line) for line in out.stdout.splitlines()}
    return [c for c in connections if c in names]


def activate(node: RepairNode, connections: list[str], *, only_existing: bool = False) -> list[str]:
    """`nmcli connection reload`, then `nmcli connection up ID` for each profile (with `only_existing`, each that
    exists after the reload); what failed."""
    problems = []
    reload = node.sh("sudo -n nmcli connection reload", timeout_s=60)
    if reload.exit_status != 0:
        return [f"node {node.name}: `nmcli connection reload` failed: {first_line(reload)}"]
    for c in existing(node, connections) if only_existing else connections:
        argv = ["nmcli", "connection", "up", c]
        out = node.sh("sudo -n " + shlex.join(argv), timeout_s=60)
        if out.exit_status != 0:
            problems.append(f"node {node.name}: `{shlex.join(argv)}` failed: {first_line(out)}")
            break
    return problems

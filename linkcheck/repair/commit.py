"""The persistent half of a repair on one node: the files read as they are on the node, the plan's edits made
again on that text, the originals kept in the journal, the new files validated (`netplan generate --root-dir` on
a copy of /etc/netplan with the change), installed atomically, and a netplan change committed through
`netplan try`, which reverts by its own timeout unless linkcheck confirms it (SIGUSR1) after verifying again.

`netplan try` reverts the running configuration, not the files in /etc/netplan; the script that runs it on the
node therefore puts the original files back and undoes the runtime change itself when the try is not confirmed,
so a change nobody confirms (SSH lost, linkcheck killed) ends as it was before, without linkcheck.
"""

from __future__ import annotations

import base64
import hashlib
import re
import shlex

import msgspec

from linkcheck.errors import LinkcheckError
from linkcheck.integers import ascii_int
from linkcheck.repair.edits import EditError, apply_edit
from linkcheck.repair.files import NCCL_CONF_USER, ONLY_NETPLAN_FILE, normal, text_sha256
from linkcheck.repair.journal import SavedFile
from linkcheck.repair.model import FileChange
from linkcheck.repair.node import RepairNode, first_line
from linkcheck.repair.paths import NETPLAN_DIR
from linkcheck.repair.runtime import RuntimeOp

q = shlex.quote
TRY_READY = "Do you want to keep these settings?"
TRY_ACCEPTED = "Configuration accepted."


class CommitError(LinkcheckError):
    """A file step that cannot be made (the file changed since the plan, validation failed, install failed)."""


class FilePlan(msgspec.Struct, frozen=True):
    """One file this node's steps change: its path on the node, as it is now, and its new text."""

    path: str
    manager: str
    existed: bool
    mode: str
    uid: int
    gid: int
    before: bytes
    after: str
    new_mode: str


def _sudo_sh(script: str) -> str:
    return f"sudo -n sh -c {q(script)}"


def resolve_path(node: RepairNode, path: str) -> str:
    """The plan's path on the node: the one netplan file the inspection saw unnamed, ~ as the SSH user's HOME."""
    if path == ONLY_NETPLAN_FILE:
        found = node.sh(_sudo_sh(f"ls -1 {NETPLAN_DIR}/*.yaml 2>/dev/null")).stdout.split()
        if len(found) != 1:
            raise CommitError(f"node {node.name}: {len(found)} netplan files, not the one the plan was made from")
        return found[0]
    if path == NCCL_CONF_USER:
        home = node.sh('printf "%s" "$HOME"').stdout.strip()
        if not home.startswith("/"):
            raise CommitError(f"node {node.name}: cannot tell the SSH user's home folder")
        return home.rstrip("/") + "/.nccl.conf"
    return path


def read_file(node: RepairNode, path: str) -> tuple[bool, str, int, int, bytes]:
    """(exists, octal mode, uid, gid, bytes) of a file on the node, read as root. A symbolic link, a FIFO or
    anything else that is not a plain file is never read through (CommitError): a repair changes plain files."""
    p = q(path)
    out = node.sh(_sudo_sh(f'if [ -L {p} ]; then echo link; elif [ ! -e {p} ]; then echo absent; '
                           f'elif [ ! -f {p} ]; then echo odd; else stat -c "%a %u %g" {p} && base64 -w0 {p}; fi'))
    if out.exit_status != 0:
        raise CommitError(f"node {node.name}: cannot read {path}: {first_line(out)}")
    head, _, body = out.stdout.partition("\n")
    if head.strip() == "absent":
        return False, "", 0, 0, b""
    if head.strip() in ("link", "odd"):
        what = "a symbolic link" if head.strip() == "link" else "not a plain file"
        raise CommitError(f"node {node.name}: {path} is {what}: a repair changes plain files only; not changed",
                          fix="change it by hand")
    words = head.split()
    uid, gid = (ascii_int(w, 0, (1 << 32) - 1) for w in words[1:3]) if len(words) == 3 else (None, None)
    if uid is None or gid is None or not re.fullmatch(r"[0-7]{1,4}", words[0]):
        raise CommitError(f"node {node.name}: cannot read {path}: stat printed {head[:80]!r}")
    try:
        data = base64.b64decode(body.strip() or b"", validate=True)
    except ValueError:
        raise CommitError(f"node {node.name}: cannot read {path}: its content did not come back whole") from None
    return True, words[0], uid, gid, data


def _owner(node: RepairNode, path: str) -> tuple[int, int]:
    """The owner of a new file: root in /etc, the SSH user in their home."""
    if path.startswith("/etc/"):
        return 0, 0
    ids = [ascii_int(w, 0, (1 << 32) - 1) for w in node.sh("id -u; id -g").stdout.split()]
    return (ids[0], ids[1]) if len(ids) == 2 and ids[0] is not None and ids[1] is not None else (0, 0)


def plan_files(node: RepairNode, changes: list[FileChange]) -> list[FilePlan]:
    """Each file the changes touch, read on the node, its edits made again on its real text (they chain); a file
    whose text is neither what the plan saw nor what the step before left is refused (changed since)."""
    plans: dict[str, FilePlan] = {}
    for change in changes:
        path = resolve_path(node, change.path)
        if path in plans:
            current = plans[path]
        else:
            existed, mode, uid, gid, raw = read_file(node, path)
            if not existed and change.edit.kind != "conf_set_key" and change.before_sha256 is not None:
                raise CommitError(f"node {node.name}: {path} no longer exists")
            if existed and change.before_sha256 is None and change.edit.kind in ("netplan_new", "copy_from"):
                raise CommitError(f"node {node.name}: {path} exists now; the plan was made for a new file")
            uid, gid = (uid, gid) if existed else _owner(node, path)
            current = FilePlan(path, change.manager, existed, mode, uid, gid, raw,
                               raw.decode("utf-8", errors="surrogateescape"), change.mode)
        text = current.after
        if change.before_sha256 is not None and change.before_sha256 not in (
                text_sha256(current.before.decode("utf-8", errors="surrogateescape")), text_sha256(text)):
            raise CommitError(f"node {node.name}: {path} changed since the plan was made",
                              fix="run `linkcheck fix` again for a fresh plan")
        if change.edit.kind == "copy_from":
            src_exists, _, _, _, src = read_file(node, change.edit.old)
            if not src_exists:
                raise CommitError(f"node {node.name}: {change.edit.old} is gone")
            after = src.decode("utf-8", errors="surrogateescape")
        else:
            try:
                after = normal(apply_edit(text if current.existed or path in plans else None, change.edit))
            except EditError as exc:
                raise CommitError(f"node {node.name}: {path}: {exc}") from None
        # netplan wants its files root-only; another file keeps the mode it has.
        mode = change.mode if change.manager != "nccl" or not current.existed else current.mode
        plans[path] = msgspec.structs.replace(current, after=after, new_mode=mode)
    return list(plans.values())


def _b64(text: str) -> str:
    return base64.b64encode(text.encode("utf-8", errors="surrogateescape")).decode()


def validate_netplan(node: RepairNode, files: list[FilePlan]) -> str | None:
    """`netplan generate --root-dir` on a copy of /etc/netplan with `files` in it (none: the current files);
    None when it passes, else its first error line. Nothing under /run or /etc changes."""
    made = node.sh(_sudo_sh(f'd=$(mktemp -d) && mkdir -p "$d/etc" && cp -a {NETPLAN_DIR} "$d/etc/" && echo "$d"'))
    if made.exit_status != 0 or not made.stdout.strip():
        return f"cannot copy {NETPLAN_DIR}: {first_line(made)}"
    d = made.stdout.strip()
    try:
        for f in files:
            target = f"{d}/etc/netplan/{f.path.rsplit('/', 1)[-1]}"
            put = node.sh(_sudo_sh(f"umask 077; base64 -d > {q(target)}"), stdin=_b64(f.after))
            if put.exit_status != 0:
                return f"cannot stage {f.path}: {first_line(put)}"
        result = node.sh(_sudo_sh(f"netplan generate --root-dir {q(d)}"), timeout_s=60)
        if result.exit_status != 0:
            lines = [ln for ln in result.stderr.splitlines() if ln.strip() and "WARNING" not in ln]
            return f"netplan generate: {(lines or [first_line(result)])[0][:200]}"
        return None
    finally:
        node.sh(_sudo_sh(f"rm -rf {q(d)}"))


def save_originals(node: RepairNode, directory: str, files: list[FilePlan]) -> list[SavedFile]:
    """Each original into the journal folder (`cp -p`: bytes, mode, owner), its copy's SHA-256 checked."""
    saved = []
    for i, f in enumerate(files):
        if not f.existed:
            saved.append(SavedFile(f.path, False))
            continue
        rel = f"files/{i}"
        out = node.sh(_sudo_sh(f"cp -p {q(f.path)} {q(directory + '/' + rel)} && "
                               f"sha256sum {q(directory + '/' + rel)}"))
        digest = hashlib.sha256(f.before).hexdigest()
        if out.exit_status != 0 or out.stdout.split()[:1] != [digest]:
            raise CommitError(f"node {node.name}: cannot keep {f.path} in the journal: {first_line(out)}")
        saved.append(SavedFile(f.path, True, f.mode, f.uid, f.gid, digest, rel))
    return saved


NOT_THROUGH_A_LINK = "it is now a symbolic link or not a plain file: not written through"


def write_in_place(src: str, dst: str, mode: str) -> str:
    """Shell (as root, in a subshell) that writes the file `src` into the file `dst` in place, for a `dst` that
    cannot be renamed or removed (a file that is itself a mount point), never through a symbolic link: `dst` is
    opened once, the open file is checked to be the plain file at the name (one lstat of the name: not a link, the
    same device, inode and mode as the open file), and its mode and text are set through that open file
    (/proc/self/fd/3), so a link placed at the name before, during or after the check is refused or not followed.
    The arguments are shell words, quoted by the caller; `mode` is chmod's (an octal mode, or --reference=FILE)."""
    return (f"( if [ -L {dst} ] || [ ! -f {dst} ] || ! exec 3<{dst} || "
            f'[ "$(stat -c %d:%i:%f -- {dst})" != "$(stat -L -c %d:%i:%f /proc/self/fd/3)" ]; then '
            f"echo {q(NOT_THROUGH_A_LINK)} >&2; exit 1; fi; "
            f"chmod {mode} /proc/self/fd/3 && dd if={src} of=/proc/self/fd/3 status=none )")


def install(node: RepairNode, f: FilePlan) -> None:
    """The new text to a temporary file beside the target, its mode and owner set, then renamed over it. A
    folder that is a symbolic link is refused (the file would land where the link points), and the rename
    replaces what is at the name (`mv -T`), never moving into a folder a link there leads to. A target that is
    itself a mount point cannot be renamed over: its text is written in place (write_in_place), refused, and the
    transaction put back, when a symbolic link is at the name by then."""
    p, t = q(f.path), '"$t"'
    script = (f'set -e; umask 077; d=$(dirname {p}); if [ -L "$d" ] || [ ! -d "$d" ]; then '
              'echo "$d is not a plain folder (a symbolic link, or missing)" >&2; exit 1; fi; '
              f't=$(mktemp "$d/.linkcheck-XXXXXX"); base64 -d > "$t"; '
              f'chown {int(f.uid)}:{int(f.gid)} "$t"; chmod {q(f.new_mode)} "$t"; '
              f'mv -fT "$t" {p} 2>/dev/null || {{ {write_in_place(t, p, q(f.new_mode))} || '
              '{ rm -f "$t"; exit 1; }; rm -f "$t"; }')
    out = node.sh(_sudo_sh(script), stdin=_b64(f.after))
    if out.exit_status != 0:
        raise CommitError(f"node {node.name}: cannot install {f.path}: {first_line(out)}")


def restore_lines(directory: str, saved: list[SavedFile]) -> list[str]:
    """Shell lines (as root) that put each original back: its copy with mode and owner, or no file."""
    lines = []
    for s in saved:
        if s.existed:
            # --remove-destination: a link planted at the path since is replaced, never written through; a path
            # that is a mount point cannot be removed, and gets the copy's text in place, never through a link.
            copy = q(directory + "/" + s.saved_as)
            lines.append(f"cp -p --remove-destination {copy} {q(s.path)} 2>/dev/null || "
                         f"{write_in_place(copy, q(s.path), '--reference=' + copy)}")
        else:
            lines.append(f"rm -f {q(s.path)}")
    return lines


def restore(node: RepairNode, directory: str, saved: list[SavedFile]) -> list[str]:
    """Put the originals back now; what could not be."""
    problems = []
    for line, s in zip(restore_lines(directory, saved), saved, strict=True):
        out = node.sh(_sudo_sh(line))
        if out.exit_status != 0:
            problems.append(f"node {node.name}: cannot restore {s.path}: {first_line(out)}")
    return problems


def try_script(directory: str, timeout_s: int, saved: list[SavedFile], undo: list[RuntimeOp]) -> str:
    """What runs detached (setsid) on the node: `netplan try` with a FIFO nobody writes as stdin (a terminal's
    newline would accept it; EOF from /dev/null may, in some versions), then, unless it says it was accepted,
    the original files back and the runtime change undone; `try.result` says which."""
    d = q(directory)
    back = "; ".join([*restore_lines(directory, saved), *(f"{shlex.join(op.argv())} || true" for op in undo)])
    return (f"umask 077; cd {d} || exit 1; rm -f try.in try.out try.result; mkfifo -m 600 try.in || exit 1; "
            f"PYTHONUNBUFFERED=1 netplan try --timeout {int(timeout_s)} <>try.in >try.out 2>&1 & "
            "echo $! > try.pid; wait $!; "
            f'if grep -q {q(TRY_ACCEPTED)} try.out; then echo accepted > try.result; '
            f"else {back or 'true'}; echo reverted > try.result; fi")


def start_try(node: RepairNode, directory: str, script: str) -> None:
    out = node.sh(_sudo_sh(f"setsid sh -c {q(script)} >/dev/null 2>&1 </dev/null &"))
    if out.exit_status != 0:
        raise CommitError(f"node {node.name}: cannot start netplan try: {first_line(out)}")


def wait_try(node: RepairNode, directory: str, what: str, timeout_s: float) -> str:
    """Wait (on the node) until `netplan try` is ready (`what`=ready) or has ended (`what`=result); the
    result's word (`accepted`, `reverted`), `ready`, or `` at the deadline."""
    d = q(directory)
    cond = f"grep -q {q(TRY_READY)} {d}/try.out 2>/dev/null && echo ready && exit 0; " if what == "ready" else ""
    script = (f"i=0; while [ $i -lt {int(timeout_s * 10)} ]; do {cond}"
              f"[ -s {d}/try.result ] && cat {d}/try.result && exit 0; sleep 0.1; i=$((i+1)); done; exit 1")
    out = node.sh(_sudo_sh(script), timeout_s=timeout_s + 10)
    return out.stdout.strip() if out.exit_status == 0 else ""


def signal_try(node: RepairNode, directory: str, signal_name: str) -> bool:
    """SIGUSR1 (accept) or SIGINT (revert) to `netplan try` by the PID it was started with."""
    d = q(directory)
    script = f'p=$(cat {d}/try.pid 2>/dev/null) && case "$p" in ""|*[!0-9]*) exit 1;; esac && kill -{signal_name} "$p"'
    return node.sh(_sudo_sh(script)).exit_status == 0

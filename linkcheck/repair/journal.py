"""The per-node journal of one `fix --apply`: a root-only folder (0700) on the node, written before any change,
holding every original file (bytes, mode, owner, SHA-256), the runtime changes with the operations that undo them,
and the transaction's state, so that an interrupted run can be told and undone (`fix --restore`).

Layout: `<root>/<run id>/journal.json`, `<root>/<run id>/files/<n>` (the originals, `cp -p`), and while
`netplan try` runs: `try.in` (its stdin, a FIFO nobody writes), `try.out`, `try.pid`, then `try.result`
(`accepted` or `reverted`), written by the script that runs it on the node, also when linkcheck is gone.
"""

from __future__ import annotations

import re
import shlex

import msgspec

from linkcheck import schema
from linkcheck.cluster.hosts import NODE_NAME_RE
from linkcheck.errors import InputFileError
from linkcheck.repair.livestate import NodeState
from linkcheck.repair.paths import repair_file_problem
from linkcheck.repair.runtime import OpError, RuntimeOp, check_op

JOURNAL_ROOT = "/var/lib/linkcheck/journal"
SCHEMA = "linkcheck-repair-journal"

# The states of a node's transaction, in order; `reverted` and `restored` end it as it was before.
PLANNED = "planned"
RUNTIME_APPLIED = "runtime-applied"
RUNTIME_VERIFIED = "runtime-verified"
PERSISTENT_PENDING = "persistent-pending"
COMMITTED = "committed"
REVERTED = "reverted"
RESTORED = "restored"
# A revert or restore whose live state, read back, is not the journal's `before`: never taken for `reverted`;
# `fix --restore` puts it back and checks it again.
NOT_REVERTED = "not-reverted"
FINAL = (COMMITTED, REVERTED, RESTORED)

RUN_ID = re.compile(r"[0-9]{8}T[0-9]{6}Z-[0-9a-f]{6}")  # apply.new_run_id's: UTC time, then 6 random hex digits
STATES = (PLANNED, RUNTIME_APPLIED, RUNTIME_VERIFIED, PERSISTENT_PENDING, COMMITTED, REVERTED, RESTORED,
          NOT_REVERTED)


class JournalError(InputFileError):
    """A journal on a node that is not one linkcheck writes: refused with its file and line, never skipped (the
    run it stands for may have left the node changed)."""


class SavedFile(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One file as it was before the run: absent (`existed` false), or its mode, owner and bytes' SHA-256, kept
    in the journal folder as `saved_as`."""

    path: str
    existed: bool
    mode: str = ""
    uid: int = 0
    gid: int = 0
    sha256: str = ""
    saved_as: str = ""


class Journal(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """journal.json: what the run changes on this node and how far it got."""

    schema: str
    run_id: str
    node: str
    hostname: str | None
    created: str
    state: str
    findings: tuple[str, ...]
    runtime: tuple[RuntimeOp, ...]
    undo: tuple[RuntimeOp, ...]  # in the order they run: the reverse of `runtime`
    files: tuple[SavedFile, ...]
    history: tuple[tuple[str, str], ...] = ()  # (state, UTC time) of every state reached
    note: str = ""
    # The live state of the interfaces the run touches, read before any change (linkcheck.repair.livestate); a
    # revert or restore is verified against it: `verified` true (read back, as before), false (`differences`
    # says what differs), None (not checked: no `before`, or the run never ended in a revert or restore).
    before: NodeState | None = None
    verified: bool | None = None
    differences: tuple[str, ...] = ()


class FoundJournal(msgspec.Struct, frozen=True):
    """A journal read back from a node, with the folder it is in and what `netplan try` left there."""

    directory: str
    journal: Journal
    try_result: str | None


def run_dir(root: str, run_id: str) -> str:
    return f"{root.rstrip('/')}/{run_id}"


def encode(journal: Journal) -> str:
    return msgspec.json.encode(journal).decode() + "\n"


def write_command(directory: str) -> str:
    """Replace journal.json (given on stdin) atomically, root-only."""
    d = shlex.quote(directory)
    script = f"umask 077; cat > {d}/journal.json.tmp && mv -f {d}/journal.json.tmp {d}/journal.json"
    return f"sudo -n sh -c {shlex.quote(script)}"


def list_command(root: str) -> str:
    """Print every journal under `root` as a line-anchored listing; root only.

    Per run folder holding a `journal.json` (anything by that name: a link or a folder is said, not skipped):
    `J NAME`, then each line of journal.json as `|LINE`, or `X WHAT` when it is not a plain file; `R`, then each
    line of try.result as `|LINE`; `E`. A folder name that is not a run id is said as `N` (its name unprinted).
    Every line of a file starts with `|`, so no text in a file can read as a line of the listing."""
    r = shlex.quote(root.rstrip("/"))
    body = 'awk \'{print "|" $0}\''  # every line, the last one too when it has no newline
    script = (f'for d in {r}/*/ {r}/.[!.]*/ {r}/..?*/; do n=${{d%/}}; n=${{n##*/}}; j="$d/journal.json"; '
              '[ -e "$j" ] || [ -L "$j" ] || continue; '
              'case "$n" in *[!0-9A-Za-z-]*) echo N; continue;; esac; echo "J $n"; '
              f'if [ -L "$j" ]; then echo "X a symbolic link"; elif [ ! -f "$j" ]; then echo "X not a plain file"; '
              f'else {body} "$j"; fi; echo R; t="$d/try.result"; '
              f'[ -f "$t" ] && [ ! -L "$t" ] && {body} "$t"; echo E; done; true')
    return f"sudo -n sh -c {shlex.quote(script)}"


class _Entry(msgspec.Struct):
    """One run folder of the listing, as read so far: its journal's lines, its try.result's, why it is refused."""

    name: str
    journal: list[str] = msgspec.field(default_factory=list)
    result: list[str] = msgspec.field(default_factory=list)
    refused: str | None = None
    in_result: bool = False


def _listing(text: str, root: str) -> list[_Entry]:
    """The listing's lines read by their first character; anything else is refused (the listing itself broke)."""
    entries: list[_Entry] = []
    where = f"{root.rstrip('/')} (listing)"
    for number, line in enumerate(text.split("\n"), 1):
        tag, rest = line[:1], line[1:]
        if tag == "|" and entries:
            (entries[-1].result if entries[-1].in_result else entries[-1].journal).append(rest)
        elif tag == "J" and rest.startswith(" "):
            entries.append(_Entry(rest[1:]))
        elif tag == "X" and entries and not entries[-1].in_result:
            entries[-1].refused = rest.strip()
        elif tag == "R" and not rest and entries:
            entries[-1].in_result = True
        elif tag == "N" and not rest:
            raise JournalError(root, "a folder whose name is not a run id linkcheck writes holds a journal.json",
                               fix=f"move it out of {root}")
        elif (tag == "E" and not rest) or not line:
            continue
        else:
            raise JournalError(where, f"line {number} is not a line of the journal listing: {line[:60]!r}")
    return entries


def parse_list(text: str, root: str, home: str) -> list[FoundJournal]:
    """The journals `list_command` printed, oldest first. One that is not a journal linkcheck writes (not JSON,
    truncated, another schema, a run id that is not its folder's, an operation or a file a repair never touches)
    is refused: JournalError naming its file and line. `home`: the SSH user's home folder on the node, where
    `~/.nccl.conf` lives (as `fix --apply` resolved it)."""
    found: list[FoundJournal] = []
    for entry in _listing(text, root):
        directory = run_dir(root, entry.name)
        path = f"{directory}/journal.json"
        if entry.refused:
            raise JournalError(path, f"{entry.refused}, not a journal file", fix=f"move {directory} aside")
        body = "\n".join(entry.journal)
        journal = _decode(path, body)
        _check(path, body, journal, entry.name, home)
        result = "\n".join(entry.result).strip()
        found.append(FoundJournal(directory, journal, result or None))
    return sorted(found, key=lambda f: f.journal.run_id)


def _decode(path: str, body: str) -> Journal:
    raw = body.encode("utf-8", errors="surrogateescape")
    try:
        return msgspec.json.decode(raw, type=Journal)
    except msgspec.ValidationError as exc:
        problem = schema.locate(exc)
        extra = (problem.unknown,) if problem.unknown is not None else ()
        line = schema.json_line(body, problem.steps + extra) if body.strip() else 1
        raise JournalError(path, f"not a linkcheck journal: {exc}", line=line,
                           fix=f"move {path.rsplit('/', 1)[0]} aside") from None
    except msgspec.DecodeError as exc:
        raise JournalError(path, f"not a whole JSON journal: {str(exc).removeprefix('JSON is malformed: ')}",
                           line=schema.decode_line(body, exc) or 1, fix=f"move {path.rsplit('/', 1)[0]} aside") \
            from None


def _check(path: str, body: str, j: Journal, name: str, home: str) -> None:
    """What the schema cannot say: the schema's name, the run id of its folder, a node and a state linkcheck
    writes, operations of the plans' grammar, files a repair may touch (kept under `files/N`)."""
    def refuse(key: str, reason: str) -> JournalError:
        return JournalError(path, reason, line=schema.json_line(body, (key,)) or 1,
                            fix=f"move {path.rsplit('/', 1)[0]} aside")

    if j.schema != SCHEMA:
        raise refuse("schema", f"schema {j.schema!r} is not {SCHEMA}")
    if j.run_id != name or not RUN_ID.fullmatch(j.run_id):
        raise refuse("run_id", f"run_id {j.run_id!r} is not its folder's ({name!r})")
    if not NODE_NAME_RE.match(j.node):
        raise refuse("node", f"node {j.node!r} is not a node name (a pair's a or b, a cluster's host name)")
    if j.state not in STATES or any(state not in STATES for state, _ in j.history):
        raise refuse("state", f"state {j.state!r} is not one of {', '.join(STATES)}")
    for key, ops in (("runtime", j.runtime), ("undo", j.undo)):
        why = _ops_problem(ops)
        if why is not None:
            raise refuse(key, f"{key}: {why}")
    for index, saved in enumerate(j.files):
        fault = _file_problem(saved, home)
        if fault is not None:
            line = schema.json_line(body, ("files", index, fault[0])) or 1
            raise JournalError(path, f"files[{index}]: {fault[1]}", line=line,
                               fix=f"move {path.rsplit('/', 1)[0]} aside")


def _ops_problem(ops: tuple[RuntimeOp, ...]) -> str | None:
    for op in ops:
        try:
            check_op(op)
        except OpError as exc:
            return str(exc)
    return None


def _file_problem(saved: SavedFile, home: str) -> tuple[str, str] | None:
    """(the key at fault, why) for a file the journal names that no repair writes, or not kept as linkcheck keeps
    it (`files/N`, an octal mode, a SHA-256); None when it is one."""
    why = repair_file_problem(saved.path, home=home)
    if why is not None:
        return "path", why
    if saved.existed and not re.fullmatch(r"files/[0-9]{1,4}", saved.saved_as):
        return "saved_as", f"{saved.path!r}: its copy {saved.saved_as!r} is not a files/N of the journal"
    if saved.existed and not re.fullmatch(r"[0-7]{3,4}", saved.mode):
        return "mode", f"{saved.path!r}: mode {saved.mode!r} is not octal"
    if saved.existed and not re.fullmatch(r"[0-9a-f]{64}", saved.sha256):
        return "sha256", f"{saved.path!r}: {saved.sha256!r} is not a SHA-256"
    if not saved.existed and saved.saved_as:
        return "saved_as", f"{saved.path!r} did not exist, yet a copy is named"
    return None


def describe(found: FoundJournal) -> str | None:
    """What an unfinished journal means, for the next run to say; None when the run ended cleanly."""
    j = found.journal
    where = f"node {j.node}: repair run {j.run_id} ({found.directory})"
    if j.state == NOT_REVERTED:
        return (f"{where} is NOT as it was before ({'; '.join(j.differences) or j.note}): "
                "`linkcheck fix --restore` puts the files and the live state back and checks them again")
    if j.state == REVERTED:
        checked = "; its live state read back as before" if j.verified else ""
        return f"{where} was put back as it was before ({j.note or 'reverted'}){checked}"
    if j.state in FINAL:
        return None
    if j.state == PERSISTENT_PENDING:
        word, by = result_of(found)
        if word == "reverted":
            return (f"{where} was not confirmed: {by} reverted it by its timeout and the node put back "
                    "its files and undid the runtime change (as it was before)")
        if word == "accepted":
            return f"{where}: {by} accepted the change but the run ended before it recorded it (committed)"
        return (f"{where} stopped while {by} was waiting: it reverts by its timeout; if it was killed, "
                "`linkcheck fix --restore` puts the files and the live state back")
    if j.state == PLANNED:
        return (f"{where} stopped before or during its first change: `linkcheck fix --restore` puts back "
                "anything it changed")
    return (f"{where} stopped at {j.state}: the live state may differ from the files; `linkcheck fix --restore` "
            "puts both back as they were")


def result_of(found: FoundJournal) -> tuple[str, str]:
    """The commit's result word (`accepted`, `reverted`, `failed`, or ``) and what committed: `try.result` is
    written by the script around netplan try, or, with a second line `nm-checkpoint`, around a NetworkManager
    checkpoint (linkcheck.repair.nm_checkpoint)."""
    words = (found.try_result or "").split()
    by = "the NetworkManager checkpoint" if "nm-checkpoint" in words[1:] else "netplan try"
    return (words[0] if words else ""), by


def settled_state(found: FoundJournal) -> str | None:
    """The state an unfinished journal reached in fact, when what the node left says it (the try's result)."""
    word, _ = result_of(found)
    if found.journal.state == PERSISTENT_PENDING and word == "reverted":
        return REVERTED
    if found.journal.state == PERSISTENT_PENDING and word == "accepted":
        return COMMITTED
    return None

"""The per-node journal of one `fix --apply`: a root-only folder (0700) on the node, written before any change,
holding every original file (bytes, mode, owner, SHA-256), the runtime changes with the operations that undo them,
and the transaction's state, so that an interrupted run can be told and undone (`fix --restore`).

Layout: `<root>/<run id>/journal.json`, `<root>/<run id>/files/<n>` (the originals, `cp -p`), and while
`netplan try` runs: `try.in` (its stdin, a FIFO nobody writes), `try.out`, `try.pid`, then `try.result`
(`accepted` or `reverted`), written by the script that runs it on the node, also when linkcheck is gone.
"""

from __future__ import annotations

import shlex

import msgspec

from linkcheck.repair.runtime import RuntimeOp

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
FINAL = (COMMITTED, REVERTED, RESTORED)

_MARK = "@@LC-JOURNAL@@"
_RESULT = "@@LC-TRY-RESULT@@"


class SavedFile(msgspec.Struct, frozen=True):
    """One file as it was before the run: absent (`existed` false), or its mode, owner and bytes' SHA-256, kept
    in the journal folder as `saved_as`."""

    path: str
    existed: bool
    mode: str = ""
    uid: int = 0
    gid: int = 0
    sha256: str = ""
    saved_as: str = ""


class Journal(msgspec.Struct, frozen=True):
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
    """Print every journal under `root` (oldest first) with its folder and try.result; root only."""
    r = shlex.quote(root.rstrip("/"))
    script = (f'for d in {r}/*/; do [ -f "$d/journal.json" ] || continue; echo "{_MARK} ${{d%/}}"; '
              f'cat "$d/journal.json"; echo; echo "{_RESULT}"; cat "$d/try.result" 2>/dev/null; done; true')
    return f"sudo -n sh -c {shlex.quote(script)}"


def parse_list(text: str) -> list[FoundJournal]:
    """The journals `list_command` printed; one that does not decode is left out (it never finished writing)."""
    found: list[FoundJournal] = []
    for chunk in text.split(_MARK + " ")[1:]:
        head, _, rest = chunk.partition("\n")
        body, _, result = rest.partition(_RESULT + "\n")
        try:
            journal = msgspec.json.decode(body.strip().encode(), type=Journal)
        except (msgspec.ValidationError, msgspec.DecodeError):
            continue
        found.append(FoundJournal(head.strip(), journal, result.strip() or None))
    return sorted(found, key=lambda f: f.journal.run_id)


def describe(found: FoundJournal) -> str | None:
    """What an unfinished journal means, for the next run to say; None when the run ended cleanly."""
    j = found.journal
    where = f"node {j.node}: repair run {j.run_id} ({found.directory})"
    if j.state == REVERTED:
        return f"{where} was put back as it was before ({j.note or 'reverted'})"
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

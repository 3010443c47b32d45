"""A finding's fix as a shell reads it: each step split into what to read and what to run.

A rule's fix step is prose (`leave NCCL_IB_GID_INDEX unset on both nodes`), a command (`sudo lspci -vv -s ...`),
or prose that ends in a command (`then rerun: linkcheck check --bench`, `on node a: sudo ip link set dev
enp1s0f1np1 mtu 9000`), sometimes with a note in parentheses after it (`ethtool --show-fec enp1s0f1np1 (RS on
both ends at 200G)`) or a command in parentheses inside the prose (`reboot both nodes with the cable attached
(sudo systemctl reboot --no-block), then rerun`). The Markdown and HTML fix blocks hold only lines a shell can run:
the prose, notes included, as `#` comments and each command on a line of its own. The console prints each command
on its own line too, and continues one wider than the terminal with ` \\` (a shell line continuation) rather than
wrapping it, so what is copied runs as the same command.

A command is only what runs as written: it starts with a program that fixes name (COMMANDS), its quotes are
balanced, it holds no `<placeholder>` and no bare parenthesis (a note inside it); anything else stays prose.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable

import msgspec

from linkcheck.report.safe_text import shown

# The programs a fix step may start with; a step that starts otherwise is prose.
COMMANDS = frozenset({"apt", "cat", "dpkg", "ethtool", "export", "fwupdmgr", "grep", "ibdev2netdev", "ibv_devinfo",
                      "ip", "linkcheck", "ls", "lspci", "netplan", "nmcli", "ping", "rdma", "sed", "show_gids",
                      "sudo", "systemctl", "unset"})
_PLACEHOLDER = re.compile(r"<[A-Za-z][^<>]*>")
_TRAILING_NOTE = re.compile(r"\s+\(([^()]*)\)$")  # `command (a note)`: a space before it, never `$(...)`
_INNER_COMMAND = re.compile(r"\s*\(([a-z][^();]*)\)")  # `prose (sudo ... ) prose`
_QUOTED = re.compile(r"'[^']*'|\"(?:[^\"\\]|\\.)*\"")
_SUBSTITUTION = re.compile(r"\$\(\([^()]*\)\)|\$\([^()]*\)")


class FixStep(msgspec.Struct, frozen=True):
    """One step of a fix: the words to read (`prose`, "" for a bare command), the commands to run, and the note that
    goes with the command (`RS on both ends at 200G`: the step's words after it, in parentheses or after `#`)."""

    prose: str
    commands: tuple[str, ...] = ()
    note: str = ""


def _code_and_comment(command: str) -> tuple[str, str]:
    """(the command, its trailing shell comment without the `#`): `unset X  # and ...` -> ("unset X", "and ...")."""
    quote = ""
    for i, char in enumerate(command):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and i and command[i - 1].isspace():
            return command[:i].rstrip(), command[i + 1:].strip()
    return command, ""


def runnable(command: str) -> bool:
    """`command` runs as written: a program of COMMANDS first, balanced quotes, no placeholder, no bare parenthesis
    outside quotes and `$(...)` (a trailing `# comment` aside)."""
    code = _code_and_comment(command)[0]
    try:
        words = shlex.split(code)
    except ValueError:  # unbalanced quotes
        return False
    if not words or words[0] not in COMMANDS or _PLACEHOLDER.search(code):
        return False
    bare = _SUBSTITUTION.sub("", _QUOTED.sub("", code))
    return "(" not in bare and ")" not in bare and not bare.rstrip().endswith((",", ";", "\\"))


def _command_with_note(text: str) -> tuple[str, str] | None:
    """(command, its note) when `text` is a command, perhaps followed by a note in parentheses or a `# comment`."""
    if runnable(text):
        return _code_and_comment(text)
    note = _TRAILING_NOTE.search(text)
    if note and runnable(text[:note.start()]):
        return text[:note.start()], note.group(1)
    return None


def split_step(step: str) -> FixStep:
    """What to read and what to run in one fix step (see the module's docstring)."""
    step = step.strip()
    whole = _command_with_note(step)
    if whole is not None:
        return FixStep("", (whole[0],), whole[1])
    at = step.find(": ")
    while at >= 0:  # `prose: command`, at the first colon after which a command starts
        tail = _command_with_note(step[at + 2:])
        if tail is not None:
            return FixStep(step[:at + 1], (tail[0],), tail[1])
        at = step.find(": ", at + 2)
    inner = [m.group(1) for m in _INNER_COMMAND.finditer(step) if runnable(m.group(1))]
    if inner:  # `prose (command) prose`: the prose as it reads, the command beside it
        return FixStep(step, tuple(_code_and_comment(c)[0] for c in inner))
    return FixStep(step)


def shell_lines(steps: Iterable[str]) -> list[str]:
    """A fix block a shell can run: each step's prose as a `# ...` comment, its commands as lines (the note after
    the command as a shell comment). Node text in them is shown as text (no control character)."""
    out = []
    for step in map(split_step, steps):
        if step.prose:
            out.append(f"# {shown(step.prose)}")
        out += [shown(c) for c in step.commands[:-1]]
        if step.commands:
            out.append(shown(step.commands[-1]) + (f"  # {shown(step.note)}" if step.note else ""))
    return out


def _breaks(command: str) -> tuple[list[int], list[int]]:
    """Where a shell line continuation may go: (after a space outside quotes, anywhere outside single quotes: a
    backslash-newline is removed even inside a word)."""
    spaces, anywhere, quote = [], [], ""
    for i, char in enumerate(command):
        if i and quote != "'":
            anywhere.append(i)
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == " " and i + 1 < len(command) and command[i + 1] != " ":
            spaces.append(i + 1)
    return spaces, anywhere


def continued(command: str, width: int, indent: str = "    ", more: str = "  ") -> list[str]:
    """`command` as console lines no wider than `width`: one line when it fits, else lines ending in `\\` that a
    shell reads as the same command, broken after a space where one fits (the next line indented by `more`), else
    inside a word (the next line not indented: the shell joins the two parts)."""
    if len(indent) + len(command) <= width:
        return [indent + command]
    spaces, anywhere = _breaks(command)
    lines: list[str] = []
    start, prefix = 0, indent
    while len(prefix) + len(command) - start > width:
        room = width - len(prefix) - 2  # the line keeps room for " \"
        cut = max((b for b in spaces if start < b <= start + room), default=None)
        at_space = cut is not None
        if cut is None:
            cut = max((b for b in anywhere if start < b <= start + room + 1), default=None)
        if cut is None:  # not even one character fits: leave the rest as it is
            break
        lines.append(prefix + (command[start:cut].rstrip(" ") + " \\" if at_space else command[start:cut] + "\\"))
        start, prefix = cut, (indent + more if at_space else "")
    lines.append(prefix + command[start:])
    return lines

"""One inspection script per node (one round trip), and the split of its answer back into captures.

The script is linkcheck/collect/inspect.sh, sent as it is; the run's values (token, timeouts, the
specs' commands) reach it as positional parameters. It prints, for every command, a section fenced by
markers that carry a per-run random token, so no tool output can forge or end a section, and a final
DONE sentinel with the count, so a truncated answer is always detected. The format is:

    @@LC <token> BEGIN <spec> <arg|->
    <stdout>                      (the script always adds one "\\n" after it; the split removes it)
    @@LC <token> STDERR
    <stderr>                      (same)
    @@LC <token> END <spec> <arg|-> rc=<exit status> ms=<duration>
    ...
    @@LC <token> DONE <number of sections>
"""

from __future__ import annotations

import re
import secrets
import shlex
from collections.abc import Sequence
from functools import cache
from pathlib import Path

import msgspec

from linkcheck.collect.specs import Spec, validate_container, validate_name
from linkcheck.model import Capture

__all__ = ["build_inspection_script", "new_token", "split_script_output"]

_TOKEN_RE = re.compile(r"^[0-9a-f]{8,64}$")
_SPEC_ID_RE = re.compile(r"^[a-z0-9_]+$")
KILL_GRACE_S = 2
_NETDEV_ARG = '"$1"'  # per-netdev commands get the interface as the quoted $1 of their own sh -c
# Words with no shell meaning (no quotes, globs, $, ;, |, &, redirections): safe to split on spaces.
_PLAIN_WORDS_RE = re.compile(r"^[A-Za-z0-9_./:=+,-]+(?: [A-Za-z0-9_./:=+,-]+)*$")


def new_token() -> str:
    """A fresh random section token: output cannot contain it unless it echoes this script."""
    return secrets.token_hex(8)


def _how(spec: Spec) -> tuple[str, str]:
    """How inspect.sh runs a spec's command: plain words directly (a `sh -c` less per command), anything
    else through `sh -c`. The interface name always arrives as a separate, quoted argument, never pasted
    into the command text."""
    if spec.per_container:
        return "c", spec.command
    if spec.per_netdev:
        words, placeholder, rest = spec.command.partition("{netdev}")
        if placeholder and not rest and _PLAIN_WORDS_RE.match(words.rstrip()):
            return "xa", words.rstrip()
        return "c", spec.command.format(netdev=_NETDEV_ARG)
    if _PLAIN_WORDS_RE.match(spec.command):
        return "x", spec.command
    return "c", spec.command


@cache
def inspection_script_text() -> str:
    """linkcheck/collect/inspect.sh, the script every node runs; it takes the run's values as arguments."""
    return (Path(__file__).parent / "inspect.sh").read_text(encoding="utf-8")


def _scope(spec: Spec) -> str:
    return "container" if spec.per_container else "netdev" if spec.per_netdev else "-"


def build_inspection_script(specs: Sequence[Spec], *, token: str, per_command_timeout_s: int,
                            containers: Sequence[str] = ()) -> str:
    """What `sh -s` reads on the node: the containers to look into (`lc_containers`, validated names), one `set --`
    line with the run's values, then inspect.sh as it is."""
    if not _TOKEN_RE.match(token):
        raise ValueError("token must be 8-64 lowercase hex digits")
    if per_command_timeout_s < 1:
        raise ValueError("per_command_timeout_s must be at least 1")
    words = [token, str(int(per_command_timeout_s)), str(KILL_GRACE_S)]
    for spec in specs:
        if not _SPEC_ID_RE.match(spec.id):
            raise ValueError(f"bad spec id {spec.id!r}")
        words += [spec.id, _scope(spec), *_how(spec)]
    names = " ".join(validate_container(c) for c in dict.fromkeys(containers))
    return (f"lc_containers={shlex.quote(names)}\n" + "set -- " + " ".join(shlex.quote(w) for w in words) + "\n"
            + inspection_script_text())


_SUDO_REFUSED_RE = re.compile(
    r"sudo: (a password is required|a terminal is required|sorry, you must have a tty)"
    r"|is not in the sudoers file|is not allowed to execute"
)
_NOT_FOUND_RE = re.compile(r"(?:^|: )([A-Za-z0-9_.+-]+): (?:command )?not found$", re.MULTILINE)
_SUDO_PREFIX = "sudo -n "


def skip_reason(spec: Spec, command: str, rc: int, stderr: str, ms: int, timeout_s: int | None) -> str | None:
    """Why a command's result is not worth parsing although it ran: timeout, missing tool, sudo refused."""
    limit_ms = (timeout_s or 0) * 1000
    if rc == 124 or (rc == 137 and limit_ms and ms >= limit_ms):
        return f"timed out after {timeout_s if timeout_s else round(ms / 1000)}s"
    missing = _NOT_FOUND_RE.search(stderr)
    if rc == 127 or (rc != 0 and missing and stderr.startswith("sudo: ")):
        return f"tool missing: {missing.group(1) if missing else _tool(spec.command)}"
    if rc != 0 and _SUDO_REFUSED_RE.search(stderr):
        return f"sudo refused (needs passwordless sudo for: {sudo_part(command)})"
    return None


def sudo_part(command: str) -> str:
    """What a spec runs through `sudo -n`, as a sudoers line names it: the words after it up to the end of that
    command (`)`, `;`, `|`, `&&`), or a whole `sh -c '...'`."""
    rest = command.rsplit(_SUDO_PREFIX, 1)[-1]
    if rest.startswith("sh -c '"):
        end = rest.find("'", len("sh -c '"))
        return rest[:end + 1] if end != -1 else rest
    return re.split(r"\)|;|\||&&", rest, maxsplit=1)[0].strip()


def _tool(command: str) -> str:
    words = [w for w in command.split() if w not in ("sudo", "-n")]
    return words[0] if words else command


class _Section(msgspec.Struct):
    spec: Spec
    arg: str | None
    stdout: list[str] = msgspec.field(default_factory=list)
    stderr: list[str] | None = None  # None until the STDERR marker


class _Splitter:
    """A line-by-line reader of the fenced answer; every surprise makes the answer incomplete."""

    def __init__(self, node: str, token: str, specs: Sequence[Spec], timeout_s: int | None) -> None:
        tok = re.escape(token)
        self.begin = re.compile(rf"^@@LC {tok} BEGIN ([a-z0-9_]+) ([A-Za-z0-9_.:-]+)$")
        self.stderr_mark = f"@@LC {token} STDERR"
        self.end = re.compile(rf"^@@LC {tok} END ([a-z0-9_]+) ([A-Za-z0-9_.:-]+) rc=(\d+) ms=(-?\d+)$")
        self.done = re.compile(rf"^@@LC {tok} DONE (\d+)$")
        self.node, self.timeout_s = node, timeout_s
        self.specs = {s.id: s for s in specs}
        self.captures: list[Capture] = []
        self.current: _Section | None = None
        self.ok = True
        self.done_count: int | None = None

    def feed(self, line: str) -> None:
        if self.done_count is not None:
            return  # anything after DONE (a login shell's logout noise) is not ours
        if self.current is None:
            self._between(line)
        elif self.current.stderr is None:
            self._in_stdout(self.current, line)
        else:
            self._in_stderr(self.current, line)

    def _between(self, line: str) -> None:
        # Text before the first section (shell start-up noise) is ignored; markers are all that count.
        if match := self.begin.match(line):
            spec = self.specs.get(match.group(1))
            arg = None if match.group(2) == "-" else match.group(2)
            if spec is None or (arg is None) == (spec.per_netdev or spec.per_container):
                self.ok = False
                return
            self.current = _Section(spec, arg)
        elif match := self.done.match(line):
            self.done_count = int(match.group(1))

    def _in_stdout(self, section: _Section, line: str) -> None:
        if line == self.stderr_mark:
            section.stderr = []
        elif self.begin.match(line) or self.end.match(line) or self.done.match(line):
            self._abandon(line)
        else:
            section.stdout.append(line)

    def _in_stderr(self, section: _Section, line: str) -> None:
        match = self.end.match(line)
        if match is None:
            if line == self.stderr_mark or self.begin.match(line) or self.done.match(line):
                self._abandon(line)
            else:
                assert section.stderr is not None
                section.stderr.append(line)
            return
        if (match.group(1), match.group(2)) != (section.spec.id, section.arg or "-"):
            self._abandon(None)
            return
        self.captures.append(self._finish(section, int(match.group(3)), max(0, int(match.group(4)))))
        self.current = None

    def _abandon(self, line: str | None) -> None:
        """A section broken off by another marker: keep what came, flag it, and resync on that marker."""
        self.close()
        if line is not None:
            self._between(line)

    def close(self) -> None:
        if self.current is not None:
            self.ok = False
            self.captures.append(self._finish(self.current, None, 0))
            self.current = None

    def _finish(self, section: _Section, rc: int | None, ms: int) -> Capture:
        stdout = "\n".join(section.stdout)
        stderr = "\n".join(section.stderr or [])
        command = _render(section.spec, section.arg)
        if rc is None:
            skipped: str | None = "truncated answer"
        else:
            skipped = skip_reason(section.spec, command, rc, stderr, ms, self.timeout_s)
        return Capture(
            node=self.node,
            spec=section.spec.id,
            command=command,
            stdout=stdout,
            stderr=stderr,
            exit_status=rc,
            duration_s=ms / 1000,
            arg=section.arg,
            skipped=skipped,
        )


def _render(spec: Spec, arg: str | None) -> str:
    try:
        if arg is not None and spec.per_container:
            return spec.render(arg)
        return spec.render(validate_name(arg) if arg is not None else None)
    except ValueError:  # unreachable through the BEGIN pattern; kept so nothing escapes
        return spec.command


def split_script_output(
    node: str, stdout: str, specs: Sequence[Spec], token: str, *, per_command_timeout_s: int | None = None
) -> tuple[list[Capture], bool]:
    """Rebuild one Capture per fenced section; complete is False when anything is cut off or out of place."""
    splitter = _Splitter(node, token, specs, per_command_timeout_s)
    for line in stdout.split("\n"):
        splitter.feed(line)
    splitter.close()
    complete = splitter.ok and splitter.done_count == len(splitter.captures)
    return splitter.captures, complete

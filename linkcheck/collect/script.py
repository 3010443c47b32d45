"""One inspection script per node (one round trip), and the split of its answer back into captures.

The script prints, for every command, a section fenced by markers that carry a per-run random
token, so no tool output can forge or end a section, and a final DONE sentinel with the count, so
a truncated answer is always detected. The format is:

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
from dataclasses import dataclass, field

from linkcheck.collect.specs import BUILTIN_FUNCTIONS, Spec, validate_name
from linkcheck.model import Capture

__all__ = ["build_inspection_script", "new_token", "split_script_output"]

_TOKEN_RE = re.compile(r"^[0-9a-f]{8,64}$")
_SPEC_ID_RE = re.compile(r"^[a-z0-9_]+$")
KILL_GRACE_S = 2
_NETDEV_ARG = '"$1"'  # per-netdev commands get the interface as the quoted $1 of their own sh -c
# Words with no shell meaning (no quotes, globs, $, ;, |, &, redirections): safe to split on spaces.
_PLAIN_WORDS_RE = re.compile(r"^[A-Za-z0-9_./:=+,-]+(?: [A-Za-z0-9_./:=+,-]+)*$")

# Kept POSIX (dash, busybox): DGX OS runs /bin/sh = dash. Every command gets /dev/null as stdin,
# because sh is reading this very script from its stdin and a command that read it would eat the rest.
_PROLOGUE = r"""# linkcheck inspection script: one fenced section per command, then a DONE sentinel.
LC_ALL=C; export LC_ALL
PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"; export PATH
lc_tok=@TOKEN@
lc_n=0
lc_later=
# The sections' files go to memory (/dev/shm) unless TMPDIR says where: a run creates ~200 small files,
# and on a disk-backed /tmp each one costs a journal update (3x the whole script's time in the lab).
lc_dir=/tmp
if [ -n "${TMPDIR:-}" ]; then lc_dir=$TMPDIR; elif [ -d /dev/shm ] && [ -w /dev/shm ]; then lc_dir=/dev/shm; fi
lc_tmp=$(mktemp -d "$lc_dir/linkcheck.XXXXXX" 2>/dev/null || mktemp -d /tmp/linkcheck.XXXXXX) ||
  { echo 'linkcheck: mktemp -d failed' >&2; exit 70; }
trap 'rm -rf "$lc_tmp"' EXIT
# On a hang-up or a dead connection, end the running commands by PID (each `timeout` leads its own
# process group) before leaving, so nothing of ours outlives the session.
lc_abort() {
  for lc_p in "$lc_tmp"/*.pid; do
    lc_q=; read -r lc_q 2>/dev/null <"$lc_p"
    case $lc_q in ''|*[!0-9]*) continue;; esac
    kill -TERM "-$lc_q" 2>/dev/null || kill -TERM "$lc_q" 2>/dev/null
  done
  exit "$1"
}
trap 'lc_abort 129' HUP
trap 'lc_abort 130' INT
trap 'lc_abort 141' PIPE
trap 'lc_abort 143' TERM
if command -v timeout >/dev/null 2>&1; then lc_to="timeout -k @GRACE@ @TIMEOUT@"; else lc_to=; fi
# Timestamps come from /proc/uptime through the `read` builtin (centiseconds): no process per reading.
lc_cs() {
  lc_up=; read -r lc_up lc_x 2>/dev/null </proc/uptime
  case $lc_up in *[0-9].[0-9][0-9]) lc_v=${lc_up%.*}${lc_up#*.};; *) lc_v=;; esac
}
# Every command starts at once in the background, into its own files; its section (markers included)
# is complete on disk when its subshell ends. The sections are then printed in a fixed order, each as
# soon as its command is done, so a connection lost half-way still leaves the sections printed before
# it. Nothing polls: `wait` on each subshell's PID blocks until that command is done.
printf '@@LC %s STDERR\n' "$lc_tok" >"$lc_tmp/m"
lc_end() {  # $1 spec, $2 arg, $3 exit status, $4 start time: the section's files are complete
  lc_cs
  case $4$lc_v in *[!0-9]*|'') lc_dt=0;; *) lc_dt=$(( (lc_v - $4) * 10 ));; esac
  echo >>"$lc_j.out"; echo >>"$lc_j.err"
  printf '@@LC %s END %s %s rc=%s ms=%s\n' "$lc_tok" "$1" "$2" "$3" "$lc_dt" >"$lc_j.e"
  : >"$lc_j.d"  # created empty once .e is whole: `>file` exists before its content is written
}
lc_run() {
  lc_n=$(( lc_n + 1 ))
  lc_j="$lc_tmp/$lc_n"
  printf '@@LC %s BEGIN %s %s\n' "$lc_tok" "$1" "$2" >"$lc_j.b"
  if [ "$3" = b ]; then  # b: a builtin, for lc_builtins to run in this very shell (no process)
    eval "lc_pid_$lc_n= lc_spec_$lc_n=\$1 lc_code_$lc_n=\$4"
    lc_later="$lc_later $lc_n"
    return
  fi
  lc_cs; lc_t0=$lc_v
  case $3 in x|xa)  # a tool that is not installed (MLNX_OFED's, often) costs no process: 127 as from sh
    if ! command -v "${4%% *}" >/dev/null 2>&1; then
      : >"$lc_j.out"; echo "${4%% *}: not found" >"$lc_j.err"
      lc_end "$1" "$2" 127 "$lc_t0"
      eval "lc_pid_$lc_n="
      return
    fi;;
  esac
  (
    case $3 in  # x: plain words, run as they are (+ the interface); c: shell syntax, through sh -c
      x) $lc_to $4 </dev/null >"$lc_j.out" 2>"$lc_j.err" & ;;
      xa) $lc_to $4 "$2" </dev/null >"$lc_j.out" 2>"$lc_j.err" & ;;
      *) $lc_to sh -c "$4" sh "$2" </dev/null >"$lc_j.out" 2>"$lc_j.err" & ;;
    esac
    echo $! >"$lc_j.pid"
    wait $!
    lc_rc=$?
    : >"$lc_j.pid"  # done: lc_abort must not signal a PID that may be reused by now
    lc_end "$1" "$2" "$lc_rc" "$lc_t0"
  ) &
  eval "lc_pid_$lc_n=\$!"
}
lc_builtins() {  # once every command has started: the builtins are quick, the commands are what take time
  for lc_k in $lc_later; do
    lc_j="$lc_tmp/$lc_k"
    eval "set -- \"\$lc_spec_$lc_k\" - \"\$lc_code_$lc_k\""
    lc_cs; lc_t0=$lc_v
    { eval "$3"; } </dev/null >"$lc_j.out" 2>"$lc_j.err"
    lc_end "$1" "$2" $? "$lc_t0"
  done
}
lc_emit() {  # one `cat` prints the section waited for and every later one already complete (its .d file)
  lc_i=1
  while [ "$lc_i" -le "$lc_n" ]; do
    eval "lc_p=\$lc_pid_$lc_i"
    [ -z "$lc_p" ] || wait "$lc_p"
    set --
    while :; do
      lc_j="$lc_tmp/$lc_i"
      set -- "$@" "$lc_j.b" "$lc_j.out" "$lc_tmp/m" "$lc_j.err" "$lc_j.e"
      lc_i=$(( lc_i + 1 ))
      [ "$lc_i" -le "$lc_n" ] && [ -e "$lc_tmp/$lc_i.d" ] || break
    done
    cat "$@" || lc_abort 141  # the reader is gone
  done
}
lc_netdevs=
for lc_d in /sys/class/net/*; do
  lc_vendor=; read -r lc_vendor 2>/dev/null <"$lc_d/device/vendor"
  [ "$lc_vendor" = 0x15b3 ] || continue
  lc_i=${lc_d##*/}
  case $lc_i in ''|-|*[!A-Za-z0-9_.:-]*) continue;; esac
  lc_netdevs="$lc_netdevs $lc_i"
done
"""


def new_token() -> str:
    """A fresh random section token: output cannot contain it unless it echoes this script."""
    return secrets.token_hex(8)


def _how(spec: Spec) -> str:
    """How lc_run runs a spec: its builtin in the script's own shell; otherwise its command, plain words
    directly (a `sh -c` less per command), anything else through `sh -c`. The interface name always
    arrives as a separate, quoted argument, never pasted into the command text."""
    if spec.builtin:
        if spec.per_netdev:
            raise ValueError(f"spec {spec.id}: a builtin cannot run per interface")
        return f"b {shlex.quote(spec.builtin)}"
    if spec.per_netdev:
        words, placeholder, rest = spec.command.partition("{netdev}")
        if placeholder and not rest and _PLAIN_WORDS_RE.match(words.rstrip()):
            return f"xa {shlex.quote(words.rstrip())}"
        return f"c {shlex.quote(spec.command.format(netdev=_NETDEV_ARG))}"
    if _PLAIN_WORDS_RE.match(spec.command):
        return f"x {shlex.quote(spec.command)}"
    return f"c {shlex.quote(spec.command)}"


def build_inspection_script(specs: Sequence[Spec], *, token: str, per_command_timeout_s: int) -> str:
    """The POSIX sh script (feed it to `sh -s` on stdin) that runs every spec and fences each answer."""
    if not _TOKEN_RE.match(token):
        raise ValueError("token must be 8-64 lowercase hex digits")
    if per_command_timeout_s < 1:
        raise ValueError("per_command_timeout_s must be at least 1")
    for spec in specs:
        if not _SPEC_ID_RE.match(spec.id):
            raise ValueError(f"bad spec id {spec.id!r}")
    lines = [
        _PROLOGUE.replace("@TOKEN@", token)
        .replace("@GRACE@", str(KILL_GRACE_S))
        .replace("@TIMEOUT@", str(int(per_command_timeout_s))),
        BUILTIN_FUNCTIONS,
    ]
    lines += [f"lc_run {spec.id} - {_how(spec)}" for spec in specs if not spec.per_netdev]
    per_netdev = [spec for spec in specs if spec.per_netdev]
    if per_netdev:
        lines.append("for lc_if in $lc_netdevs; do")
        lines += [f'  lc_run {s.id} "$lc_if" {_how(s)}' for s in per_netdev]
        lines.append("done")
    lines += ["lc_builtins", "lc_emit", 'printf \'@@LC %s DONE %s\\n\' "$lc_tok" "$lc_n"']
    return "\n".join(lines) + "\n"


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
        return f"sudo refused (needs passwordless sudo for: {command.rsplit(_SUDO_PREFIX, 1)[-1]})"
    return None


def _tool(command: str) -> str:
    words = [w for w in command.split() if w not in ("sudo", "-n")]
    return words[0] if words else command


@dataclass
class _Section:
    spec: Spec
    arg: str | None
    stdout: list[str] = field(default_factory=list)
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
            if spec is None or (arg is None) == spec.per_netdev:
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

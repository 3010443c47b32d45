"""Remote processes we start for traffic tests: detached, tracked by process group, killed by PID.

Each process runs as `setsid sh -c 'timeout --foreground ... TOOL ...; echo $? > rc'` in its own temp
dir, so the shell's PID is the process group id: killing `-PGID` ends the shell, `timeout` and the
tool, and nothing else on the node (never pkill by name: another user's run may be there).
"""

from __future__ import annotations

import logging
import shlex
import threading
from dataclasses import dataclass, field

from linkcheck.errors import BenchError
from linkcheck.transport.base import RemoteResult, Transport

log = logging.getLogger(__name__)
OUT_MARK = "@@LC-BENCH-STDERR@@"
RC_MARK = "@@LC-BENCH-RC@@"
EXTRA_MARK = "@@LC-BENCH-FILE@@"


@dataclass(frozen=True)
class RemoteProcess:
    """A detached process on one node: its process group and its working folder."""

    node: str
    pgid: int
    directory: str
    label: str


@dataclass(frozen=True)
class Finished:
    """What a finished remote process left: stdout, stderr, exit status (None if killed or unknown)."""

    stdout: str
    stderr: str
    exit_status: int | None
    extra: str | None = None  # a file the tool wrote beside its output (perftest's JSON report)


@dataclass
class ProcessRegistry:
    """Every process we started, so a failure, timeout or Ctrl-C can end all of them by PID."""

    transports: dict[str, Transport]
    running: list[RemoteProcess] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, proc: RemoteProcess) -> None:
        with self.lock:
            self.running.append(proc)

    def discard(self, proc: RemoteProcess) -> None:
        with self.lock:
            if proc in self.running:
                self.running.remove(proc)

    def kill_all(self) -> list[str]:
        """Kill every tracked process group and remove its folder; returns what could not be reached."""
        problems = []
        with self.lock:
            procs, self.running = list(self.running), []
        for proc in procs:
            try:
                kill(self.transports[proc.node], proc)
            except Exception as exc:  # keep going: the other node's processes still need ending
                problems.append(f"node {proc.node}: could not end {proc.label} (pid {proc.pgid}): {exc}")
        return problems


def run_checked(transport: Transport, command: str, timeout_s: float, what: str) -> RemoteResult:
    result = transport.run(command, timeout_s=timeout_s)
    if result.exit_status != 0:
        first = next((ln for ln in result.stderr.splitlines() if ln.strip()), "no error text")
        raise BenchError(f"node {transport.name}: {what} failed (exit {result.exit_status}): {first[:200]}")
    return result


def start(transport: Transport, argv: list[str], *, deadline_s: int, label: str) -> RemoteProcess:
    """Start argv detached under `timeout`; returns once the process exists (its PID is known)."""
    tool = " ".join(shlex.quote(a) for a in argv)
    # --foreground keeps timeout in the shell's process group (plain timeout makes a group of its own),
    # so killing -PGID reaches the tool too.
    inner = f"timeout --foreground -k 5 {int(deadline_s)} {tool} >out 2>err </dev/null; echo $? >rc"
    command = (
        'd=$(mktemp -d /tmp/linkcheck-bench.XXXXXX) && cd "$d" && '
        f"{{ setsid sh -c {shlex.quote(inner)} >/dev/null 2>&1 </dev/null & echo \"$! $d\"; }}"
    )
    result = run_checked(transport, command, 15, f"starting {label}")
    try:
        pid_text, directory = result.stdout.split()
        return RemoteProcess(transport.name, int(pid_text), directory, label)
    except ValueError:
        raise BenchError(f"node {transport.name}: starting {label} gave no PID ({result.stdout[:80]!r})") from None


def wait_exit(transport: Transport, proc: RemoteProcess, timeout_s: float) -> bool:
    """Block on the node until the process group leader exits; False if it is still running at the deadline."""
    script = f"while kill -0 {proc.pgid} 2>/dev/null; do sleep 0.05; done"
    result = transport.run(f"timeout {max(1, int(timeout_s + 0.999))} sh -c {shlex.quote(script)}",
                           timeout_s=timeout_s + 10)
    return result.exit_status == 0


def wait_listening(transport: Transport, proc: RemoteProcess, port: int, timeout_s: float) -> str | None:
    """Wait until the server listens on `port`; None when ready, else why not (died, or never listened)."""
    script = (f'until ss -ltnH "sport = :{int(port)}" | grep -q .; do '
              f"kill -0 {proc.pgid} 2>/dev/null || exit 3; sleep 0.02; done")
    result = transport.run(f"timeout {max(1, int(timeout_s + 0.999))} sh -c {shlex.quote(script)}",
                           timeout_s=timeout_s + 10)
    if result.exit_status == 0:
        return None
    if result.exit_status == 3:
        return f"{proc.label} exited before listening on port {port}"
    return f"{proc.label} did not listen on port {port} within {timeout_s:.0f} s"


def port_owner(transport: Transport, port: int) -> str | None:
    """Who listens on `port` on this node (ss users field), or None when the port is free."""
    result = transport.run(f'ss -ltnpH "sport = :{int(port)}"', timeout_s=15)
    line = next((ln for ln in result.stdout.splitlines() if ln.strip()), None)
    if line is None:
        return None
    users = line[line.find("users:"):] if "users:" in line else line.split()[-1]
    return users.strip()


def collect_output(transport: Transport, proc: RemoteProcess, extra_file: str | None = None) -> Finished:
    """Read stdout, stderr, exit status (and one extra file) of a finished process, then remove its folder."""
    d = shlex.quote(proc.directory)
    extra = f"; echo {EXTRA_MARK}; cat {d}/{shlex.quote(extra_file)} 2>/dev/null" if extra_file else ""
    command = (f"cat {d}/out 2>/dev/null; echo {OUT_MARK}; cat {d}/err 2>/dev/null; echo {RC_MARK}; "
               f"cat {d}/rc 2>/dev/null{extra}; rm -rf {d}")
    text = transport.run(command, timeout_s=30).stdout
    stdout, _, rest = text.partition(f"{OUT_MARK}\n")
    stderr, _, rest = rest.partition(f"{RC_MARK}\n")
    rc_text, _, extra_text = rest.partition(f"{EXTRA_MARK}\n")
    rc = rc_text.strip()
    return Finished(stdout, stderr, int(rc) if rc.isdigit() else None, extra_text or None)


def kill(transport: Transport, proc: RemoteProcess) -> None:
    """End the process group by PID (TERM, then KILL), and remove its folder."""
    d = shlex.quote(proc.directory)
    g = int(proc.pgid)
    # `kill -SIG -PGID` without `--`: dash's kill does not accept `--`, and the login shell may be dash.
    command = (f"kill -TERM -{g} 2>/dev/null; i=0; while kill -0 -{g} 2>/dev/null && [ $i -lt 20 ]; "
               f"do sleep 0.1; i=$((i+1)); done; kill -KILL -{g} 2>/dev/null; rm -rf {d}; true")
    transport.run(command, timeout_s=15)

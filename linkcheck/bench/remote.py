"""Remote processes we start for traffic tests: detached, tracked by process group, killed by PID.

Each process runs as `setsid sh -c 'timeout --foreground ... TOOL ...; echo $? > rc'` in its own folder
under the run's folder (/tmp/linkcheck-bench.<run id>-<node>), so the shell's PID is the process group id:
killing `-PGID` ends the shell, `timeout` and the tool, and nothing else on the node (never pkill by
name: another user's run may be there). A folder with a `pgid` file and no `rc` file is a process
still running; that is how a sweep of the run's folder finds what to end, even a process whose start
was cut short by Ctrl-C before we learnt its PID. A watchdog on each node, bound to our SSH session,
sweeps the folder if the session dies (SSH dropped, linkcheck killed).
"""

from __future__ import annotations

import logging
import re
import secrets
import shlex
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import msgspec
from msgspec.structs import replace

from linkcheck.errors import BenchError
from linkcheck.integers import ascii_int
from linkcheck.model import Capture
from linkcheck.transport.base import ConnectionDroppedError, RemoteResult, Transport

log = logging.getLogger(__name__)
T = TypeVar("T")
OUT_MARK = "@@LC-BENCH-STDERR@@"
RC_MARK = "@@LC-BENCH-RC@@"
EXTRA_MARK = "@@LC-BENCH-FILE@@"
RUN_PREFIX = "/tmp/linkcheck-bench."


class RemoteProcess(msgspec.Struct, frozen=True):
    """A detached process on one node: its process group and its working folder."""

    node: str
    pgid: int
    directory: str
    label: str


class Finished(msgspec.Struct, frozen=True):
    """What a finished remote process left: stdout, stderr, exit status (None if killed or unknown)."""

    stdout: str
    stderr: str
    exit_status: int | None
    extra: str | None = None  # a file the tool wrote beside its output (perftest's JSON report)
    ended_at: float | None = None  # the node's clock (epoch s) when the tool exited; None if it was killed


def sweep_script(run_dir: str) -> str:
    """End every process of the run still running (TERM, then KILL), then remove the run's folder.

    `kill -SIG -PGID` without `--`: dash's kill does not accept `--`, and the login shell may be dash.
    The plain PID is the fallback for a process that has not called setsid() yet.
    """
    run = shlex.quote(run_dir)
    each = (f'for f in {run}/*/pgid; do [ -f "$f" ] || continue; [ -e "${{f%/pgid}}/rc" ] && continue; '
            'g=$(cat "$f"); case "$g" in ""|*[!0-9]*) continue;; esac; ')
    return (f"{each}kill -TERM -$g 2>/dev/null || kill -TERM $g 2>/dev/null; done; i=0; "
            f"while [ $i -lt 20 ]; do left=; {each}kill -0 -$g 2>/dev/null && left=1; done; "
            '[ -z "$left" ] && break; sleep 0.1; i=$((i+1)); done; '
            f"{each}kill -KILL -$g 2>/dev/null; kill -KILL $g 2>/dev/null; done; rm -rf {run}; true")


def watchdog_script(run_dir: str) -> str:
    """Runs for the whole test on our SSH session: once a byte can no longer be written to it (sshd closed
    the session because the connection dropped) or it is told to stop, sweep the run's folder."""
    run = shlex.quote(run_dir)
    return (f"trap '' PIPE; trap 'exit 0' HUP TERM INT; trap {shlex.quote(sweep_script(run_dir))} EXIT; "
            f"while [ -d {run} ] && printf . 2>/dev/null; do sleep 0.2; done")


class ProcessRegistry(msgspec.Struct):
    """Every process we started, with the capture it will make, so a failure, timeout or Ctrl-C can end
    all of them by PID and still keep what they printed."""

    transports: dict[str, Transport]
    run_id: str = msgspec.field(default_factory=lambda: secrets.token_hex(6))
    running: dict[RemoteProcess, Capture] = msgspec.field(default_factory=dict)
    lock: threading.Lock = msgspec.field(default_factory=threading.Lock)
    watchdogs: list[threading.Thread] = msgspec.field(default_factory=list)

    def run_dir(self, node: str) -> str:
        """Per node: two nodes may share /tmp (a lab, or both targets on one machine)."""
        return f"{RUN_PREFIX}{self.run_id}-{node}"

    def prepare(self, budget_s: float) -> None:
        """Create the run's folder on every node and start each node's watchdog."""
        on_each_node(self.transports, lambda name, transport: run_checked(
            transport, f"mkdir -m 700 {shlex.quote(self.run_dir(name))}", 15, "creating the run folder"))
        for name, transport in self.transports.items():
            thread = threading.Thread(target=_watch, args=(transport, self.run_dir(name), budget_s), daemon=True,
                                      name=f"bench-watchdog-{name}")
            thread.start()
            self.watchdogs.append(thread)

    def add(self, proc: RemoteProcess, template: Capture) -> None:
        with self.lock:
            self.running[proc] = template

    def claim(self, proc: RemoteProcess) -> bool:
        """Take a finished process off the list; False when end_all already took it (it makes the capture)."""
        with self.lock:
            return self.running.pop(proc, None) is not None

    def end_all(self, reason: str) -> tuple[list[Capture], list[str]]:
        """End every process of the run on every node and remove its folders. Returns the captures of the
        processes that were still running (what they printed so far) and what could not be done."""
        with self.lock:
            procs, self.running = dict(self.running), {}
        captures, problems, lost = [], [], set()
        for proc, template in procs.items():
            result = Finished("", "", None)
            if proc.node not in lost:
                try:
                    kill(self.transports[proc.node], proc)
                    result = collect_output(self.transports[proc.node], proc)
                except Exception:  # the node is unreachable: the sweep below says so once
                    lost.add(proc.node)
            captures.append(replace(template, stdout=result.stdout, stderr=result.stderr, exit_status=None,
                                    skipped=f"ended by linkcheck: {reason}"))
        for name, transport in self.transports.items():
            try:
                transport.run(sweep_script(self.run_dir(name)), timeout_s=30)
            except Exception as exc:  # keep going: the other node's processes still need ending
                mine = [p for p in procs if p.node == name]
                what = ", ".join(f"{p.label} (pid {p.pgid})" for p in mine) or "what linkcheck started"
                problems.append(f"node {name}: cannot reach it to end {what} ({getattr(exc, 'reason', exc)}); "
                                "linkcheck's watchdog there ends it when sshd closes the session, else `timeout` does")
        for thread in self.watchdogs:
            thread.join(timeout=3)  # the folder is gone: each watchdog ends within 0.2 s
        return captures, problems


def _watch(transport: Transport, run_dir: str, budget_s: float) -> None:
    try:
        transport.run(watchdog_script(run_dir), timeout_s=budget_s)
    except Exception as exc:  # the session is gone: the node side has swept (or `timeout` will end them)
        log.debug("watchdog on node %s ended: %s", transport.name, exc)


def on_each_node(transports: Mapping[str, Transport], work: Callable[[str, Transport], T]) -> dict[str, T]:
    """work(name, transport) on every node at once; the first node's error (in node order) is raised."""
    with ThreadPoolExecutor(max_workers=len(transports) or 1, thread_name_prefix="each-node") as pool:
        futures = {name: pool.submit(work, name, t) for name, t in transports.items()}
    return {name: future.result() for name, future in futures.items()}


def run_step(transport: Transport, command: str, timeout_s: float, doing: str) -> RemoteResult:
    """transport.run, saying what we were doing when the connection dropped (not just the shell word)."""
    try:
        return transport.run(command, timeout_s=timeout_s)
    except ConnectionDroppedError as exc:
        why = exc.reason.split(" while running ")[0]  # the shell word it names is ours, not the user's
        raise BenchError(f"node {transport.name}: SSH connection lost while {doing} ({why})", fix=exc.fix) from exc


def run_checked(transport: Transport, command: str, timeout_s: float, what: str) -> RemoteResult:
    result = run_step(transport, command, timeout_s, what)
    if result.exit_status != 0:
        first = next((ln for ln in result.stderr.splitlines() if ln.strip()), "no error text")
        raise BenchError(f"node {transport.name}: {what} failed (exit {result.exit_status}): {first[:200]}")
    return result


def start(transport: Transport, argv: list[str], *, run_dir: str, deadline_s: int, label: str) -> RemoteProcess:
    """Start argv detached under `timeout`; returns once the process exists (its PID is known)."""
    tool = " ".join(shlex.quote(a) for a in argv)
    # --foreground keeps timeout in the shell's process group (plain timeout makes a group of its own),
    # so killing -PGID reaches the tool too.
    # `end` is the node's time of exit: which side of a pair failed first, free of our polling delays.
    inner = (f"timeout --foreground -k 5 {int(deadline_s)} {tool} >out 2>err </dev/null; "
             "r=$?; date +%s.%N >end; echo $r >rc")
    command = (
        f'd=$(mktemp -d {shlex.quote(run_dir)}/p.XXXXXX) && cd "$d" && '
        f"{{ setsid sh -c {shlex.quote(inner)} >/dev/null 2>&1 </dev/null & echo $! >pgid; echo \"$! $d\"; }}"
    )
    result = run_checked(transport, command, 15, f"starting {label}")
    try:
        pid_text, directory = result.stdout.split()
        return RemoteProcess(transport.name, int(pid_text), directory, label)
    except ValueError:
        raise BenchError(f"node {transport.name}: starting {label} gave no PID ({result.stdout[:80]!r})") from None


def wait_exit(transport: Transport, proc: RemoteProcess, timeout_s: float) -> bool:
    """Block on the node until the process is done; False if it is still running at the deadline.

    Done means its `rc` file exists (the tool exited and its shell recorded the status), or, for one that
    was killed before writing it, that its PID is gone. The `rc` file comes first because `kill -0` also
    succeeds on a zombie: the leader was orphaned at start, and some inits reap orphans only now and then
    (up to a second or more late), which would stall every round by that much."""
    rc = shlex.quote(f"{proc.directory}/rc")
    script = f"while [ ! -e {rc} ] && kill -0 {proc.pgid} 2>/dev/null; do sleep 0.05; done"
    result = run_step(transport, f"timeout {max(1, int(timeout_s + 0.999))} sh -c {shlex.quote(script)}",
                      timeout_s + 10, f"waiting for {proc.label}")
    return result.exit_status == 0


def wait_listening(transport: Transport, proc: RemoteProcess, port: int, timeout_s: float) -> str | None:
    """Wait until the server listens on `port`; None when ready, else why not (died, or never listened)."""
    rc = shlex.quote(f"{proc.directory}/rc")  # see wait_exit: an exited leader may linger as a zombie
    script = (f'until ss -ltnH "sport = :{int(port)}" | grep -q .; do '
              f"[ ! -e {rc} ] && kill -0 {proc.pgid} 2>/dev/null || exit 3; sleep 0.02; done")
    result = run_step(transport, f"timeout {max(1, int(timeout_s + 0.999))} sh -c {shlex.quote(script)}",
                      timeout_s + 10, f"waiting for {proc.label} to listen")
    if result.exit_status == 0:
        return None
    if result.exit_status == 3:
        return f"{proc.label} exited before listening on port {port}"
    return f"{proc.label} did not listen on port {port} within {timeout_s:.0f} s"


_USER = re.compile(r'\("([^"]*)",pid=(\d+)')


def busy_ports(transport: Transport, ports: set[int]) -> dict[int, str]:
    """Which of `ports` something listens on (TCP) on this node, and who: `python3 (pid 4242)`."""
    result = run_step(transport, "ss -ltnpH", 15, "listing the TCP ports in use")
    busy: dict[int, str] = {}
    for line in result.stdout.splitlines():
        fields = line.split()
        port = ascii_int(fields[3].rpartition(":")[2], 0, 65535) if len(fields) >= 4 else None
        if port is None:
            continue
        if port in ports:
            users = [f"{name} (pid {pid})" for name, pid in _USER.findall(line)]
            busy[port] = ", ".join(dict.fromkeys(users)) or "a process we may not see (run as root to name it)"
    return busy


def collect_output(transport: Transport, proc: RemoteProcess, extra_file: str | None = None) -> Finished:
    """Read stdout, stderr, exit status (and one extra file) of a finished process, then remove its folder."""
    d = shlex.quote(proc.directory)
    extra = f"; echo {EXTRA_MARK}; cat {d}/{shlex.quote(extra_file)} 2>/dev/null" if extra_file else ""
    command = (f"cat {d}/out 2>/dev/null; echo {OUT_MARK}; cat {d}/err 2>/dev/null; echo {RC_MARK}; "
               f"cat {d}/rc {d}/end 2>/dev/null{extra}; rm -rf {d}")
    text = run_step(transport, command, 30, f"reading the output of {proc.label}").stdout
    stdout, _, rest = text.partition(f"{OUT_MARK}\n")
    stderr, _, rest = rest.partition(f"{RC_MARK}\n")
    status_text, _, extra_text = rest.partition(f"{EXTRA_MARK}\n")
    rc, _, end = status_text.strip().partition("\n")
    return Finished(stdout, stderr, ascii_int(rc, 0, 255), extra_text or None, _seconds(end))


def _seconds(text: str) -> float | None:
    try:
        return float(text.strip())
    except ValueError:
        return None


def kill(transport: Transport, proc: RemoteProcess) -> None:
    """End the process group by PID (TERM, then KILL); its output stays for collect_output. The plain PID
    is the fallback for a process that has not called setsid() yet.

    Only while its `rc` file is absent, as the sweep does: once the shell has written it, the group has ended
    and its number may already belong to another process on the node, which must never be signalled."""
    g = int(proc.pgid)
    rc = shlex.quote(f"{proc.directory}/rc")
    command = (f"[ -e {rc} ] && exit 0; kill -TERM -{g} 2>/dev/null || kill -TERM {g} 2>/dev/null; i=0; "
               f"while [ ! -e {rc} ] && kill -0 -{g} 2>/dev/null && [ $i -lt 20 ]; do sleep 0.1; i=$((i+1)); "
               f"done; [ -e {rc} ] || kill -KILL -{g} 2>/dev/null; true")
    run_step(transport, command, 15, f"ending {proc.label}")

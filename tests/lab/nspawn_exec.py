"""Run a command in a lab node's real-renderer container (tests/lab/nspawn.py), as the node's `netplan` wrapper does
for `netplan try` and `netplan apply`: with the caller's stdin, stdout and stderr (linkcheck's FIFO and try.out), and
the signals linkcheck sends to the PID it started (SIGUSR1 accept, SIGINT revert; SIGTERM, SIGHUP) passed on to the
real netplan. nsenter forks into the container's PID namespace and passes no signal on itself, so this process
finds its child and forwards them.

Usage: python -m tests.lab.nspawn_exec DIR COMMAND [ARG...]   (DIR: the node's nspawn directory)
Kept apart from tests.lab.nspawn so that it runs without the lab package imported before it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

LEADER = "leader"  # as tests.lab.nspawn.LEADER: the container's PID 1, written once it runs
CLEAN_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
FORWARDED = (signal.SIGINT, signal.SIGUSR1, signal.SIGUSR2, signal.SIGTERM, signal.SIGHUP)


def child_of(pid: int) -> int:
    """The first child of `pid` (0 if none yet)."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return 0
    return int(children[0]) if children else 0


def exec_in(directory: Path, argv: list[str]) -> int:
    """Run argv in the container whose PID 1 `directory`/leader names; return its exit status (128+N if killed by N)."""
    try:
        leader = int((directory / LEADER).read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        print(f"lab: no running container in {directory}", file=sys.stderr)
        return 127
    pending: list[int] = []
    target = [0]

    def forward(signum: int, frame: FrameType | None) -> None:
        if target[0]:
            os.kill(target[0], signum)
        else:
            pending.append(signum)

    for sig in FORWARDED:
        signal.signal(sig, forward)
    env = {"PATH": CLEAN_PATH, "LANG": "C.UTF-8", "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(["nsenter", "-t", str(leader), "-a", "--", *argv], env=env)
    while proc.poll() is None and not target[0]:
        target[0] = child_of(proc.pid)
        if not target[0]:
            time.sleep(0.005)
    for signum in pending:
        if target[0]:
            os.kill(target[0], signum)
    code = proc.wait()
    return code if code >= 0 else 128 - code


def main(args: list[str]) -> int:
    if len(args) < 2:
        print("usage: python -m tests.lab.nspawn_exec DIR COMMAND [ARG...]", file=sys.stderr)
        return 2
    return exec_in(Path(args[0]), args[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

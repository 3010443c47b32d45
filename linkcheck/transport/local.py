"""Run inspection commands on this machine, without SSH, with the same result shape as a remote node."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time

from linkcheck.transport.base import CommandTimeoutError, RemoteResult, decode


class LocalTransport:
    """A node that is this machine. Commands come from our specs only, never from user input."""

    def __init__(self, name: str) -> None:
        self.name = name

    def run(self, command: str, *, timeout_s: float, stdin: str | None = None) -> RemoteResult:
        """Run `command` with sh -c, draining stdout and stderr together; CommandTimeoutError on timeout."""
        start = time.monotonic()
        # A new session makes the command its own process group, so a timeout kills its children too.
        proc = subprocess.Popen(
            ["sh", "-c", command],
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        payload = stdin.encode() if stdin is not None else None
        try:
            out, err = proc.communicate(payload, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(proc.pid)
            out, err = _drain_after_kill(proc)
            partial = RemoteResult(decode(out), decode(err), None, time.monotonic() - start)
            raise CommandTimeoutError(self.name, _first_word(command), timeout_s, partial) from None
        return RemoteResult(decode(out), decode(err), proc.returncode, time.monotonic() - start)

    def close(self) -> None:
        """Nothing to free: each command is its own process."""


def _kill_group(pid: int) -> None:
    # The group id equals the pid of the child we started (start_new_session), so this ends only ours.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


def _drain_after_kill(proc: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
    # A grandchild that left our process group may still hold the pipes; do not wait for it long.
    try:
        return proc.communicate(timeout=2)
    except subprocess.TimeoutExpired as exc:
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        proc.wait()
        return (exc.stdout or b"", exc.stderr or b"")


def _first_word(command: str) -> str:
    words = command.split()
    return f"`{words[0]}`" if words else "command"

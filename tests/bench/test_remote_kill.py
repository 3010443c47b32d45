"""Ending a remote test process signals its process group only while it runs: once the tool's shell has written
its `rc` file the group has ended, and its number may belong to another process by then (PIDs are reused)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from linkcheck.bench.remote import RemoteProcess, kill, start, wait_exit
from linkcheck.transport.local import LocalTransport


def _bystander() -> subprocess.Popen[bytes]:
    """A process of its own group, standing in for one that took over a finished test's PID."""
    return subprocess.Popen(["sleep", "30"], start_new_session=True)


def test_a_finished_process_is_never_signalled_again(tmp_path: Path) -> None:
    other = _bystander()
    try:
        (tmp_path / "rc").write_text("0\n", encoding="ascii")
        kill(LocalTransport("a"), RemoteProcess("a", other.pid, str(tmp_path), "ib_write_bw"))
        assert other.poll() is None, "a process that only shares the finished test's number was signalled"
    finally:
        other.kill()
        other.wait()


def test_a_running_process_is_ended(tmp_path: Path) -> None:
    transport = LocalTransport("a")
    proc = start(transport, ["sleep", "30"], run_dir=str(tmp_path), deadline_s=60, label="sleep")
    kill(transport, proc)
    assert wait_exit(transport, proc, 5.0)
    assert not (Path(proc.directory) / "rc").exists()  # ended by the signal, not by finishing

"""A real OpenSSH sshd on 127.0.0.1 for transport tests: temp host key, temp client key, ended by PID."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SSHD = Path("/usr/sbin/sshd")


def skip_reason() -> str | None:
    """Why a real sshd cannot run here, or None."""
    if os.geteuid() != 0:
        return "needs root to run sshd and log in as root"
    if not SSHD.is_file() or shutil.which("ssh-keygen") is None:
        return "OpenSSH server (/usr/sbin/sshd) or ssh-keygen not installed"
    return None


def keygen(path: Path) -> Path:
    """A fresh ed25519 key pair without passphrase; returns the private key path."""
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "linkcheck-test", "-f", str(path)],
        check=True,
        stdin=subprocess.DEVNULL,
    )
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Sshd:
    """A running sshd: where it listens, its keys, its PID (the foreground master process)."""

    port: int
    host_key: Path
    client_key: Path
    workdir: Path
    proc: subprocess.Popen[bytes]

    @property
    def pid(self) -> int:
        return self.proc.pid

    def host_key_line(self) -> str:
        """The known_hosts line for this server, as ssh-keyscan would write it."""
        kind, blob = self.host_key.with_suffix(".pub").read_text().split()[:2]
        return f"[127.0.0.1]:{self.port} {kind} {blob}\n"

    def child_pids(self) -> list[int]:
        """Per-connection sshd processes started by our master (for cutting a connection by PID)."""
        out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(self.pid)], capture_output=True, text=True)
        return [int(p) for p in out.stdout.split()]

    def stop(self) -> None:
        """End the master by PID, then the per-connection children it leaves behind, by PID."""
        children = self.child_pids()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)


def start_sshd(workdir: Path, *, client_key: Path | None = None, host_key: Path | None = None) -> Sshd:
    """Start sshd -D -e on a free port with its own config, keys and authorized_keys; wait for its banner."""
    workdir.mkdir(parents=True, exist_ok=True)
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # privilege separation dir Debian's sshd insists on
    host_key = host_key or keygen(workdir / "host_ed25519")
    client_key = client_key or keygen(workdir / "client_ed25519")
    (workdir / "authorized_keys").write_text(client_key.with_suffix(".pub").read_text())
    port = free_port()
    config = workdir / "sshd_config"
    config.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {host_key}\nPidFile {workdir / 'sshd.pid'}\n"
        f"AuthorizedKeysFile {workdir / 'authorized_keys'}\nPermitRootLogin prohibit-password\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\n"
        "UsePAM no\nStrictModes no\nMaxStartups 100\nMaxSessions 50\nLogLevel ERROR\n"
    )
    log = (workdir / "sshd.log").open("wb")
    proc = subprocess.Popen([str(SSHD), "-D", "-e", "-f", str(config)], stdout=log, stderr=log)
    server = Sshd(port=port, host_key=host_key, client_key=client_key, workdir=workdir, proc=proc)
    _wait_for_banner(server)
    return server


def _wait_for_banner(server: Sshd, deadline_s: float = 10.0) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if server.proc.poll() is not None:
            raise RuntimeError(f"sshd exited: {(server.workdir / 'sshd.log').read_text()}")
        try:
            with socket.create_connection(("127.0.0.1", server.port), timeout=1) as sock:
                if sock.recv(64).startswith(b"SSH-"):
                    return
        except OSError:
            time.sleep(0.05)
    server.stop()
    raise RuntimeError("sshd did not answer within 10 s")


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    """One sshd for a test module; skipped with the reason where it cannot run."""
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    server = start_sshd(tmp_path_factory.mktemp("sshd"))
    try:
        yield server
    finally:
        server.stop()

"""OpenSSH pieces of the lab: keys, per-node sshd_config, known_hosts, a client ssh_config, readiness."""

from __future__ import annotations

import os
import shutil
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from tests.lab.errors import LabError
from tests.lab.netns import run

SSHD_CANDIDATES = ("/usr/sbin/sshd", "/usr/bin/sshd", "/usr/local/sbin/sshd")
# The PATH of every SSH session: the node's emulator bin first, then the usual root PATH.
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# sshd's LogLevel in every lab node (nodes/<node>/ssh/sshd.log); DEBUG3 shows each channel's EOF and close, which is
# what tells why sshd ended a connection. sshd_config(5) lists the levels.
LOG_LEVELS = ("QUIET", "FATAL", "ERROR", "INFO", "VERBOSE", "DEBUG", "DEBUG1", "DEBUG2", "DEBUG3")


def log_level() -> str:
    """LINKCHECK_LAB_SSHD_LOGLEVEL, else VERBOSE (every login and disconnect, with its reason)."""
    level = os.environ.get("LINKCHECK_LAB_SSHD_LOGLEVEL", "VERBOSE").upper()
    if level not in LOG_LEVELS:
        raise LabError(f"LINKCHECK_LAB_SSHD_LOGLEVEL={level!r}: not one of {', '.join(LOG_LEVELS)}")
    return level


def find_sshd() -> str | None:
    """Absolute path of sshd (it must be started by absolute path to re-exec itself)."""
    for cand in SSHD_CANDIDATES:
        if Path(cand).is_file():
            return cand
    found = shutil.which("sshd")
    return found if found and found.startswith("/") else None


def keygen(path: Path, comment: str) -> str:
    """Write a fresh ed25519 key pair without passphrase; returns the public key line."""
    for p in (path, path.with_name(path.name + ".pub")):
        p.unlink(missing_ok=True)
    run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)])
    path.chmod(0o600)
    return path.with_name(path.name + ".pub").read_text(encoding="ascii").strip()


def sshd_config(
    *,
    listen: str,
    port: int,
    host_key: Path,
    pid_file: Path,
    authorized_keys: Path,
    session_path: str,
    extra_listen: Sequence[str] = (),
    session_env: Mapping[str, str] | None = None,
) -> str:
    """An sshd_config for one lab node: key-only root login on its management address.

    `extra_listen`: further addresses (the node's data IPs, so mpirun on the peer can reach it).
    `session_env`: further variables of every session (the model's NCCL_*); values must not hold `"`.
    """
    extra_env = "".join(f' "{k}={v}"' for k, v in (session_env or {}).items())
    return "\n".join(
        [
            "# linkcheck lab node; generated, do not edit",
            f"ListenAddress {listen}:{port}",
            *(f"ListenAddress {ip}:{port}" for ip in extra_listen),
            f"HostKey {host_key}",
            f"PidFile {pid_file}",
            f"AuthorizedKeysFile {authorized_keys}",
            "PermitRootLogin prohibit-password",
            "PubkeyAuthentication yes",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "UsePAM no",
            "StrictModes no",
            "UseDNS no",
            "PrintMotd no",
            "PrintLastLog no",
            "X11Forwarding no",
            "AllowTcpForwarding no",
            "PermitUserEnvironment no",
            "MaxStartups 100:30:200",
            "MaxSessions 50",
            f"LogLevel {log_level()}",
            # SetEnv is applied after sshd's built-in PATH, so it wins for every session (OpenSSH >= 7.8).
            # Only the first SetEnv line counts: every variable goes on this one.
            f"SetEnv PATH={session_path} LINKCHECK_LAB=1{extra_env}",
            "",
        ]
    )


def known_hosts_lines(entries: Mapping[str, tuple[str, int, str]]) -> str:
    """known_hosts text: per node `IP,alias keytype key` (port 22) or `[IP]:port,[alias]:port ...`.

    OpenSSH and paramiko look a host up as the bare address when the port is 22 and as
    `[address]:port` otherwise, so both forms are written accordingly.
    """
    lines = []
    for alias, (ip, port, pubkey) in entries.items():
        keytype, key = pubkey.split()[:2]
        names = f"{ip},{alias}" if port == 22 else f"[{ip}]:{port},[{alias}]:{port}"
        lines.append(f"{names} {keytype} {key}")
    return "\n".join(lines) + "\n"


def ssh_config(entries: Mapping[str, tuple[str, int]], *, identity: Path, known_hosts: Path) -> str:
    """An ssh_config with one `Host` block per node that `ssh -F` and linkcheck can both use."""
    blocks = []
    for alias, (ip, port) in entries.items():
        blocks.append(
            "\n".join(
                [
                    f"Host {alias}",
                    f"    HostName {ip}",
                    "    User root",
                    f"    Port {port}",
                    f"    IdentityFile {identity}",
                    "    IdentitiesOnly yes",
                    f"    UserKnownHostsFile {known_hosts}",
                    "    GlobalKnownHostsFile /dev/null",
                    "    StrictHostKeyChecking yes",
                    "    CheckHostIP no",
                    "    BatchMode yes",
                    "    ConnectTimeout 5",
                    "    LogLevel ERROR",
                ]
            )
        )
    return "\n\n".join(blocks) + "\n"


def wait_for_port(ip: str, port: int, *, deadline_s: float, still_running: Callable[[], bool] | None = None) -> None:
    """Poll a TCP connect until it succeeds or the deadline passes (readiness without sleeping blind).

    The SSH banner is read too: a listening socket whose daemon is still setting up is not ready.
    """
    end = time.monotonic() + deadline_s
    last: Exception | None = None
    while time.monotonic() < end:
        if still_running is not None and not still_running():
            raise LabError(f"sshd for {ip}:{port} exited during start-up")
        try:
            with socket.create_connection((ip, port), timeout=1.0) as sock:
                sock.settimeout(2.0)
                if sock.recv(64).startswith(b"SSH-"):
                    return
        except OSError as exc:
            last = exc
        time.sleep(0.05)
    raise LabError(f"sshd on {ip}:{port} not ready after {deadline_s:.0f} s: {last}")

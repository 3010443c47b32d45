"""SSH transport (paramiko): strict host keys, ~/.ssh/config and ssh-agent, deadlines on both ends.

paramiko is imported inside the functions that connect, so `linkcheck --help` and offline work
never pay for it. Every failure leaves as one NodeError subclass with a one-line reason and a fix.
"""

from __future__ import annotations

import getpass
import logging
import math
import shlex
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import paramiko

from linkcheck.errors import ConfigError, NodeError
from linkcheck.integers import NumberError, bounded_int
from linkcheck.transport.base import (
    MAX_PORT,
    CommandTimeoutError,
    ConnectionDroppedError,
    NodeTarget,
    RemoteResult,
    decode,
)
from linkcheck.transport.hostkeys import host_key_policy
from linkcheck.transport.ssh_errors import connect_error
from linkcheck.transport.target import ResolvedTarget
from linkcheck.transport.tcp import open_tcp

if TYPE_CHECKING:
    import paramiko

log = logging.getLogger(__name__)

DEFAULT_KNOWN_HOSTS = Path("~/.ssh/known_hosts")
DEFAULT_SSH_CONFIG = Path("~/.ssh/config")
SYSTEM_KNOWN_HOSTS = Path("/etc/ssh/ssh_known_hosts")
KILL_GRACE_S = 2  # `timeout -k`: SIGKILL this long after SIGTERM, for tools that ignore TERM
LOCAL_SLACK_S = 1.0  # our own deadline only fires if the node's `timeout` failed to end the command
POLL_S = 0.25  # how often blocked reads wake up to look at the deadline
READ_CHUNK = 65536


def resolve_target(target: NodeTarget, ssh_config: Path | None) -> ResolvedTarget:
    """Fill what the target leaves open from ssh_config (HostName, User, Port, IdentityFile), like ssh."""
    found = _ssh_config_for(target.host, (ssh_config or DEFAULT_SSH_CONFIG).expanduser())
    for unsupported in ("proxyjump", "proxycommand"):
        if found.get(unsupported):
            log.warning(
                "node %s: ssh config %s for %s is not supported; connecting directly",
                target.name,
                unsupported,
                target.host,
            )
    config_ids = found.get("identityfile") or []
    identity = [target.identity_file] if target.identity_file else [str(p) for p in config_ids]
    port = target.port if target.port is not None else _port(found.get("port", 22), ssh_config)
    return ResolvedTarget(
        alias=target.host,
        host=str(found.get("hostname", target.host)),
        port=port,
        user=target.user or str(found.get("user") or getpass.getuser()),
        identity_files=tuple(str(Path(p).expanduser()) for p in identity),
        known_hosts=_first_known_hosts(found.get("userknownhostsfile")),
    )


def _first_known_hosts(value: Any) -> str | None:
    """ssh reads several UserKnownHostsFile entries; the first is where it records keys, as we do."""
    if not value:
        return None
    first = (value if isinstance(value, str) else " ".join(value)).split()[0]
    return None if first == "/dev/null" else first


def _ssh_config_for(host: str, path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        return dict(paramiko.SSHConfig.from_path(str(path)).lookup(host))
    except (OSError, paramiko.ConfigParseError, ValueError) as exc:
        raise ConfigError(str(path), f"cannot read SSH config: {exc}") from exc
    except ImportError:  # paramiko 3 runs `Match exec` through the optional invoke package
        raise ConfigError(str(path), f"a `Match exec` line applies to {host}, and running it needs the Python "
                          "package invoke", fix="pip install invoke, or give the node as USER@HOST[:PORT]") from None


def _port(value: Any, ssh_config: Path | None) -> int:
    try:
        return bounded_int(str(value), 1, MAX_PORT, "Port")
    except NumberError as exc:
        raise ConfigError(str(ssh_config or DEFAULT_SSH_CONFIG), f"bad {exc}") from None


class SshTransport:
    """One SSH connection to one node, opened on first use; `run` is one remote command."""

    def __init__(
        self,
        target: NodeTarget,
        *,
        known_hosts: Path | None = None,
        accept_new_host_keys: bool = False,
        ssh_config: Path | None = None,
        connect_timeout_s: float = 10,
        banner_timeout_s: float = 10,
        auth_timeout_s: float = 10,
        system_known_hosts: Path | None = SYSTEM_KNOWN_HOSTS,
    ) -> None:
        self.name = target.name
        self.target = target
        self.known_hosts = (known_hosts or DEFAULT_KNOWN_HOSTS).expanduser()
        self.known_hosts_shown = "~/.ssh/known_hosts" if known_hosts is None else str(self.known_hosts)
        self.accept_new_host_keys = accept_new_host_keys
        self.ssh_config = ssh_config
        self.system_known_hosts = system_known_hosts
        self.timeouts = (connect_timeout_s, banner_timeout_s, auth_timeout_s)
        self._client: paramiko.SSHClient | None = None
        self._connecting = threading.Lock()

    def connect(self) -> None:
        """Open the connection now (run() does it on first use); NodeError subclasses on failure.

        Threads may share a transport (the traffic tests start processes from several), so the first use
        is serialised: one connection, never two racing logins."""
        with self._connecting:
            if self._client is None:
                self._connect()

    def _connect(self) -> None:
        resolved = resolve_target(self.target, self.ssh_config)
        if self.known_hosts_shown == "~/.ssh/known_hosts" and resolved.known_hosts:
            self.known_hosts = Path(resolved.known_hosts).expanduser()
            self.known_hosts_shown = resolved.known_hosts
        client = paramiko.SSHClient()
        self._load_known_hosts(client)
        policy = host_key_policy(
            self.name, resolved, self.known_hosts, self.known_hosts_shown, self.accept_new_host_keys
        )
        client.set_missing_host_key_policy(policy)
        existing = [p for p in resolved.identity_files if Path(p).is_file()]
        connect_s, banner_s, auth_s = self.timeouts
        sock: socket.socket | None = None
        try:
            sock = open_tcp(resolved.host, resolved.port, connect_s)
            client.connect(
                hostname=resolved.host,
                port=resolved.port,
                username=resolved.user,
                key_filename=cast(Any, existing) or None,  # paramiko takes a list; the stubs say str
                timeout=connect_s,
                banner_timeout=banner_s,
                auth_timeout=auth_s,
                allow_agent=True,
                look_for_keys=not resolved.identity_files,
                sock=sock,  # connected here, with Nagle off and prompt ACKs (transport/tcp.py)
            )
        except Exception as exc:  # every cause is mapped to one NodeError line below
            client.close()
            if sock is not None:
                sock.close()
            raise connect_error(self.name, resolved, exc, self.known_hosts_shown) from exc
        transport = client.get_transport()
        if transport is not None:
            transport.set_keepalive(15)  # notice a dead peer even while a long command is silent
        self._client = client

    def _load_known_hosts(self, client: paramiko.SSHClient) -> None:
        for path in (self.system_known_hosts, self.known_hosts):
            if path is not None and path.is_file():
                try:
                    client.load_system_host_keys(str(path))
                except OSError as exc:
                    raise ConfigError(str(path), f"cannot read known_hosts: {exc}") from exc

    def run(self, command: str, *, timeout_s: float, stdin: str | None = None) -> RemoteResult:
        """Run `command` under `timeout` on the node; drain stdout and stderr, then read the status."""
        self.connect()
        remote_s = max(1, math.ceil(timeout_s))
        data = stdin.encode() if stdin is not None else None
        wrapped = _wrapped(command, remote_s, data)
        start = time.monotonic()
        deadline = start + remote_s + KILL_GRACE_S + LOCAL_SLACK_S
        label = _label(command)
        try:
            chan = self._open_channel()
            chan.exec_command(wrapped)
            _send_stdin(chan, data, deadline)
            out, err, drained = _drain(chan, deadline)
            got_status = drained and chan.status_event.wait(max(0.0, deadline - time.monotonic()))
        except (EOFError, OSError, paramiko.SSHException) as exc:
            raise ConnectionDroppedError(self.name, f"SSH connection lost while running {label}: {exc}") from exc
        status = chan.exit_status if got_status and chan.exit_status >= 0 else None
        result = RemoteResult(decode(out), decode(err), status, time.monotonic() - start)
        timed_out_on_node = status in (124, 137) and result.duration_s >= remote_s - 0.5
        if not got_status or timed_out_on_node:
            chan.close()
            raise CommandTimeoutError(self.name, label, timeout_s, result)
        if status is None and _link_died(chan.get_transport()):
            raise ConnectionDroppedError(self.name, f"sshd dropped the connection while running {label}", result)
        if status == 127 and _timeout_missing(result.stderr):
            raise NodeError(self.name, "`timeout` is missing on the node", fix="install GNU coreutils there")
        return result

    def _open_channel(self) -> paramiko.Channel:
        transport = self._client.get_transport() if self._client is not None else None
        if transport is None or not transport.is_active():
            raise ConnectionDroppedError(self.name, "SSH connection is no longer active")
        return transport.open_session(timeout=self.timeouts[0])

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def _label(command: str) -> str:
    if command == "sh -s":
        return "the inspection script"
    words = command.split()
    return f"`{words[0]}`" if words else "command"


def _link_died(transport: paramiko.Transport, settle_s: float = 1.0) -> bool:
    """True when the connection is gone. paramiko closes the channels a moment before it marks the
    transport inactive, so give it that moment; a live transport means the status alone was lost."""
    end = time.monotonic() + settle_s
    while transport.is_active():
        if time.monotonic() >= end:
            return False
        time.sleep(0.02)
    return True


def _timeout_missing(stderr: str) -> bool:
    return any("timeout" in line and "not found" in line for line in stderr.splitlines()[:3])


def _wrapped(command: str, remote_s: int, stdin: bytes | None) -> str:
    """The command line the node runs: `command` under `timeout`, its standard input ended on the node.

    We never end the input with an SSH EOF. paramiko's Channel.shutdown_write builds the EOF under the channel's lock
    and sends it after releasing it (paramiko/channel.py, Channel.shutdown); a command that has already exited makes
    sshd close the channel, and paramiko's transport thread answers that close in between (Channel._handle_close). The
    EOF then reaches sshd after our CLOSE, for a channel it has freed, and OpenSSH ends the whole connection:
    "ieof packet referred to nonexistent channel" (openssh-portable channels.c, channel_from_packet_id). A loaded
    client (or node) meets that race, and every later command on the node then fails. So the input is /dev/null, or
    `head -c` of exactly the bytes we send. `exec`: the login shell becomes `timeout`, so a command killed by a signal
    still reaches us as that signal (no exit status) instead of the shell's 128+N; piped from `head`, it is 128+N."""
    timed = f"timeout -k {KILL_GRACE_S} {remote_s} sh -c {shlex.quote(command)}"
    return f"exec {timed} </dev/null" if stdin is None else f"head -c {len(stdin)} | {timed}"


def _send_stdin(chan: paramiko.Channel, stdin: bytes | None, deadline: float) -> None:
    if stdin:
        chan.settimeout(max(POLL_S, deadline - time.monotonic()))
        chan.sendall(stdin)
    chan.settimeout(POLL_S)


def _read_to_eof(recv: Callable[[int], bytes], chunks: list[bytes], deadline: float) -> bool:
    """Read one stream to EOF; False when the deadline passed first."""
    while True:
        try:
            data = recv(READ_CHUNK)
        except TimeoutError:  # socket.timeout: no data for POLL_S
            if time.monotonic() >= deadline:
                return False
            continue
        if not data:
            return True
        chunks.append(data)


def _drain(chan: paramiko.Channel, deadline: float) -> tuple[bytes, bytes, bool]:
    """Read stdout and stderr concurrently: a full, unread stderr window would stall stdout forever."""
    err_chunks: list[bytes] = []
    err_done: list[bool] = []
    reader = threading.Thread(
        target=lambda: err_done.append(_read_to_eof(chan.recv_stderr, err_chunks, deadline)),
        name="ssh-stderr",
        daemon=True,
    )
    reader.start()
    out_chunks: list[bytes] = []
    out_done = _read_to_eof(chan.recv, out_chunks, deadline)
    reader.join(max(0.0, deadline - time.monotonic()) + POLL_S * 2)
    drained = out_done and err_done == [True]
    return b"".join(out_chunks), b"".join(err_chunks), drained

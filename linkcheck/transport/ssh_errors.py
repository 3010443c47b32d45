"""Map whatever a failed SSH connect raised to one NodeError line that names the cause and the fix."""

from __future__ import annotations

import errno
import os
import shlex
import socket
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import paramiko
from paramiko.ssh_exception import NoValidConnectionsError

from linkcheck.errors import NodeError
from linkcheck.transport.hostkeys import changed_key_error, host_key_policy

if TYPE_CHECKING:
    from linkcheck.transport.target import ResolvedTarget

__all__ = ["connect_error", "host_key_policy", "keys_tried"]

DEFAULT_KEYS = ("~/.ssh/id_rsa", "~/.ssh/id_ecdsa", "~/.ssh/id_ed25519")
_Handler = Callable[[str, "ResolvedTarget", Any], NodeError]


def keys_tried(target: ResolvedTarget) -> str:
    """Which identities an attempt used, by path only: key contents never reach a message."""
    tried = [p if Path(p).is_file() else f"{p} (missing)" for p in target.identity_files]
    if not target.identity_files:
        tried += [p for p in DEFAULT_KEYS if Path(p).expanduser().is_file()]
    if os.environ.get("SSH_AUTH_SOCK"):
        tried.append("ssh-agent keys")
    return ", ".join(tried) if tried else "no key at all (no IdentityFile, no ssh-agent, no ~/.ssh/id_*)"


def _auth_failed(node: str, target: ResolvedTarget, exc: Any) -> NodeError:
    if "timeout" in str(exc).lower():
        return NodeError(
            node, f"SSH authentication to {target.where} timed out", fix="check sshd and PAM on the node"
        )
    # quoted, so that a key path, user or host with a space or a $ stays one word when the line is pasted
    key = shlex.quote(f"{target.identity_files[0]}.pub") if target.identity_files else "~/.ssh/id_ed25519.pub"
    return NodeError(
        node,
        f"SSH authentication failed for {target.where} (wrong key?): tried {keys_tried(target)}",
        fix=f"authorize the key: ssh-copy-id -i {key} -p {target.port} {shlex.quote(f'{target.user}@{target.host}')}"
        " (or ssh-add it to the agent, or set IdentityFile in ~/.ssh/config)",
    )


def _passphrase(node: str, target: ResolvedTarget, exc: Any) -> NodeError:
    return NodeError(
        node,
        f"SSH key for {target.where} is passphrase-protected and no ssh-agent holds it",
        fix="load it into the agent first: ssh-add <key file>",
    )


def _dns(node: str, target: ResolvedTarget, exc: Any) -> NodeError:
    return NodeError(
        node,
        f"cannot resolve host name {target.host!r}",
        fix="check the spelling, /etc/hosts or DNS, or give the node's IP address",
    )


def _timeout(node: str, target: ResolvedTarget, exc: Any) -> NodeError:
    return NodeError(
        node,
        f"connection to {target.host}:{target.port} timed out",
        fix="check the node is powered on, the address, and any firewall in between",
    )


def _refused_or_unreachable(node: str, target: ResolvedTarget, exc: Any) -> NodeError:
    causes = {getattr(e, "errno", None) for e in getattr(exc, "errors", {}).values()} or {exc.errno}
    if causes == {errno.ECONNREFUSED}:
        return NodeError(
            node,
            f"connection refused by {target.host}:{target.port}",
            fix="start sshd on the node (systemctl start ssh) or fix the port",
        )
    if causes & {errno.EHOSTUNREACH, errno.ENETUNREACH}:
        return NodeError(
            node, f"no route to {target.host}:{target.port}", fix="check cabling, addresses and routes"
        )
    return NodeError(node, f"cannot connect to {target.host}:{target.port}: {exc.strerror or exc}")


def _handshake(node: str, target: ResolvedTarget, exc: Any) -> NodeError:
    text = str(exc) or type(exc).__name__
    if "banner" in text.lower():
        return NodeError(
            node,
            f"no SSH banner from {target.host}:{target.port} ({text})",
            fix="is this port an SSH server? is sshd overloaded (MaxStartups)?",
        )
    if "no authentication methods" in text.lower():
        return _auth_failed(node, target, exc)
    return NodeError(node, f"SSH handshake with {target.host}:{target.port} failed: {text}")


def _closed(node: str, target: ResolvedTarget, exc: Any) -> NodeError:
    return NodeError(
        node,
        f"{target.host}:{target.port} closed the connection during the SSH handshake",
        fix="check sshd's log on the node (AllowUsers, MaxStartups, fail2ban)",
    )


def connect_error(node: str, target: ResolvedTarget, exc: BaseException, known_hosts_shown: str) -> NodeError:
    """One NodeError per cause: host key, auth, DNS, refused, unreachable, timeout, handshake, drop."""
    if isinstance(exc, NodeError):  # our host-key policy already said it
        return exc
    if isinstance(exc, paramiko.BadHostKeyException):
        return changed_key_error(node, target, exc.key, exc.expected_key, known_hosts_shown)
    handlers: tuple[tuple[type[BaseException] | tuple[type[BaseException], ...], _Handler], ...] = (
        (paramiko.PasswordRequiredException, _passphrase),
        (paramiko.AuthenticationException, _auth_failed),
        (NoValidConnectionsError, _refused_or_unreachable),
        (socket.gaierror, _dns),
        (TimeoutError, _timeout),
        (OSError, _refused_or_unreachable),
        (paramiko.SSHException, _handshake),
        (EOFError, _closed),
    )
    for kinds, handler in handlers:
        if isinstance(exc, kinds):
            return handler(node, target, exc)
    return NodeError(node, f"cannot connect to {target.where}: {type(exc).__name__}: {exc}")

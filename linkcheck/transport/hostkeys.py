"""SSH host-key policy: unknown keys refused with the exact fix, accept-new only on request, changed never."""

from __future__ import annotations

import base64
import errno
import hashlib
import logging
import os
import shlex
import stat
from pathlib import Path
from typing import TYPE_CHECKING

import paramiko

from linkcheck.errors import HostKeyError

if TYPE_CHECKING:
    import paramiko

    from linkcheck.transport.target import ResolvedTarget

log = logging.getLogger(__name__)


def fingerprint(key: paramiko.PKey) -> str:
    """The OpenSSH-style fingerprint (`SHA256:` + unpadded base64), as `ssh-keygen -lf` prints it."""
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode("ascii").rstrip("=")


def key_kind(key: paramiko.PKey) -> str:
    """The key type as ssh-keyscan -t and the host key file names spell it: ed25519, ecdsa, rsa."""
    name = key.get_name()
    if "ed25519" in name:
        return "ed25519"
    if name.startswith("ecdsa"):
        return "ecdsa"
    if "rsa" in name:
        return "rsa"
    return name


def describe(key: paramiko.PKey) -> str:
    return f"{key_kind(key).upper()} {fingerprint(key)}"


def known_hosts_entry(host: str, port: int) -> str:
    """The host field OpenSSH and paramiko both use: `host` on port 22, `[host]:port` elsewhere."""
    return host if port == 22 else f"[{host}]:{port}"


def unknown_key_error(
    node: str, target: ResolvedTarget, key: paramiko.PKey, known_hosts_shown: str
) -> HostKeyError:
    kind = key_kind(key)
    scan = f"ssh-keyscan -p {target.port} -t {kind} {shlex.quote(target.host)} >> {known_hosts_shown}"
    return HostKeyError(
        node,
        f"unknown SSH host key for {target.host}:{target.port} ({describe(key)}); refusing to connect",
        fix=(
            f"check that fingerprint on the node (ssh-keygen -lf /etc/ssh/ssh_host_{kind}_key.pub), "
            f"then run: {scan}"
            f"  (or connect once with: ssh -o StrictHostKeyChecking=accept-new -p {target.port} "
            f"{shlex.quote(target.host)}; or pass --accept-new-host-keys)"
        ),
    )


def changed_key_error(
    node: str, target: ResolvedTarget, offered: paramiko.PKey, expected: paramiko.PKey, known_hosts_shown: str
) -> HostKeyError:
    entry = shlex.quote(known_hosts_entry(target.host, target.port))
    message = (
        f"SSH host key for {target.host}:{target.port} has CHANGED: known_hosts has {describe(expected)}, "
        f"the node offers {describe(offered)}; refusing to connect "
        "(node reinstalled, or someone in the middle)"
    )
    return HostKeyError(
        node,
        message,
        fix=(
            f"confirm the new fingerprint on the node's console (ssh-keygen -lf "
            f"/etc/ssh/ssh_host_{key_kind(offered)}_key.pub), "
            f"then: ssh-keygen -R {entry} -f {known_hosts_shown}"
        ),
    )


def append_known_host(path: Path, entry: str, key: paramiko.PKey) -> None:
    """Append one OpenSSH known_hosts line, creating ~/.ssh (0700) and the file (0600) if needed."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    needs_newline = path.is_file() and path.stat().st_size > 0 and not path.read_bytes().endswith(b"\n")
    line = f"{entry} {key.get_name()} {key.get_base64()}\n"
    # O_NONBLOCK: a FIFO in its place fails the open (or the check below) instead of blocking the connection.
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC, 0o600)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, f"{path} is not a plain file; the host key was not recorded", str(path))
    with os.fdopen(fd, "a", encoding="ascii") as handle:
        handle.write(("\n" if needs_newline else "") + line)


def host_key_policy(
    node: str, target: ResolvedTarget, known_hosts: Path, known_hosts_shown: str, accept_new: bool
) -> paramiko.MissingHostKeyPolicy:
    """The policy paramiko calls for a host missing from known_hosts (a changed key never gets here)."""
    class _Policy(paramiko.MissingHostKeyPolicy):
        def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:
            if not accept_new:
                raise unknown_key_error(node, target, key, known_hosts_shown)
            append_known_host(known_hosts, hostname, key)
            client.get_host_keys().add(hostname, key.get_name(), key)
            log.warning(
                "node %s: added new host key %s for %s to %s", node, describe(key), hostname, known_hosts
            )

    return _Policy()

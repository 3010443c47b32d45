"""What every transport offers (run a command on a node, get its raw result) and how nodes are named."""

from __future__ import annotations

import ipaddress
import re
from typing import Protocol

import msgspec

from linkcheck.errors import ConfigError, NodeError
from linkcheck.integers import NumberError, bounded_int, quoted

_USER_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}\Z")
_HOST_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,252}\Z")
_IPV6_RE = re.compile(r"^[0-9A-Fa-f:.]{2,45}\Z")
MAX_PORT = 65535  # a TCP port: 16 bits, 0 reserved
LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})


class NodeTarget(msgspec.Struct, frozen=True):
    """Where a node lives; None fields are filled from ~/.ssh/config, then from the SSH defaults."""

    name: str
    host: str
    user: str | None = None
    port: int | None = None
    identity_file: str | None = None
    containers: tuple[str, ...] = ()  # the containers whose NCCL the inspection also reads (--container)

    @property
    def is_local(self) -> bool:
        """`localhost` without user or port means "this machine, no SSH"; with either, sshd is meant."""
        return self.host in LOCAL_HOSTS and self.user is None and self.port is None

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        user = f"{self.user}@" if self.user else ""
        port = f":{self.port}" if self.port is not None else ""
        return f"{user}{host}{port}"


def parse_target(text: str, *, name: str, identity_file: str | None = None) -> NodeTarget:
    """Parse `[user@]host[:port]` (IPv6 as `[addr]:port`) into a target; ConfigError when malformed."""
    rest = text.strip()
    user: str | None = None
    if "@" in rest:
        user, rest = rest.rsplit("@", 1)
        if not _USER_RE.match(user):
            raise ConfigError("--node", f"node {name}: bad user name {user!r} in {text!r}")
    host, port_text = _split_host_port(rest, text, name)
    port = None
    if port_text is not None:
        try:
            port = bounded_int(port_text, 1, MAX_PORT, "port")
        except NumberError as exc:
            raise ConfigError("--node", f"node {name}: bad {exc} in {quoted(text)}") from None
    return NodeTarget(name=name, host=host, user=user, port=port, identity_file=identity_file)


def parse_node_target(text: str, *, name: str, identity_file: str | None = None) -> NodeTarget:
    """parse_target, with an address written with colons required to be a real IPv6 address: what `--node`,
    linkcheck.yaml and the cluster's host sources accept."""
    target = parse_target(text, name=name, identity_file=identity_file)
    if ":" in target.host:
        try:
            ipaddress.IPv6Address(target.host)
        except ValueError:
            raise ConfigError("--node", f"node {name}: {target.host!r} is not an IPv6 address (in {text!r})",
                              fix="use [user@]host[:port], IPv6 as [addr]:port") from None
    return target


def _split_host_port(rest: str, text: str, name: str) -> tuple[str, str | None]:
    if rest.startswith("["):
        host, sep, tail = rest[1:].partition("]")
        if not sep or not _IPV6_RE.match(host) or (tail and not tail.startswith(":")):
            raise ConfigError("--node", f"node {name}: bad bracketed address in {text!r}")
        return host, (tail[1:] if tail else None)
    if rest.count(":") > 1:  # a bare IPv6 address cannot carry a port
        if not _IPV6_RE.match(rest):
            raise ConfigError("--node", f"node {name}: bad IPv6 address in {text!r}")
        return rest, None
    host, sep, port_text = rest.partition(":")
    if not _HOST_RE.match(host):
        raise ConfigError(
            "--node", f"node {name}: bad host name {host!r} in {text!r}", fix="use [user@]host[:port]"
        )
    return host, (port_text if sep else None)


class RemoteResult(msgspec.Struct, frozen=True):
    """A command's raw result; bytes decoded as UTF-8 with errors replaced. exit_status None: lost."""

    stdout: str
    stderr: str
    exit_status: int | None
    duration_s: float


class Transport(Protocol):
    """Runs commands on one node. `run` is one round trip; `close` frees the connection."""

    name: str

    def run(self, command: str, *, timeout_s: float, stdin: str | None = None) -> RemoteResult: ...

    def close(self) -> None: ...


class CommandTimeoutError(NodeError):
    """A command outlived its deadline; `partial` holds what came back before it was cut off."""

    def __init__(self, node: str, command_name: str, timeout_s: float, partial: RemoteResult) -> None:
        super().__init__(
            node,
            f"{command_name} timed out after {timeout_s:g}s",
            fix="raise the timeout, or find what hangs on the node (a stuck tool or driver)",
        )
        self.timeout_s = timeout_s
        self.partial = partial


class ConnectionDroppedError(NodeError):
    """The connection died while a command ran; `partial` holds what came back before the drop."""

    def __init__(self, node: str, reason: str, partial: RemoteResult | None = None) -> None:
        super().__init__(node, reason, fix="check the node is up and sshd is healthy, then re-run")
        self.partial = partial


def decode(data: bytes) -> str:
    """Tool output is UTF-8 or ASCII in practice; anything else is kept visible, never an exception."""
    return data.decode("utf-8", errors="replace")

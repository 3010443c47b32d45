"""How the repair transaction reaches a node: a shell command (over SSH, or on this machine) and a runtime change.

The transaction talks to this small interface only, so that it runs the same against a remote node, the local
node (whose runtime changes go through netlink, not a shell) and a test's stand-in.
"""

from __future__ import annotations

from typing import Protocol

from linkcheck.errors import LinkcheckError
from linkcheck.repair.runtime import ADDR_ADD, ADDR_DEL, MTU, NEIGH_DEL, NEIGH_SET, RuntimeOp
from linkcheck.transport.base import RemoteResult, Transport

NETLINK_KINDS = (MTU, ADDR_ADD, ADDR_DEL, NEIGH_DEL, NEIGH_SET)


class ChangeFailed(LinkcheckError):
    """A runtime change the node refused (its error text)."""


class RepairNode(Protocol):
    """One node as the transaction sees it."""

    name: str
    local: bool
    transport: Transport  # what the traffic check's ib_write_bw runs through (linkcheck.bench)

    def sh(self, command: str, *, timeout_s: float = 30, stdin: str | None = None) -> RemoteResult: ...

    def change(self, op: RuntimeOp) -> None: ...


def first_line(result: RemoteResult) -> str:
    text = result.stderr.strip() or result.stdout.strip() or f"exit {result.exit_status}"
    return text.splitlines()[0][:200]


class ShellNode:
    """A node reached through a transport: every change is its shell command under `sudo -n`."""

    local = False

    def __init__(self, transport: Transport) -> None:
        self.transport = transport
        self.name = transport.name

    def sh(self, command: str, *, timeout_s: float = 30, stdin: str | None = None) -> RemoteResult:
        return self.transport.run(command, timeout_s=timeout_s, stdin=stdin)

    def change(self, op: RuntimeOp) -> None:
        result = self.sh(op.shell())
        if result.exit_status != 0:
            raise ChangeFailed(f"node {self.name}: `{op.describe}` failed: {first_line(result)}")


class LocalNode(ShellNode):
    """This machine: addresses, MTUs and neighbours change through netlink (pyroute2); the rest (ethtool, nmcli,
    files) through the same commands as a remote node."""

    local = True

    def change(self, op: RuntimeOp) -> None:
        if op.kind not in NETLINK_KINDS:
            super().change(op)
            return
        # Late: pyroute2 loads only when a local node is changed.
        from linkcheck.transport.netlink_change import NetlinkChangeError, change

        try:
            change(op.kind, op.dev, op.value, op.lladdr, op.nud)
        except NetlinkChangeError as exc:
            raise ChangeFailed(f"node {self.name}: {op.describe} (netlink) failed: {exc}") from None

"""The TCP connection an SSH session rides on: Nagle off and ACKs sent at once, both through public socket
options on a socket paramiko takes as given (`SSHClient.connect(sock=...)`).

Why both. An SSH login and each command are short exchanges of small messages. With Nagle on, each of our
small packets waits for the ACK of the previous one. The other way round, sshd leaves Nagle on for a command
session, so its answer waits for our ACK of whatever it sent before: after the login it sends its host keys
(`hostkeys-00@openssh.com`), which ask for no answer, so our kernel delays that ACK (40 ms on Linux) and
sshd's reply to our channel open waits behind it. Linux's TCP_QUICKACK sends a delayed ACK at once, but it
is not permanent (tcp(7)): the kernel returns to delaying ACKs as traffic goes on, so it is set again after
every read and write.
"""

from __future__ import annotations

import contextlib
import socket
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer

# Linux only; elsewhere ACKs keep their usual timing.
_QUICKACK: int | None = getattr(socket, "TCP_QUICKACK", None)


class PromptAckSocket(socket.socket):
    """A TCP socket that acknowledges what it has read at once instead of up to 40 ms later."""

    def recv(self, bufsize: int, flags: int = 0) -> bytes:
        data = super().recv(bufsize, flags)
        self._ack_now()
        return data

    def send(self, data: ReadableBuffer, flags: int = 0) -> int:
        sent = super().send(data, flags)
        self._ack_now()
        return sent

    def _ack_now(self) -> None:
        if _QUICKACK is not None:
            with contextlib.suppress(OSError):  # the connection is closing; the next read or write says so
                self.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)


def open_tcp(host: str, port: int, timeout_s: float) -> PromptAckSocket:
    """Connect to host:port (every address it resolves to, as `socket.create_connection` tries them) with
    Nagle off and prompt ACKs."""
    plain = socket.create_connection((host, port), timeout=timeout_s)
    sock = PromptAckSocket(plain.family, plain.type, plain.proto, fileno=plain.detach())
    sock.settimeout(timeout_s)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock._ack_now()
    return sock

"""The SSH session's TCP socket: Nagle off, and what it reads acknowledged at once (transport/tcp.py).

Linux delays the ACK of what arrives on a connection that both sends and receives (its "pingpong" mode,
which getsockopt(TCP_QUICKACK) reads as 0); sshd's next small reply then waits for that ACK behind Nagle.
"""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
from collections.abc import Callable, Iterator

import pytest

from linkcheck.transport.tcp import PromptAckSocket, open_tcp

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="TCP_QUICKACK is Linux's")


def _exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


@contextlib.contextmanager
def _echo_server() -> Iterator[int]:
    """A loopback peer that answers each 4-byte request with 4 bytes, like a request-reply protocol."""
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        try:
            conn, _ = server.accept()
            with conn:
                while True:
                    conn.sendall(_exactly(conn, 4))
        except (EOFError, OSError):  # the client left, or the test ended before connecting
            pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        server.close()
        thread.join(5)


@pytest.fixture
def echo_port() -> Iterator[int]:
    with _echo_server() as port:
        yield port


def _delays_acks_after_exchange(connect: Callable[[int], socket.socket], port: int) -> bool:
    with connect(port) as sock:
        for _ in range(5):
            sock.sendall(b"ping")
            assert _exactly(sock, 4) == b"ping"
        return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK) == 0


def test_a_plain_socket_delays_its_acks_after_an_exchange() -> None:
    """The control: without prompt ACKs the kernel has entered delayed-ACK mode. It leaves that mode when a
    delayed ACK's timer fires (a reply later than ~40 ms, on a loaded machine), so one of a few tries will do."""
    def one_try() -> bool:
        with _echo_server() as port:
            return _delays_acks_after_exchange(lambda p: socket.create_connection(("127.0.0.1", p), 5), port)

    assert any(one_try() for _ in range(5))


def test_the_session_socket_acknowledges_at_once_after_an_exchange(echo_port: int) -> None:
    assert not _delays_acks_after_exchange(lambda port: open_tcp("127.0.0.1", port, 5), echo_port)


def test_the_session_socket_has_nagle_off_and_the_timeout(echo_port: int) -> None:
    with open_tcp("127.0.0.1", echo_port, 3.5) as sock:
        assert isinstance(sock, PromptAckSocket)
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
        assert sock.gettimeout() == 3.5


def test_a_refused_connection_is_an_oserror() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
    with pytest.raises(OSError):
        open_tcp("127.0.0.1", port, 2)

"""Small pieces the lab's traffic emulators share: line-framed TCP, process naming, output, hanging."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import json
import select
import signal
import socket
import sys
import time
from typing import Any

# What a `garbage` fault prints instead of the tool's output (binary noise, a NUL, no format at all).
GARBAGE = b"\x00\x1b[7m\xff\xfe#?\xc3\x28 g@rb4ge 12.34.56 ###\r\n\x07%s\xde\xad\xbe\xef nan Gb/sec\n"


def set_process_name(name: str) -> None:
    """Show the real tool's name in ss -p and ps (comm), not "python3"; best effort."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(15, name.encode()[:15], 0, 0, 0)  # PR_SET_NAME


def die_on_sigint() -> None:
    """Ctrl-C ends the process like a C program's (no Python traceback), unless it is ignored."""
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, signal.SIG_DFL)


def hang() -> None:
    """Never return: only a signal (timeout, kill) ends the process."""
    while True:
        time.sleep(3600)


class Printer:
    """stdout/stderr written and flushed at once (files survive a kill); `garbage` replaces stdout."""

    def __init__(self, garbage: bool = False) -> None:
        self.garbage = garbage

    def out(self, text: str) -> None:
        if not self.garbage and text:
            sys.stdout.write(text)
            sys.stdout.flush()

    def err(self, text: str) -> None:
        if text:
            sys.stderr.write(text)
            sys.stderr.flush()

    def finish(self) -> None:
        if self.garbage:
            sys.stdout.flush()
            sys.stdout.buffer.write(GARBAGE)
            sys.stdout.buffer.flush()


class LineConn:
    """A TCP connection carrying one JSON object or short command per line."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        # Lines go out at once: with Nagle a second small line (the final progress, then the report)
        # would wait ~40 ms for the peer's delayed ACK, a pause no real tool run has.
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.closed = False
        try:
            ip, port = sock.getpeername()[:2]
            self.peer = f"{ip}<{port}>"  # as NCCL prints socket addresses
        except OSError:
            self.peer = "<unknown>"

    def send(self, line: str) -> bool:
        try:
            self.sock.sendall(line.encode() + b"\n")
        except OSError:
            self.closed = True
        return not self.closed

    def send_json(self, obj: dict[str, Any]) -> bool:
        return self.send(json.dumps(obj, separators=(",", ":")))

    def _fill(self, timeout: float | None) -> None:
        """Read what is there (waiting up to `timeout`, None = forever); EOF or an error closes."""
        try:
            ready, _, _ = select.select([self.sock], [], [], timeout)
            if not ready:
                return
            data = self.sock.recv(65536)
        except OSError:
            data = b""
        if not data:
            self.closed = True
        self.buf += data

    def lines(self, timeout: float | None) -> list[str]:
        """Complete lines received within `timeout` (possibly none)."""
        if not self.closed:
            self._fill(timeout)
        *done, self.buf = self.buf.split(b"\n")
        return [d.decode(errors="replace") for d in done]

    def read_line(self) -> str | None:
        """Block for the next line; None when the peer closed first."""
        while b"\n" not in self.buf:
            if self.closed:
                return None
            self._fill(None)
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode(errors="replace")

    def read_json(self) -> dict[str, Any] | None:
        line = self.read_line()
        try:
            obj = json.loads(line) if line is not None else None
        except ValueError:
            return None
        return obj if isinstance(obj, dict) else None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()
        self.closed = True

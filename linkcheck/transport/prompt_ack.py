"""A paramiko Transport that acknowledges sshd's messages after login at once, so the first command
does not wait 40 ms.

sshd leaves Nagle's algorithm on for sessions without a terminal. Right after login it sends a few
small messages (the hostkeys-00 global request, a debug line per key option); its answer to our first
channel open is then held back until we acknowledge them, and Linux delays that ACK by up to 40 ms
because we have nothing to send. Replying with an SSH_MSG_IGNORE as each of them is handled carries
the ACK at once. The messages arrive only around login, so this costs a few bytes once.
"""

from __future__ import annotations

import contextlib
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import paramiko


@cache
def prompt_ack_transport() -> type[paramiko.Transport]:
    """The Transport subclass (built on first use: paramiko is imported lazily)."""
    import paramiko

    class PromptAckTransport(paramiko.Transport):
        def _parse_global_request(self, m: paramiko.Message) -> None:
            super()._parse_global_request(m)  # type: ignore[misc]  # private in the stubs, stable in paramiko
            self._ack_now()

        def _parse_debug(self, m: paramiko.Message) -> None:
            super()._parse_debug(m)  # type: ignore[misc]
            self._ack_now()

        def _ack_now(self) -> None:
            with contextlib.suppress(Exception):  # the link is closing: nothing to acknowledge any more
                self.send_ignore(1)

    return PromptAckTransport

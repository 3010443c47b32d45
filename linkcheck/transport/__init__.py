"""Transports: how commands reach a node (SSH, this machine) and come back as raw results.

Nothing here imports paramiko or pyroute2 at import time; they load when a node is contacted.
"""

from __future__ import annotations

from linkcheck.transport.base import (
    CommandTimeoutError,
    ConnectionDroppedError,
    NodeTarget,
    RemoteResult,
    Transport,
    parse_target,
)

__all__ = [
    "CommandTimeoutError",
    "ConnectionDroppedError",
    "NodeTarget",
    "RemoteResult",
    "Transport",
    "parse_target",
]

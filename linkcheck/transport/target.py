"""Where a node really is once ~/.ssh/config is applied: the target the SSH code connects to."""

from __future__ import annotations

import msgspec


class ResolvedTarget(msgspec.Struct, frozen=True):
    """A target after ~/.ssh/config: what we actually connect to. `alias` is the name the user gave."""

    alias: str
    host: str
    port: int
    user: str
    identity_files: tuple[str, ...]
    known_hosts: str | None = None  # UserKnownHostsFile from the SSH config, used unless one is given

    @property
    def where(self) -> str:
        return f"{self.user}@{self.host}:{self.port}"

"""The files a repair may change, as the inspection captured them per node: the netplan files (secret values
replaced on the node), the NetworkManager keyfiles (only the keys linkcheck reads) and the two nccl.conf files."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping

import msgspec

from linkcheck.bundle.format import Bundle
from linkcheck.collect.specs import NETPLAN_REDACTED
from linkcheck.repair.renderer import parse_is_enabled, parse_netplan_version

_HEADER = re.compile(r"^==> (.+) <==$")
# The name the plan gives the netplan file when the node has exactly one: `tail` prints no header for one file,
# so the inspection never learnt its name. `fix --apply` resolves it on the node (exactly one file, same text).
ONLY_NETPLAN_FILE = "/etc/netplan/*.yaml"
NCCL_CONF = "/etc/nccl.conf"
NCCL_CONF_USER = "~/.nccl.conf"


class NodeFiles(msgspec.Struct, frozen=True):
    """What one node's files said at the inspection; a file that could not be read is absent from its map."""

    netplan: Mapping[str, str] = {}
    netplan_read: bool = False
    nm_keyfiles: Mapping[str, str] = {}
    nccl_conf: Mapping[str, str | None] = {}  # path -> text (None: the file does not exist)
    netplan_version: tuple[int, ...] | None = None  # None: not known (not captured, or no netplan.io package)
    networkd: str | None = None  # `masked` or `not-masked` (linkcheck.collect.specs.NETWORKD_MASKED); None: unknown

    def redacted(self, path: str) -> bool:
        """The captured netplan file had secret values replaced: its text is not the file's."""
        return NETPLAN_REDACTED in self.netplan.get(path, "")


def normal(text: str) -> str:
    """A file's text as the plan compares it: trailing blank lines dropped, one newline at the end (the capture
    of several files by `tail` adds a blank line between them, a shell `$(...)` drops them)."""
    body = text.rstrip("\n")
    return body + "\n" if body else ""


def text_sha256(text: str) -> str:
    return hashlib.sha256(normal(text).encode("utf-8", errors="surrogateescape")).hexdigest()


def split_dump(text: str) -> dict[str, str]:
    """`tail -n +1 f1 f2 ...` (or `tail -v`) split on its `==> f <==` headers; text without one is the only file."""
    files: dict[str, list[str]] = {}
    current: list[str] | None = None
    loose: list[str] = []
    for line in text.split("\n"):
        header = _HEADER.match(line)
        if header:
            current = files.setdefault(header.group(1), [])
        elif current is not None:
            current.append(line)
        else:
            loose.append(line)
    if not files:
        return {ONLY_NETPLAN_FILE: normal("\n".join(loose))} if "\n".join(loose).strip() else {}
    return {path: normal("\n".join(lines)) for path, lines in files.items()}


def node_files(bundle: Bundle, node: str) -> NodeFiles:
    netplan_cap = bundle.capture(node, "netplan_files")
    netplan = split_dump(netplan_cap.stdout) if netplan_cap is not None and netplan_cap.ok else {}
    nm_cap = bundle.capture(node, "nm_connections")
    nm = split_dump(nm_cap.stdout) if nm_cap is not None and nm_cap.ok else {}
    nm.pop(ONLY_NETPLAN_FILE, None)  # keyfiles come with headers (tail -v): text without one names no file
    conf: dict[str, str | None] = {}
    for spec, path in (("nccl_conf", NCCL_CONF), ("nccl_conf_user", NCCL_CONF_USER)):
        cap = bundle.capture(node, spec)
        if cap is None or cap.skipped is not None:
            continue
        # `cat` of a file that is not there: exit 1 and "No such file" (the facts read it as empty).
        if cap.ok:
            conf[path] = normal(cap.stdout)
        elif "No such file" in cap.stderr:
            conf[path] = None
    # No file at all is a known state too (tail cannot open the unexpanded glob); sudo refused is not.
    read = netplan_cap is not None and (netplan_cap.ok or "No such file" in netplan_cap.stderr)
    version_cap = bundle.capture(node, "netplan_version")
    version = parse_netplan_version(version_cap.stdout) if version_cap is not None and version_cap.ok else None
    networkd_cap = bundle.capture(node, "networkd_masked")
    networkd = parse_is_enabled(networkd_cap.stdout) if networkd_cap is not None and networkd_cap.ok else None
    return NodeFiles(netplan=netplan, netplan_read=read, nm_keyfiles=nm, nccl_conf=conf, netplan_version=version,
                     networkd=networkd)

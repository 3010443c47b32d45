"""Management links: one veth pair per node from the root namespace, a /31 from 198.18.0.0/24 each.

sshd listens on the node end; the host end is the only lab address in the root namespace. Nodes get
no default route, so nothing they send can leave the machine. Free /31s are found under a lock so
that concurrent labs (pytest-xdist, a hand-started lab) never share addresses.
"""

from __future__ import annotations

import fcntl
import ipaddress
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from tests.lab import netns
from tests.lab.addresses import MGMT_NET, require_lab_cidr
from tests.lab.errors import LabError

if TYPE_CHECKING:
    from tests.lab.node import LabNode

# Shared by every lab on the machine and never removed (removing a lock file races with its users).
_LOCK_DIRS = ("/run/lock", tempfile.gettempdir())


@contextmanager
def _machine_lock(name: str) -> Iterator[None]:
    lock_dir = next((d for d in _LOCK_DIRS if Path(d).is_dir()), tempfile.gettempdir())
    with open(Path(lock_dir) / name, "a", encoding="ascii") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


@contextmanager
def allocation_lock() -> Iterator[None]:
    """Serialise address allocation between labs on this machine."""
    with _machine_lock("linkcheck-lab.lock"):
        yield


@contextmanager
def batch_lock() -> Iterator[None]:
    """Held by a test module that runs several labs at once (four runs side by side): two such batches on the two
    test workers would put eight labs on two CPUs, where an SSH session has been seen to drop under the load. One
    batch at a time; a single lab on the other worker still runs beside it."""
    with _machine_lock("linkcheck-lab-batch.lock"):
        yield


def _used_addresses() -> set[ipaddress.IPv4Address]:
    """Every management address taken by an existing root-namespace subnet (other labs, other users)."""
    used: set[ipaddress.IPv4Address] = set()
    for link in netns.ip_json("-4", "addr", "show"):
        for info in link.get("addr_info", []):
            iface = ipaddress.IPv4Interface(f"{info.get('local')}/{info.get('prefixlen', 32)}")
            if iface.network.overlaps(MGMT_NET):
                net = iface.network if iface.network.prefixlen >= MGMT_NET.prefixlen else MGMT_NET
                used.update(net)
    return used


def free_pairs(count: int) -> list[tuple[str, str]]:
    """`count` unused (host, node) address pairs, each a /31 inside 198.18.0.0/24 (call under the lock)."""
    used = _used_addresses()
    hosts = list(MGMT_NET)
    pairs = []
    for i in range(0, len(hosts), 2):
        host, node = hosts[i], hosts[i + 1]
        if host in used or node in used:
            continue
        pairs.append((str(host), str(node)))
        if len(pairs) == count:
            return pairs
    raise LabError(f"no {count} free /31 pairs left in {MGMT_NET}")


def add_mgmt_link(node: LabNode) -> None:
    """Create the node's management veth pair and address both ends (host end in the root namespace)."""
    require_lab_cidr(f"{node.host_ip}/31", "management host end")
    require_lab_cidr(f"{node.mgmt_ip}/31", "management node end")
    netns.add_veth(netns.VethEnd(None, node.host_if), netns.VethEnd(node.netns, node.mgmt_if))
    netns.configure(None, node.host_if, [f"{node.host_ip}/31"], up=True)
    netns.configure(node.netns, node.mgmt_if, [f"{node.mgmt_ip}/31"], up=True)

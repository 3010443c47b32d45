"""The lab's stand-in for the kernel's RoCE GID management: a small watcher per lab node that keeps the node's
sysfs GID tables following its IPv4 addresses.

On a GB10 the kernel (drivers/infiniband/core/roce_gid_mgmt.c, on its workqueue) adds two GID entries for every
IPv4 address an interface gets, RoCE v1 (`IB/RoCE v1`) then RoCE v2, each with the IPv4-mapped GID
(`::ffff:a.b.c.d`, printed `0000:...:ffff:c0a8:640a`) and bound to the interface, in the first free slots
(`ib_cache_gid_add`); removing the address frees both. The lab's sysfs tree is a tmpfs copy written when the
lab starts, so without this a re-addressed twin kept its old GIDs. This watcher runs inside the node (network and
mount namespaces), listens for the node's IPv4 address events over netlink (pyroute2) and makes the same change to
the tree: an address added gets its two entries where missing, an address removed loses the entries bound to its
interface. It acts only on events: the tables staged from the node model (holes, stale entries, a missing RoCE v2
entry that a scenario is about) stay as they are until an address changes.

Not modelled: IPv6 addresses (they take GID slots too), the default fe80 entries (staged, never changed here), a
port going down (the kernel keeps the entries). Run as `python -m tests.lab.gid_watch NETDEV=RDMA_DEV ...`; it
prints READY once subscribed, then runs until killed (the lab ends it by PID).
"""

from __future__ import annotations

import ipaddress
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from pyroute2 import IPRoute
from pyroute2.netlink.rtnl import RTMGRP_IPV4_IFADDR

READY = "gid-watch ready"
SLOTS = 255  # mlx5 RoCE ports (tests/emulators/derive.py GID_TBL_LEN)
ZERO_GID = "0000:0000:0000:0000:0000:0000:0000:0000"
TYPES = ("IB/RoCE v1", "RoCE v2")  # the kernel's order: v1 takes the first free slot, v2 the next
SYSFS = Path("/sys/class/infiniband")


def mapped_gid(ipv4: str) -> str:
    """The IPv4-mapped GID as sysfs prints it (%pI6: 8 groups of 4 lower-case hex digits)."""
    return ipaddress.IPv6Address(f"::ffff:{ipaddress.IPv4Address(ipv4)}").exploded


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii").strip()
    except OSError:  # an empty slot's attributes: EINVAL on a real node, absent in the lab's tree
        return None


def _write(path: Path, value: str) -> None:
    """Through a hidden file renamed over the target: a reader sees the old or the new value, never an empty one
    (the name starts with a dot, so the inspection's `gids/*` never matches it)."""
    tmp = path.with_name(f".{path.name}.lc-tmp")
    tmp.write_text(value + "\n", encoding="ascii")
    os.replace(tmp, path)


class Port:
    """One RDMA device's port 1 GID table in the node's sysfs tree."""

    def __init__(self, rdma_dev: str, root: Path = SYSFS) -> None:
        self.dir = root / rdma_dev / "ports" / "1"

    def slot(self, index: int) -> tuple[str, str | None, str | None]:
        """(gid, type, ndev) of one slot."""
        gid = _read(self.dir / "gids" / str(index)) or ZERO_GID
        return gid, _read(self.dir / "gid_attrs" / "types" / str(index)), _read(
            self.dir / "gid_attrs" / "ndevs" / str(index))

    def add(self, netdev: str, ipv4: str) -> None:
        gid = mapped_gid(ipv4)
        slots = [self.slot(i) for i in range(SLOTS)]
        have = {t for g, t, n in slots if g == gid and n == netdev}
        free = (i for i, (g, _, _) in enumerate(slots) if g == ZERO_GID)
        for gid_type in TYPES:
            if gid_type in have:
                continue
            index = next(free, None)
            if index is None:
                print(f"gid-watch: {self.dir}: no free slot for {ipv4} ({gid_type})", file=sys.stderr, flush=True)
                return
            # The attributes first: once the GID is there, a reader finds its type and netdev.
            _write(self.dir / "gid_attrs" / "types" / str(index), gid_type)
            _write(self.dir / "gid_attrs" / "ndevs" / str(index), netdev)
            _write(self.dir / "gids" / str(index), gid)

    def remove(self, netdev: str, ipv4: str) -> None:
        gid = mapped_gid(ipv4)
        for index in range(SLOTS):
            g, _, n = self.slot(index)
            if g == gid and n == netdev:
                # The GID first: a slot reads as empty before its attributes go (they then fail, as on a node).
                _write(self.dir / "gids" / str(index), ZERO_GID)
                for attr in ("types", "ndevs"):
                    (self.dir / "gid_attrs" / attr / str(index)).unlink(missing_ok=True)


def parse_args(argv: Iterable[str]) -> dict[str, str]:
    """NETDEV=RDMA_DEV words -> {netdev: rdma_dev}."""
    out = {}
    for word in argv:
        netdev, sep, rdma_dev = word.partition("=")
        if not sep or not netdev or not rdma_dev or "/" in netdev + rdma_dev:
            raise SystemExit(f"gid-watch: expected NETDEV=RDMA_DEV, got {word!r}")
        out[netdev] = rdma_dev
    return out


def watch(devices: Mapping[str, str], root: Path = SYSFS) -> None:
    with IPRoute() as ipr:
        ipr.bind(groups=RTMGRP_IPV4_IFADDR)
        names: dict[int, str] = {}  # ifindex -> the watched netdev
        for name in devices:
            found = ipr.link_lookup(ifname=name)
            if found:
                names[int(found[0])] = name
        print(READY, flush=True)
        while True:
            for msg in ipr.get():
                netdev = names.get(int(msg.get("index", -1)))
                ipv4 = msg.get_attr("IFA_LOCAL") or msg.get_attr("IFA_ADDRESS")
                if netdev is None or not ipv4:
                    continue
                port = Port(devices[netdev], root)
                if msg.get("event") == "RTM_NEWADDR":
                    port.add(netdev, str(ipv4))
                elif msg.get("event") == "RTM_DELADDR":
                    port.remove(netdev, str(ipv4))


def main(argv: list[str]) -> int:
    watch(parse_args(argv))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""The runtime changes of a repair (`fix --apply`) on the local node, made through netlink (pyroute2) with no shell
between linkcheck and the kernel. pyroute2 only sees the kernel it runs in, so this serves the local node only."""

from __future__ import annotations

import ipaddress

from pyroute2 import IPRoute
from pyroute2.netlink.exceptions import NetlinkError

_NUD_STATES = {"permanent": 0x80, "noarp": 0x40, "reachable": 0x02, "stale": 0x04}


class NetlinkChangeError(Exception):
    """The kernel refused the change (its errno text)."""


def _index(ipr: IPRoute, dev: str) -> int:
    found = ipr.link_lookup(ifname=dev)
    if not found:
        raise NetlinkChangeError(f"no interface {dev}")
    return int(found[0])


def change(kind: str, dev: str, value: str, lladdr: str = "", nud: str = "") -> None:
    """One change: `mtu`, `addr_add`, `addr_del`, `neigh_del`, `neigh_set` (the names of repair.runtime)."""
    try:
        with IPRoute() as ipr:
            index = _index(ipr, dev)
            if kind == "mtu":
                ipr.link("set", index=index, mtu=int(value))
            elif kind in ("addr_add", "addr_del"):
                iface = ipaddress.ip_interface(value)
                ipr.addr("add" if kind == "addr_add" else "del", index=index, address=str(iface.ip),
                         prefixlen=iface.network.prefixlen)
            elif kind == "neigh_del":
                ipr.neigh("del", dst=value, ifindex=index)
            elif kind == "neigh_set":
                ipr.neigh("replace", dst=value, lladdr=lladdr, ifindex=index, state=_NUD_STATES.get(nud.lower(), 0x02))
            else:
                raise NetlinkChangeError(f"{kind} is not a netlink change")
    except NetlinkError as exc:
        raise NetlinkChangeError(f"{kind} on {dev}: {exc.args[-1] if exc.args else exc}") from None

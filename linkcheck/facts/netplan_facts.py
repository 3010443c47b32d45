"""Which netplan definition configures which CX-7 netdev: by name, by `match: name` glob, or by MAC."""

from __future__ import annotations

import fnmatch
import ipaddress
from typing import TYPE_CHECKING

from linkcheck.facts.model import Function, NetplanIntent

if TYPE_CHECKING:
    from linkcheck.parsers.netplan import NetplanConfig, NetplanEthernet


def _targets(eth: NetplanEthernet, functions: dict[str, Function]) -> list[str]:
    if eth.match_mac:
        mac = eth.match_mac.lower()
        return [n for n, f in functions.items() if f.mac and f.mac.lower() == mac]
    if eth.match_name:
        return [n for n in functions if fnmatch.fnmatchcase(n, eth.match_name)]
    return [eth.ifname] if eth.ifname in functions else []


def _ipv4(addresses: tuple[str, ...]) -> tuple[str, ...]:
    out = []
    for cidr in addresses:
        try:
            if ipaddress.ip_interface(cidr).version == 4:
                out.append(cidr)
        except ValueError:
            continue  # netplan itself refuses such an address; nothing to compare
    return tuple(out)


def netplan_intents(config: NetplanConfig, functions: dict[str, Function]) -> tuple[NetplanIntent, ...]:
    """One intent per CX-7 netdev that a definition configures; the netdev's name is what `set-name` gives."""
    out = []
    for eth in config.ethernets:
        for netdev in _targets(eth, functions):
            name = eth.set_name or netdev
            out.append(NetplanIntent(netdev=name, netdef_id=eth.netdef_id, addresses=_ipv4(eth.addresses),
                                     mtu=eth.mtu, dhcp4=eth.dhcp4, link_local=eth.link_local,
                                     renderer=eth.renderer or config.renderer, source=eth.source_file))
    return tuple(out)

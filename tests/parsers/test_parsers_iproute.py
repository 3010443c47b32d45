"""Tests for linkcheck.parsers.iproute: `ip -j` link, addr, route, neigh.

Samples ip_*.json were captured with iproute2 6.1.0 from veth pairs in a throwaway network namespace
named like the Spark's twins; the iproute2_4.15/5.9 samples reproduce older releases' known quirks.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from linkcheck.errors import ParseError
from linkcheck.parsers.iproute import (
    IpAddress,
    IpNeighbour,
    IpRoute,
    parse_ip_addr,
    parse_ip_link,
    parse_ip_neigh,
    parse_ip_route,
)

SAMPLES = Path(__file__).resolve().parents[1] / "samples" / "iproute"


def sample(name: str) -> str:
    return (SAMPLES / name).read_text()


# ---------------------------------------------------------------- ip link


def test_ip_link_details_same_interfaces() -> None:
    plain = parse_ip_link(sample("ip_link.json"))
    detailed = parse_ip_link(sample("ip_link_d.json"))
    assert [(i.ifname, i.mtu, i.mac) for i in detailed] == [(i.ifname, i.mtu, i.mac) for i in plain]


def test_ip_link_details_parentdev_and_phys_port_name() -> None:
    text = (
        '[{"ifindex":5,"ifname":"enp1s0f1np1","flags":["BROADCAST","MULTICAST","UP","LOWER_UP"],"mtu":1500,'
        '"qdisc":"mq","operstate":"UP","linkmode":"DEFAULT","group":"default","txqlen":1000,"link_type":"ether",'
        '"address":"fc:4c:ea:f9:42:31","broadcast":"ff:ff:ff:ff:ff:ff","promiscuity":0,"min_mtu":68,'
        '"max_mtu":9978,"inet6_addr_gen_mode":"eui64","num_tx_queues":160,"num_rx_queues":40,'
        '"gso_max_size":65536,"gso_max_segs":65535,"phys_port_name":"p1","phys_switch_id":"3142f90003ea4cfc",'
        '"parentbus":"pci","parentdev":"0000:01:00.1"}]'
    )
    (link,) = parse_ip_link(text)
    assert (link.phys_port_name, link.parentdev) == ("p1", "0000:01:00.1")


def test_ip_link_older_iproute2_minimal_keys() -> None:
    (link,) = parse_ip_link('[{"ifname":"enp1s0f1np1"}]')
    assert (link.ifindex, link.mtu, link.operstate, link.mac, link.flags) == (None, None, None, None, ())
    assert not link.admin_up and not link.lower_up


# ---------------------------------------------------------------- ip addr


def test_ip_addr_captured_twins_in_distinct_subnets() -> None:
    ifaces = {i.ifname: i for i in parse_ip_addr(sample("ip_addr.json"))}
    a, b = ifaces["enp1s0f0np0"], ifaces["enP2p1s0f0np0"]
    assert a.ipv4 == (IpAddress("inet", "198.18.100.1", 24, "global"),)
    assert a.ipv4[0].network == "198.18.100.0/24"
    assert b.ipv4[0].network == "198.19.101.0/24"
    assert [(x.local, x.scope) for x in a.addresses if x.family == "inet6"] == [
        ("2001:db8::1", "global"), ("fe80::2021:46ff:fee9:cd03", "link")]
    assert a.addresses[1].network == "2001:db8::/64"
    assert ifaces["lo"].ipv4[0].network == "127.0.0.0/8"


def test_ip_addr_pretty_printed_is_the_same() -> None:
    assert parse_ip_addr(sample("ip_addr_pretty.json")) == parse_ip_addr(sample("ip_addr.json"))


def test_ip_addr_old_iproute2_empty_placeholders_dropped() -> None:
    (iface,) = parse_ip_addr(sample("ip_addr_iproute2_4.15_ipv4_filter.json"))
    assert iface.ifname == "enp1s0f1np1"
    assert iface.addresses == (IpAddress("inet", "192.168.100.10", 24, "global"),)


# ---------------------------------------------------------------- ip route / ip neigh


def test_ip_route_captured() -> None:
    routes = parse_ip_route(sample("ip_route.json"))
    kernel_route = IpRoute("198.18.100.0/24", "enp1s0f0np0", "198.18.100.1", None, "kernel", "link", None)
    assert routes[0] == kernel_route
    assert routes[1] == IpRoute("198.18.200.0/24", "enp1s0f0np0", None, "198.18.100.2", None, None, 100)
    assert [r.dev for r in routes] == ["enp1s0f0np0", "enp1s0f0np0", "enP2p1s0f0np0"]


def test_ip_route_all_tables_and_default_route() -> None:
    routes = parse_ip_route(sample("ip_route_all.json"))
    assert len(routes) == 17
    assert sum(r.dst == "fe80::/64" for r in routes) == 2
    default = parse_ip_route('[{"dst":"default","gateway":"192.0.2.1","dev":"eth0","flags":[]}]')[0]
    assert (default.dst, default.gateway, default.prefsrc) == ("default", "192.0.2.1", None)


def test_ip_route_multipath_has_no_dev() -> None:
    text = ('[{"dst":"10.0.0.0/24","metric":20,"flags":[],"nexthops":[{"gateway":"192.168.100.11",'
            '"dev":"enp1s0f1np1","weight":1,"flags":[]},{"gateway":"192.168.101.11","dev":"enP2p1s0f1np1",'
            '"weight":1,"flags":[]}]}]')
    (route,) = parse_ip_route(text)
    assert route.dev is None and route.metric == 20


def test_ip_route_bare_type_quirk_repaired() -> None:
    routes = parse_ip_route(sample("ip_route_iproute2_5.9_bare_type.json"))
    assert [r.dst for r in routes] == ["192.168.100.0/24", "10.99.0.0/16", "10.98.0.0/16"]
    assert routes[2].metric == 1024


def test_ip_route_text_from_old_iproute2_is_an_error() -> None:
    with pytest.raises(ParseError) as err:
        parse_ip_route(sample("ip_route_iproute2_4.15_text.txt"))
    assert "not JSON" in err.value.reason


def test_ip_neigh_captured() -> None:
    neigh = parse_ip_neigh(sample("ip_neigh.json"))
    assert neigh == (
        IpNeighbour("198.18.100.2", "enp1s0f0np0", "02:00:00:00:00:02", ("PERMANENT",)),
        IpNeighbour("198.19.101.2", "enP2p1s0f0np0", "02:00:00:00:00:03", ("REACHABLE",)),
    )


def test_ip_neigh_failed_entry_without_lladdr() -> None:
    text = ('[{"dst":"192.0.2.1","dev":"eth0","lladdr":"02:fc:00:00:00:05","state":["STALE"]},'
            '{"dst":"fd00::1","dev":"eth0","state":["FAILED"]},{"dst":"192.0.2.9","dev":"eth0","state":"INCOMPLETE"}]')
    neigh = parse_ip_neigh(text)
    assert [n.lladdr for n in neigh] == ["02:fc:00:00:00:05", None, None]
    assert neigh[2].state == ("INCOMPLETE",)


# ---------------------------------------------------------------- empty and broken


PARSE: list[Callable[[str], Any]] = [parse_ip_link, parse_ip_addr, parse_ip_route, parse_ip_neigh]


@pytest.mark.parametrize("parse", PARSE)
@pytest.mark.parametrize("text", ["", "\n", "[]", " [ ]\n"])
def test_empty_is_valid(parse: Callable[[str], Any], text: str) -> None:
    assert parse(text) == ()


@pytest.mark.parametrize("parse", PARSE)
@pytest.mark.parametrize(
    "text",
    [
        sample("ip_addr.json")[:200],  # truncated
        'Device "nonexist0" does not exist.\n',
        '{"ifname":"eth0"}',  # an object, not a list
        "[1, 2]",
        '[{"ifindex":1}]',  # no identity key
        "[\x00]",
    ],
)
def test_broken(parse: Callable[[str], Any], text: str) -> None:
    with pytest.raises(ParseError):
        parse(text)


@pytest.mark.parametrize(
    "text",
    [
        '[{"ifname":"eth0","mtu":"1500"}]',
        '[{"ifname":"eth0","flags":[1, 2]}]',
        '[{"ifname":"eth0","addr_info":[{"family":"inet","local":"192.168.100.300","prefixlen":24}]}]',
        '[{"ifname":"eth0","addr_info":[{"family":"inet","local":"192.168.100.1","prefixlen":33}]}]',
        '[{"ifname":"eth0","addr_info":[{"family":"inet","local":"192.168.100.1"}]}]',
        '[{"ifname":"eth0","addr_info":{"family":"inet"}}]',
    ],
)
def test_wrong_types_are_errors(text: str) -> None:
    with pytest.raises(ParseError):
        parse_ip_addr(text)

"""`lldpctl -f json` / `-f json0`: every real sample (tests/samples/lldp/real/, sources in PROVENANCE.md) with the
neighbours read from it by eye, then lldpd's other shapes and hostile input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from linkcheck.errors import ParseError
from linkcheck.parsers import PARSERS, get_parser
from linkcheck.parsers.lldp import LldpdUnreachable, LldpNeighbour, lldpd_unreachable, parse_lldpctl_json
from tests.parsers.test_parser_cases import is_case_file

REAL = Path(__file__).resolve().parents[1] / "samples" / "lldp" / "real"


def real(name: str) -> str:
    return (REAL / name).read_text(encoding="utf-8")


def test_registered_for_linkcheck_parse() -> None:
    assert PARSERS["lldp"][0] == "lldp:parse_lldpctl_json"
    assert get_parser("lldp") is parse_lldpctl_json


def test_every_real_sample_is_tested_and_named_in_provenance() -> None:
    provenance = real("PROVENANCE.md")
    files = sorted(p.name for p in REAL.iterdir() if p.name != "PROVENANCE.md" and not is_case_file(p))
    assert files
    assert all(f"| {name} |" in provenance for name in files)
    tested = set(EXPECTED) | set(NO_NEIGHBOUR) | set(UNREACHABLE)
    assert set(files) == tested


H3C = LldpNeighbour("enp129s0f0", "58:c7:ac:5f:2d:2c", "mac", "DaoCloud_ShangPu_H3C_D01_AccessSwitch",
                    "GigabitEthernet1/0/17", "ifname", "GigabitEthernet1/0/17 Interface", 121, ())
HOST_IPS = ("10.20.1.50", "fe80::ae1f:6bff:fe25:8664")
EXPECTED: dict[str, tuple[str, tuple[LldpNeighbour, ...]]] = {
    # a switch on one port, another lldpd host on two Mellanox ports: port id its netdev's MAC, descr its name
    "json0_unifabric_h3c_switch_and_host_2x_cx.json": ("json0", (
        H3C,
        LldpNeighbour("enp5s0f0np0", "ac:1f:6b:25:86:64", "mac", "10-20-1-50", "e8:eb:d3:93:ae:10", "mac",
                      "enp5s0f0np0", 120, HOST_IPS),
        LldpNeighbour("enp11s0f0np0", "ac:1f:6b:25:86:64", "mac", "10-20-1-50", "b8:3f:d2:9f:09:42", "mac",
                      "enp11s0f0np0", 120, HOST_IPS),
    )),
    "json0_unifabric_sonic_leaves_5_ports.json": ("json0", tuple(
        LldpNeighbour(ifname, mac, "mac", name, port, "local", port, 120, (ip,))
        for ifname, mac, name, ip, port in (
            ("ens1np0", "70:06:92:6e:32:64", "StorageSW", "10.193.77.211", "Ethernet120"),
            ("ens841np0", "70:06:92:6e:32:1c", "LEAF03", "10.193.77.203", "Ethernet184"),
            ("ens842np0", "70:06:92:6e:34:5c", "LEAF04", "10.193.77.204", "Ethernet184"),
            ("ens110np0", "70:06:92:6e:34:80", "LEAF02", "10.193.77.202", "Ethernet184"),
            ("ens108np0", "70:06:92:6e:33:18", "LEAF01", "10.193.77.201", "Ethernet184"),
        ))),
    # one interface: a dict keyed by its name; the chassis sends no SysName, so `id` sits directly under it
    "json_puppet_lldpd_129_chassis_without_name.json": ("json", (
        LldpNeighbour("enp3s0", "44:94:fc:9d:55:0a", "mac", None, "g17", "local", None, 120, ("192.168.178.21",)),
    )),
    # lldpd 0.9: interfaces as a list of one-key objects, the TTL under the chassis
    "json_sonic_lldpd09_list_chassis_ttl_excerpt.json": ("json", (
        LldpNeighbour("eth0", "00:1c:0f:5f:c7:c0", "mac", "c6500-vxlan", "Gi3/36", "ifname", "GigabitEthernet3/36",
                      120, ("172.31.1.254",)),
    )),
    "json_lldpd_integration_neighbors.json": ("json", (
        LldpNeighbour("eth0", "00:00:00:00:00:02", "mac", "ns-2.example.com", "00:00:00:00:00:02", "mac", "eth1",
                      120, ("fe80::200:ff:fe00:2",)),
    )),
}
NO_NEIGHBOUR = {"json_puppet_lldpd_no_neighbour.json": "json", "json0_tf_statistics_no_neighbour.json": "json0"}
UNREACHABLE = {
    "stderr_not_running_lldpd1011_no_socket.txt": ("not_running", "/usr/local/var/run/lldpd.socket"),
    "stderr_stale_socket_connection_refused.txt": ("not_running", "/var/run/lldpd.socket"),
    "stderr_permission_denied_lldpd07.txt": ("permission", "/var/run/lldpd.socket"),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_real_sample_neighbours(name: str) -> None:
    form, neighbours = EXPECTED[name]
    result = parse_lldpctl_json(real(name))
    assert result.form == form
    assert result.neighbours == neighbours


@pytest.mark.parametrize("name", sorted(NO_NEIGHBOUR))
def test_real_sample_without_neighbour(name: str) -> None:
    result = parse_lldpctl_json(real(name))
    assert (result.neighbours, result.form) == ((), NO_NEIGHBOUR[name])


@pytest.mark.parametrize("name", sorted(UNREACHABLE))
def test_real_lldpd_unreachable_words(name: str) -> None:
    cause, path = UNREACHABLE[name]
    with pytest.raises(LldpdUnreachable) as info:
        parse_lldpctl_json(real(name))
    assert info.value.cause == cause and path in info.value.reason
    found = lldpd_unreachable(real(name))
    assert found is not None and found.cause == cause
    assert isinstance(info.value, ParseError)  # whoever only knows ParseError still gets a clean refusal


def test_unreachable_on_a_terminal_keeps_the_reason_clean() -> None:
    text = ("2025-09-28T15:32:22 [WARN/control\x1b[0m] unable to connect to socket /run/lldpd.socket: "
            "Permission denied\x1b[0m\n")
    found = lldpd_unreachable(text)
    assert found is not None and found.cause == "permission" and "\x1b" not in found.reason
    only_lib = lldpd_unreachable("[WARN/lldpctl] unable to get configuration from lldpd. "
                                 "Unable to connect to lldpd daemon")
    assert only_lib is not None and only_lib.cause == "other"
    assert lldpd_unreachable("") is None


def test_the_same_neighbours_in_json_and_json0() -> None:
    """One neighbour interface, then two with a netdev listed twice (two neighbours behind one port), in the
    shapes lldpd's json_element_cleanup() makes of the same json0 tree."""
    json0 = {"lldp": [{"interface": [
        {"name": "enp1s0f0np0", "via": "LLDP", "chassis": [{"id": [{"type": "mac", "value": "aa:00:00:00:00:01"}],
                                                            "name": [{"value": "spark-b"}],
                                                            "mgmt-ip": [{"value": "192.168.100.2"}]}],
         "port": [{"id": [{"type": "mac", "value": "aa:00:00:00:00:11"}], "descr": [{"value": "enp1s0f1np1"}],
                   "ttl": [{"value": "120"}]}]},
        {"name": "enp1s0f0np0", "via": "LLDP", "chassis": [{"id": [{"type": "mac", "value": "bb:00:00:00:00:01"}],
                                                            "name": [{"value": "sw1"}]}],
         "port": [{"id": [{"type": "ifname", "value": "swp3"}], "ttl": [{"value": "121"}]}]},
    ]}]}
    json1 = {"lldp": {"interface": [
        {"enp1s0f0np0": {"via": "LLDP", "chassis": {"spark-b": {"id": {"type": "mac", "value": "aa:00:00:00:00:01"},
                                                                "mgmt-ip": "192.168.100.2"}},
                         "port": {"id": {"type": "mac", "value": "aa:00:00:00:00:11"}, "descr": "enp1s0f1np1",
                                  "ttl": "120"}}},
        {"enp1s0f0np0": {"via": "LLDP", "chassis": {"sw1": {"id": {"type": "mac", "value": "bb:00:00:00:00:01"}}},
                         "port": {"id": {"type": "ifname", "value": "swp3"}, "ttl": "121"}}},
    ]}}
    a, b = parse_lldpctl_json(json.dumps(json0)), parse_lldpctl_json(json.dumps(json1))
    assert a.neighbours == b.neighbours
    assert (a.form, b.form) == ("json0", "json")
    assert [n.system_name for n in a.on("enp1s0f0np0")] == ["spark-b", "sw1"]
    assert a.interfaces == ("enp1s0f0np0",) and a.on("enp1s0f1np1") == ()


@pytest.mark.parametrize("text", ["", "  \n", '{"lldp": {}}', '{"lldp": [{}]}', '{"lldp": [{"interface": []}]}',
                                  '{"lldp": {"interface": []}}', '\ufeff{"lldp": {}}'])
def test_no_neighbours(text: str) -> None:
    assert parse_lldpctl_json(text).neighbours == ()


def test_lldpd_booleans_and_odd_names() -> None:
    """lldpd turns the words yes/on/no/off into booleans, also a SysName: a chassis named "on" keeps its `name`
    member (the fold only keys on strings). A SysName "id" is still the key."""
    text = json.dumps({"lldp": {"interface": {
        "a": {"chassis": {"name": True, "id": {"type": "mac", "value": "aa"}}, "port": {"id": {"type": "ifname",
                                                                                            "value": "p1"}}},
    }}})
    assert parse_lldpctl_json(text).neighbours[0].system_name == "yes"
    text = json.dumps({"lldp": {"interface": {"a": {"chassis": {"id": {"id": {"type": "mac", "value": "aa"}}}}}}})
    n = parse_lldpctl_json(text).neighbours[0]
    assert (n.system_name, n.chassis_id, n.port_id, n.ttl, n.mgmt_ips) == ("id", "aa", None, None, ())


@pytest.mark.parametrize(("text", "reason"), [
    ("-------------------------------------------------------------------------------\nLLDP neighbors:\n", "not JSON"),
    ("lldp.eth0.via=LLDP\n", "not JSON"),
    ("[]", '"lldp" member'),
    ('{"interface": {}}', '"lldp" member'),
    ('"lldp"', "not JSON"),
    ("5", "not JSON"),
    ('{"lldp": "x"}', "a string"),
    ('{"lldp": [1]}', "a list"),
    ('{"lldp": {"interface": [1]}}', "interface entry is a number"),
    ('{"lldp": {"interface": {"eth0": []}}}', "expected an object"),
    ('{"lldp": {"interface": {"eth0": {"port": {"ttl": "2 min"}}}}}', "not a number"),
    ('{"lldp": {"interface": {"eth0": {"port": {"ttl": "١٢٠"}}}}}', "not a number"),
    ('{"lldp": {"interface": {"eth0": {"port": {"ttl": "' + "9" * 5000 + '"}}}}}', "not a number"),
    ('{"lldp": {"interface": {"eth0": {"port": {"ttl": "123456"}}}}}', "not a number"),
    ('{"lldp": {"interface": {"eth0": {"port": {"descr": 5}}}}}', "a number"),
    ('{"lldp": {"interface": {"eth0": {"port": {"descr": {"a": 1}}}}}}', "without a single value"),
    ('{"lldp": {"interface": {"eth0": {"port": "x"}}}}', "expected an object"),
    ('{"lldp": {"interface": {"": {"port": {}}}}}', "without a name"),
    ('{"lldp": {"interface": {"eth0": {', "truncated"),
    ("a\x00b", "NUL"),
    ("[" * 100_000 + "]" * 100_000, "JSON"),
])
def test_refused_with_one_reason(text: str, reason: str) -> None:
    with pytest.raises(ParseError) as info:
        parse_lldpctl_json(text)
    assert reason in info.value.reason
    assert not isinstance(info.value, LldpdUnreachable)


def test_non_utf8_and_control_characters_are_kept_as_data() -> None:
    """Names are whatever the neighbour sent; escaping them is the printer's job, not the parser's."""
    raw = b'{"lldp": {"interface": {"eth0": {"chassis": {"\x1b[31mevil\x07": {"id": {"type": "local", "value": '
    raw += b'"\xff\xfe"}}}, "port": {"descr": "a\\u001b]2;x\\u0007\\r"}}}}}'
    n = parse_lldpctl_json(raw.decode("utf-8", errors="replace")).neighbours[0]
    assert n.system_name == "\x1b[31mevil\x07" and n.chassis_id == "\ufffd\ufffd"
    assert n.port_descr == "a\x1b]2;x\x07\r"


_scalar = st.text(max_size=12)


@st.composite
def lldp_trees(draw: st.DrawFn) -> tuple[str, list[tuple[str, str, str]]]:
    """A json0 document of (netdev, SysName, port id) neighbours, as text in json0 or in json's folded form."""
    rows = draw(st.lists(st.tuples(st.text("abcdefnp0123", min_size=1, max_size=12), _scalar.filter(bool),
                                   _scalar), max_size=5))
    if draw(st.booleans()):
        doc: object = {"lldp": [{"interface": [
            {"name": i, "chassis": [{"id": [{"type": "mac", "value": "aa"}], "name": [{"value": s}]}],
             "port": [{"id": [{"type": "ifname", "value": p}]}]} for i, s, p in rows]}]}
    else:
        entries = [{i: {"chassis": {s: {"id": {"type": "mac", "value": "aa"}}},
                        "port": {"id": {"type": "ifname", "value": p}}}} for i, s, p in rows]
        doc = {"lldp": {"interface": entries[0] if len(entries) == 1 else entries} if entries else {}}
    return json.dumps(doc, ensure_ascii=draw(st.booleans())), rows


@settings(max_examples=80, deadline=None, database=None)
@given(lldp_trees())
def test_any_tree_in_either_form_gives_its_neighbours(tree: tuple[str, list[tuple[str, str, str]]]) -> None:
    text, rows = tree
    got = [(n.interface, n.system_name, n.port_id) for n in parse_lldpctl_json(text).neighbours]
    assert got == rows

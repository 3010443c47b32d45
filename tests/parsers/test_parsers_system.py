"""Tests for the pcie, netplan, nccl_conf and kernel parsers: real formats and version quirks."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from linkcheck.errors import ParseError
from linkcheck.parsers import kernel
from linkcheck.parsers.kernel import (
    DmesgLog,
    MemInfo,
    Uptime,
    parse_dmesg,
    parse_meminfo,
    parse_sysctl,
    parse_uptime,
)
from linkcheck.parsers.nccl_conf import NcclSettings, parse_nccl_conf, parse_nccl_env
from linkcheck.parsers.netplan import NetplanConfig, parse_netplan
from linkcheck.parsers.pcie import parse_lspci

SAMPLES = Path(__file__).resolve().parents[1] / "samples" / "system"


def sample(name: str) -> str:
    return (SAMPLES / name).read_text()


# ================================================================ lspci


def test_lspci_gx10_domain2_at_x2() -> None:
    links = parse_lspci(sample("lspci_vv_gx10_x2_pciutils3.10.txt"))
    assert [link.bdf for link in links] == ["0000:01:00.0", "0000:01:00.1", "0002:01:00.0", "0002:01:00.1"]
    assert all(link.cap_speed_gts == 32.0 and link.cap_width == 4 for link in links)
    assert [link.sta_width for link in links] == [4, 4, 2, 2]
    assert [link.sta_note for link in links] == [None, None, "downgraded", "downgraded"]
    assert links[0].description == "Ethernet controller: Mellanox Technologies MT2910 Family [ConnectX-7]"
    assert not any(link.access_denied for link in links)


def test_lspci_old_pciutils_ok_suffix_and_short_bdf() -> None:
    first, second = parse_lspci(sample("lspci_vv_pciutils3.7_ok_suffix.txt"))
    assert first.bdf == "3b:00.0"  # kept as printed: no domain without -D
    assert (first.sta_speed_gts, first.sta_width, first.sta_note) == (16.0, 16, "downgraded")
    assert (second.sta_speed_gts, second.sta_note) == (32.0, "ok")
    assert first.cap_width == 16


def test_lspci_speed_variants() -> None:
    text = (
        "01:00.0 Ethernet controller: X\n"
        "\t\tLnkCap:\tPort #0, Speed 2.5GT/s, Width x1, ASPM L0s L1, Exit Latency L0s <64ns, L1 <1us\n"
        "\t\tLnkSta:\tSpeed unknown (downgraded), Width x8 (overdriven)\n"
    )
    (link,) = parse_lspci(text)
    assert (link.cap_speed_gts, link.cap_width) == (2.5, 1)
    assert (link.sta_speed_gts, link.sta_width, link.sta_note) == (None, 8, "downgraded")


def test_lspci_empty_means_no_device() -> None:
    assert parse_lspci("") == ()
    assert parse_lspci("\n") == ()


@pytest.mark.parametrize(
    ("text", "line_no"),
    [
        ("01:00.0 Eth\n\t\tLnkSta:\tSpeed fast, Width x4\n", 2),
        ("01:00.0 Eth\n\t\tLnkCap:\tPort #0, Speed 32GT/s\n", 2),
        ("pcilib: Cannot open /proc/bus/pci\nlspci: Cannot find any working access method.\n", None),
    ],
)
def test_lspci_broken(text: str, line_no: int | None) -> None:
    with pytest.raises(ParseError) as info:
        parse_lspci(text)
    assert info.value.line_no == line_no


# ================================================================ netplan


def test_netplan_official_single_file() -> None:
    cfg = parse_netplan(sample("netplan_40-cx7_official_2026-07.yaml.txt"))
    assert cfg.renderer is None and cfg.files == ()
    by_name = {eth.ifname: eth for eth in cfg.ethernets}
    assert by_name["enp1s0f1np1"].addresses == ("192.168.100.10/24",)
    assert by_name["enP2p1s0f1np1"].addresses == ("192.168.101.10/24",)
    assert by_name["enp1s0f1np1"].dhcp4 is False  # YAML 1.1 "no"
    assert by_name["enp1s0f1np1"].mtu is None
    assert by_name["enp1s0f1np1"].source_file is None


def test_netplan_link_local_history() -> None:
    cfg = parse_netplan(sample("netplan_cx7_linklocal_2025-10.yaml.txt"))
    assert [(e.netdef_id, e.link_local, e.addresses) for e in cfg.ethernets] == [
        ("enp1s0f0np0", ("ipv4",), ()),
        ("enp1s0f1np1", ("ipv4",), ()),
    ]


def test_netplan_community_flow_style() -> None:
    cfg = parse_netplan(sample("netplan_community_jumbo.yaml.txt"))
    assert [(e.ifname, e.mtu, e.link_local, e.addresses) for e in cfg.ethernets] == [
        ("enp1s0f1np1", 9000, (), ("192.168.177.11/24",)),
        ("enP2p1s0f1np1", 9000, (), ("192.168.178.11/24",)),
    ]


@pytest.mark.parametrize("name", ["netplan_nm_match_mac.yaml.txt", "netplan_get_0.106_nm_match.txt"])
def test_netplan_match_set_name_glob(name: str) -> None:
    cfg = parse_netplan(sample(name))
    assert cfg.renderer == "NetworkManager"
    rdma0, twins = cfg.ethernets
    assert (rdma0.match_mac, rdma0.set_name, rdma0.ifname) == ("b8:3f:d2:aa:bb:cc", "rdma0", "rdma0")
    assert rdma0.mtu == 9000
    assert rdma0.dhcp4 is False
    assert (twins.match_name, twins.ifname) == ("enP2p1s0f*", "twins")  # a glob never names the interface
    assert (twins.renderer, twins.dhcp4) == ("networkd", True)


def _merged_view(cfg: NetplanConfig) -> dict[str, tuple[frozenset[str], int | None, bool | None, object]]:
    return {e.ifname: (frozenset(e.addresses), e.mtu, e.dhcp4, e.link_local) for e in cfg.ethernets}


def test_netplan_multi_file_merge_matches_netplan_get() -> None:
    merged = parse_netplan(sample("netplan_tail_three_files.txt"))
    got = parse_netplan(sample("netplan_get_0.106_merged.txt"))
    assert merged.files == (
        "/etc/netplan/40-cx7.yaml", "/etc/netplan/50-cloud-init.yaml", "/etc/netplan/60-jumbo.yaml",
    )
    assert merged.renderer == got.renderer == "networkd"
    # The same intent as netplan 0.106 merged it (address order differs: a set, as netplan treats it).
    assert _merged_view(merged) == _merged_view(got)
    twin = {e.ifname: e for e in merged.ethernets}["enp1s0f1np1"]
    assert set(twin.addresses) == {"192.168.100.10/24", "192.168.100.20/24"}
    assert (twin.mtu, twin.link_local, twin.source_file) == (9000, (), "/etc/netplan/40-cx7.yaml")
    mgmt = {e.ifname: e for e in merged.ethernets}["enP7s7"]
    assert (mgmt.match_mac, mgmt.dhcp4) == ("4c:bb:47:81:70:2b", True)
    assert mgmt.source_file == "/etc/netplan/50-cloud-init.yaml"


def test_netplan_file_order_and_run_shadowing() -> None:
    text = (
        "==> /etc/netplan/90-late.yaml <==\nnetwork:\n  ethernets:\n    a:\n      mtu: 9000\n\n"
        "==> /etc/netplan/10-early.yaml <==\nnetwork:\n  ethernets:\n    a:\n      mtu: 1500\n"
        "      dhcp4: yes\n\n"
        "==> /run/netplan/10-early.yaml <==\nnetwork:\n  ethernets:\n    a:\n      mtu: 4000\n"
    )
    cfg = parse_netplan(text)
    (eth,) = cfg.ethernets
    assert eth.mtu == 9000  # 90-late sorts last whatever the dump order
    assert eth.dhcp4 is None  # /etc/netplan/10-early.yaml is shadowed by /run's file of the same name
    assert cfg.files == ("/run/netplan/10-early.yaml", "/etc/netplan/90-late.yaml")
    assert eth.source_file == "/run/netplan/10-early.yaml"


@pytest.mark.parametrize("text", ["", "network: {}\n", "null\n", "# only a comment\n", "network:\n"])
def test_netplan_empty_configs(text: str) -> None:
    assert parse_netplan(text) == NetplanConfig(renderer=None, ethernets=(), files=())


def test_netplan_address_mapping_form() -> None:
    text = "network:\n  ethernets:\n    e:\n      addresses:\n        - 10.0.0.15/24: {lifetime: 0}\n"
    cfg = parse_netplan(text)
    assert cfg.ethernets[0].addresses == ("10.0.0.15/24",)


def test_netplan_yaml_error_line_and_file() -> None:
    with pytest.raises(ParseError) as info:
        parse_netplan("network:\n  ethernets:\n    e:\n\tmtu: 1\n")
    assert info.value.line_no == 4
    text = "==> /etc/netplan/a.yaml <==\nnetwork: {}\n\n==> /etc/netplan/b.yaml <==\nnetwork:\n  x: [1\n"
    with pytest.raises(ParseError) as info:
        parse_netplan(text)
    assert "/etc/netplan/b.yaml" in info.value.reason
    assert info.value.line_no is not None and info.value.line_no >= 2


@pytest.mark.parametrize(
    ("body", "key"),
    [
        ("mtu: abc", "mtu"),
        ("mtu: true", "mtu"),
        ("addresses: 192.168.1.1/24", "addresses"),
        ("addresses: [192.168.1.1]", "addresses"),
        ("addresses: [[1]]", "addresses"),
        ("dhcp4: maybe", "dhcp4"),
        ("link-local: ipv4", "link-local"),
        ("match: eth0", "match"),
        ("set-name: [a]", "set-name"),
    ],
)
def test_netplan_wrong_types_name_the_key(body: str, key: str) -> None:
    with pytest.raises(ParseError) as info:
        parse_netplan(f"network:\n  ethernets:\n    e:\n      {body}\n")
    assert key in info.value.reason


@pytest.mark.parametrize(
    "text", ["- a\n- b\n", "network: 3\n", "other: {}\n", "network:\n  ethernets: [a]\n"]
)
def test_netplan_wrong_shape(text: str) -> None:
    with pytest.raises(ParseError):
        parse_netplan(text)


def test_netplan_glib_warning_lines_ignored() -> None:
    text = (
        "** (process:6465): WARNING **: 14:37:14.173: Permissions for /etc/netplan/a.yaml are too open.\n"
        + sample("netplan_get_0.106_nm_match.txt")
    )
    assert parse_netplan(text).ethernets[0].set_name == "rdma0"


# ================================================================ NCCL settings


def test_nccl_env_keeps_only_nccl_and_empty_values() -> None:
    text = (
        "SHELL=/bin/bash\nNCCL_IB_HCA=rocep1s0f1,roceP2p1s0f1\nNCCL_SOCKET_IFNAME=enP7s7\n"
        "NCCL_IB_GID_INDEX=\nPATH=/usr/bin\nNCCL_DEBUG=INFO\n"
    )
    s = parse_nccl_env(text)
    assert s.source == "env"
    assert s.as_dict == {
        "NCCL_IB_HCA": "rocep1s0f1,roceP2p1s0f1",
        "NCCL_SOCKET_IFNAME": "enP7s7",
        "NCCL_IB_GID_INDEX": "",
        "NCCL_DEBUG": "INFO",
    }
    assert s.get("NCCL_IB_GID_INDEX") == ""  # set-but-empty reads as 0 in NCCL: must stay distinguishable
    assert s.get("NCCL_NET") is None
    assert dict(s.line_numbers)["NCCL_IB_GID_INDEX"] == 4


def test_nccl_env_empty_is_valid() -> None:
    assert parse_nccl_env("") == NcclSettings(values=(), source="env", line_numbers=())


def test_nccl_env_export_and_quotes() -> None:
    text = "export NCCL_IB_GID_INDEX=\"3\"\ndeclare -x NCCL_NET='IB'\nexport NCCL_IB_GID_INDEX=4\n"
    s = parse_nccl_env(text)
    assert s.get("NCCL_NET") == "IB"
    assert s.get("NCCL_IB_GID_INDEX") == "4"  # the later assignment wins in a shell
    assert dict(s.line_numbers)["NCCL_IB_GID_INDEX"] == 3


def test_nccl_env_binary() -> None:
    with pytest.raises(ParseError):
        parse_nccl_env("NCCL_X=1\x00\n")


def test_nccl_conf_as_nccl_reads_it() -> None:
    text = (
        "# /etc/nccl.conf\n\nNCCL_IB_HCA=rocep1s0f1,roceP2p1s0f1\nNCCL_SOCKET_IFNAME = enP7s7\n"
        "NCCL_IB_GID_INDEX=\"3\"\nNCCL_IB_HCA=other\nNCCL_IB_TIMEOUT=\n"
    )
    s = parse_nccl_conf(text)
    assert s.source == "nccl.conf"
    assert s.get("NCCL_IB_HCA") == "rocep1s0f1,roceP2p1s0f1"  # setenv(..., 0): the first line wins
    assert s.get("NCCL_SOCKET_IFNAME") is None  # NCCL sees "NCCL_SOCKET_IFNAME " instead
    assert s.get("NCCL_SOCKET_IFNAME ") == " enP7s7"
    assert s.get("NCCL_IB_GID_INDEX") == "\"3\""
    assert s.get("NCCL_IB_TIMEOUT") == ""
    assert [line for line, _ in s.warnings] == [4, 5]
    assert dict(s.line_numbers)["NCCL_IB_HCA"] == 3


def test_nccl_conf_empty_and_errors() -> None:
    assert parse_nccl_conf("").values == ()
    assert parse_nccl_conf("# nothing\n").values == ()
    with pytest.raises(ParseError) as info:
        parse_nccl_conf("NCCL_A=1\nthis is not a setting\n")
    assert info.value.line_no == 2
    with pytest.raises(ParseError) as info:
        parse_nccl_conf("NCCL_A=1\nexport NCCL_B=2\n")
    assert info.value.line_no == 2
    with pytest.raises(ParseError):
        parse_nccl_conf("\x7fELF\x02\x01\x01\x00\x00")


# ================================================================ dmesg


def test_dmesg_boot_with_cable() -> None:
    log = parse_dmesg(sample("dmesg_boot_cable_present.txt"))
    assert log.lines == 25 and not log.restricted
    kinds = [e.kind for e in log.events]
    assert kinds.count("module_cable_plugged") == 2
    assert kinds.count("module_cable_unplugged") == 2
    assert kinds.count("pcie_insufficient_power") == 2
    up = [e for e in log.events if e.kind == "netdev_link_up"]
    assert [(e.time_s, e.device, e.bdf) for e in up] == [
        (12.504321, "enp1s0f0np0", "0000:01:00.0"),
        (12.711002, "enP2p1s0f0np0", "0002:01:00.0"),
    ]
    assert [e.device for e in log.events if e.kind == "rdma_port_active"] == ["rocep1s0f0", "roceP2p1s0f0"]
    assert [e.device for e in log.events if e.kind == "rdma_port_down"] == ["rocep1s0f0"]
    assert [e.time_s for e in log.events if e.kind == "netdev_link_down"] == [7201.333333]
    aer = [e for e in log.events if e.kind == "aer_error"]
    # The root port's report for the CX-7 function counts; the one for 0004:01:00.0 (not mlx5) does not.
    assert len(aer) == 4 and {e.device for e in aer} == {"0002:01:00.0"}
    plugged = next(e for e in log.events if e.kind == "module_cable_plugged")
    assert (plugged.device, plugged.wallclock) == ("0000:01:00.0", None)
    assert plugged.text == "mlx5_core 0000:01:00.0: Port module event: module 0, Cable plugged"


def test_dmesg_other_formats_and_noise() -> None:
    text = (
        "kern  :info  : [   12.5] mlx5_core 0000:01:00.1 enp1s0f1np1: Link up\n"
        "2026-08-07T03:13:05,123456+00:00 mlx5_core 0002:01:00.1 enP2p1s0f1np1: Link down\n"
        "r8169 0000:02:00.0 enP7s7: Link is Up - 1Gbps/Full\n"
        "igb 0000:03:00.0 eno1: Link up\n"
        "no stamp and no device\n"
        "[  99.0] mlx5_core 0000:01:00.1 enp1s0f1np1 (unregistering): Link down\n"
    )
    log = parse_dmesg(text)
    assert log.lines == 6
    assert [(e.kind, e.time_s, e.wallclock, e.device) for e in log.events] == [
        ("netdev_link_up", 12.5, None, "enp1s0f1np1"),
        ("netdev_link_down", None, "2026-08-07T03:13:05,123456+00:00", "enP2p1s0f1np1"),
        ("netdev_link_down", 99.0, None, "enp1s0f1np1"),
    ]


def test_dmesg_empty_and_restricted() -> None:
    assert parse_dmesg("") == DmesgLog((), 0, False)
    log = parse_dmesg("dmesg: read kernel buffer failed: Operation not permitted\n")
    assert log.restricted and log.events == () and log.lines == 1


# ================================================================ uptime, sysctl, meminfo


def test_uptime() -> None:
    assert parse_uptime("350735.47 234388.90\n") == Uptime(350735.47, 234388.90)
    assert parse_uptime("12\n") == Uptime(12.0, None)
    captured = parse_uptime(sample("uptime_captured.txt"))
    assert captured.uptime_s > 0 and captured.idle_s is not None
    for bad in ("up 3 days\n", "1 2 3\n", "-1 2\n"):
        with pytest.raises(ParseError):
            parse_uptime(bad)
    with pytest.raises(ParseError):
        parse_uptime("")


def test_sysctl() -> None:
    s = parse_sysctl("net.ipv4.conf.all.arp_ignore = 1\nnet.ipv4.conf.all.arp_announce = 2\n")
    assert (s.get("net.ipv4.conf.all.arp_ignore"), s.get("net.ipv4.conf.all.arp_announce")) == ("1", "2")
    merged = parse_sysctl(sample("sysctl_missing_key_merged_captured.txt"))
    assert [k for k, _ in merged.values] == ["net.ipv4.conf.all.arp_ignore", "net.ipv4.conf.all.arp_announce"]
    assert merged.get("net.ipv4.conf.enp1s0f1np1.arp_ignore") is None
    rmem = parse_sysctl("net.ipv4.tcp_rmem = 4096\t131072\t6291456\n").get("net.ipv4.tcp_rmem")
    assert rmem == "4096\t131072\t6291456"
    assert parse_sysctl("kernel.domainname = \n").get("kernel.domainname") == ""
    assert parse_sysctl(sample("sysctl_captured.txt")).get("net.ipv4.conf.all.arp_ignore") is not None
    with pytest.raises(ParseError) as info:
        parse_sysctl("net.a = 1\ngarbage\n")
    assert info.value.line_no == 2


def test_meminfo() -> None:
    m = parse_meminfo("MemTotal:       127543800 kB\nMemFree:        100 kB\nMemAvailable:   119203412 kB\n"
                      "HugePages_Total:       0\nHugepagesize:       2048 kB\n")
    assert m == MemInfo(127543800, 119203412)
    captured = parse_meminfo(sample("meminfo_captured.txt"))
    assert captured.mem_total_kib is not None and captured.mem_available_kib is not None
    assert captured.mem_available_kib <= captured.mem_total_kib
    with pytest.raises(ParseError) as info:
        parse_meminfo("MemTotal: 1 kB\nMemFree 2 kB\n")
    assert info.value.line_no == 2


# Pieces of real dmesg lines, recombined: stamps, drivers, BDFs, names and messages of the events and of noise.
_STAMPS = st.sampled_from(["[    5.123456] ", "[Fri Aug  7 03:13:00 2026] ", "kern  :info  : [  12.5] ", "", "[T42] "])
_HEADS = st.sampled_from(["mlx5_core 0000:01:00.0 enp1s0f0np0: ", "mlx5_core 0002:01:00.1: ", "pcieport 0000:00:01.0: ",
                          "cx7-pcie-hotplug cx7: ", "usb 1-1: ", "nvme nvme0: ", "", "e1000e 0000:03:00.0 eth0: "])
_MESSAGES = st.sampled_from(["Link up", "Link down", "Port: 1 Link ACTIVE", "Cable plug in detected", "Cable unplug",
                             "AER: Corrected error received: 0000:01:00.0", "PCIe Bus Error: severity=Corrected",
                             "Port module event: module 0, Cable plugged", "new high-speed USB device", "",
                             "Detected insufficient power on the PCIe slot (27W)."])


@given(st.lists(st.tuples(_STAMPS, _HEADS, _MESSAGES).map("".join), max_size=30))
def test_dmesg_reads_only_lines_that_can_be_events_and_misses_none(lines: list[str]) -> None:
    """parse_dmesg skips a line without any of EVENT_WORDS; every event a full scan of every line finds is found."""
    text = "\n".join(lines)
    log = parse_dmesg(text)
    stamped = [kernel._split_stamp(line) for line in text.split("\n") if line.strip()]
    bdfs = {m.group("bdf") for _, _, msg in stamped if (m := kernel.DEVICE_RE.match(msg))
            and m.group("driver") == "mlx5_core"}
    every = [(t, w, msg) for t, w, msg in stamped if kernel._classify(msg, bdfs) is not None]
    assert [(e.time_s, e.wallclock, e.text) for e in log.events] == every
    assert log.lines == len(stamped)

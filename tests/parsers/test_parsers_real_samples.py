"""Real outputs pasted by users (tests/samples/*/real/, sources in PROVENANCE.md), and the pasted forms
the parsers must accept: excerpts without headers or prefixes, masked values, every width and speed form.

What each real sample parses to is its case file beside it (tests/parsers/test_parser_cases.py); here are the
forms written out in the tests themselves.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from linkcheck.errors import ParseError
from linkcheck.parsers.ethtool import parse_ethtool, parse_ethtool_m
from linkcheck.parsers.gids import parse_gid_sysfs, parse_show_gids
from linkcheck.parsers.ibverbs import parse_ibstat, parse_ibv_devinfo
from linkcheck.parsers.iproute import parse_ip_link, parse_ip_neigh
from linkcheck.parsers.nccl_log import parse_nccl_log
from linkcheck.parsers.nccl_tests import parse_nccl_tests
from linkcheck.parsers.netplan import parse_netplan
from linkcheck.parsers.pcie import parse_lspci
from linkcheck.parsers.rdma import parse_ibdev2netdev
from tests.parsers.test_parser_cases import is_case_file

SAMPLES = Path(__file__).resolve().parents[1] / "samples"


def test_every_real_sample_has_provenance() -> None:
    for folder in SAMPLES.glob("*/real"):
        provenance = (folder / "PROVENANCE.md").read_text()
        for sample in folder.iterdir():
            assert sample.name == "PROVENANCE.md" or is_case_file(sample) or sample.name in provenance, sample


# ---------------------------------------------------------------- rdma family

@pytest.mark.parametrize(("width", "lanes"), [
    ("1X (1)", 1), ("4X (2)", 4), ("8X (4)", 8), ("12X (8)", 12), ("2X (16)", 2),
    ("invalid widthX (16)", 2),  # rdma-core before 2X was known prints the code only
])
def test_ibv_devinfo_every_width_code(width: str, lanes: int) -> None:
    # rdma-core libibverbs/examples/devinfo.c width_str(): 1 -> 1X, 2 -> 4X, 4 -> 8X, 8 -> 12X, 16 -> 2X
    (device,) = parse_ibv_devinfo(f"hca_id:\tmlx5_bond_0\n\t\tport:\t1\n\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n"
                                  f"\t\t\tactive_width:\t\t{width}\n\t\t\tactive_speed:\t\t50.0 Gbps (64)\n")
    assert device.ports[0].active_width_lanes == lanes and device.ports[0].rate_gbps == lanes * 50.0


# ---------------------------------------------------------------- nccl family

def test_first_nccl_tests_format_ranks_without_pid_and_footer_without_hash() -> None:
    # The format strings of the first nccl-tests (NVIDIA/nccl-tests@b188a15, 2017, NCCL 1 and 2): "nThread"
    # and the footer lines without '#', "#   Rank %2d on %10s device ..." without a Pid, a "bytes N type op
    # ... res" header and times in milliseconds ("%7.3f" of deltaSec * 1.0E3). Values below are made up.
    r = parse_nccl_tests(
        "nThread 1 nGpus 2 minBytes 1 maxBytes 1048576 step: 2(factor) warmup iters: 5 iters: 20 validation: 0 \n"
        "# NCCL Tests compiled with NCCL 2.4\n"
        "# Using devices\n"
        "#   Rank  0 on       ncrh device  0 [0x05] GeForce RTX 2080 Ti\n"
        "#   Rank  1 on       ncrh device  1 [0x06] GeForce RTX 2080 Ti\n"
        "\n"
        "#                                                 out-of-place                    in-place\n"
        "#      bytes             N    type      op     time  algbw  busbw      res     time  algbw  busbw      res\n"
        "     1048576        262144   float     sum    0.105   9.99   9.99    0e+00    0.104  10.08  10.08    0e+00\n"
        " Out of bounds values : 0 OK\n"
        " Avg bus bandwidth    : 10.035 \n")
    (row,) = r.rows
    assert (r.ranks, r.hosts, r.header_blocks, r.completed, r.avg_busbw_gbs) == (2, ("ncrh",), 1, True, 10.035)
    assert (row.redop, row.oop_time_us, row.ip_busbw_gbs, row.oop_wrong) == ("sum", 105.0, 10.08, None)


# ---------------------------------------------------------------- NCCL lines quoted without their prefix

def test_nccl_log_lines_without_prefix() -> None:
    log = parse_nccl_log(
        "NET/IB : Using [0]rocep1s0f1:1/RoCE [1]roceP2p1s0f1:1/RoCE [RO]; OOB enp1s0f1np1:192.168.100.10<0>\n"
        "Using network IBext_v8\n"
        "Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0\n"
        "Channel 01/0 : 0[0] -> 1[0] [send] via NET/IBext_v8/1\n")
    assert log.ib_devices == ("rocep1s0f1", "roceP2p1s0f1") and log.network == "IBext_v8"
    assert log.channel_net_devs == (0, 1) and not log.uses_socket and log.hosts == ()


def test_nccl_log_warn_with_timestamp_without_prefix() -> None:
    log = parse_nccl_log("[2026-01-02 03:04:05] NCCL WARN NET/IB : Got completion from peer 10.0.0.2<1234> "
                         "with status=12 opcode=0 len=0 vendor err 129\n")
    assert log.warnings == ("NET/IB : Got completion from peer 10.0.0.2<1234> with status=12 opcode=0 len=0 "
                            "vendor err 129",)


def test_nccl_log_unknown_bare_text_is_still_not_a_log() -> None:
    with pytest.raises(ParseError):
        parse_nccl_log("Using devices\nsomething else\n")


# ---------------------------------------------------------------- masked values

def test_show_gids_masked_gid_is_marked_not_fatal() -> None:
    rows = parse_show_gids(
        "DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV\n"
        "rocep1s0f1\t1\t0\tfe80:0000:0000:0000:xxxx:xxxx:xxxx:xxxx\t\t\tv1\tenp1s0f1np1\n"
        "rocep1s0f1\t1\t3\t0000:0000:0000:0000:0000:ffff:xxxx:xxxx\t192.168.x.x  \tv2\tenp1s0f1np1\n")
    assert [(r.index, r.masked, r.roce_version, r.netdev, r.ipv4) for r in rows] == [
        (0, True, 1, "enp1s0f1np1", None), (3, True, 2, "enp1s0f1np1", None)]
    assert rows[0].link_local and not rows[1].link_local and not rows[0].empty


def test_gid_sysfs_and_ibv_devinfo_masked_gids() -> None:
    path = "/sys/class/infiniband/rocep1s0f1/ports/1/gids/0"
    (entry,) = parse_gid_sysfs(f"{path}\tfe80:0000:0000:0000:xxxx:xxxx:xxxx:xxxx\n")
    assert entry.masked and entry.gid == "fe80:0000:0000:0000:xxxx:xxxx:xxxx:xxxx"
    (dev,) = parse_ibv_devinfo("hca_id:\trocep1s0f1\n\t\tport:\t1\n\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n"
                               "\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:XXXX:XXXX:XXXX:XXXX, RoCE v1\n")
    assert [(g.index, g.masked, g.roce_version) for g in dev.ports[0].gids] == [(0, True, 1)]


def test_masked_macs_are_absent_and_marked() -> None:
    (neigh,) = parse_ip_neigh('[{"dst":"192.168.100.11","lladdr":"3c:6d:66:xx:xx:xx","state":["REACHABLE"]}]')
    assert (neigh.dev, neigh.lladdr, neigh.lladdr_masked) == (None, None, True)  # iproute2 6.1: no "dev"
    (iface,) = parse_ip_link('[{"ifname":"enp1s0f1np1","address":"3C:6D:66:XX:XX:XX"}]')
    assert (iface.mac, iface.mac_masked) == (None, True)
    (plain,) = parse_ip_link('[{"ifname":"enp1s0f1np1","address":"3c:6d:66:cc:b3:b7"}]')
    assert (plain.mac, plain.mac_masked) == ("3c:6d:66:cc:b3:b7", False)


@pytest.mark.parametrize(("serial", "masked"),
                         [("APF25xxxxxxx", True), ("MT2412VS01234", False), ("MT24***", True)])
def test_masked_vendor_serial_is_marked(serial: str, masked: bool) -> None:
    m = parse_ethtool_m("\tIdentifier                                : 0x11 (QSFP28)\n"
                        f"\tVendor SN                                 : {serial}\n")
    assert (m.vendor_sn, m.vendor_sn_masked) == (serial, masked)


# ---------------------------------------------------------------- excerpts without their headers

def test_nccl_tests_legacy_rows_without_header() -> None:
    r = parse_nccl_tests(
        "#  Rank  0 Pid  12345 on  gpu-a device  0 [0x18] Tesla V100-SXM2-16GB\n"
        "#  Rank  1 Pid  12346 on  gpu-a device  1 [0x3b] Tesla V100-SXM2-16GB\n"
        "           8             2     float     sum    19.90    0.00    0.00  0e+00    18.96    0.00    0.00  0e+00\n"
        "    33554432       8388608     float     sum   3312.5   10.13   10.13  4e-07   3305.2   10.15   10.15"
        "  4e-07\n")
    assert r.ranks == 2
    assert [(x.size_bytes, x.root, x.oop_time_us, x.ip_busbw_gbs, x.oop_wrong) for x in r.rows] == [
        (8, -1, 19.9, 0.0, None), (33554432, -1, 3312.5, 10.15, None)]


def test_nccl_tests_current_rows_without_header() -> None:
    r = parse_nccl_tests("   134217728      33554432     float     sum      -1    11876   11.30   11.30      0"
                         "    11850   11.33   11.33      0\n")
    (row,) = r.rows
    assert (row.root, row.oop_busbw_gbs, row.ip_time_us, row.ip_wrong) == (-1, 11.3, 11850.0, 0)


def test_lspci_grep_of_two_functions() -> None:
    links = parse_lspci("\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x4, ASPM not supported\n"
                        "\t\tLnkSta:\tSpeed 32GT/s, Width x4\n"
                        "\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x4, ASPM not supported\n"
                        "\t\tLnkSta:\tSpeed 32GT/s, Width x2 (downgraded)\n")
    assert [(x.bdf, x.cap_width, x.sta_width, x.sta_note) for x in links] == [
        (None, 4, 4, None), (None, 4, 2, "downgraded")]


@pytest.mark.parametrize(("line", "speed", "width", "note"), [
    ("LnkSta:\tSpeed 2.5GT/s (ok), Width x1 (ok)", 2.5, 1, "ok"),
    ("LnkSta: Speed unknown (downgraded), Width x16 (ok)", None, 16, "downgraded"),
    ("LnkSta:\tSpeed 16GT/s (downgraded), Width x8 (downgraded)", 16.0, 8, "downgraded"),
    ("LnkSta:\tSpeed 8GT/s, Width x16, TrErr- Train- SlotClk+ DLActive- BWMgmt- ABWMgmt-", 8.0, 16, None),
])
def test_lspci_lnksta_of_every_pciutils_era(line: str, speed: float | None, width: int, note: str | None) -> None:
    (link,) = parse_lspci(line + "\n")
    assert (link.sta_speed_gts, link.sta_width, link.sta_note) == (speed, width, note)


@pytest.mark.parametrize(("width", "lanes"), [
    ("4X (2)", 4), ("2X (16)", 2), ("1X (1)", 1), ("8X (4)", 8), ("12X (8)", 12), ("  4X   (2)  ", 4), ("4X", 4)])
@pytest.mark.parametrize(("speed", "gbps"), [
    ("25.0 Gbps (32)", 25.0), ("100.0 Gbps (128)", 100.0), ("200.0 Gbps (256)", 200.0), ("50.0 Gbps (64)", 50.0),
    ("invalid speed (128)", 100.0)])
def test_ibv_devinfo_every_width_and_speed(width: str, lanes: int, speed: str, gbps: float) -> None:
    (dev,) = parse_ibv_devinfo(f"hca_id:\tmlx5_0\n\t\tport:\t1\n\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n"
                               f"\t\t\tactive_width:\t\t{width}\n\t\t\tactive_speed:{speed}\n"
                               "\t\t\teffective_speed:\t100.0 Gbps\n")
    port = dev.ports[0]
    assert (port.active_width_lanes, port.active_speed_gbps, port.effective_speed_gbps) == (lanes, gbps, 100.0)


def test_ibv_devinfo_grep_excerpt_without_port_line() -> None:
    (dev,) = parse_ibv_devinfo("\t\t\tactive_width:\t\t2X (16)\n\t\t\tactive_speed:\t\t100.0 Gbps (128)\n")
    assert (dev.hca_id, dev.ports[0].port, dev.ports[0].rate_gbps) == (None, None, 200.0)


def test_ibstat_excerpts_without_ca_or_port_line() -> None:
    (ca,) = parse_ibstat("\tPort 1:\n\t\tState: Active\n\t\tPhysical state: LinkUp\n\t\tRate: 200\n")
    assert (ca.name, ca.ports[0].port, ca.ports[0].rate_gbps) == (None, 1, 200.0)
    (ca,) = parse_ibstat("\t\tState: Down\n\t\tPhysical state: Disabled\n\t\tRate: 40\n")
    assert (ca.ports[0].port, ca.ports[0].state, ca.ports[0].physical_state) == (None, "Down", "Disabled")


# ---------------------------------------------------------------- rewrites for linear time keep the results

def test_ethtool_link_mode_continuations_keep_their_order() -> None:
    s = parse_ethtool("Settings for enp1s0f1np1:\n\tSupported link modes:   1000baseKX/Full\n"
                      "\t                        100000baseCR4/Full\n\t                        200000baseCR4/Full\n"
                      "\tAdvertised link modes:  200000baseCR4/Full\n\tSpeed: 200000Mb/s\n")
    assert s.supported_link_modes == ("1000baseKX/Full", "100000baseCR4/Full", "200000baseCR4/Full")
    assert s.advertised_link_modes == ("200000baseCR4/Full",)


def test_netplan_merge_in_place_leaves_yaml_aliases_alone() -> None:
    cfg = parse_netplan(
        "==> /etc/netplan/10-a.yaml <==\nnetwork:\n  ethernets:\n    a: &shared\n      mtu: 1500\n"
        "      addresses: [10.0.0.1/24]\n    b: *shared\n"
        "==> /etc/netplan/20-b.yaml <==\nnetwork:\n  ethernets:\n    a:\n      mtu: 9000\n"
        "      addresses: [10.0.0.1/24, 10.0.1.1/24]\n")
    by_id = {e.netdef_id: e for e in cfg.ethernets}
    assert (by_id["a"].mtu, by_id["a"].addresses) == (9000, ("10.0.0.1/24", "10.0.1.1/24"))
    assert (by_id["b"].mtu, by_id["b"].addresses) == (1500, ("10.0.0.1/24",))


def test_ibdev2netdev_verbose_with_a_parenthesised_description() -> None:
    (e,) = parse_ibdev2netdev("0000:01:00.0 rocep1s0f0 (MT4129 - NVD0000000087) ConnectX-7 (CX7) VPI "
                              "fw 28.45.4028 port 1 (ACTIVE) ==> enp1s0f0np0 (Up)\n")
    assert (e.pci_bdf, e.device, e.port, e.ib_state, e.netdev, e.link_state) == (
        "0000:01:00.0", "rocep1s0f0", 1, "ACTIVE", "enp1s0f0np0", "Up")

"""Tests for linkcheck.parsers.ethtool: link settings, -i, -S and -m (decoded and hex dump), all eras."""

from __future__ import annotations

from pathlib import Path

import pytest

from linkcheck.errors import ParseError
from linkcheck.parsers.ethtool import (
    ModuleEeprom,
    parse_ethtool,
    parse_ethtool_i,
    parse_ethtool_m,
    parse_ethtool_s,
)

SAMPLES = Path(__file__).resolve().parents[1] / "samples" / "ethtool"


def sample(name: str) -> str:
    return (SAMPLES / name).read_text()


# ---------------------------------------------------------------- ethtool IFACE


def test_settings_400g_netlink_6_5() -> None:
    s = parse_ethtool(sample("settings_cx7_400g_6.5.txt"))
    assert s.ifname == "ens1f0np0"
    assert s.speed_mbps == 400_000
    assert s.lanes == 4
    assert s.duplex == "Full"
    assert s.autoneg is True
    assert s.port == "Direct Attach Copper"
    assert s.link_detected is True
    assert s.link_down_reason is None
    assert s.link_down_events is None
    assert s.supported_link_modes == ("100000baseCR4/Full", "200000baseCR4/Full", "400000baseCR4/Full")
    assert s.advertised_link_modes == s.supported_link_modes


def test_settings_spark_root_lines_and_link_down_events() -> None:
    s = parse_ethtool(sample("settings_spark_200g_root_6.8.txt"))
    assert s.ifname == "enp1s0f1np1"
    assert s.speed_mbps == 200_000
    assert s.link_down_events == 3
    # The supported list stops at 100000baseCR4/Full on a Spark: six modes, "link" from the message
    # level continuation line must not leak into it.
    assert len(s.supported_link_modes) == 6
    assert s.supported_link_modes[-1] == "100000baseCR4/Full"
    assert "link" not in s.advertised_link_modes


def test_settings_no_cable() -> None:
    s = parse_ethtool(sample("settings_no_cable_6.5.txt"))
    assert s.speed_mbps is None
    assert s.duplex is None
    assert s.port == "Other"
    assert s.link_detected is False
    assert s.link_down_reason == "No cable"
    assert s.link_down_events == 0


def test_settings_link_ext_substate() -> None:
    text = "Settings for x:\n\tLink detected: no (Cable issue, Unsupported cable)\n"
    s = parse_ethtool(text)
    assert (s.link_detected, s.link_down_reason) == (False, "Cable issue, Unsupported cable")


def test_settings_old_ioctl_nonroot() -> None:
    s = parse_ethtool(sample("settings_ioctl_nonroot_5.4.txt"))
    assert s.speed_mbps == 1000
    assert s.lanes is None
    assert s.supported_link_modes == (
        "10baseT/Half", "10baseT/Full", "100baseT/Half", "100baseT/Full", "1000baseT/Full",
    )
    assert s.link_detected is True


def test_settings_captured_virtio_and_lo() -> None:
    s = parse_ethtool(sample("settings_virtio_6.1_captured.txt"))
    assert (s.ifname, s.speed_mbps, s.duplex, s.autoneg) == ("eth0", None, None, False)
    assert s.supported_link_modes == () and s.advertised_link_modes == ()
    lo = parse_ethtool(sample("settings_lo_6.1_captured.txt"))
    assert (lo.ifname, lo.link_detected, lo.speed_mbps, lo.port) == ("lo", True, None, None)


def test_settings_unknown_device_is_parse_error() -> None:
    with pytest.raises(ParseError) as info:
        parse_ethtool(sample("settings_nodev_6.1_captured.txt"))
    assert "no device matches name" in info.value.reason
    with pytest.raises(ParseError, match="No data available"):
        parse_ethtool("No data available\n")


@pytest.mark.parametrize(
    ("text", "line_no"),
    [
        ("Settings for x:\n\tSpeed: fast\n", 2),
        ("Settings for x:\n\tAuto-negotiation: maybe\n", 2),
        ("Settings for x:\n\tLink detected: perhaps\n", 2),
        ("Settings for x:\n\tLanes: four\n", 2),
        ("Settings for x:\n\tLink detected: yes\nSettings for y:\n", 3),
    ],
)
def test_settings_broken_values(text: str, line_no: int) -> None:
    with pytest.raises(ParseError) as info:
        parse_ethtool(text)
    assert info.value.line_no == line_no


# ---------------------------------------------------------------- ethtool -i


def test_driver_captured_virtio_empty_firmware() -> None:
    d = parse_ethtool_i(sample("driver_virtio_6.1_captured.txt"))
    assert (d.driver, d.version, d.firmware_version, d.psid, d.bus_info) == (
        "virtio_net", "1.0.0", None, None, "0000:00:03.0",
    )


def test_driver_errors() -> None:
    with pytest.raises(ParseError, match="Operation not supported"):
        parse_ethtool_i(sample("driver_lo_unsupported_6.1_captured.txt"))
    with pytest.raises(ParseError, match="driver"):
        parse_ethtool_i("version: 1\nbus-info: x\n")


# ---------------------------------------------------------------- ethtool -S


def test_stats_mlx5() -> None:
    stats = parse_ethtool_s(sample("stats_mlx5_excerpt.txt"))
    assert stats.get("rx_discards_phy") == 17
    assert stats.get("rx_pause_ctrl_phy") == 42
    assert stats.get("link_down_events_phy") == 2
    assert stats.get("rx_pause") is None  # mlx5 has no plain rx_pause
    assert stats.as_dict["rx_corrected_bits_phy"] == 918
    assert len(stats.counters) == 20


def test_stats_captured_virtio() -> None:
    stats = parse_ethtool_s(sample("stats_virtio_6.1_captured.txt"))
    assert stats.counters[0][0] == "rx_drops"
    assert all(isinstance(v, int) for _, v in stats.counters)
    assert len(stats.counters) == sample("stats_virtio_6.1_captured.txt").count("\n") - 1


def test_stats_duplicate_first_wins_and_colon_names() -> None:
    stats = parse_ethtool_s("NIC statistics:\n     a: 1\n     a: 2\n     tx-0: pkts: 5\n")
    assert stats.get("a") == 1
    assert stats.get("tx-0: pkts") == 5


def test_stats_errors() -> None:
    with pytest.raises(ParseError, match="no stats available"):
        parse_ethtool_s("no stats available\n")
    with pytest.raises(ParseError) as info:
        parse_ethtool_s("NIC statistics:\n     rx_packets: 12\n     tx_packets: lots\n")
    assert info.value.line_no == 3


# ---------------------------------------------------------------- ethtool -m


def test_module_cmis_decoded() -> None:
    m = parse_ethtool_m(sample("module_cmis_qsfp112_dac_6.7.txt"))
    assert m.memory_map == "cmis"
    assert m.identifier_code == 0x1E
    assert m.identifier is not None and "CMIS" in m.identifier
    assert m.connector == "0x23 (No separable connector)"
    assert (m.vendor_name, m.vendor_oui, m.vendor_pn) == ("NVIDIA", "48:b0:2d", "MCP4Y10-N001")
    assert (m.vendor_rev, m.vendor_sn, m.date_code) == ("A2", "MT2412VS01234", "240318")
    assert m.length_m == 1.0
    assert m.transmitter_technology == "0x0a (Copper cable, unequalized)"
    assert m.identified
    assert ("Module State", "0x03 (ModuleReady)") in m.fields


def test_module_sff8636_decoded() -> None:
    m = parse_ethtool_m(sample("module_sff8636_njaakk_6.1.txt"))
    assert m.memory_map == "sff8636"
    assert m.identifier_code == 0x11
    assert m.vendor_pn == "NJAAKK-N911"
    assert m.vendor_oui == "78:a7:14"
    # The OM1 "7m" is an attenuation artefact on copper; the copper length is what counts.
    assert m.length_m == 1.0
    # Repeated labels are all kept in order.
    descriptions = [v for k, v in m.fields if k == "Extended identifier description"]
    assert descriptions[1] == "No CDR in TX, No CDR in RX"


def test_module_sff8472_decoded() -> None:
    m = parse_ethtool_m(sample("module_sff8472_sfp28_dac_6.1.txt"))
    assert (m.memory_map, m.identifier_code, m.length_m) == ("sff8472", 3, 3.0)
    assert m.vendor_sn == "MT1825VS04321"


def test_module_hexdump_lower_page_only() -> None:
    m = parse_ethtool_m(sample("module_hexdump_cmis_lower_6.1.txt"))
    assert m.memory_map == "hexdump"
    assert m.identifier_code == 0x1E
    assert m.vendor_pn is None and not m.identified
    assert m.length_m is None


@pytest.mark.parametrize(
    "name", ["module_hexdump_cmis_full_6.1.txt", "module_hexdump_cmis_two_blocks_6.1.txt"]
)
def test_module_hexdump_cmis_upper_page(name: str) -> None:
    m = parse_ethtool_m(sample(name))
    assert m.memory_map == "hexdump"
    assert m.identifier_code == 0x1E
    assert (m.vendor_name, m.vendor_oui, m.vendor_pn) == ("Amphenol", "78:a7:14", "NJAAKK-N911")
    assert (m.vendor_rev, m.vendor_sn, m.date_code) == ("B", "APF25010054321", "250107")
    assert m.length_m == pytest.approx(0.4)
    assert m.connector == "0x23 (No separable connector)"
    assert m.identified


def test_module_hexdump_nonprintable_vendor_bytes() -> None:
    rows = ["Offset\t\tValues", "------\t\t------"]
    data = bytearray(256)
    data[0] = 0x1E
    data[148:164] = b"AB\x01CD" + b" " * 11
    for base in range(0, 256, 16):
        rows.append(f"0x{base:04x}:\t\t" + " ".join(f"{b:02x}" for b in data[base : base + 16]) + " ")
    m = parse_ethtool_m("\n".join(rows) + "\n")
    assert m.vendor_pn == "AB_CD"
    assert m.vendor_name is None  # all blanks


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("netlink error: Operation not supported\n", "Operation not supported"),
        ("netlink error: Operation not permitted\n", "Operation not permitted"),
        ("Cannot get module EEPROM information: Invalid argument\n", "Cannot get module EEPROM"),
        ("\tVendor PN                                 : X\n", "Identifier"),
    ],
)
def test_module_errors(text: str, reason: str) -> None:
    with pytest.raises(ParseError, match=reason):
        parse_ethtool_m(text)


def test_module_captured_not_supported() -> None:
    with pytest.raises(ParseError) as info:
        parse_ethtool_m(sample("module_not_supported_6.1_captured.txt"))
    assert info.value.reason == "Operation not supported"


def test_module_malformed_hex_row() -> None:
    text = "Offset\t\tValues\n------\t\t------\n0x0000:\t\t1e 00 zz\n"
    with pytest.raises(ParseError) as info:
        parse_ethtool_m(text)
    assert info.value.line_no == 3


def test_module_truncated_hexdump_without_byte0() -> None:
    with pytest.raises(ParseError, match="byte 0"):
        parse_ethtool_m("Offset\t\tValues\n------\t\t------\n0x0080:\t\t1e 00\n")


def test_module_record_is_frozen() -> None:
    m = parse_ethtool_m(sample("module_cmis_qsfp112_dac_6.7.txt"))
    assert isinstance(m, ModuleEeprom)
    with pytest.raises(AttributeError):
        m.vendor_pn = "x"  # type: ignore[misc]


def test_ethtool_m_cut_mid_line_is_truncated_not_unidentified() -> None:
    from linkcheck.errors import ParseError
    from linkcheck.parsers.ethtool import parse_ethtool_m

    text = ("\tIdentifier                                : 0x11 (QSFP28)\n"
            "\tVendor name                               : Amphenol\n"
            "\tVendor PN")
    with pytest.raises(ParseError, match="truncated"):
        parse_ethtool_m(text)

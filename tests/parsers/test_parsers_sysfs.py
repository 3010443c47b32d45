"""Tests for linkcheck.parsers.sysfs and linkcheck.parsers.gids (sysfs GID tables, index resolution)."""

from __future__ import annotations

from pathlib import Path

import pytest

from linkcheck.errors import ParseError
from linkcheck.parsers.gids import (
    GidEntry,
    gid_entries_from_sysfs,
    holes,
    normalize_gid,
    parse_gid_sysfs,
    resolve_roce_v2_ipv4_index,
)
from linkcheck.parsers.sysfs import SysfsEntry, parse_link_speed_gts, parse_sysfs_dump

SAMPLES = Path(__file__).resolve().parents[1] / "samples" / "rdma"
IB = "/sys/class/infiniband"


def sample(name: str) -> str:
    return (SAMPLES / name).read_text()


# ---------------------------------------------------------------- the dump format


def test_own_dump_format_values_errors_and_links() -> None:
    dump = parse_sysfs_dump(sample("sysfs_infiniband_spark.txt"))
    port = f"{IB}/rocep1s0f1/ports/1"
    assert dump.value(f"{port}/state") == "4: ACTIVE"
    assert dump.value(f"{port}/rate") == "200 Gb/sec (2X NDR)"
    assert dump.value(f"{port}/counters/link_downed") == "1"
    assert dump.value(f"{port}/gids/3") == "0000:0000:0000:0000:0000:ffff:c0a8:640a"
    assert dump.value(f"{port}/gid_attrs/types/3") == "RoCE v2"
    empty_type = dump.get(f"{port}/gid_attrs/types/7")
    assert empty_type == SysfsEntry(f"{port}/gid_attrs/types/7", error="Invalid argument")
    assert dump.value(f"{port}/gid_attrs/types/7") is None
    device = dump.get(f"{IB}/rocep1s0f1/device")
    assert device is not None and device.link == "../../../0000:01:00.1" and device.value is None
    # 4 devices x (3 device files + 7 port files + 16 x 3 GID files)
    assert len(dump.entries) == 4 * (3 + 7 + 48)
    assert len(dump.under(f"{IB}/roceP2p1s0f1/")) == 3 + 7 + 48
    assert dump.get(f"{IB}/mlx5_9/fw_ver") is None


def test_grep_h_format_with_colons_in_paths_and_values() -> None:
    dump = parse_sysfs_dump(sample("sysfs_infiniband_grep.txt"))
    port = f"{IB}/rocep1s0f1/ports/1"
    assert dump.value(f"{port}/gids/0") == "fe80:0000:0000:0000:fe4c:eaff:fef9:4231"
    assert dump.value(f"{port}/state") == "4: ACTIVE"  # the value's own ': ' stays in the value
    assert dump.value(f"{port}/gid_attrs/types/2") == "IB/RoCE v1"  # a '/' in the value
    entry = dump.get(f"{port}/gid_attrs/ndevs/6")
    assert entry is not None and entry.error == "Invalid argument"
    assert dump.value(f"{IB}/rocep1s0f0/node_guid") == "fc4c:ea03:00f9:4230"


def test_grep_h_pci_paths_old_and_new_kernels() -> None:
    old = parse_sysfs_dump(sample("sysfs_pci_grep_old_kernel.txt"))
    speed = old.value("/sys/bus/pci/devices/0000:3b:00.0/current_link_speed")
    assert speed == "8 GT/s"
    assert parse_link_speed_gts(speed) == 8.0
    assert old.value("/sys/bus/pci/devices/0000:3b:00.0/max_link_width") == "16"
    unknown = old.value("/sys/bus/pci/devices/0000:3b:00.1/current_link_speed")
    assert unknown == "Unknown" and parse_link_speed_gts(unknown) is None
    new = parse_sysfs_dump(sample("sysfs_pci_gx10.txt"))
    widths = {e.path.split("/")[-2]: e.value for e in new.entries if e.path.endswith("current_link_width")}
    assert widths == {"0000:01:00.0": "4", "0000:01:00.1": "4", "0002:01:00.0": "2", "0002:01:00.1": "2"}
    assert parse_link_speed_gts(new.value("/sys/bus/pci/devices/0002:01:00.1/max_link_speed") or "") == 32.0


def test_colon_directories_beyond_bdf() -> None:
    text = (
        "/sys/devices/platform/MTKP0001:00/pcie_hotplug/hotplug_enabled:1\n"
        "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/numa_node:-1\n"
        "/sys/class/net/enp1s0f0np0/device/uevent:PCI_SLOT_NAME=0000:01:00.0\n"
        "/sys/class/net/enp1s0f0np0/device/uevent:DEVPATH=/devices/pci0000:00/0000:00:01.0\n"
    )
    dump = parse_sysfs_dump(text)
    # values with ':' and '/' do not pull the separator into the value
    uevent = [e.value for e in dump.entries if e.path == "/sys/class/net/enp1s0f0np0/device/uevent"]
    assert uevent == ["PCI_SLOT_NAME=0000:01:00.0", "DEVPATH=/devices/pci0000:00/0000:00:01.0"]
    assert dump.value("/sys/devices/platform/MTKP0001:00/pcie_hotplug/hotplug_enabled") == "1"
    assert dump.value("/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/numa_node") == "-1"


@pytest.mark.parametrize("tool", ["grep", "cat"])
def test_tool_error_lines(tool: str) -> None:
    dump = parse_sysfs_dump(f"{tool}: {IB}/mlx5_0/ports/1/gid_attrs/types/5: Invalid argument\n")
    assert dump.entries == (SysfsEntry(f"{IB}/mlx5_0/ports/1/gid_attrs/types/5", error="Invalid argument"),)


def test_empty_dump_is_valid_no_devices() -> None:
    assert parse_sysfs_dump("").entries == ()
    assert parse_sysfs_dump("\n\n  \n").entries == ()


def test_repeated_path_last_value_wins() -> None:
    dump = parse_sysfs_dump("/sys/a/b\t1\n/sys/a/b\t2\n")
    assert dump.value("/sys/a/b") == "2"
    assert len(dump.entries) == 2


def test_a_stray_warning_is_tolerated_garbage_is_not() -> None:
    text = "bash: warning: setlocale: LC_ALL: cannot change locale (en_US.UTF-8)\n/sys/a/b\t1\n/sys/a/c\t2\n"
    assert parse_sysfs_dump(text).value("/sys/a/c") == "2"
    with pytest.raises(ParseError) as err:
        parse_sysfs_dump("hello world\nnot sysfs\n/sys/a/b\t1\n")
    assert err.value.line_no == 1


def test_binary_is_rejected() -> None:
    with pytest.raises(ParseError):
        parse_sysfs_dump("/sys/a/b\t\x00\x01\x02\n")


@pytest.mark.parametrize(
    ("text", "gts"),
    [("32.0 GT/s PCIe", 32.0), ("2.5 GT/s PCIe", 2.5), ("16 GT/s", 16.0), ("64.0 GT/s PCIe", 64.0),
     ("Unknown", None), ("", None), ("GT/s", None)],
)
def test_link_speed_gts(text: str, gts: float | None) -> None:
    assert parse_link_speed_gts(text) == gts


# ---------------------------------------------------------------- GID tables from sysfs


def test_gid_sysfs_healthy_spark() -> None:
    rows = parse_gid_sysfs(sample("sysfs_infiniband_spark.txt"))
    assert len(rows) == 4 * 16  # empty slots included
    used = [(e.device, e.index) for e in rows if not e.empty]
    assert ("rocep1s0f1", 3) in used and ("rocep1s0f0", 2) not in used
    ipv4_v2 = next(e for e in rows if e.device == "rocep1s0f1" and e.index == 3)
    assert ipv4_v2 == GidEntry("rocep1s0f1", 1, 3, "0000:0000:0000:0000:0000:ffff:c0a8:640a", 2,
                               "enp1s0f1np1", "192.168.100.10")
    fe80_v1 = next(e for e in rows if e.device == "rocep1s0f1" and e.index == 0)
    assert fe80_v1.link_local and fe80_v1.roce_version == 1 and fe80_v1.ipv4 is None
    empty = next(e for e in rows if e.device == "rocep1s0f1" and e.index == 9)
    assert empty.empty and empty.roce_version is None and empty.netdev is None
    # sorted numerically although the dump lists 0,1,10,11,...,2
    assert [e.index for e in rows if e.device == "rocep1s0f1"] == list(range(16))
    for dev, netdev, ip in (("rocep1s0f1", "enp1s0f1np1", "192.168.100.10"),
                            ("roceP2p1s0f1", "enP2p1s0f1np1", "192.168.101.10")):
        assert resolve_roce_v2_ipv4_index(rows, dev, 1, netdev, ip) == 3
        assert holes(rows, dev, 1) == ()


def test_gid_sysfs_drift_moves_index_and_leaves_holes() -> None:
    rows = parse_gid_sysfs(sample("sysfs_infiniband_gid_drift.txt"))
    assert resolve_roce_v2_ipv4_index(rows, "roceP2p1s0f1", 1, "enP2p1s0f1np1", "192.168.101.10") == 5
    assert holes(rows, "roceP2p1s0f1", 1) == (2, 3)
    # the twin on the other PCIe link is untouched
    assert resolve_roce_v2_ipv4_index(rows, "rocep1s0f1", 1, "enp1s0f1np1", "192.168.100.10") == 3


def test_gid_sysfs_from_grep_output() -> None:
    rows = parse_gid_sysfs(sample("sysfs_infiniband_grep.txt"))
    assert len(rows) == 2 * 8
    assert resolve_roce_v2_ipv4_index(rows, "rocep1s0f1", 1, "enp1s0f1np1", "192.168.100.10") == 3
    assert resolve_roce_v2_ipv4_index(rows, "rocep1s0f0", 1, "enp1s0f0np0", "192.168.100.10") is None


def test_gid_sysfs_empty_is_no_devices_and_bad_gid_is_error() -> None:
    assert parse_gid_sysfs("") == ()
    with pytest.raises(ParseError):
        parse_gid_sysfs(f"{IB}/mlx5_0/ports/1/gids/0\tnot-a-gid\n")


def test_unreadable_gid_file_counts_as_empty() -> None:
    dump = parse_sysfs_dump(f"{IB}/mlx5_0/ports/1/gids/0\t!Permission denied\n")
    (entry,) = gid_entries_from_sysfs(dump)
    assert entry.empty and entry.index == 0


def _row(index: int, gid: str, version: int | None, netdev: str | None) -> GidEntry:
    norm = normalize_gid(gid)
    assert norm is not None
    ipv4 = gid.removeprefix("::ffff:") if gid.startswith("::ffff:") else None
    return GidEntry("mlx5_0", 1, index, norm, version, netdev, ipv4)


def test_resolve_prefers_bound_netdev_then_unbound_never_v1_or_other_netdev() -> None:
    rows = [
        _row(2, "::ffff:192.168.100.1", 1, "eth0"),  # v1: never
        _row(3, "::ffff:192.168.100.1", 2, "other0"),  # wrong netdev: never
        _row(5, "::ffff:192.168.100.1", 2, None),  # unreadable netdev: only as a fallback
        _row(7, "::ffff:192.168.100.1", 2, "eth0"),
    ]
    assert resolve_roce_v2_ipv4_index(rows, "mlx5_0", 1, "eth0", "192.168.100.1") == 7
    assert resolve_roce_v2_ipv4_index(rows[:3], "mlx5_0", 1, "eth0", "192.168.100.1") == 5
    assert resolve_roce_v2_ipv4_index(rows[:2], "mlx5_0", 1, "eth0", "192.168.100.1") is None
    assert resolve_roce_v2_ipv4_index(rows, "mlx5_0", 2, "eth0", "192.168.100.1") is None
    assert resolve_roce_v2_ipv4_index(rows, "mlx5_0", 1, "eth0", "not an ip") is None


def test_holes_count_missing_indices_like_show_gids_skips() -> None:
    rows = [_row(0, "fe80::1", 1, "eth0"), _row(1, "fe80::1", 2, "eth0"),
            _row(4, "::ffff:10.0.0.1", 1, "eth0")]
    assert holes(rows, "mlx5_0", 1) == (2, 3)
    assert holes(rows, "mlx5_1", 1) == ()
    assert holes([_row(0, "::", None, None)], "mlx5_0", 1) == ()


@pytest.mark.parametrize(
    ("gid", "empty", "link_local"),
    [("::", True, False), ("fe80::", True, True), ("fe80::1", False, True),
     ("::ffff:192.168.100.1", False, False), ("2001:db8::1", False, False)],
)
def test_gid_entry_properties(gid: str, empty: bool, link_local: bool) -> None:
    entry = _row(0, gid, 2, "eth0")
    assert entry.empty is empty
    assert entry.link_local is link_local
    assert len(entry.gid) == 39 and entry.gid.count(":") == 7

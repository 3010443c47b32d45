"""Tests for linkcheck.parsers.rdma (rdma link, ibdev2netdev), .ibverbs (ibv_devinfo, ibstat) and show_gids; more
examples are cases in tests/parsers/cases/ (rdma_link/, ibdev2netdev/)."""

from __future__ import annotations

from pathlib import Path

import pytest

from linkcheck.errors import ParseError
from linkcheck.parsers.gids import holes, parse_show_gids, resolve_roce_v2_ipv4_index
from linkcheck.parsers.ibverbs import parse_ibstat, parse_ibv_devinfo
from linkcheck.parsers.rdma import (
    Ibdev2NetdevEntry,
    RdmaPort,
    parse_ibdev2netdev,
    parse_rdma_link,
)

SAMPLES = Path(__file__).resolve().parents[1] / "samples" / "rdma"


def sample(name: str) -> str:
    return (SAMPLES / name).read_text()


SPARK_PORT1 = {  # cable in the right cage: the f1 twins are up
    "rocep1s0f0": ("DOWN", "DISABLED", "enp1s0f0np0"),
    "rocep1s0f1": ("ACTIVE", "LINK_UP", "enp1s0f1np1"),
    "roceP2p1s0f0": ("DOWN", "DISABLED", "enP2p1s0f0np0"),
    "roceP2p1s0f1": ("ACTIVE", "LINK_UP", "enP2p1s0f1np1"),
}


# ---------------------------------------------------------------- rdma link


@pytest.mark.parametrize("name", ["rdma_link_spark.txt", "rdma_link_spark.json", "rdma_link_d.txt"])
def test_rdma_link_spark_text_json_and_details(name: str) -> None:
    ports = parse_rdma_link(sample(name))
    assert {p.device: (p.state, p.physical_state, p.netdev) for p in ports} == SPARK_PORT1
    assert all(p.port == 1 for p in ports)


@pytest.mark.parametrize("name", ["rdma_link_ib_mixed.txt", "rdma_link_ib_mixed.json"])
def test_rdma_link_infiniband_port_has_no_netdev(name: str) -> None:
    ports = {p.device: p for p in parse_rdma_link(sample(name))}
    assert ports["mlx5_2"] == RdmaPort("mlx5_2", 1, "ACTIVE", "LINK_UP", None)
    assert ports["mlx5_0"].netdev == "ens1f0np0"


@pytest.mark.parametrize("name", ["rdma_link_iproute2_4.17.txt", "rdma_link_iproute2_4.17.json"])
def test_rdma_link_old_iproute2_spelling(name: str) -> None:
    first = parse_rdma_link(sample(name))[0]
    assert first == RdmaPort("mlx5_0", 1, "ACTIVE", "LINK_UP", "ens1f0")


@pytest.mark.parametrize("text", ["", "\n", "[]", "[]\n"])
def test_rdma_link_no_devices(text: str) -> None:
    assert parse_rdma_link(text) == ()


@pytest.mark.parametrize(
    "text",
    [
        "Failed to open NETLINK_RDMA socket\n",
        "Wrong device name\n",
        '[{"ifindex":0,"ifname":"mlx5_0","port":1,"state":"ACT',  # truncated JSON
        '[{"ifindex":0,"port":1}]',  # no ifname
        '{"a": 1}',
        "[1, 2]",
        "link mlx5_0/1 state\n",  # key without value: truncated
        "\x00\x01binary",
    ],
)
def test_rdma_link_broken(text: str) -> None:
    with pytest.raises(ParseError):
        parse_rdma_link(text)


# ---------------------------------------------------------------- ibdev2netdev


@pytest.mark.parametrize(
    ("name", "up"),
    [("ibdev2netdev_spark_port1.txt", {"rocep1s0f1", "roceP2p1s0f1"}),
     ("ibdev2netdev_spark_port0.txt", {"rocep1s0f0", "roceP2p1s0f0"})],
)
def test_ibdev2netdev_spark_either_order(name: str, up: set[str]) -> None:
    entries = parse_ibdev2netdev(sample(name))
    assert len(entries) == 4
    assert {e.device for e in entries if e.link_state == "Up"} == up
    assert {e.device: e.netdev for e in entries}["roceP2p1s0f1"] == "enP2p1s0f1np1"
    assert all(e.pci_bdf is None and e.ib_state is None for e in entries)


def test_ibdev2netdev_verbose() -> None:
    entries = {e.device: e for e in parse_ibdev2netdev(sample("ibdev2netdev_v.txt"))}
    expected = Ibdev2NetdevEntry("roceP2p1s0f1", 1, "enP2p1s0f1np1", "Up", "0002:01:00.1", "ACTIVE")
    assert entries["roceP2p1s0f1"] == expected
    assert entries["rocep1s0f0"].ib_state == "DOWN"  # "%-6s" padding stripped
    assert entries["rocep1s0f0"].pci_bdf == "0000:01:00.0"


@pytest.mark.parametrize("text", ["", "mlx5_0 port 1 ==> \n", "hello\n", "mlx5_0 port x ==> eth0 (Up)\n"])
def test_ibdev2netdev_broken(text: str) -> None:
    with pytest.raises(ParseError):
        parse_ibdev2netdev(text)


# ---------------------------------------------------------------- ibv_devinfo


def test_ibv_devinfo_verbose_spark_rdma_core50() -> None:
    devices = {d.hca_id: d for d in parse_ibv_devinfo(sample("ibv_devinfo_v_spark_rdma_core50.txt"))}
    assert set(devices) == set(SPARK_PORT1)
    dev = devices["rocep1s0f1"]
    assert (dev.fw_ver, dev.vendor_part_id, dev.board_id) == ("28.45.4028", 4129, "NVD0000000087")
    assert dev.node_guid == "fc4c:ea03:00f9:4231" and dev.sys_image_guid == "fc4c:ea03:00f9:4230"
    (port,) = dev.ports
    assert (port.state, port.phys_state, port.link_layer) == ("PORT_ACTIVE", "LINK_UP", "Ethernet")
    assert (port.max_mtu_bytes, port.active_mtu_bytes, port.gid_tbl_len) == (4096, 4096, 255)
    # 2X (16) x 100.0 Gbps (128) per lane = 200 Gb/s per function
    assert (port.active_width_lanes, port.active_speed_gbps, port.rate_gbps) == (2, 100.0, 200.0)
    assert port.effective_speed_gbps is None
    assert [(g.index, g.roce_version) for g in port.gids] == [(0, 1), (1, 2), (2, 1), (3, 2)]
    # the compressed RoCE v2 spellings come back in sysfs long form
    assert port.gids[3].gid == "0000:0000:0000:0000:0000:ffff:c0a8:640a"
    assert port.gids[1].gid == port.gids[0].gid == "fe80:0000:0000:0000:fe4c:eaff:fef9:4231"
    down = devices["rocep1s0f0"].ports[0]
    assert (down.state, down.phys_state, down.active_mtu_bytes) == ("PORT_DOWN", "DISABLED", 1024)
    assert down.rate_gbps == 40.0


def test_ibv_devinfo_rdma_core28_invalid_speed_and_no_suffix() -> None:
    (dev,) = parse_ibv_devinfo(sample("ibv_devinfo_v_rdma_core28.txt"))
    (port,) = dev.ports
    # "invalid speed (128)": the code still says 100 Gb/s per lane
    assert (port.active_width_lanes, port.active_speed_gbps, port.rate_gbps) == (4, 100.0, 400.0)
    assert [g.roce_version for g in port.gids] == [None] * 4
    assert port.gids[2].gid == "0000:0000:0000:0000:0000:ffff:c0a8:6401"
    assert port.active_mtu_bytes == 1024


def test_ibv_devinfo_pasted_with_spaces() -> None:
    text = sample("ibv_devinfo_v_spark_rdma_core50.txt").replace("\t", "        ")
    assert parse_ibv_devinfo(text) == parse_ibv_devinfo(sample("ibv_devinfo_v_spark_rdma_core50.txt"))


@pytest.mark.parametrize(
    ("code", "lanes"), [("1X (1)", 1), ("4X (2)", 4), ("8X (4)", 8), ("12X (8)", 12), ("2X (16)", 2)]
)
def test_ibv_devinfo_width_codes(code: str, lanes: int) -> None:
    text = f"hca_id:\tmlx5_0\n\t\tport:\t1\n\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n\t\t\tactive_width:\t\t{code}"
    assert parse_ibv_devinfo(text)[0].ports[0].active_width_lanes == lanes


def test_ibv_devinfo_no_devices() -> None:
    assert parse_ibv_devinfo("No IB devices found\n") == ()


@pytest.mark.parametrize(
    "text",
    [
        "",
        "IB device 'mlx5_9' wasn't found\n",
        "Failed to get IB devices list: Function not implemented\n",
        "hca_id:\tmlx5_0\n\tphys_port_cnt:\t\t\t1\n",  # cut before the port block
        "hca_id:\tmlx5_0\n\t\tport:\t1\n",  # cut inside the port block
        "hca_id:\tmlx5_0\n\t\tport:\t1\n\t\t\tstate:\t\t\tPORT_ACTIVE (4)\nFailed to query port 2 props\n",
        "hca_id:\tmlx5_0\n\t\tport:\t1\n\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n\t\t\tGID[  0]:\t\tzz::zz\n",
        "2 HCAs found:\n\tmlx5_0\n\tmlx5_1\n",  # -l output
    ],
)
def test_ibv_devinfo_broken(text: str) -> None:
    with pytest.raises(ParseError):
        parse_ibv_devinfo(text)


# ---------------------------------------------------------------- ibstat


def test_ibstat_sdr_rate_and_empty() -> None:
    text = "CA 'mthca0'\n\tPort 1:\n\t\tState: Active\n\t\tPhysical state: LinkUp\n\t\tRate: 2.5\n"
    assert parse_ibstat(text)[0].ports[0].rate_gbps == 2.5
    assert parse_ibstat("") == ()


@pytest.mark.parametrize(
    "text",
    [
        "ibpanic: [1234] main: can't init UMAD library: No such file or directory\n",
        "CA 'mlx5_0'\n\tNumber of ports: 2\n\tPort 1:\n\t\tState: Active\n\t\tPhysical state: LinkUp\n",
        "CA 'mlx5_0'\n\tPort 1:\n\t\tState: Active\n",  # cut inside the port
        "random words\n",
    ],
)
def test_ibstat_broken(text: str) -> None:
    with pytest.raises(ParseError):
        parse_ibstat(text)


# ---------------------------------------------------------------- show_gids


def test_show_gids_spark_and_resolution() -> None:
    rows = parse_show_gids(sample("show_gids_spark.txt"))
    assert len(rows) == 12  # == n_gids_found
    assert resolve_roce_v2_ipv4_index(rows, "rocep1s0f1", 1, "enp1s0f1np1", "192.168.100.10") == 3
    assert resolve_roce_v2_ipv4_index(rows, "roceP2p1s0f1", 1, "enP2p1s0f1np1", "192.168.101.10") == 3
    assert resolve_roce_v2_ipv4_index(rows, "rocep1s0f0", 1, "enp1s0f0np0", "192.168.100.10") is None
    assert not any(e.empty for e in rows)


def test_show_gids_ls_order_sorted_numerically() -> None:
    rows = parse_show_gids(sample("show_gids_ls_order.txt"))
    assert [e.index for e in rows] == list(range(12))
    # IPv6 addresses pushed the IPv4 RoCE v2 entry from 3 to 11
    assert resolve_roce_v2_ipv4_index(rows, "rocep1s0f1", 1, "enp1s0f1np1", "192.168.100.10") == 11
    assert rows[3].roce_version == 2 and rows[3].ipv4 is None


def test_show_gids_pasted_with_spaces_sparse_table() -> None:
    rows = parse_show_gids(sample("show_gids_pasted_spaces.txt"))
    assert [(e.index, e.roce_version, e.ipv4) for e in rows] == [
        (6, 1, "11.0.4.1"), (7, 2, "11.0.4.1"), (8, 1, None), (9, 2, None)]
    assert holes(rows, "mlx5_0", 1) == (0, 1, 2, 3, 4, 5)
    assert resolve_roce_v2_ipv4_index(rows, "mlx5_0", 1, "net1", "11.0.4.1") == 7


def test_show_gids_header_only_is_empty() -> None:
    header = sample("show_gids_spark.txt").split("\n")[:2]
    assert parse_show_gids("\n".join(header) + "\nn_gids_found=0\n") == ()


@pytest.mark.parametrize(
    "text",
    [
        "",
        sample("show_gids_spark.txt").replace("n_gids_found=12", "n_gids_found=13"),  # truncated
        "mlx5_0\t1\t3\tnot-a-gid\t\t\tv2\teth0\n",
        "mlx5_0\t1\t2\t0000:0000:0000:0000:0000:ffff:c0a8:6401\t10.0.0.1  \tv1\teth0\n",  # IPv4 column lies
        "mlx5_0\t1\t2\tfe80::1\t\t\tv1\teth0\nmlx5_0\t1\t2\tfe80::1\t\t\tv1\teth0\n",  # duplicate
        "ls: cannot access '/sys/class/infiniband/': No such file or directory\n",
    ],
)
def test_show_gids_broken(text: str) -> None:
    with pytest.raises(ParseError):
        parse_show_gids(text)

"""perftest parser: every era's text, --output=bandwidth and JSON and errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from linkcheck.errors import ParseError
from linkcheck.parsers import get_parser
from linkcheck.parsers.perftest import (
    PerftestRow,
    PerftestVersion,
    parse_perftest,
    parse_perftest_version,
)

SAMPLES = Path(__file__).resolve().parents[1] / "samples" / "perftest"
MIB = 1048576 * 8 / 1e9  # one MiB/s (= perftest's "MB/sec") in Gb/s


def sample(name: str) -> str:
    return (SAMPLES / name).read_text()


# name: (format, test, role, device, unit, gid_index, rows, last bw_avg in Gb/s, errors, warnings)
CASES = {
    "server_v629_gbits.txt": ("text", "RDMA_Write BW Test", "server", "rocep1s0f1", "Gb/sec", 3, 1, 97.85, 0, 0),
    "client_v629_gbits.txt": ("text", "RDMA_Write BW Test", "client", "rocep1s0f1", "Gb/sec", 3, 1, 97.85, 0, 0),
    "client_v606_ib_mb.txt": ("text", "RDMA_Write BW Test", "client", "mlx5_0", "MB/sec", None, 1,
                              23540.87 * MIB, 0, 0),
    "client_v622_mib_cpufreq.txt": ("text", "RDMA_Write BW Test", "client", "roceP2p1s0f1", "MiB/sec", 3, 1,
                                    11689.05 * MIB, 0, 1),
    "client_v610_ro_warning.txt": ("text", "RDMA_Write BW Test", "client", "mlx5_1", "MB/sec", 3, 1,
                                   11648.91 * MIB, 0, 2),
    "client_v629_all_sizes.txt": ("text", "RDMA_Write BW Test", "client", "rocep1s0f1", "Gb/sec", 3, 23, 97.90, 0, 0),
    "client_v629_duration_cpu.txt": ("text", "RDMA_Write BW Test", "client", "rocep1s0f1", "Gb/sec", 3, 1, 97.84,
                                     0, 1),
    "client_v629_run_infinitely.txt": ("text", "RDMA_Write BW Test", "client", "rocep1s0f1", "Gb/sec", 3, 4, 97.92,
                                       0, 1),
    "server_v629_send_bw.txt": ("text", "Send BW Test", "server", "rocep1s0f1", "Gb/sec", 3, 1, 97.61, 0, 1),
    "client_v617_read_bw.txt": ("text", "RDMA_Read BW Test", "client", "mlx5_0", "MB/sec", 3, 1, 11612.70 * MIB,
                                0, 0),
    "client_v626_rdma_cm.txt": ("text", "RDMA_Write BW Test", "client", "rocep1s0f1", "Gb/sec", 3, 1, 97.90, 0, 0),
    "client_v629_wrong_gid.txt": ("text", "RDMA_Write BW Test", "client", "roceP2p1s0f1", "Gb/sec", 1, 0, None, 4, 0),
    "client_v626_retry_exceeded.txt": ("text", "RDMA_Write BW Test", "client", "rocep1s0f1", "Gb/sec", 3, 0, None,
                                       4, 0),
    "client_v620_refused.txt": ("text", None, None, None, None, None, 0, None, 3, 0),
    "client_v617_refused.txt": ("text", None, None, None, None, None, 0, None, 3, 0),
    "client_bad_device.txt": ("text", None, None, None, None, None, 0, None, 2, 0),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_text_samples(name: str) -> None:
    fmt, test, role, device, unit, gid_index, nrows, avg, nerr, nwarn = CASES[name]
    r = parse_perftest(sample(name))
    assert (r.format, r.test, r.role, r.device, r.unit, r.gid_index) == (fmt, test, role, device, unit, gid_index)
    assert len(r.rows) == nrows
    assert r.bw_avg_gbps == (None if avg is None else pytest.approx(avg))
    assert (len(r.errors), len(r.warnings)) == (nerr, nwarn)
    assert r.unit_inferred is False


def test_banner_fields_and_gids_roce() -> None:
    r = parse_perftest(sample("client_v629_gbits.txt"))
    assert (r.qps, r.connection_type, r.link_type, r.mtu_bytes, r.data_exchange) == (1, "RC", "Ethernet", 4096,
                                                                                      "Ethernet")
    assert r.local_gids == ("::ffff:192.168.100.16",)
    assert r.remote_gids == ("::ffff:192.168.100.15",)
    assert r.rows == (PerftestRow(65536, 5000, 98.12, 97.85, 0.186634),)


def test_server_sees_mirrored_gids() -> None:
    server, client = parse_perftest(sample("server_v629_gbits.txt")), parse_perftest(sample("client_v629_gbits.txt"))
    assert server.local_gids == client.remote_gids and server.remote_gids == client.local_gids
    assert server.rows == client.rows  # WRITE: the server prints the client's numbers


def test_mb_and_mib_are_the_same_unit() -> None:
    old = parse_perftest(sample("client_v606_ib_mb.txt").replace("MB/sec", "MiB/sec"))
    assert old.bw_avg_gbps == parse_perftest(sample("client_v606_ib_mb.txt")).bw_avg_gbps
    assert old.unit == "MiB/sec"


def test_all_sizes_mixes_six_decimal_rows() -> None:
    r = parse_perftest(sample("client_v629_all_sizes.txt"))
    assert [row.size_bytes for row in r.rows] == [1 << i for i in range(1, 24)]
    assert r.rows[0] == PerftestRow(2, 5000, 0.042405, 0.04224, 2.64)
    assert r.rows[2].bw_avg_gbps == pytest.approx(0.17)
    assert r.rows[-1].msg_rate_mpps == pytest.approx(0.001459)


def test_duration_mode_peak_zero_and_cpu_util() -> None:
    r = parse_perftest(sample("client_v629_duration_cpu.txt"))
    assert r.rows == (PerftestRow(65536, 1119872, 0.0, 97.84, 0.186615, 1.87),)
    assert r.warnings == ("WARNING: BW peak won't be measured in this run.",)


def test_refused_connection_same_errors_in_both_eras() -> None:
    new, old = parse_perftest(sample("client_v620_refused.txt")), parse_perftest(sample("client_v617_refused.txt"))
    assert new.errors == old.errors
    assert old.errors[-1] == "Unable to init the socket connection"


def test_cpu_frequency_line_is_a_warning_not_an_error() -> None:
    r = parse_perftest(sample("client_v622_mib_cpufreq.txt"))
    assert r.errors == () and r.warnings[0].startswith("Conflicting CPU frequency values detected")
    assert r.mtu_bytes == 4096  # the banner line after the interleaved stderr line still parsed


def test_stderr_glued_to_a_banner_line() -> None:
    text = sample("client_v629_gbits.txt").replace(
        " CQ Moderation   : 1\n",
        " CQ Moderation   : 1Conflicting CPU frequency values detected: 2975.351000 != 2000.000000."
        " CPU Frequency is not max.\n",
    )
    r = parse_perftest(text)
    assert len(r.warnings) == 1 and r.bw_avg_gbps == 97.85


@pytest.mark.parametrize("name", ["client_v629_gbits.txt", "client_v606_ib_mb.txt", "client_v629_all_sizes.txt"])
def test_tabs_expanded_and_crlf_give_the_same_record(name: str) -> None:
    text = sample(name)
    assert parse_perftest(text.expandtabs()) == parse_perftest(text)
    assert parse_perftest(text.replace("\n", "\r\n")) == parse_perftest(text)


@pytest.mark.parametrize(
    ("hint", "unit", "inferred", "avg"),
    [(None, "Gb/sec", True, 97.85), (True, "Gb/sec", False, 97.85), (False, "MiB/sec", False, 97.85 * MIB)],
)
def test_output_bandwidth(hint: bool | None, unit: str, inferred: bool, avg: float) -> None:
    r = parse_perftest(sample("client_output_bandwidth.txt"), report_gbits=hint)
    assert (r.format, r.unit, r.unit_inferred) == ("bandwidth-only", unit, inferred)
    assert r.bw_avg_gbps == pytest.approx(avg)
    assert r.warnings == ("WARNING: BW peak won't be measured in this run.",)


def test_output_bandwidth_takes_last_number_and_infers_mib() -> None:
    assert parse_perftest(sample("client_output_bandwidth_all.txt")).bw_avg_gbps == 97.91
    r = parse_perftest("11664.220000\n")
    assert (r.unit, r.unit_inferred) == ("MiB/sec", True)
    assert r.bw_avg_gbps == pytest.approx(11664.22 * MIB)


def test_json_current() -> None:
    r = parse_perftest(sample("client_v629_gbits.json"), report_gbits=True)
    assert (r.format, r.test, r.role, r.device, r.gid_index, r.mtu_bytes) == (
        "json", "RDMA_Write_BW_Test", "client", "rocep1s0f1", 3, 4096)
    assert (r.unit, r.unit_inferred) == ("Gb/sec", False)
    assert r.rows == (PerftestRow(65536, 5000, 98.12, 97.85, 0.186634),)


def test_json_unit_inferred_without_hint() -> None:
    gb = parse_perftest(sample("client_v629_gbits.json"))
    mib = parse_perftest(sample("client_v629_mib_cpu.json"))
    assert (gb.unit, gb.unit_inferred, gb.bw_avg_gbps) == ("Gb/sec", True, 97.85)
    assert (mib.unit, mib.unit_inferred) == ("MiB/sec", True)
    assert mib.rows[0].bw_avg_gbps == pytest.approx(11664.22 * MIB)
    assert (mib.rows[0].bw_peak_gbps, mib.rows[0].cpu_util_pct) == (0.0, 1.87)


def test_json_trailing_comma_from_output_bandwidth() -> None:
    r = parse_perftest(sample("client_v629_output_bandwidth.json"), report_gbits=True)
    assert r.bw_avg_gbps == 97.85 and r.format == "json"


def test_pre_2401_pseudo_json() -> None:
    r = parse_perftest(sample("client_v610_pseudo.json"), report_gbits=False)
    assert (r.test, r.device, r.role, r.gid_index, r.link_type) == (
        "RDMA_Write_BW_Test", "mlx5_0", "client", 3, "Ethernet")
    assert r.bw_avg_gbps == pytest.approx(11648.91 * MIB)
    assert r.warnings[0] == "CPU is not PCIe relaxed ordering compliant"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   \n\n",
        "\x00\x01binary",
        "hello world\nnothing to see\n",
        " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]\n 2 1000 1.02 4.87\n",
        " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n 65536 5000 97.8\n",
        " #bytes     #iterations    BW peak[KB/sec]    BW average[KB/sec]   MsgRate[Mpps]\n",
        " local address: LID 0000\n GID: 00:00:00:00:00:00:00:00:00:00:255:255:300:168:100:01\n",
        "[1, 2]",
        "{}",
        '{"results": {"MsgSize": 65536, "BW_average": "fast"}}',
        '{"results": {"MsgSize": 6.5, "n_iterations": 5, "BW_peak": 1, "BW_average": 1, "MsgRate": 1}}',
        "{\ntest_info: {\ntest: RDMA_Write_BW_Test,\n",
        "{ not json at all",
    ],
)
def test_broken_input_raises_parse_error(text: str) -> None:
    with pytest.raises(ParseError):
        parse_perftest(text)


@pytest.mark.parametrize(
    ("text", "version", "json_valid", "unit"),
    [
        ("Version: 5.96\n", "5.96", False, "MB/sec"),
        ("Version: 6.06\n", "6.06", False, "MB/sec"),
        ("Version: 6.17\n", "6.17", False, "MB/sec"),
        ("Version: 6.20\n", "6.20", True, "MB/sec"),
        ("Version: 6.21\n", "6.21", True, "MB/sec"),
        ("Version: 6.22\n", "6.22", True, "MiB/sec"),
        ("Version: 6.29\n", "6.29", True, "MiB/sec"),
    ],
)
def test_version(text: str, version: str, json_valid: bool, unit: str) -> None:
    assert parse_perftest_version(text) == PerftestVersion(version, json_valid, unit)


@pytest.mark.parametrize("text", ["", "ib_write_bw: command not found\n", "Version: unknown\n"])
def test_version_broken(text: str) -> None:
    with pytest.raises(ParseError):
        parse_perftest_version(text)


def test_registry_calls_with_one_argument() -> None:
    assert get_parser("ib_write_bw")(sample("client_v629_gbits.txt")).bw_avg_gbps == 97.85
    assert get_parser("perftest_version")("Version: 6.29\n").json_valid is True

"""nccl-tests output (every era, text and -J JSON) and NCCL_DEBUG=INFO logs."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from linkcheck.errors import ParseError
from linkcheck.parsers import get_parser
from linkcheck.parsers.nccl_log import NcclQpGid, parse_nccl_log
from linkcheck.parsers.nccl_tests import NcclTestRow, parse_nccl_tests

SAMPLES = Path(__file__).resolve().parents[1] / "samples" / "nccl"


def sample(name: str) -> str:
    return (SAMPLES / name).read_text()


SPARK = ("spark-a", "spark-b")
# name: (program, version, nccl_version, ranks, hosts, rows, avg busbw, out_of_bounds, completed, runs, errors)
CASES = {
    "all_gather_v2196_two_nodes.txt": ("all_gather_perf", "2.19.6", 22809, 2, SPARK, 4, 15.8081, 0, True, 1, 0),
    "all_gather_v2183_with_nccl_info.txt": ("all_gather_perf", "2.18.3", 22809, 2, SPARK, 4, 15.8081, 0, True, 1, 0),
    "all_reduce_v2133_legacy.txt": (None, None, None, 1, ("gpu-a",), 4, 0.0, 0, True, 1, 0),
    "all_reduce_v210_no_root.txt": (None, None, None, 2, ("gpu-a",), 2, 11.6281, 0, True, 1, 0),
    "all_reduce_v2167.txt": ("all_reduce_perf", None, None, 2, SPARK, 1, 22.71, 0, True, 1, 0),
    "all_reduce_v2176_corruption.txt": ("all_reduce_perf", "2.17.6", 22809, 2, SPARK, 1, 81.6, 1024, True, 1, 1),
    "all_gather_v2196_no_check.txt": ("all_gather_perf", "2.19.6", 22809, 2, SPARK, 4, 15.8081, 0, True, 1, 0),
    "all_gather_v2196_timestamps.txt": ("all_gather_perf", "2.19.6", 22809, 2, SPARK, 4, 15.8081, 0, True, 1, 0),
    "all_gather_v2196_per_iter.txt": ("all_gather_perf", "2.19.6", 22809, 2, SPARK, 4, 15.8081, 0, True, 1, 0),
    "all_gather_v2196_nccl_failure.txt": ("all_gather_perf", "2.19.6", 22809, 2, SPARK, 1, None, None, False, 1, 3),
    "all_gather_v2196_truncated.txt": ("all_gather_perf", "2.19.6", 22809, 2, SPARK, 2, None, None, False, 1, 0),
    "all_gather_v2196_no_mpi.txt": ("all_gather_perf", "2.19.6", 22809, 2, SPARK, 4, 0.0, 0, True, 2, 0),
    "all_reduce_v2196_last_error.txt": ("all_reduce_perf", "2.19.6", 22809, 2, SPARK, 1, 22.71, 0, True, 1, 1),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_text_samples(name: str) -> None:
    program, version, nccl, ranks, hosts, nrows, avg, oob, completed, runs, nerr = CASES[name]
    r = parse_nccl_tests(sample(name))
    assert (r.format, r.program, r.version, r.nccl_version) == ("text", program, version, nccl)
    assert (r.ranks, r.hosts, len(r.rows)) == (ranks, hosts, nrows)
    assert (r.avg_busbw_gbs, r.out_of_bounds, r.completed, r.independent_runs) == (avg, oob, completed, runs)
    assert len(r.errors) == nerr


TWO_NODE_FIRST = NcclTestRow(1048576, 131072, "float", "none", -1, 116.5, 9.0, 4.5, 0, 115.2, 9.1, 4.55, 0)
TWO_NODE_LAST = NcclTestRow(1073741824, 134217728, "float", "none", -1, 24403.1, 44.0, 22.0, 0, 24188.6, 44.39,
                            22.2, 0)


@pytest.mark.parametrize(
    "name",
    ["all_gather_v2196_two_nodes.txt", "all_gather_v2183_with_nccl_info.txt", "all_gather_v2196_timestamps.txt",
     "all_gather_v2196_per_iter.txt"],
)
def test_columns_found_in_every_layout(name: str) -> None:
    r = parse_nccl_tests(sample(name))
    assert (r.rows[0], r.rows[-1]) == (TWO_NODE_FIRST, TWO_NODE_LAST)
    assert (r.max_busbw_gbs, r.wrong_total) == (22.2, 0)


def test_legacy_v2133_one_space_header() -> None:
    r = parse_nccl_tests(sample("all_reduce_v2133_legacy.txt"))
    assert r.rows[0] == NcclTestRow(8, 2, "float", "sum", -1, 19.9, 0.0, 0.0, 0, 19.86, 0.0, 0.0, 0)
    assert r.rows[-1].oop_time_us == 11876.0 and r.max_busbw_gbs == 0.0  # one rank: busbw is always 0


def test_v210_has_no_root_and_an_error_column() -> None:
    r = parse_nccl_tests(sample("all_reduce_v210_no_root.txt"))
    assert r.rows[1] == NcclTestRow(1048576, 262144, "float", "sum", -1, 45.1, 23.25, 23.25, None, 45.1, 23.25,
                                    23.25, None)
    assert r.wrong_total == 0


def test_nccl_failure_keeps_rows_and_errors() -> None:
    r = parse_nccl_tests(sample("all_gather_v2196_nccl_failure.txt"))
    assert r.errors[0].startswith("spark-a: Test NCCL failure common.cu:1283 'remote process exited")
    assert r.rows == (TWO_NODE_FIRST,) and r.completed is False


def test_second_block_cut_off_is_not_complete() -> None:
    text = sample("all_gather_v2196_no_mpi.txt")
    cut = text.rindex("# Out of bounds")
    assert parse_nccl_tests(text[:cut]).completed is False


def test_last_error_line_and_min_bw_failure() -> None:
    assert parse_nccl_tests(sample("all_reduce_v2196_last_error.txt")).errors == (
        "# error: NET/IB : Got async event : GID table change",)
    text = sample("all_gather_v2196_two_nodes.txt").replace("15.8081 \n", "15.8081 FAILED\n")
    assert parse_nccl_tests(text).errors == ("Avg bus bandwidth    : 15.8081 FAILED",)


def test_trace_replay_row_has_only_in_place() -> None:
    text = sample("all_gather_v2196_two_nodes.txt").replace(
        "     1048576        131072     float    none      -1   116.50    9.00    4.50       0",
        "     1048576        131072     float    none      -1" + " " * 32)
    row = parse_nccl_tests(text).rows[0]
    assert (row.oop_time_us, row.oop_busbw_gbs, row.oop_wrong) == (None, None, None)
    assert (row.ip_time_us, row.ip_busbw_gbs, row.ip_wrong) == (115.2, 4.55, 0)


def test_malformed_row_in_complete_output_is_an_error() -> None:
    text = sample("all_gather_v2196_two_nodes.txt").replace("  9.00    4.50", "  9.00    #.##")
    with pytest.raises(ParseError) as info:
        parse_nccl_tests(text)
    assert info.value.line_no == 12


def test_cut_row_in_truncated_output_is_skipped() -> None:
    text = sample("all_gather_v2196_truncated.txt")
    r = parse_nccl_tests(text[: text.rindex("15.07")])
    assert (len(r.rows), r.completed) == (1, False)


def test_json_environment_is_not_kept() -> None:
    assert "do-not-keep-me" in sample("all_gather_v2196.json")
    assert "do-not-keep-me" not in repr(parse_nccl_tests(sample("all_gather_v2196.json")))


def test_json_cpu_time_null_nwrong_and_nan() -> None:
    r = parse_nccl_tests(sample("all_gather_v2196_nocheck_cputime.json"))
    assert r.rows[0].oop_time_us == 116.5
    assert math.isnan(r.rows[0].ip_algbw_gbs or 0.0)
    assert all(row.oop_wrong is None and row.ip_wrong is None for row in r.rows) and r.wrong_total == 0
    assert r.max_busbw_gbs == pytest.approx(22.2, abs=0.01)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\x00\x00",
        "nothing from nccl-tests here\n",
        "# Avg bus bandwidth    : fast \n",
        '{"version": 3, "results": [',
        "[1, 2, 3]",
        '{"version": 3}',
        '{"results": ["row"]}',
        '{"results": [{"size": 8, "count": 2, "root": "abc"}]}',
        '{"results": [{"size": 8, "count": 2, "root": "-1", "in_place": {"time": "slow"}}]}',
        '{"results": [{"size": 8, "count": 2, "root": "-1", "in_place": {"nwrong": "nan"}}]}',
        '{"results": [{"size": 8, "count": 2, "root": "-1", "out_of_place": [1]}]}',
    ],
)
def test_broken_nccl_tests_input(text: str) -> None:
    with pytest.raises(ParseError):
        parse_nccl_tests(text)


# --- NCCL debug logs ---


def test_spark_log_v2289() -> None:
    text = sample("log_v2289_spark_ib.txt")
    log = parse_nccl_log(text)
    assert (log.nccl_version, log.network, log.no_ib_device) == ("2.28.9", "IB", False)
    assert log.ib_devices == ("rocep1s0f1", "roceP2p1s0f1") and log.socket_devices == ()
    assert (log.channel_net_devs, log.channel_transports) == ((0, 1), ("IB",))
    assert log.env == {"NCCL_SOCKET_IFNAME": "enp1s0f1np1", "NCCL_IB_HCA": "rocep1s0f1,roceP2p1s0f1"}
    assert log.qp_gids == (NcclQpGid(0, 3, "192.168.100.16"), NcclQpGid(1, 0, None),
                           NcclQpGid(0, 3, "192.168.100.15"))
    assert log.warnings == ("NET/IB : rocep1s0f1:1 GID table changed",)
    assert log.hosts == SPARK and log.uses_socket is False
    assert log.lines_matched == len(re.findall(r"NCCL (?:INFO|WARN) ", text))
    # each rank's devices in NCCL's own order: NCCL connects them across ranks by this index
    assert log.ib_devices_by_host == (("spark-a", ("rocep1s0f1", "roceP2p1s0f1")),
                                      ("spark-b", ("rocep1s0f1", "roceP2p1s0f1")))


def test_v2215_tag_output_and_embedded_ece() -> None:
    log = parse_nccl_log(sample("log_v2215_tag_output.txt"))
    assert (log.nccl_version, log.ib_devices, log.hosts) == ("2.21.5", ("mlx5_2",), ("node0", "node1"))
    assert log.env_params == (("NCCL_IB_GID_INDEX", "3"), ("NCCL_IB_TIMEOUT", "22"))
    assert log.qp_gids == (NcclQpGid(0, 3, "172.30.0.25"), NcclQpGid(0, 3, "172.30.0.26"))
    assert log.channel_net_devs == (0,) and log.lines_matched == 16


def test_legacy_qp_lines_before_2_21() -> None:
    log = parse_nccl_log(sample("log_v2186_legacy_qp.txt"))
    assert log.qp_gids == (NcclQpGid(None, 3, "192.168.100.1"), NcclQpGid(None, 3, "192.168.200.1"))
    assert log.env["NCCL_IB_GID_INDEX"] == "3" and log.channel_net_devs == (0, 1)
    assert log.ib_devices == ("mlx5_0", "mlx5_1") and log.nccl_version == "2.18.6"


def test_head_format_and_timestamped_warn() -> None:
    log = parse_nccl_log(sample("log_head_retry_error.txt"))
    assert log.qp_gids == (NcclQpGid(0, 3, "192.168.100.1"),)  # the IB (LID) variant has no GID
    assert log.warnings[0].startswith("NET/IB: Got completion from peer 192.168.100.2<36411> with status=")
    assert log.nccl_version == "2.30.7"


@pytest.mark.parametrize(
    ("lines", "uses_socket"),
    [
        ("h:1:1 [0] NCCL INFO Using network IB\nh:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] via NET/Socket/0\n",
         True),
        ("h:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n", True),
        ("h:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n"
         "h:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE ; OOB eth0:10.0.0.1<0>\n", False),
        ("h:1:1 [0] NCCL INFO Using network IBext_v8\n"
         "h:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] via NET/IBext_v8/1\n", False),
    ],
)
def test_uses_socket(lines: str, uses_socket: bool) -> None:
    assert parse_nccl_log(lines).uses_socket is uses_socket


def test_merged_devices_and_rails() -> None:
    log = parse_nccl_log("h:1:1 [0] NCCL INFO NET/IB : Using [0]mlx5_0+mlx5_1:1/RoCE [1]mlx5_2:1:0/RoCE [RO]; OOB x\n")
    assert log.ib_devices == ("mlx5_0", "mlx5_1", "mlx5_2")


def test_ipv6_gid_has_no_ipv4() -> None:
    log = parse_nccl_log("h:1:2 [0] NCCL INFO NET/IB: NCCL Dev 0 IbDev 0 Port 1 qpn 9 mtu 5 GID 5 "
                         "(80DB0120/10000000000000) fifoRkey=0x1 fifoLkey=0x1\n")
    assert log.qp_gids == (NcclQpGid(0, 5, None),)


@pytest.mark.parametrize("text", ["", "\x00", sample("all_gather_v2196_two_nodes.txt"), "NCCL INFO without prefix\n"])
def test_no_nccl_lines(text: str) -> None:
    with pytest.raises(ParseError):
        parse_nccl_log(text)


def test_registry_calls_with_one_argument() -> None:
    assert get_parser("all_gather_perf")(sample("all_gather_v2196.json")).format == "json"
    assert get_parser("all_reduce_perf")(sample("all_reduce_v2167.txt")).rows[0].redop == "sum"
    assert get_parser("nccl_log")(sample("log_v2289_spark_ib.txt")).network == "IB"

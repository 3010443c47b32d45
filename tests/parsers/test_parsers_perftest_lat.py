"""perftest latency parser: the real GB10 paste, every column layout, histograms, errors, and refusals."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from linkcheck.errors import ParseError
from linkcheck.parsers import get_parser
from linkcheck.parsers.perftest_lat import parse_perftest_lat

SAMPLES = Path(__file__).resolve().parents[1] / "samples" / "perftest"


def sample(name: str) -> str:
    return (SAMPLES / name).read_text()


def test_real_gb10_write_lat_two_bytes() -> None:
    r = parse_perftest_lat(sample("real/write_lat_gb10_rdma_cm_spark_vllm_docker.txt"))
    assert (r.test, r.device, r.role, r.data_exchange) == ("RDMA_Write Latency Test", "rocep1s0f1", "client",
                                                          "rdma_cm")
    (row,) = r.rows
    assert (row.size_bytes, row.iterations, row.t_min_us, row.t_max_us, row.typical_us) == (2, 1000, 1.42, 1.93, 1.47)
    assert (row.t_avg_us, row.t_stdev_us, row.p99_us, row.p999_us) == (1.47, 0.0, 1.57, 1.93)


def test_real_read_lat_with_cpu_frequency_lines_inside_the_table() -> None:
    r = parse_perftest_lat(sample("real/read_lat_roce_cpufreq_spiderpool_excerpt.txt"))
    assert r.test == "RDMA_Read Latency Test" and r.gid_index == 12 and len(r.warnings) == 2
    assert r.rows[0].typical_us == 7.04 and r.rows[0].p999_us == 16.81


def test_decode_sized_message_client() -> None:
    r = parse_perftest_lat(sample("client_v629_write_lat_48k.txt"))
    assert r.row(49152) is not None and r.row(49152).typical_us == 8.80  # type: ignore[union-attr]
    assert r.row(2) is None and r.mtu_bytes == 4096 and r.gid_index == 3


def test_bandwidth_output_is_refused_with_where_to_go() -> None:
    with pytest.raises(ParseError, match="parse it as ib_write_bw"):
        parse_perftest_lat(sample("client_v629_gbits.txt"))


@pytest.mark.parametrize("bad", ["nan", "inf", "-1.0"])
def test_a_time_that_is_not_finite_or_negative_is_refused(bad: str) -> None:
    text = " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]\n 2  1000  1.4  1.9  X\n"
    with pytest.raises(ParseError, match="not a finite time"):
        parse_perftest_lat(text.replace("X", bad))


def test_truncated_row_is_refused_with_its_line() -> None:
    text = " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]\n 2\n"
    with pytest.raises(ParseError) as err:
        parse_perftest_lat(text)
    assert err.value.line_no == 2


def test_registered_as_a_parse_kind() -> None:
    assert get_parser("ib_write_lat") is parse_perftest_lat


@given(st.floats(min_value=0, max_value=1e6, allow_nan=False), st.integers(1, 1 << 30))
def test_any_printed_time_reads_back(value: float, size: int) -> None:
    text = (" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]\n"
            f" {size}       1000          {value:.2f}           {value:.2f}         {value:.2f}      {value:.2f}\n")
    (row,) = parse_perftest_lat(text).rows
    assert row.size_bytes == size and row.typical_us == float(f"{value:.2f}")

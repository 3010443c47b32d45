"""Integers from users and nodes at the edge: digits of other scripts (`²` passes str.isdigit(), `٣` passes int()),
numbers of thousands of digits (int() refuses 4300+), signs, blanks and underscores. Every one is refused with one
line naming what and where (exit 4), or read as the ASCII number it is; none ends in an internal error."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from linkcheck.cluster.hostlist import HostRangeError, expand_ansible_pattern, expand_hostlist
from linkcheck.cluster.hosts import parse_hostfile, parse_node_values, parse_slurm_nodelist
from linkcheck.cluster.inventory import parse_inventory
from linkcheck.errors import ConfigError, UsageError
from linkcheck.integers import NumberError, bounded_decimal, bounded_int
from linkcheck.parsers.lldp import parse_lldpctl_json
from linkcheck.yamlfile import load_with_lines
from tests.adversarial.adversarial_helpers import HEALTHY, copy_healthy, one_line_error, rewrite_capture, run

HUGE = "9" * 5000
# Characters that str.isdigit() or int() take and that are no ASCII digit.
NOT_ASCII = ["²", "³", "¹", "٣", "۳", "३", "߃", "０", "𝟑", "①"]
DIGITISH = st.characters(categories=("Nd", "No")).filter(lambda c: not ("0" <= c <= "9"))


@pytest.mark.parametrize("text", ["22", "0022", "65535", "1"])
def test_ascii_numbers_in_range_are_read(text: str) -> None:
    assert bounded_int(text, 1, 65535, "port") == int(text)


@pytest.mark.parametrize("text", [*NOT_ASCII, HUGE, "1_000", " 22", "22 ", "+22", "-22", "", "0x16", "2²", "22\n",
                                  "0" * 5000 + "70000", "65536", "0"])
def test_anything_else_is_a_number_error_saying_so_in_one_short_line(text: str) -> None:
    with pytest.raises(NumberError) as caught:
        bounded_int(text, 1, 65535, "port")
    message = str(caught.value)
    assert "\n" not in message and len(message) < 200, message


@given(st.text(DIGITISH, min_size=1, max_size=8))
def test_no_unicode_digit_is_taken_for_a_number(text: str) -> None:
    with pytest.raises(NumberError):
        bounded_int(text, 0, 10**9, "n")


@given(st.integers(min_value=-(10**6), max_value=10**6), st.integers(min_value=0, max_value=4000))
def test_a_signed_range_reads_what_int_reads_and_nothing_else(value: int, zeros: int) -> None:
    text = ("-" if value < 0 else "") + "0" * zeros + str(abs(value))
    assert bounded_int(text, -(10**6), 10**6) == value


@pytest.mark.parametrize("text", ["nan", "inf", "-inf", "1e400", "١", "1_0", "", "0x1", "infinity", "9" * 400])
def test_decimals_are_finite_ascii_and_in_range(text: str) -> None:
    with pytest.raises(NumberError):
        bounded_decimal(text, 0, 65536)


@pytest.mark.parametrize("digit", NOT_ASCII)
def test_a_hostfile_slot_count_of_another_script_is_refused_at_its_line(digit: str) -> None:
    with pytest.raises(ConfigError, match="slots=") as caught:
        parse_hostfile(f"s1\ns2 slots={digit}\n", "hosts")
    assert caught.value.line == 2


@pytest.mark.parametrize("count", [HUGE, "1025", "0", "-1"])
def test_a_hostfile_slot_count_out_of_range_is_refused(count: str) -> None:
    with pytest.raises(ConfigError, match="at least 1 and at most 1024"):
        parse_hostfile(f"s1 max_slots={count}\ns2\n", "hosts")


def test_slot_counts_added_over_lines_stay_in_range() -> None:
    with pytest.raises(ConfigError, match="more than 1024"):
        parse_hostfile("s1 slots=1000\ns1 slots=1000\ns2\n", "hosts")


@pytest.mark.parametrize("port", [*NOT_ASCII[:4], HUGE, "65536", "0", "1_0"])
def test_a_node_port_of_any_hostile_spelling_is_refused(port: str) -> None:
    with pytest.raises(ConfigError, match="bad port"):
        parse_node_values([f"a=198.18.0.1:{port}", "b=198.18.0.2"])


@pytest.mark.parametrize("inventory", [
    "[g]\ns1 ansible_port={p}\ns2\n", "[g]\ns1:{p}\ns2\n", "[g]\n[fd00::1]:{p}\ns2\n",
    "all:\n  hosts:\n    s1:\n      ansible_port: {p}\n    s2:\n", "[g:vars]\nansible_port={p}\n[g]\ns1\n",
])
@pytest.mark.parametrize("port", ["²", "٣٣", HUGE, "99999", "0"])
def test_an_inventory_port_of_any_hostile_spelling_is_refused(inventory: str, port: str) -> None:
    with pytest.raises(ConfigError, match="port") as caught:
        parse_inventory(inventory.replace("{p}", port), "inv")
    assert caught.value.line is not None and len(str(caught.value)) < 300


@pytest.mark.parametrize("nodelist", [f"n[0-{HUGE}]", f"n[{HUGE}]", "n[²-3]", "n[1-٣]", "n[0-99999999999]",
                                      f"n[{'0' * 5000}1-2]"])
def test_a_slurm_nodelist_of_hostile_numbers_is_refused(nodelist: str) -> None:
    with pytest.raises(ConfigError):
        parse_slurm_nodelist(nodelist)


@pytest.mark.parametrize("pattern", [f"n[0:{HUGE}]", f"n[1:3:{HUGE}]", "n[1:²]", "n[0:99999999999]",
                                     f"n[{'0' * 5000}1:2]"])
def test_an_inventory_range_of_hostile_numbers_is_refused(pattern: str) -> None:
    with pytest.raises(HostRangeError):
        expand_ansible_pattern(pattern)
    with pytest.raises(ConfigError):
        parse_inventory(f"[g]\n{pattern}\n", "inv")


@given(st.integers(min_value=0, max_value=10**12), st.integers(min_value=0, max_value=10**12))
@settings(max_examples=50)
def test_slurm_ranges_expand_or_refuse_never_crash(lo: int, hi: int) -> None:
    try:
        names = expand_hostlist(f"n[{lo}-{hi}]")
    except HostRangeError:
        return
    assert len(names) == hi - lo + 1 <= 1024


@pytest.mark.parametrize("ttl", ["65536", "99999", "²", "١٢٠", HUGE, "-1"])
def test_an_lldp_ttl_is_sixteen_bits(ttl: str) -> None:
    from linkcheck.errors import ParseError

    with pytest.raises(ParseError, match="ttl"):
        parse_lldpctl_json('{"lldp": {"interface": {"eth0": {"port": {"ttl": "' + ttl + '"}}}}}')


def test_the_largest_lldp_ttl_is_read() -> None:
    text = '{"lldp": {"interface": {"eth0": {"port": {"ttl": "65535"}}}}}'
    assert parse_lldpctl_json(text).neighbours[0].ttl == 65535


def test_a_yaml_integer_of_thousands_of_digits_stays_text() -> None:
    assert load_with_lines(f"n: {HUGE}\n")["n"] == HUGE
    assert load_with_lines("n: 1:2:3\n")["n"] == 3723


@pytest.mark.parametrize(("option", "value"), [
    ("--context", "²"), ("--context", HUGE), ("--context", "١٢"), ("--context", "1_000"), ("--context", "10000001"),
    ("--layers", "1025"), ("--layers", HUGE), ("--concurrency", HUGE), ("--concurrency", "65537"),
    ("--model-gib", "1e400"), ("--model-gib", "٣"), ("--model-gib", "65537"), ("--kv-kib-per-token", "1e99"),
    ("--active-gib", "nan"),
])
def test_advise_numbers_out_of_their_range_are_one_line(option: str, value: str) -> None:
    args = {"--model-gib": "10", "--concurrency": "1", option: value}
    proc = run("advise", str(HEALTHY), *(x for pair in args.items() for x in pair))
    line = one_line_error(proc, 4, option.lstrip("-").split("-")[0])
    assert len(line) < 300


@pytest.mark.parametrize(("key", "value"), [("concurrency", HUGE), ("context_tokens", HUGE), ("layers", "99999"),
                                            ("concurrency", "100000"), ("model_gib", "1.0e400"),
                                            ("kv_kib_per_token", ".inf")])
def test_a_workload_file_out_of_range_is_one_line(tmp_path: Path, key: str, value: str) -> None:
    from linkcheck.app.advise import load_workload
    from linkcheck.errors import LinkcheckError

    base = {"model_gib": "10", "concurrency": "1", key: value}
    (tmp_path / "w.yaml").write_text("".join(f"{k}: {v}\n" for k, v in base.items()), encoding="utf-8")
    with pytest.raises((UsageError, LinkcheckError)) as caught:
        load_workload(tmp_path / "w.yaml")
    assert len(str(caught.value)) < 300 and "\n" not in str(caught.value)


@pytest.mark.parametrize(("option", "value"), [("--duration", "²"), ("--duration", HUGE), ("--qps", "١"),
                                               ("--size", "1_024"), ("--port-base", "65001")])
def test_live_options_take_ascii_numbers_in_range_before_any_node_is_reached(option: str, value: str) -> None:
    proc = run("check", "--bench", option, value, "--node", "a=198.18.0.1", "--node", "b=198.18.0.2")
    one_line_error(proc, 4, option)


def test_every_script_digit_is_refused_by_the_port_parser() -> None:
    digits = [chr(c) for c in range(0x80, 0x20000) if chr(c).isdigit() or unicodedata.category(chr(c)) == "Nd"]
    assert len(digits) > 500
    for digit in digits:
        with pytest.raises(NumberError):
            bounded_int(f"2{digit}", 1, 65535, "port")


@pytest.mark.parametrize(("spec", "text"), [
    ("meminfo", f"MemTotal:       {HUGE} kB\nMemAvailable:   24684092 kB\n"),
    ("meminfo", "MemTotal:       ٢٤٦٨ kB\n"),
    ("nccl_install", f"lib /usr/lib/aarch64-linux-gnu/libnccl.so.2.{HUGE}.1\n"),
    ("lspci", (HEALTHY / "a" / "lspci.stdout").read_text(encoding="utf-8").replace("Width x4", f"Width x{HUGE}", 1)),
    ("ethtool", (HEALTHY / "a" / "ethtool.enp1s0f0np0.stdout").read_text(encoding="utf-8").replace(
        "Speed: Unknown!", f"Speed: {HUGE}Mb/s", 1)),
])
def test_a_nodes_number_of_thousands_of_digits_is_no_internal_error(tmp_path: Path, spec: str, text: str) -> None:
    """A node's text that int() cannot take (4,300 digits and more, digits of other scripts) is read as no number:
    the fact is unknown or its capture refused, the bundle is judged, never an internal error (exit 70)."""
    bundle = copy_healthy(tmp_path)
    rewrite_capture(bundle, "a", spec, text.encode())
    done = run("diagnose", str(bundle), timeout=60)
    assert done.returncode in (0, 1, 2, 3) and "internal error" not in done.stderr, done.stderr[-300:]

"""Tests for parse_ethtool_fec: `ethtool --show-fec` in both text prompts, with statistics, and as --json.

Expected values were read from the samples by eye (tests/samples/ethtool/real/PROVENANCE.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from linkcheck.errors import ParseError
from linkcheck.parsers import PARSERS
from linkcheck.parsers.ethtool import FecStatistic, parse_ethtool_fec

if TYPE_CHECKING:
    from tests.conftest import InProcessCli

REAL = Path(__file__).resolve().parents[1] / "samples" / "ethtool" / "real"


def real(name: str) -> str:
    return (REAL / name).read_text()


def test_real_legacy_prompt_with_lane_statistics() -> None:
    fec = parse_ethtool_fec(real("fec_stats_lanes_legacy_prompt_netdev2021.txt"))
    assert fec.form == "text-legacy" and fec.ifname == "eth0"
    assert (fec.configured, fec.active) == (("None",), ("None",))
    assert fec.statistics == (FecStatistic("corrected_blocks", 256, (255, 1)),
                              FecStatistic("uncorrectable_blocks", 145, (128, 17)))
    assert (fec.corrected_blocks, fec.uncorrectable_blocks) == (256, 145)


def test_real_json_with_lane_statistics_matches_its_text() -> None:
    js = parse_ethtool_fec(real("fec_stats_lanes_netdev2021.json"))
    text = parse_ethtool_fec(real("fec_stats_lanes_legacy_prompt_netdev2021.txt"))
    assert js.form == "json"
    assert (js.ifname, js.configured, js.active, js.statistics) == (
        text.ifname, text.configured, text.active, text.statistics)


def test_real_error_histogram_text_and_json() -> None:
    text = parse_ethtool_fec(real("fec_hist_netdev2025.txt"))
    assert text.ifname == "eni8np1" and text.form == "text"
    assert [(s.name, s.total, s.lanes) for s in text.statistics] == [
        ("corrected_blocks", 123, ()), ("uncorrectable_blocks", 4, ()),
        ("fec_bit_err_0", 445, (125, 120, 100, 100)), ("fec_bit_err_1_to_3", 12, ()), ("fec_bit_err_4_to_7", 2, ())]
    js = parse_ethtool_fec(real("fec_hist_netdev2025.json"))
    assert js.statistics == text.statistics and js.active == ("None",)


@pytest.mark.parametrize(("active", "want"), [("RS", ("RS",)), ("None", ("None",)), ("Off", ("Off",)),
                                               ("BaseR", ("BaseR",)), ("LLRS", ("LLRS",)), ("BIT73", ("BIT73",)),
                                               ("", ())])
def test_every_active_encoding(active: str, want: tuple[str, ...]) -> None:
    # netlink prints " %s" per mode; the ioctl path prints nothing when the driver reports no mode
    text = "FEC parameters for enp1s0f1np1:\nConfigured FEC encodings: Auto Off RS\nActive FEC encoding:" + (
        f" {active}" if active else "") + "\n"
    fec = parse_ethtool_fec(text)
    assert fec.active == want and fec.configured == ("Auto", "Off", "RS")


def test_json_without_statistics_and_as_a_bare_object() -> None:
    doc = '[ {\n        "ifname": "enp1s0f1np1",\n        "config": [ "Auto" ],\n        "active": [ "RS" ]\n    } ]\n'
    fec = parse_ethtool_fec(doc)
    assert (fec.ifname, fec.configured, fec.active, fec.statistics) == ("enp1s0f1np1", ("Auto",), ("RS",), ())
    assert parse_ethtool_fec('{"ifname": "x", "config": [], "active": ["Off"]}').active == ("Off",)


@pytest.mark.parametrize(("text", "reason"), [
    ("netlink error: Operation not supported\n", "Operation not supported"),
    ("Cannot get FEC settings: Operation not supported\n", "Cannot get FEC settings: Operation not supported"),
    ("FEC parameters for eth0:\nSupported/Configured FEC encodings: Auto\n", "truncated"),
    ("FEC parameters for eth0:\nActive FEC encoding: RS\n", "truncated"),
    ("FEC parameters for a:\nConfigured FEC encodings: RS\nActive FEC encoding: RS\n"
     "FEC parameters for b:\n", "more than one device"),
    ("FEC parameters for eth0:\nConfigured FEC encodings: RS\nActive FEC encoding: R$S\n", "unexpected FEC encoding"),
    ("FEC parameters for eth0:\nConfigured FEC encodings: RS\nActive FEC encoding: RS\ngarbage here\n",
     "unexpected line"),
    ('[{"ifname": "eth0", "config": ["RS"]}]', "without 'config' and 'active'"),
    ('[{"ifname": "eth0", "config": ["RS"], "active": [1]}]', "not a list of FEC encodings"),
    ('[{"ifname": "e", "config": [], "active": [], "statistics": {"corrected_blocks": {"total": -1}}}]',
     "not a count"),
    ("[{", "invalid JSON"),
    ("[]", "not one device"),
    ("", "empty output"),
])
def test_errors_are_parse_errors_with_the_reason(text: str, reason: str) -> None:
    with pytest.raises(ParseError) as exc:
        parse_ethtool_fec(text)
    assert reason in exc.value.reason


def test_registered_and_listed_by_the_cli(cli: InProcessCli) -> None:
    assert PARSERS["ethtool_fec"][0] == "ethtool:parse_ethtool_fec"
    out = cli("parse", "--help", timeout=60).stdout
    assert "ethtool_fec" in out


def test_cli_parses_a_real_sample_as_json(cli: InProcessCli) -> None:
    import json

    proc = cli("parse", "ethtool_fec", str(REAL / "fec_stats_lanes_netdev2021.json"), "--format", "json",
               timeout=60)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)["record"]
    assert doc["active"] == ["None"] and doc["statistics"][0]["lanes"] == [255, 1]

"""Non-finite numbers (a perftest rate of `nan` or `inf`) never pass: the run is inconclusive and named, the JSON
report stays RFC 8259 JSON, the Prometheus file stays valid, and a baseline one could not divide by is refused."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec.structs import replace
from prometheus_client.parser import text_string_to_metric_families

from linkcheck.app.offline import Outcome, diagnose_bundle
from linkcheck.diagnose.conditions import UnknownFact, _decide
from linkcheck.errors import ParseError
from linkcheck.facts.drift import Ratio
from linkcheck.facts.snapshot_model import Performance
from linkcheck.parsers.perftest import parse_perftest
from linkcheck.report.json_report import render_json
from linkcheck.report.prometheus import render_prometheus
from linkcheck.strict_json import dumps, finite_only
from tests.adversarial.adversarial_helpers import (
    HEALTHY,
    ROOT,
    copy_healthy,
    manifest,
    one_line_error,
    reseal,
    run,
)

NON_FINITE = ["nan", "-nan", "NaN", "inf", "-inf", "Inf", "infinity", "9" * 400]
HEADER = " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
ROW = " 1048576    78170            {peak}               {avg} \t\t     {rate}\n"


def _row(peak: str = "0.00", avg: str = "109.29", rate: str = "0.013028") -> str:
    return HEADER + ROW.format(peak=peak, avg=avg, rate=rate)


def _strict_loads(text: str) -> Any:
    def refuse(name: str) -> None:
        raise AssertionError(f"{name} in JSON output")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("value", NON_FINITE)
@pytest.mark.parametrize("column", ["peak", "avg", "rate"])
def test_text_row_with_a_non_finite_figure_is_refused(value: str, column: str) -> None:
    with pytest.raises(ParseError, match="not a finite rate"):
        parse_perftest(_row(**{column: value}))


@pytest.mark.parametrize("value", ["-1.00", "-0.5"])
def test_negative_rate_is_refused(value: str) -> None:
    with pytest.raises(ParseError, match="not a finite rate"):
        parse_perftest(_row(avg=value))


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e999", "-1"])
def test_json_output_with_a_non_finite_rate_is_refused(literal: str) -> None:
    text = ('{"test_info": {"test": "RDMA_Write BW Test"}, "results": {"MsgSize": 1048576, "n_iterations": 5000, '
            f'"BW_peak": 100.0, "BW_average": {literal}, "MsgRate": 0.01}}}}')
    with pytest.raises(ParseError, match="BW_average"):
        parse_perftest(text, report_gbits=True)


@pytest.mark.parametrize("literal", ["nan", "-nan", "inf"])
def test_pseudo_json_with_a_non_finite_rate_is_refused(literal: str) -> None:
    text = f'{{\n"test_info": {{\ntest: "RDMA_Write BW Test",\n}},\n"results": {{\nbw_avg: {literal},\n}}\n}}\n'
    with pytest.raises(ParseError, match="not a finite rate"):
        parse_perftest(text, report_gbits=True)


def test_bandwidth_only_output_too_large_for_a_float_is_refused() -> None:
    with pytest.raises(ParseError, match="not a finite rate"):
        parse_perftest("9" * 400 + "\n", report_gbits=True)


@settings(max_examples=200, deadline=None)
@given(st.floats(allow_nan=True, allow_infinity=True), st.floats(allow_nan=True, allow_infinity=True))
def test_any_parsed_rate_is_finite(peak: float, avg: float) -> None:
    """Whatever numbers a row holds, a parsed row's figures are finite and not negative."""
    try:
        result = parse_perftest(_row(peak=repr(peak).replace("e", "E"), avg=str(avg)))
    except ParseError:
        return
    for row in result.rows:
        assert all(math.isfinite(v) and v >= 0 for v in (row.bw_peak_gbps, row.bw_avg_gbps, row.msg_rate_mpps))


def _bundle_with_rate(tmp_path: Path, value: str) -> Path:
    bundle = copy_healthy(tmp_path)
    data = manifest(bundle)
    captures = data["captures"]
    assert isinstance(captures, list)
    cap = next(c for c in captures if c.get("meta", {}).get("kind") == "rdma" and c["meta"]["role"] == "client"
               and c["meta"]["direction"] == "a->b" and c["meta"]["mode"] == "alone")
    text = (bundle / cap["stdout"]).read_text().replace("109.29", value)
    (bundle / cap["stdout"]).write_text(text)
    files = data["files"]
    assert isinstance(files, dict)
    files[cap["stdout"]] = hashlib.sha256(text.encode()).hexdigest()
    reseal(bundle, data)
    return bundle


@pytest.mark.parametrize("value", ["nan", "inf", "-nan", "1" * 400])
def test_a_non_finite_rate_makes_the_run_inconclusive_naming_it(tmp_path: Path, value: str) -> None:
    bundle = _bundle_with_rate(tmp_path, value)
    proc = run("diagnose", str(bundle), "-f", "json")
    assert proc.returncode == 3, proc.stderr
    doc = _strict_loads(proc.stdout)
    assert doc["verdict"] == "inconclusive"
    skipped = [f["skip_reason"] for f in doc["findings"] if f["status"] == "skip" and f["skip_reason"]]
    assert any("ib_write_bw alone a->b (client a, rocep1s0f1)" in why and "not a finite rate" in why
               for why in skipped), skipped
    console = run("diagnose", str(bundle))
    assert console.returncode == 3 and "Traceback" not in console.stderr
    for fmt in ("markdown", "html", "junit", "prometheus"):
        out = run("report", str(bundle), "-f", fmt)
        assert out.returncode == 3 and "Traceback" not in out.stderr, (fmt, out.stderr)


def _with_rates(outcome: Outcome, value: float) -> Outcome:
    link = outcome.link
    runs = tuple(replace(r, gbps=value) for r in link.bench.rdma)
    nccl = replace(link.bench.nccl, busbw_gbs=value) if link.bench.nccl is not None else None
    odd = replace(outcome, link=replace(link, bench=replace(link.bench, rdma=runs, nccl=nccl)))
    assert isinstance(odd, Outcome)
    return odd


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_json_report_is_strict_with_a_note(value: float) -> None:
    odd = _with_rates(diagnose_bundle(HEALTHY), value)
    doc = _strict_loads(render_json(odd))
    assert all(r["gbps"] is None for r in doc["bench"]["rdma"])
    assert any(n.startswith("bench.rdma[0].gbps: not a finite number") for n in doc["notes"])


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_prometheus_never_crashes_on_non_finite_values(value: float) -> None:
    text = render_prometheus(_with_rates(diagnose_bundle(HEALTHY), value))
    families = {f.name: f for f in text_string_to_metric_families(text)}
    rdma = families["linkcheck_rdma_bandwidth_bytes_per_second"].samples
    assert rdma and all(math.isnan(s.value) if math.isnan(value) else s.value == value for s in rdma)
    for line in text.splitlines():
        if not line.startswith("#"):
            assert line.rsplit(" ", 1)[1] in ("NaN", "+Inf", "-Inf") or float(line.rsplit(" ", 1)[1]) == float(
                line.rsplit(" ", 1)[1])


def test_strict_dumps_maps_non_finite_to_null() -> None:
    data = {"a": [1.0, math.nan, {"b": math.inf}], "c": (-math.inf,), "d": "nan"}
    assert _strict_loads(dumps(data)) == {"a": [1.0, None, {"b": None}], "c": [None], "d": "nan"}
    assert finite_only(data)[1] == ["a[1]", "a[2].b", "c[0]"]


def test_parse_command_output_is_strict_json() -> None:
    """nccl-tests prints `nan` bus bandwidths (its sample is kept as NaN); `parse -f json` writes them as null."""
    sample = (ROOT / "tests" / "samples" / "nccl" / "all_gather_v2183_with_nccl_info.txt").read_text()
    text = sample.replace("   4.50       0", "    nan       0", 1).replace("   4.55       0", "    inf       0", 1)
    assert text != sample
    proc = run("parse", "all_gather_perf", "-", "-f", "json", stdin=text.encode())
    assert proc.returncode == 0, proc.stderr
    doc = _strict_loads(proc.stdout)
    assert doc["record"]["rows"][0]["oop_busbw_gbs"] is None


@pytest.mark.parametrize("value", ["nan", "inf"])
def test_parse_command_refuses_a_non_finite_rate(value: str) -> None:
    one_line_error(run("parse", "ib_write_bw", "-", stdin=_row(avg=value).encode()), 4, "not a finite rate")


def _baseline_file(tmp_path: Path, where: str, literal: str) -> Path:
    text = (ROOT / "fixtures" / "drift-after-reboot" / "baseline.json").read_text()
    data = json.loads(text)
    perf = data["performance"]
    if where == "rdma":
        key = next(iter(perf["rdma_gbps"]))
        perf["rdma_gbps"][key] = "@@"
    elif where == "total":
        perf["concurrent_total_gbps"]["a->b"] = "@@"
    else:
        perf["nccl_busbw_gbs"] = "@@"
    path = tmp_path / "base.json"
    path.write_text(json.dumps(data).replace('"@@"', literal))
    return path


@pytest.mark.parametrize("literal", ["0", "0.0", "-5", "NaN", "Infinity", "-Infinity", "1e999", "1" + "0" * 400,
                                     "1e-320"])
@pytest.mark.parametrize("where", ["rdma", "total", "nccl"])
def test_baseline_rate_that_breaks_a_ratio_is_refused(tmp_path: Path, where: str, literal: str) -> None:
    path = _baseline_file(tmp_path, where, literal)
    line = one_line_error(run("diagnose", str(ROOT / "fixtures" / "drift-after-reboot"), "--baseline", str(path)),
                          4, str(path), "a rate must be a finite number")
    assert "Traceback" not in line


def test_a_sane_baseline_still_loads(tmp_path: Path) -> None:
    path = _baseline_file(tmp_path, "nccl", "23.79")
    proc = run("diagnose", str(ROOT / "fixtures" / "drift-after-reboot"), "--baseline", str(path), "-q")
    assert proc.returncode in (0, 1, 2), proc.stderr


@pytest.mark.parametrize(("base", "now"), [(100.0, math.nan), (100.0, math.inf), (0.0, 50.0), (math.nan, 50.0),
                                           (math.inf, 50.0), (-1.0, 50.0), (5e-324, 100.0), (100.0, -1.0)])
def test_ratio_is_none_rather_than_non_finite(base: float, now: float) -> None:
    assert Ratio("s", "rdma", base, now).ratio is None


def test_a_saved_baseline_keeps_only_usable_rates() -> None:
    perf = Performance(rdma_gbps={"x": 0.0, "y": 100.0}, concurrent_total_gbps={"a->b": math.nan},
                       nccl_busbw_gbs=math.inf, rdma_parameters={"qps": "1"}, nccl_parameters={"gpus": "1"})
    kept = perf.usable()
    assert kept.rdma_gbps == {"y": 100.0} and kept.concurrent_total_gbps == {} and kept.nccl_busbw_gbs is None
    assert kept.nccl_parameters == {} and kept.rdma_parameters == {"qps": "1"}


@pytest.mark.parametrize("op", ["lt", "le", "gt", "ge"])
@pytest.mark.parametrize("actual", [math.nan, math.inf, "nan", "inf"])
def test_a_non_finite_fact_is_unknown_not_passed(op: str, actual: object) -> None:
    with pytest.raises(UnknownFact):
        _decide(op, "bench.gbps", actual, 100)
    with pytest.raises(UnknownFact):
        _decide("between", "bench.gbps", actual, [1, 2])


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf"])
def test_non_finite_threshold_override_is_refused(tmp_path: Path, value: str) -> None:
    """A NaN threshold in linkcheck.yaml compared false with everything, so its rule passed whatever it met:
    refused at load, exit 4, with the place named."""
    config = tmp_path / "linkcheck.yaml"
    config.write_text(f"thresholds: {{LINK_BELOW_NOMINAL: {{nominal_min_gbps: {value}}}}}\n", encoding="utf-8")
    one_line_error(run("diagnose", str(HEALTHY), "-c", str(config)), 4, "nominal_min_gbps", "finite")

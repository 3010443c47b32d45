"""A bundle with an acceptance record: JUnit has one testcase per check, Prometheus a status and a margin series per
check, HTML the acceptance first on the page."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from linkcheck.app.offline import diagnose_bundle
from linkcheck.bundle.acceptance import write_acceptance
from linkcheck.report.formats import renderer
from tests.accept.test_accept import GOOD, _accept, _repeated

ROOT = Path(__file__).resolve().parents[2]
SLOW = ("alone.a->b.rocep1s0f1", 1)  # one repetition of one path alone below the 92 Gb/s floor


@pytest.fixture(scope="module")
def accepted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:  # type: ignore[type-arg]
    bundle = _repeated(tmp_path_factory.mktemp("accepted"), {SLOW: 80.0})
    _, doc = _accept(bundle)
    write_acceptance(bundle, doc, GOOD)
    return bundle, doc


def test_junit_has_one_testcase_per_acceptance_check(accepted: tuple[Path, dict]) -> None:  # type: ignore[type-arg]
    bundle, doc = accepted
    root = ET.fromstring(renderer("junit")(diagnose_bundle(bundle)))
    [suite] = [s for s in root.iter("testsuite") if s.get("name") == "linkcheck.acceptance"]
    standard, *cases = suite.findall("testcase")
    assert standard.get("name") == "standard" and standard.find("skipped") is None  # the standard run
    assert len(cases) == len(doc["checks"]) and suite.get("tests") == str(len(cases) + 1)
    assert len({c.get("name") for c in cases}) == len(cases)
    failed = [c for c in cases if c.find("failure") is not None]
    assert len(failed) == 1 and suite.get("failures") == "1"
    assert int(root.get("failures") or 0) >= 1 and int(root.get("tests") or 0) > len(cases)
    failure = failed[0].find("failure")
    assert failure is not None and failure.get("type") == "error"
    message = failure.get("message") or ""
    assert "enp1s0f1np1<->enp1s0f1np1 a->b" in message
    assert "min 80 Gb/s" in message and "threshold >= 92 Gb/s" in message and "margin -12 Gb/s" in message
    assert "source: spark-link" in (failure.text or "")
    props = {p.get("name"): p.get("value") for p in failed[0].iter("property")}
    assert props["margin"] == "-12 Gb/s" and props["threshold"] == ">= 92 Gb/s" and props["status"] == "FAIL"
    suite_props = {p.get("name"): p.get("value") for p in suite.find("properties") or []}
    assert suite_props["profile"] == "dgx-spark-pair" and suite_props["verdict"] == "FAIL"
    assert suite_props["profile_sha256"] == doc["profile"]["sha256"]


def test_prometheus_has_each_checks_status_and_margin(accepted: tuple[Path, dict]) -> None:  # type: ignore[type-arg]
    bundle, doc = accepted
    got = {f.name: f.samples for f in text_string_to_metric_families(renderer("prometheus")(diagnose_bundle(bundle)))}
    status = got["linkcheck_acceptance_check_status"]
    assert len(status) == 4 * len(doc["checks"])
    fail = [s for s in status if s.labels["subject"] == "enp1s0f1np1<->enp1s0f1np1 a->b"
            and s.labels["check"] == "rdma_alone_gbps"]
    assert {s.labels["status"]: s.value for s in fail} == {"pass": 0, "degraded": 0, "fail": 1, "inconclusive": 0}
    margins = {(s.labels["check"], s.labels["subject"]): s.value for s in got["linkcheck_acceptance_check_margin"]}
    assert margins[("rdma_alone_gbps", "enp1s0f1np1<->enp1s0f1np1 a->b")] == -12.0
    assert {s.labels["verdict"]: s.value for s in got["linkcheck_acceptance_verdict"]}["fail"] == 1
    assert got["linkcheck_acceptance_info"][0].labels["profile"] == "dgx-spark-pair"


def test_html_puts_the_acceptance_first(accepted: tuple[Path, dict]) -> None:  # type: ignore[type-arg]
    bundle, doc = accepted
    page = renderer("html")(diagnose_bundle(bundle))
    assert page.index("<h2>Acceptance</h2>") < page.index("<h2>Nodes</h2>")
    section = page[page.index("<h2>Acceptance</h2>"):page.index("<h2>Nodes</h2>")]
    assert "dgx-spark-pair" in section and doc["profile"]["sha256"] in section
    assert "3 repetitions, ib_write_bw -D 10 -s 1 MiB -q 1" in section
    for head in ("min", "median", "max", "runs", "threshold", "margin"):
        assert f"<th>{head}</th>" in section
    assert section.count("<th>") == 9 and "Threshold sources:" in section  # each source once, under the table
    assert '<td class="num miss">80 Gb/s</td>' in section  # the judged value that failed, marked
    assert "80 Gb/s" in section and "109.29 Gb/s" in section and "-12 Gb/s" in section and "spark-link" in section


def test_no_acceptance_no_acceptance_parts() -> None:
    outcome = diagnose_bundle(ROOT / "fixtures" / "healthy")
    assert "acceptance" not in renderer("junit")(outcome) and "acceptance" not in renderer("prometheus")(outcome)
    assert "<h2>Acceptance</h2>" not in renderer("html")(outcome)

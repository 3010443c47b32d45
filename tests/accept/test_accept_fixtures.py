"""The `accept` runs among the fixtures (scripts/make_accept_fixtures.py, against the lab): every report format of
each carries its acceptance, check by check; `diagnose` shows it; the records say NON-STANDARD (short runs)."""

from __future__ import annotations

import html
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from linkcheck.accept.judge import judge
from linkcheck.accept.profile import resolve_profile
from linkcheck.accept.record import decode_record
from linkcheck.app.offline import diagnose_bundle
from linkcheck.report.acceptance import parameters
from linkcheck.report.formats import renderer
from tests.conftest import InProcessCli

ROOT = Path(__file__).resolve().parents[2]
ACCEPTED = sorted(p.parent for p in (ROOT / "fixtures").glob("accept-*/acceptance.json"))
STATUS_CLASS = {"PASS": "pass", "DEGRADED": "warn", "FAIL": "fail", "INCONCLUSIVE": "inconclusive"}


def _record(fixture: Path) -> dict[str, Any]:
    doc = json.loads((fixture / "acceptance.json").read_text(encoding="utf-8"))
    assert isinstance(doc, dict)
    return doc


def _expected(fixture: Path) -> dict[str, Any]:
    data = yaml.safe_load((fixture / "expected.yaml").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def test_a_passing_and_a_failing_acceptance_are_shipped() -> None:
    assert [p.name for p in ACCEPTED] == ["accept-fail", "accept-pass"]
    assert [_record(p)["verdict"] for p in ACCEPTED] == ["FAIL", "PASS"]
    for fixture in ACCEPTED:
        assert (fixture / "acceptance-profile.yaml").is_file() and (fixture / "PROVENANCE.md").is_file()


@pytest.mark.parametrize("fixture", ACCEPTED, ids=lambda p: p.name)
def test_the_record_is_what_expected_yaml_states(fixture: Path) -> None:
    doc, want = _record(fixture), _expected(fixture)["acceptance"]
    not_passed: dict[str, str] = {}
    for check in doc["checks"]:
        if check["status"] != "PASS":
            not_passed[check["id"]] = check["status"]
    assert (doc["verdict"], not_passed) == (want["verdict"], want["not_passed"])
    assert doc["standard"]["non_standard"] is True  # -D 4 s, 2 repetitions
    assert doc["standard"]["differences"] == ["ib_write_bw -D 4 s (standard 10 s)", "2 repetitions (standard 3)"]
    assert doc["test"]["rdma"]["duration_s"] == 4 and doc["test"]["repetitions"] == 2


@pytest.mark.parametrize("fixture", ACCEPTED, ids=lambda p: p.name)
def test_junit_has_one_testcase_per_acceptance_check(fixture: Path) -> None:
    doc = _record(fixture)
    root = ET.fromstring(renderer("junit")(diagnose_bundle(fixture)))
    [suite] = [s for s in root.iter("testsuite") if s.get("name") == "linkcheck.acceptance"]
    standard, *cases = suite.findall("testcase")
    assert len(cases) == len(doc["checks"]) == int(suite.get("tests", "-1")) - 1
    skipped = standard.find("skipped")  # a NON-STANDARD run is never an all-green gate
    assert standard.get("name") == "standard" and skipped is not None
    assert "NON-STANDARD" in (skipped.get("message") or "")
    for case, check in zip(cases, doc["checks"], strict=True):
        assert case.get("name", "").startswith(f"{check['id']} {check['subject']}")
        assert case.get("classname") == f"linkcheck.acceptance.{check['id']}"
        status = {p.get("name"): p.get("value") for p in case.iter("property")}["status"]
        assert status == check["status"]
        assert (case.find("failure") is not None) == (check["status"] in ("FAIL", "DEGRADED"))
    props = {p.get("name"): p.get("value") for p in suite.find("properties") or []}
    assert props["verdict"] == doc["verdict"] and props["non_standard"] == "yes"
    assert int(suite.get("failures", "-1")) == sum(c["status"] in ("FAIL", "DEGRADED") for c in doc["checks"])


@pytest.mark.parametrize("fixture", ACCEPTED, ids=lambda p: p.name)
def test_prometheus_has_each_checks_status(fixture: Path) -> None:
    doc = _record(fixture)
    got = {f.name: f.samples for f in text_string_to_metric_families(renderer("prometheus")(diagnose_bundle(fixture)))}
    status = {(s.labels["check"], s.labels["subject"]): s.labels["status"]
              for s in got["linkcheck_acceptance_check_status"] if s.value == 1}
    assert status == {(c["id"], c["subject"]): c["status"].lower() for c in doc["checks"]}
    verdict = [s.labels["verdict"] for s in got["linkcheck_acceptance_verdict"] if s.value == 1]
    assert verdict == [doc["verdict"].lower()]
    assert [s.value for s in got["linkcheck_acceptance_non_standard"]] == [1]


@pytest.mark.parametrize("fixture", ACCEPTED, ids=lambda p: p.name)
def test_html_carries_every_check_and_prints(fixture: Path) -> None:
    doc = _record(fixture)
    page = renderer("html")(diagnose_bundle(fixture))
    assert "@media print{" in page
    section = page[page.index("<h2>Acceptance</h2>"):page.index("<h2>Nodes</h2>")]
    rows = re.findall(r'<tr><td><span class="tag (\w+)">(\w+)</span></td><td><code>(\w+)</code></td><td>([^<]*)</td>',
                      section)
    assert [(s, c) for _, s, c, _ in rows] == [(c["status"], c["id"]) for c in doc["checks"]]
    assert all(cls == STATUS_CLASS[s] for cls, s, _, _ in rows)
    assert f"acceptance: {doc['verdict']} exit {doc['exit_code']}" in section and ">NON-STANDARD</span>" in section


@pytest.mark.parametrize("fixture", ACCEPTED, ids=lambda p: p.name)
def test_markdown_carries_every_check(fixture: Path) -> None:
    doc = _record(fixture)
    text = renderer("markdown")(diagnose_bundle(fixture))
    section = text[text.index("## Acceptance"):text.index("## Nodes")]
    rows = [line for line in section.splitlines()
            if line.startswith("| ") and not line.startswith(("| status", "| ---"))]
    assert [row.split(" | ")[0].lstrip("| ") for row in rows] == [c["status"] for c in doc["checks"]]
    assert f"acceptance: {doc['verdict']} exit {doc['exit_code']}" in section and "NON-STANDARD" in section


@pytest.mark.parametrize("fixture", ACCEPTED, ids=lambda p: p.name)
def test_diagnose_shows_the_acceptance(fixture: Path, cli: InProcessCli) -> None:
    doc = _record(fixture)
    proc = cli("diagnose", str(fixture), env={"COLUMNS": "100"})
    assert proc.returncode == {"pass": 0, "fail": 2}[_expected(fixture)["verdict"]], proc.stderr
    flat = " ".join(proc.stdout.split())
    assert f"acceptance: {doc['verdict']} exit {doc['exit_code']}" in flat
    assert "NON-STANDARD (weaker than dgx-spark-pair): ib_write_bw -D 4 s (standard 10 s)" in flat
    for check_id in {c["id"] for c in doc["checks"]}:
        assert check_id[:14] in proc.stdout  # the table may fold a long id in its column
    # the acceptance's verdict closes the output, where it stays in view after the table
    counted = sum(1 for c in doc["checks"] if c["status"] == doc["verdict"])
    total = len(doc["checks"])
    assert proc.stdout.rstrip().splitlines()[-1] == (
        f"ACCEPTANCE: {doc['verdict']} ({counted} of {total} checks) NON-STANDARD exit {doc['exit_code']}")
    assert json.loads(cli("diagnose", str(fixture), "-f", "json").stdout)["acceptance"]["checks"] == doc["checks"]


@pytest.mark.parametrize("fixture", ACCEPTED, ids=lambda p: p.name)
def test_every_report_says_the_largest_message_the_sweep_reached(fixture: Path) -> None:
    """The lab's free memory capped the sweep below the profile's 16 GiB: every report says what ran, not what was
    asked (the record predates the `largest_bytes` field, so the bundle's own sweep says it)."""
    outcome = diagnose_bundle(fixture)
    assert outcome.link.bench.nccl is not None
    reached = outcome.link.bench.nccl.largest_bytes
    assert reached is not None and reached < _record(fixture)["test"]["nccl"]["max_bytes"]
    said = "all_gather_perf up to 2 GiB (the profile asks 16 GiB; the smaller node's free memory allowed no more)"
    assert reached == 2 << 30
    assert html.escape(said) in renderer("html")(outcome)
    assert said.replace("_", "\\_") in renderer("markdown")(outcome)
    assert html.escape(said).replace("&#x27;", "'") in renderer("junit")(outcome)


def test_a_new_record_keeps_the_largest_message(tmp_path: Path) -> None:
    outcome = diagnose_bundle(ACCEPTED[0])
    profile = resolve_profile("dgx-spark-pair")
    doc = judge(outcome.link, outcome.diagnosis, profile, 2).to_dict()
    assert doc["test"]["nccl"] == {"max_bytes": 16 << 30, "largest_bytes": 2 << 30}
    # The record's model reads the field back (a shipped record with it added), and refuses a wrong type there.
    shipped = _record(ACCEPTED[0])
    shipped["test"]["nccl"]["largest_bytes"] = 2 << 30
    read, problem = decode_record(tmp_path / "acceptance.json", json.dumps(shipped).encode())
    assert problem is None and read is not None and read["test"]["nccl"]["largest_bytes"] == 2 << 30
    shipped["test"]["nccl"]["largest_bytes"] = "2 GiB"
    assert decode_record(tmp_path / "acceptance.json", json.dumps(shipped).encode())[0] is None
    assert "up to 2 GiB (the profile asks 16 GiB" in parameters(doc)
    assert "up to 16 GiB" in parameters({**doc, "test": {"repetitions": 2, "nccl": {"max_bytes": 16 << 30}}})

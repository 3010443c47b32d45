"""`linkcheck report`: the format registry, JSON, JUnit and Markdown from every fixture, and the -o file."""

from __future__ import annotations

import datetime as dt
import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from linkcheck.app.offline import diagnose_bundle
from linkcheck.model import Status
from linkcheck.outcome import Outcome
from linkcheck.report.formats import FORMATS, renderer
from linkcheck.report.markdown import render_markdown
from tests.conftest import CliResult, run_cli
from tests.fixture_bundles import PAIR_BUNDLES

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = PAIR_BUNDLES
# link-state, gid-index, throughput, nccl, ...: one stage per built-in playbook file.
STAGES = {f"linkcheck.{p.stem}" for p in (ROOT / "linkcheck" / "playbooks").glob("*.yaml")}


def _outcome(fixture: Path) -> Outcome:
    from linkcheck.config import load_config

    config = fixture / "linkcheck.yaml"
    return diagnose_bundle(fixture, None, load_config(config) if config.is_file() else None)


def run(*args: str, cwd: Path | None = None) -> CliResult:
    """linkcheck in process, without NO_COLOR: these tests judge the reports it writes, not the process."""
    return run_cli(*args, cwd=cwd, env={"NO_COLOR": None})


def test_registry_has_the_four_formats_and_refuses_others() -> None:
    assert {"json", "junit", "markdown", "html"} <= set(FORMATS)
    from linkcheck.errors import UsageError

    with pytest.raises(UsageError, match="json, junit"):
        renderer("yaml")


def test_json_has_a_utc_created_timestamp() -> None:
    document = json.loads(renderer("json")(_outcome(ROOT / "fixtures" / "healthy")))
    created = dt.datetime.fromisoformat(document["created"])
    assert created.utcoffset() == dt.timedelta(0)
    assert abs((dt.datetime.now(dt.timezone.utc) - created).total_seconds()) < 60
    assert document["schema"] == "linkcheck-report" and document["schema_version"] == 2
    assert document["bundle_created"] == json.loads((ROOT / "fixtures/healthy/manifest.json").read_text())["created"]


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda p: p.name)
def test_junit_is_valid_xml_with_one_testcase_per_finding(fixture: Path) -> None:
    outcome = _outcome(fixture)
    root = ET.fromstring(renderer("junit")(outcome))
    suite = root.find("testsuite")
    assert root.tag == "testsuites" and suite is not None
    cases = suite.findall("testcase")
    findings = outcome.diagnosis.findings
    assert len(cases) == len(findings) == int(suite.get("tests", "-1"))
    # The root counts every suite: the findings' and, for an `accept` bundle, the acceptance checks'.
    assert int(root.get("tests", "-1")) == sum(int(s.get("tests", "-1")) for s in root.findall("testsuite"))
    names = [c.get("name") for c in cases]
    assert len(set(names)) == len(names)
    expected = {"failure": sum(f.status in (Status.FAIL, Status.WARN) for f in findings),
                "error": sum(f.status is Status.SKIP and f.required for f in findings),
                "skipped": sum(f.status is Status.SKIP and not f.required for f in findings)}
    for tag, attribute in (("failure", "failures"), ("error", "errors"), ("skipped", "skipped")):
        assert sum(c.find(tag) is not None for c in cases) == expected[tag] == int(suite.get(attribute, "-1"))
    for case, finding in zip(cases, findings, strict=True):
        assert case.get("classname") in STAGES
        assert finding.rule_id in (case.get("name") or "")
        failure = case.find("failure")
        if failure is not None:
            assert finding.message in (failure.text or "")
        out = case.find("system-out")
        assert out is not None and all(ev.fact in (out.text or "") for ev in finding.evidence)
        props = case.find("properties")
        assert (props is not None) == bool(finding.evidence)


def test_junit_stage_is_the_rules_playbook() -> None:
    assert {"linkcheck.link-state", "linkcheck.gid-index", "linkcheck.throughput", "linkcheck.nccl"} <= STAGES
    root = ET.fromstring(renderer("junit")(_outcome(ROOT / "fixtures" / "gid-stale")))
    classes = {c.get("name", "").split()[0]: c.get("classname") for c in root.iter("testcase")}
    assert classes["GID_INDEX_STALE"] == "linkcheck.gid-index"
    assert classes["LINK_DOWN"] == "linkcheck.link-state"
    assert classes["NCCL_BUSBW_LOW"] == "linkcheck.nccl"
    assert classes["LINK_BELOW_NOMINAL"] == "linkcheck.throughput"
    import yaml

    expected = yaml.safe_load((ROOT / "fixtures" / "gid-stale" / "expected.yaml").read_text())
    failed = {c.get("name", "").split()[0]: c.find("failure") for c in root.iter("testcase")
              if c.find("failure") is not None}
    assert set(failed) == set(expected["findings"])
    assert {k: v.get("type") for k, v in failed.items()} == {
        k: "error" if v == "fail" else "warning" for k, v in expected["findings"].items()}


def test_junit_inconclusive_is_an_error_and_skips_are_skipped() -> None:
    outcome = _outcome(ROOT / "fixtures" / "degraded-collection")
    root = ET.fromstring(renderer("junit")(outcome))
    required = [f for f in outcome.diagnosis.findings if f.status is Status.SKIP and f.required]
    errors = [c for c in root.iter("testcase") if c.find("error") is not None]
    assert required and len(errors) == len(required)
    assert all((c.find("error").text or "").startswith("not judged: ") for c in errors)  # type: ignore[union-attr]


def test_markdown_for_a_ticket() -> None:
    outcome = _outcome(ROOT / "fixtures" / "single-pcie-path")
    text = render_markdown(outcome)
    assert "**verdict: FAIL" in text and "| cage / domain | a: dgx-spark-1 | b: dgx-spark-2 |" in text
    assert "| **both paths at once** | **total** |" in text and "## NCCL" in text or "## Traffic" in text
    fails = [f for f in outcome.diagnosis.findings if f.status is Status.FAIL]
    assert text.count("### FAIL `SINGLE_PCIE_PATH`") == len(fails) > 0
    assert "- evidence: " in text and "```sh" in text


def test_markdown_escapes_node_text() -> None:
    from linkcheck.report.markdown import md

    assert md("a|b<img>[x](y)*z*") == r"a\|b\<img\>\[x\](y)\*z\*"


def test_report_writes_the_file_and_exits_with_the_verdict(tmp_path: Path) -> None:
    target = tmp_path / "r.xml"
    proc = run("report", str(ROOT / "fixtures" / "mtu-mismatch"), "--format", "junit", "-o", str(target))
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == "" and ET.parse(target).getroot().tag == "testsuites"
    assert [p.name for p in tmp_path.iterdir()] == ["r.xml"]  # no temporary file left beside it


@pytest.mark.parametrize("case", ["missing-folder", "unwritable", "folder", "unknown-format"])
def test_bad_output_is_refused_before_any_work(tmp_path: Path, case: str) -> None:
    keep = tmp_path / "keep.md"
    keep.write_text("old report\n")
    args = ["report", str(ROOT / "fixtures" / "healthy"), "-f", "markdown"]
    if case == "missing-folder":
        args += ["-o", str(tmp_path / "nope" / "r.md")]
    elif case == "unwritable":
        if os.geteuid() == 0:
            pytest.skip("root writes anywhere")
        tmp_path.chmod(0o500)
        args += ["-o", str(keep)]
    elif case == "folder":
        args += ["-o", str(tmp_path)]
    else:
        args = ["report", str(ROOT / "fixtures" / "healthy"), "-f", "yaml", "-o", str(keep)]
    try:
        proc = run(*args)
    finally:
        tmp_path.chmod(0o700)
    assert proc.returncode == 4 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and proc.stdout == ""
    assert keep.read_text() == "old report\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.md"]


def test_failed_write_leaves_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from linkcheck.errors import OutputError
    from linkcheck.report import writer

    target = tmp_path / "r.html"
    target.write_text("old\n")

    def no_room(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(writer.os, "fsync", no_room)
    with pytest.raises(OutputError, match="No space left"):
        writer.write_atomically(target, "new\n")
    assert target.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["r.html"]

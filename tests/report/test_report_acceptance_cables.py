"""A cluster bundle's acceptance (`linkcheck accept` over a cluster) in every report of it: after the check's text,
the JSON's `acceptance`, an Acceptance section first in Markdown and HTML, the acceptance suite in JUnit, the
acceptance families in Prometheus named by test and pass. Node text stays text; a record that is not shown is one
line. Built offline: the lab's cluster models judged at chosen rates (tests/cluster/cluster_checks.py), the record
judged by the layout's built-in profile."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from html import unescape
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from msgspec.structs import replace
from prometheus_client.parser import text_string_to_metric_families

from linkcheck.accept.evidence import cluster_evidence
from linkcheck.accept.judge import judge_cluster as judge_acceptance
from linkcheck.accept.profile import resolve_profile
from linkcheck.app.live import save_cluster
from linkcheck.app.offline import judge_cluster
from linkcheck.bundle.acceptance import ACCEPTANCE, write_acceptance
from linkcheck.bundle.format import Bundle
from linkcheck.bundle.run_record import SCHEMA, SCHEMA_VERSION, ClusterDocument, HostEntry
from linkcheck.cluster.hosts import parse_node_values
from linkcheck.collect.specs import CLUSTER_SPECS, SPECS
from linkcheck.diagnose.playbook import load_playbooks
from linkcheck.outcome import ClusterCheck
from linkcheck.report.html import h, render_html
from linkcheck.report.json_report import render_json
from linkcheck.report.junit import render_junit, xml_text
from linkcheck.report.markdown import md, render_markdown
from linkcheck.report.prometheus import render_prometheus
from linkcheck.report.safe_text import shown
from tests.cluster import cluster_checks as cc
from tests.emulators.captures import node_captures
from tests.lab.cluster import cluster_models, ring3, switch_by_cage

if TYPE_CHECKING:
    from tests.conftest import InProcessCli

SLOW_CABLE = "a:p0<->b:p1"  # the ring's cable in the hot-plug state
FORMATS: dict[str, Callable[[ClusterCheck], str]] = {
    "text": cc.console_text, "json": render_json, "markdown": render_markdown, "html": render_html,
    "junit": render_junit, "prometheus": render_prometheus}
# Markup, a table's pipe, backticks, a script, an OSC title, a C1 control and a bidi override in one node name.
HOSTILE = "n|`x`<script>alert(1)</script>\x1b]2;owned\x07\x9b31m\u202eevil"
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
Record = dict[str, Any]


def record_of(check: ClusterCheck, profile: str, repetitions: int = 1) -> Record:
    """acceptance.json as `accept` over the cluster writes it: the judged record and its evidence."""
    acceptance = judge_acceptance(check, resolve_profile(profile), repetitions)
    return {**acceptance.to_dict(), "evidence": cluster_evidence(check, [], "2026-12-03T00:00:00+00:00", "test")}


def accepted(check: ClusterCheck, profile: str, repetitions: int = 1) -> ClusterCheck:
    return replace(check, acceptance=record_of(check, profile, repetitions))


@pytest.fixture(scope="module")
def ring() -> ClusterCheck:
    """A ring of three whose cable a:p0<->b:p1 is in the hot-plug state: the acceptance fails on that test."""
    return accepted(cc.checked(ring3(), lambda t: cc.HOTPLUG if t.label == SLOW_CABLE else cc.HEALTHY),
                    "dgx-spark-ring3")


def _junit_suite(text: str) -> tuple[ET.Element, ET.Element]:
    root = ET.fromstring(text)
    [suite] = [s for s in root.iter("testsuite") if s.get("name") == "linkcheck.acceptance"]
    return root, suite


def _series(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Every sample by name, parsed by prometheus_client's own parser; no series written twice."""
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        keys = [(s.name, tuple(sorted(s.labels.items()))) for s in family.samples]
        assert len(keys) == len(set(keys)), family.name
        for s in family.samples:
            out.setdefault(s.name, []).append((dict(s.labels), s.value))
    return out


def _h2(page: str) -> list[str]:
    return re.findall(r"<h2>(.*?)</h2>", page)


def test_text_ends_with_the_acceptance_after_the_check(ring: ClusterCheck) -> None:
    lines = cc.console_text(ring).splitlines()
    assert "verdict: fail" in lines and lines[-1] == "ACCEPTANCE: FAIL (10 of 68 checks) NON-STANDARD exit 2"
    assert lines.index("verdict: fail") < next(i for i, x in enumerate(lines) if x.startswith("acceptance: FAIL"))
    assert any(re.match(rf"  {re.escape(SLOW_CABLE)}\s+1\s+FAIL\s+13\.3 Gb/s\s+26\.6 Gb/s", x) for x in lines)


def test_json_holds_the_record(ring: ClusterCheck) -> None:
    data = json.loads(render_json(ring))
    assert data["acceptance"] == ring.acceptance and data["acceptance"]["verdict"] == "FAIL"
    assert json.loads(render_json(replace(ring, acceptance=None)))["acceptance"] is None


def test_markdown_puts_the_acceptance_first_with_each_test(ring: ClusterCheck) -> None:
    text = render_markdown(ring)
    assert text.index("## Acceptance") < text.index("## Tests") < text.index("## Matrix")
    assert "**acceptance: FAIL exit 2 (profile dgx-spark-ring3" in text
    assert f"| {md(SLOW_CABLE)} | 1 | FAIL | 13\\.3 Gb/s | 26\\.6 Gb/s |  |" in text
    # min, median and max each in its column, the one judged (the lowest) in bold, the run count, the threshold
    total = (f"| FAIL | rdma\\_concurrent\\_total\\_gbps | {md(SLOW_CABLE)} both paths a-\\>b | **26\\.6** | 26\\.6 | "
             "26\\.6 | 1 | \\>= 185 Gb/s |")
    assert total in text
    assert "| INCONCLUSIVE | nccl\\_busbw\\_gbs | all\\_gather across 3 nodes |" in text
    # The passing checks of the tests are counted, not listed: 3 tests of 22 checks, 10 of them failed.
    assert "56 passing checks of the tests are not listed" in text
    assert "- finding FAIL LINK\\_HOTPLUG\\_DEGRADED" in text and "Threshold sources:" in text
    assert "## Acceptance" not in render_markdown(replace(ring, acceptance=None))


def test_html_puts_the_acceptance_first_and_folds_each_test(ring: ClusterCheck) -> None:
    page = render_html(ring)
    assert _h2(page)[:2] == ["Summary", "Acceptance"] and "<script" not in page
    assert '<span class="verdict fail">acceptance: FAIL exit 2</span>' in page
    assert page.count('<details class="checks">') == 3
    assert f'<b>{h(SLOW_CABLE)}</b> (round 1) <span class="tag fail">FAIL</span> 12 of 22 checks passed' in page
    assert "Acceptance" not in _h2(render_html(replace(ring, acceptance=None)))


def test_junit_has_the_acceptance_suite(ring: ClusterCheck) -> None:
    root, suite = _junit_suite(render_junit(ring))
    standard, *cases = suite.findall("testcase")
    assert standard.get("name") == "standard" and standard.find("skipped") is not None  # a NON-STANDARD run
    assert suite.get("tests") == str(len(cases) + 1) == "69" and suite.get("failures") == "10"
    assert suite.get("errors") == "2"  # no NCCL run: its two checks are inconclusive
    assert len({c.get("name") for c in cases}) == len(cases)
    assert int(root.get("tests") or 0) == sum(int(s.get("tests") or 0) for s in root.iter("testsuite"))
    failed = [c for c in cases if c.find("failure") is not None]
    assert {c.get("name", "").split(" ")[1] for c in failed} == {SLOW_CABLE}
    props = {p.get("name"): p.get("value") for p in failed[0].iter("property")}
    assert props["test"] == SLOW_CABLE and props["pass"] == "1" and props["status"] == "FAIL"
    errors = [c for c in cases if c.find("error") is not None]
    assert {c.get("classname") for c in errors} == {"linkcheck.acceptance.nccl_busbw_gbs",
                                                    "linkcheck.acceptance.nccl_wrong"}
    suite_props = {p.get("name"): p.get("value") for p in suite.find("properties") or []}
    assert suite_props["verdict"] == "FAIL" and suite_props["profile"] == "dgx-spark-ring3"
    assert suite_props["non_standard"] == "yes"
    assert (suite_props["test"] or "").startswith("1 repetitions, ib_write_bw -D 10")


def test_prometheus_has_the_acceptance_families(ring: ClusterCheck) -> None:
    got = _series(render_prometheus(ring))
    assert [labels["verdict"] for labels, v in got["linkcheck_acceptance_verdict"] if v == 1] == ["fail"]
    assert got["linkcheck_acceptance_non_standard"] == [({}, 1)]
    assert got["linkcheck_acceptance_info"][0][0]["profile"] == "dgx-spark-ring3"
    status = got["linkcheck_acceptance_check_status"]
    assert len(status) == 68 * 4
    failed = [labels for labels, v in status if v == 1 and labels["status"] == "fail"]
    assert len(failed) == 10 and {(x["test"], x["pass"]) for x in failed} == {(SLOW_CABLE, "1")}
    assert all(x["subject"].startswith(f"{x['test']} ") for x, _ in status if x["test"])
    nccl = {x["check"] for x, _ in status if not x["test"]}
    assert nccl == {"nccl_busbw_gbs", "nccl_wrong"}
    margins = {x["subject"]: v for x, v in got["linkcheck_acceptance_check_margin"]}
    assert margins[f"{SLOW_CABLE} both paths a->b"] == pytest.approx(-158.4)
    assert "linkcheck_acceptance_verdict" not in _series(render_prometheus(replace(ring, acceptance=None)))


def test_a_second_pass_that_meets_the_same_nodes_again_stays_apart() -> None:
    """On a switch, node a slow with every partner is measured again with b: the test a<->b twice, its checks
    named by their pass, so no series and no testcase is written twice."""
    check = accepted(cc.switch("abcd", cc.slow_node("a")), "dgx-spark-switch")
    passes = {(t["test"], t["pass"]) for t in check.acceptance["cluster"]["tests"]}  # type: ignore[index]
    assert {("a<->b", 1), ("a<->b", 2)} <= passes
    got = _series(render_prometheus(check))  # asserts no series twice
    assert {x["pass"] for x, _ in got["linkcheck_acceptance_check_status"] if x["test"] == "a<->b"} == {"1", "2"}
    _, suite = _junit_suite(render_junit(check))
    names = [c.get("name") or "" for c in suite.findall("testcase")]
    assert len(set(names)) == len(names) and any(n.endswith("(second pass)") for n in names)
    assert "a<->b (second pass)" in render_markdown(check).replace("\\", "")


@pytest.fixture(scope="module")
def hostile() -> ClusterCheck:
    """A switch with a node named in markup, pipes, backticks and control characters, slow with every partner; the
    record's profile name, notes and evidence carry the same text."""
    check = cc.checked(switch_by_cage({"a": "p1", HOSTILE: "p1", "c": "p1"}), cc.slow_node(HOSTILE))
    record = record_of(check, "dgx-spark-switch")
    record["profile"]["name"] = HOSTILE
    record["notes"] = [f"note {HOSTILE}"]
    for node in record["evidence"]["nodes"].values():
        node["hostname"] = HOSTILE
    return replace(check, acceptance=record)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_node_text_stays_text(hostile: ClusterCheck, fmt: str) -> None:
    out = FORMATS[fmt](hostile)
    label = f"a<->{HOSTILE}"
    if fmt == "text":  # the console writes every line through `shown`: the label as text, no control character
        assert shown(label) in out and "\x1b" not in out and out.splitlines()[-1].startswith("ACCEPTANCE: FAIL")
        return
    assert not RAW.search(out), repr(RAW.search(out))
    if fmt == "json":
        assert json.loads(out)["acceptance"]["profile"]["name"] == HOSTILE
    elif fmt == "markdown":
        section = out.split("## Acceptance")[1].split("\n## ")[0]
        assert "<script>" not in section and md(label) in section and md(f"note {HOSTILE}") in section
        # Each table row of the section has its own pipes only: the node's pipe is escaped.
        for row in (x for x in section.splitlines() if x.startswith("| ")):
            assert len(re.findall(r"(?<!\\)\|", row)) in (7, 10), row
    elif fmt == "html":
        assert "<script" not in out
        assert h(label) in out and shown(label) in unescape(out)
    elif fmt == "junit":
        _, suite = _junit_suite(out)
        names = [c.get("name") or "" for c in suite.findall("testcase")]
        assert any(xml_text(label) in n for n in names)
        props = {p.get("name"): p.get("value") for p in suite.find("properties") or []}
        assert props["profile"] == xml_text(HOSTILE)
    else:
        got = _series(out)
        assert got["linkcheck_acceptance_info"][0][0]["profile"] == shown(HOSTILE, multiline=True)
        assert any(x["test"] == shown(label, multiline=True) for x, _ in got["linkcheck_acceptance_check_status"])


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_a_record_not_shown_is_one_line(ring: ClusterCheck, fmt: str) -> None:
    problem = f"{ACCEPTANCE}: does not match its SHA-256 in manifest.json ({HOSTILE}; not shown)"
    out = FORMATS[fmt](replace(ring, acceptance={"problem": problem}))
    if fmt == "text":
        assert shown(f"acceptance: {problem}") in out.splitlines() and out.splitlines()[-1] == "verdict: fail"
    elif fmt == "json":
        assert json.loads(out)["acceptance"] == {"problem": problem}
    elif fmt == "markdown":
        assert f"## Acceptance\n\n{md(problem)}\n\n## Tests" in out
    elif fmt == "html":
        assert f'<h2>Acceptance</h2><p class="muted">{h(problem)}</p>' in out and "<script" not in out
    elif fmt == "junit":
        _, suite = _junit_suite(out)
        [case] = suite.findall("testcase")
        error = case.find("error")
        assert error is not None and error.get("message") == xml_text(problem) and suite.get("errors") == "1"
    else:
        assert not RAW.search(out)
        assert [x for x in out.splitlines() if "acceptance" in x] == [f"# acceptance not shown: {shown(problem)}"]
        _series(out)


def _bundle(tmp_path: Path, record: Record) -> Path:
    """A ring of three's bundle (its inspection) with the acceptance joined as `accept` joins it."""
    models = cluster_models(ring3())
    captures = [c for n, m in models.items() for c in node_captures(n, m, SPECS + CLUSTER_SPECS)]
    hosts = parse_node_values([f"{n}=root@{n}.lab" for n in models])
    doc = ClusterDocument(SCHEMA, SCHEMA_VERSION, tuple(HostEntry(x.name, str(x.target), x.origin) for x in hosts))
    judge_cluster(hosts, captures, {}, doc, load_playbooks(kind="all"))
    folder = tmp_path / "bundle"
    save_cluster(Bundle(captures=captures, nodes={n: {"target": f"root@{n}.lab"} for n in models},
                        created="2026-12-03T00:00:00+00:00"), doc, folder)
    write_acceptance(folder, record, resolve_profile("dgx-spark-ring3").text)
    return folder


def test_every_report_of_the_saved_bundle_shows_it(tmp_path: Path, cli: InProcessCli, ring: ClusterCheck) -> None:
    assert ring.acceptance is not None
    folder = _bundle(tmp_path, ring.acceptance)
    assert cli("verify", str(folder)).returncode == 0
    diagnosed = cli("diagnose", str(folder))
    code = diagnosed.returncode
    assert code == 2 and "Traceback" not in diagnosed.stderr  # the acceptance's exit code: the bundle's verdict
    assert diagnosed.stdout.splitlines()[-1] == "ACCEPTANCE: FAIL (10 of 68 checks) NON-STANDARD exit 2"
    says = {"json": '"verdict": "FAIL"', "markdown": "**acceptance: FAIL exit 2",
            "junit": 'name="linkcheck.acceptance"', "html": "acceptance: FAIL exit 2",
            "prometheus": 'linkcheck_acceptance_verdict{verdict="fail"} 1'}
    for fmt, text in says.items():
        out = cli("report", str(folder), "-f", fmt)
        assert out.returncode == code and text in out.stdout, (fmt, out.stderr)
    assert json.loads(cli("report", str(folder), "-f", "json").stdout)["acceptance"] == ring.acceptance

    path = folder / ACCEPTANCE  # edited after the run: the manifest no longer vouches for it
    path.write_text(path.read_text(encoding="utf-8").replace('"FAIL"', '"PASS"'), encoding="utf-8")
    assert cli("report", str(folder), "-f", "markdown").returncode == 4  # `verify` refuses the bundle
    for fmt in (*says, "text"):
        args = ("diagnose", str(folder)) if fmt == "text" else ("report", str(folder), "-f", fmt)
        out = cli(*args, "--allow-unverified")  # an acceptance not shown decides nothing: the check's own code
        assert out.returncode in (0, 1) and "Traceback" not in out.stderr, (fmt, out.stderr)
        assert "PASS exit 2" not in out.stdout and "acceptance: PASS" not in out.stdout
        name = md(ACCEPTANCE) if fmt == "markdown" else ACCEPTANCE
        mentions = [x for x in out.stdout.splitlines() if name in x]
        assert len(mentions) == 1 and "unverified" in mentions[0], (fmt, mentions)


@pytest.mark.parametrize("measured", [None, {"min": 5}, {"min": 5, "unit": "Gb/s"}, {}])
@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_a_record_the_model_takes_with_little_measured_still_renders(ring: ClusterCheck, fmt: str,
                                                                     measured: Any) -> None:
    """The record's model leaves `measured` optional and its min / median / max each optional: every format
    renders what is there and a dash for what is not."""
    checks = [{"id": "rdma_concurrent_gbps", "subject": "T x", "status": "PASS", "measured": measured},
              {"id": "rdma_concurrent_gbps", "subject": "T y", "status": "FAIL", "measured": {"min": 5, "max": 9}}]
    record = {"schema": "linkcheck-acceptance", "schema_version": 1, "verdict": "FAIL", "exit_code": 2,
              "checks": [{k: v for k, v in c.items() if v is not None} for c in checks],
              "cluster": {"layout": "ring3", "nodes": ["a"], "tests": [{"test": "T", "verdict": "FAIL", "checks": 2}]}}
    text = FORMATS[fmt](replace(ring, acceptance=record))
    assert "FAIL" in text or "fail" in text

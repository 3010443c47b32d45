"""Causes before consequences: the playbooks declare which finding explains which (`explained_by`), the engine marks
the explained one with its cause's finding id, and the console, Markdown and HTML reports list it under its cause,
each distinct fix once."""

from __future__ import annotations

import json
import re
from pathlib import Path

from msgspec.structs import replace

from linkcheck.app.offline import diagnose_bundle
from linkcheck.baseline.store import find_path, read_baseline
from linkcheck.diagnose.engine import explain
from linkcheck.diagnose.playbook import load_playbooks
from linkcheck.diagnose.rule import Explanation
from linkcheck.model import Finding, Severity, Status
from linkcheck.report.causes import causes_first
from linkcheck.report.html import render_html
from linkcheck.report.markdown import render_markdown
from tests.conftest import InProcessCli

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _against_healthy(cli: InProcessCli, name: str, fmt: str) -> str:
    saved = cli("baseline", "save", "healthy-ref", str(FIXTURES / "healthy"))
    assert saved.returncode == 0, saved.stderr
    proc = cli("diagnose", str(FIXTURES / name), "--baseline", "healthy-ref", "-f", fmt, env={"COLUMNS": "120"})
    assert proc.returncode == 2, proc.stderr
    return proc.stdout


def test_hot_plug_explains_every_throughput_drop(cli: InProcessCli) -> None:
    doc = json.loads(_against_healthy(cli, "hotplug-degraded", "json"))
    causes = {f["finding_id"] for f in doc["findings"] if f["id"] == "LINK_HOTPLUG_DEGRADED" and f["status"] == "fail"}
    drops = [f for f in doc["findings"] if f["id"] == "DRIFT_THROUGHPUT" and f["status"] in ("warn", "fail")]
    assert len(causes) == 2 and len(drops) == 10
    assert all(f["explained_by"] in causes for f in drops), [f["explained_by"] for f in drops]
    for drop in drops:  # a path's drop under that path's hot-plug finding
        path = drop["subject"].split(" ")[0]
        if "<->" in path:
            assert drop["explained_by"] == f"LINK_HOTPLUG_DEGRADED:{path}"
    assert all(f["explained_by"] is None for f in doc["findings"] if f["id"] != "DRIFT_THROUGHPUT")


def test_the_console_shows_the_cause_first_and_each_fix_once(cli: InProcessCli) -> None:
    text, summary = _against_healthy(cli, "hotplug-degraded", "console").split("─ Summary ─")
    assert text.index("FAIL LINK_HOTPLUG_DEGRADED") < text.index("DRIFT_THROUGHPUT")
    assert "FAIL DRIFT_THROUGHPUT" not in re.findall(r"─ (FAIL \w+)", text)  # no box of its own: inside its cause's
    assert text.count("explains ") == 2 and text.count("rerun the test to rule out a one-off") == 1
    assert text.count("fix: then rerun:") == 1 and "fix: as above" in text  # the command on a line of its own
    # The summary after the findings names the cause once, with its fix and what it explains.
    assert summary.count("FAIL LINK_HOTPLUG_DEGRADED") == 1 and summary.count("fix: then rerun:") == 1
    assert "DRIFT_THROUGHPUT" in summary and "1 cause" in summary


def test_markdown_lists_the_explained_under_its_cause() -> None:
    outcome = diagnose_bundle(FIXTURES / "nccl-socket-fallback")
    [busbw] = [f for f in outcome.diagnosis.findings if f.rule_id == "NCCL_BUSBW_LOW"]
    assert busbw.explained_by == "NCCL_SOCKET_FALLBACK:nccl"
    text = render_markdown(outcome)
    assert text.index("### FAIL `NCCL_SOCKET_FALLBACK` nccl") < text.index("#### FAIL `NCCL_BUSBW_LOW` nccl")
    assert "Explained by `NCCL_SOCKET_FALLBACK` (nccl), above." in text


def test_html_nests_the_explained_inside_its_cause() -> None:
    page = render_html(diagnose_bundle(FIXTURES / "nccl-socket-fallback"))
    cause = page.index("<code>NCCL_SOCKET_FALLBACK</code> nccl</h3>")
    effect = page.index("<code>NCCL_BUSBW_LOW</code> nccl</h3>")
    assert cause < effect
    # The effect's box opens inside the cause's: no box closes between the cause's heading and the effect's.
    between = page[cause:effect]
    assert between.count('<div class="finding') == 1 and "</div>" not in between, between
    assert '<div class="finding fail explained">' in between
    assert "Explained by <code>NCCL_SOCKET_FALLBACK</code> (nccl), above." in page
    # Every box that opens closes, so what follows the findings is not swallowed by one.
    findings = page[page.index("<h2>Findings</h2>"):page.index("<h2>", page.index("<h2>Findings</h2>") + 1)]
    assert findings.count("<div") == findings.count("</div>")


def test_html_prints_each_fix_once(cli: InProcessCli) -> None:
    assert cli("baseline", "save", "healthy-ref", str(FIXTURES / "healthy")).returncode == 0
    saved = find_path("healthy-ref")
    assert saved is not None
    page = render_html(diagnose_bundle(FIXTURES / "hotplug-degraded", baseline=read_baseline(saved)))
    findings = page[page.index("<h2>Findings</h2>"):]  # the summary above names the cause and its fix once more
    fixes = re.findall(r'<pre class="fix">(.*?)</pre>', findings, flags=re.S)
    assert fixes and len(fixes) == len(set(fixes)), fixes  # ten drops share one fix: one block
    assert page.count("<p>Fix: as above.</p>") >= 9
    assert page.count('class="finding fail explained"') >= 10  # every throughput drop under its hot-plug cause


def _finding(rule: str, subject: str, status: Status = Status.FAIL) -> Finding:
    return Finding(rule, status, Severity.ERROR, subject, "t", "m")


def test_same_subject_and_no_circle() -> None:
    rules = {r.id: r for r in load_playbooks()}
    findings = [_finding("DRIFT_THROUGHPUT", "p alone a->b"), _finding("DRIFT_THROUGHPUT", "nccl all_gather busbw"),
                _finding("NCCL_SOCKET_FALLBACK", "nccl"), _finding("NCCL_BUSBW_LOW", "nccl", Status.PASS)]
    judged = explain(findings, list(rules.values()))
    marked = {f.subject: f.explained_by for f in judged if f.rule_id != "NCCL_BUSBW_LOW"}
    # the socket fallback explains the collective's drop, not a path's (same_subject), and a pass is never marked
    assert marked == {"p alone a->b": None, "nccl all_gather busbw": "NCCL_SOCKET_FALLBACK:nccl", "nccl": None}
    circle = [replace(rules["LINK_DOWN"], explained_by=(Explanation("MTU_MISMATCH"),)),
              replace(rules["MTU_MISMATCH"], explained_by=(Explanation("LINK_DOWN"),))]
    both = explain([_finding("LINK_DOWN", "x"), _finding("MTU_MISMATCH", "y")], circle)
    assert [f.explained_by for f in both] == ["MTU_MISMATCH:y", None]  # the second would close a circle
    assert [(f.rule_id, depth) for f, depth in causes_first(both)] == [("MTU_MISMATCH", 0), ("LINK_DOWN", 1)]

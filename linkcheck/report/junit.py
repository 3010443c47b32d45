"""The JUnit XML report, for CI systems: one testcase per judged subject (rule and subject), and one per acceptance
check in a suite of its own when the bundle holds an acceptance.

GitLab reads `testcase@classname` (shown as the suite), `@name`, `@time` and the *text* of
failure/error/skipped, and drops duplicate names; Jenkins follows junit-4.xsd. So: `classname` is
`linkcheck.<stage>` (the rule's playbook), names are unique, the finding's text is inside the element, and
the values are both `properties` and `system-out`. A warning is a `<failure type="warning">` (it exits 1);
a required rule that could not be judged (inconclusive) is an `<error>`; other skips are `<skipped>`.
"""

from __future__ import annotations

import datetime as dt
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from typing import Any

from linkcheck.accept.text import check_tests, headline, non_standard, non_standard_line
from linkcheck.model import Finding, Status
from linkcheck.outcome import Outcome
from linkcheck.report import acceptance as acc
from linkcheck.report.repair import repair_plan, step_lines, step_title
from linkcheck.report.safe_text import shown
from linkcheck.report.tables import case_names, evidence_lines, stages, verdict_line
from linkcheck.report.timing import Timing, seconds
from linkcheck.values import evidence_value, yes_no

# XML 1.0 cannot hold these even escaped (shown() already made C0/C1 controls visible).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(value: object, *, multiline: bool = False) -> str:
    return _NOT_XML.sub(lambda m: f"\\u{ord(m.group()):04x}", shown(value, multiline=multiline))


def finding_text(finding: Finding) -> str:
    lines = [finding.message, *(f"evidence: {e}" for e in evidence_lines(finding)),
             *(f"fix: {step}" for step in finding.fix)]
    return xml_text("\n".join(lines), multiline=True)


def finding_element(case: ET.Element, finding: Finding) -> str:
    """Adds failure/error/skipped to `case`; returns which one (or 'pass')."""
    if finding.status in (Status.FAIL, Status.WARN):
        kind = "failure"
        ET.SubElement(case, kind, message=xml_text(finding.title),
                      type="error" if finding.status is Status.FAIL else "warning").text = finding_text(finding)
    elif finding.status is Status.SKIP and finding.required:
        kind = "error"
        ET.SubElement(case, kind, message=xml_text(f"inconclusive: {finding.skip_reason}"),
                      type="inconclusive").text = xml_text(f"not judged: {finding.skip_reason}")
    elif finding.status is Status.SKIP:
        kind = "skipped"
        why = xml_text(finding.skip_reason or "")
        ET.SubElement(case, kind, message=why).text = why
    else:
        kind = "pass"
    return kind


def finding_case(suite: ET.Element, finding: Finding, name: str, stage: str, time: float = 0.0) -> str:
    """A finding's testcase, `time` the seconds its measurement ran (report/timing.py)."""
    case = ET.SubElement(suite, "testcase", name=xml_text(name), classname=xml_text(f"linkcheck.{stage}"),
                         time=seconds(time))
    kind = finding_element(case, finding)
    if finding.evidence:
        props = ET.SubElement(case, "properties")
        for ev in finding.evidence:
            ET.SubElement(props, "property", name=xml_text(ev.fact), value=xml_text(evidence_value(ev)[0]))
    out = [f"{finding.status.value} {finding.rule_id} {finding.subject}: {finding.message}",
           *(f"evidence: {e}" for e in evidence_lines(finding)), *(f"fix: {s}" for s in finding.fix)]
    ET.SubElement(case, "system-out").text = xml_text("\n".join(out), multiline=True)
    return kind


MEASURED_STAGES = ("throughput", "nccl")  # the playbooks whose rules judge a traffic run or the NCCL run
_ACCEPT_KIND = {"FAIL": ("failure", "error"), "DEGRADED": ("failure", "warning"),
                "INCONCLUSIVE": ("error", "inconclusive")}


def _acceptance_case(suite: ET.Element, check: dict[str, Any], name: str, labels: dict[str, str],
                     time: float) -> str:
    """One testcase per acceptance check: a FAIL or DEGRADED is a failure, INCONCLUSIVE an error, each carrying
    the measured values, the threshold and the margin, and the seconds its runs took (`time`)."""
    case = ET.SubElement(suite, "testcase", name=xml_text(name),
                         classname=xml_text(f"linkcheck.acceptance.{check.get('id')}"), time=seconds(time))
    status = str(check.get("status"))
    line = acc.summary(check)
    kind = "pass"
    if status in _ACCEPT_KIND:
        kind, type_ = _ACCEPT_KIND[status]
        ET.SubElement(case, kind, message=xml_text(f"{status} {name}: {line}"), type=type_).text = xml_text(
            "\n".join([line, *(f"source: {s}" for s in acc.sources(check))]), multiline=True)
    props = ET.SubElement(case, "properties")
    for key, value in (("status", status), ("min", acc.statistic(check, "min")),
                       ("median", acc.statistic(check, "median")), ("max", acc.statistic(check, "max")),
                       ("threshold", acc.threshold(check)), ("margin", acc.margin(check)),
                       *(("source", s) for s in acc.sources(check)), *labels.items()):
        if value:
            ET.SubElement(props, "property", name=key, value=xml_text(value))
    ET.SubElement(case, "system-out").text = xml_text(f"{status} {name}: {line}", multiline=True)
    return kind


def _standard_case(suite: ET.Element, doc: dict[str, Any], weaker: list[str] | None) -> str:
    """The testcase `standard`: passed when the run was the standard acceptance, skipped when it was weaker
    (shorter -D, fewer repetitions, a looser profile), so that a NON-STANDARD run is never an all-green gate while
    its verdict and exit code stay the acceptance's; a record older than the comparison is skipped too (unknown)."""
    case = ET.SubElement(suite, "testcase", name="standard", classname="linkcheck.acceptance.standard", time="0")
    if weaker is None and isinstance(doc.get("standard"), dict):
        return "pass"
    why = non_standard_line(doc) or "the record does not say whether the run was the standard acceptance"
    ET.SubElement(case, "skipped", message=xml_text(why)).text = xml_text(why)
    return "skipped"


def acceptance_suite(root: ET.Element, doc: dict[str, Any] | None,
                     tested: Callable[[dict[str, Any]], str], timing: Timing | None = None) -> list[str]:
    """The bundle's acceptance (a pair's or a cluster's) as its own suite, so that CI gates on each check: a testcase
    per check (a cluster's names its test and pass in its properties), how it was tested (`tested`) among the
    suite's properties, and first the testcase `standard` (skipped for a NON-STANDARD run); one error when the record
    is not shown; [] when there is none. Each check's testcase carries the seconds its runs took in the bundle
    (`timing`; 0 without it), the suite their sum."""
    if doc is None:
        return []
    suite = ET.SubElement(root, "testsuite", name="linkcheck.acceptance", timestamp=timestamp(), time="0")
    if "problem" in doc:
        case = ET.SubElement(suite, "testcase", name="acceptance", classname="linkcheck.acceptance", time="0")
        problem = xml_text(doc["problem"])
        ET.SubElement(case, "error", message=problem, type="inconclusive").text = problem
        kinds = ["error"]
    else:
        profile = doc.get("profile") or {}
        props = ET.SubElement(suite, "properties")
        weaker = non_standard(doc)
        for name, value in (("verdict", doc.get("verdict")), ("exit_code", doc.get("exit_code")),
                            ("profile", profile.get("name")), ("profile_sha256", profile.get("sha256")),
                            ("test", tested(doc)), ("non_standard", yes_no(weaker is not None)),
                            *(("non_standard_difference", d) for d in weaker or [])):
            ET.SubElement(props, "property", name=name, value=xml_text("" if value is None else value))
        kinds = [_standard_case(suite, doc, weaker)]
        times = [timing.check(c) if timing else 0.0 for c in acc.checks(doc)]
        kinds += [_acceptance_case(suite, c, n, acc.series_labels(doc, t), s) for c, n, t, s in
                  zip(acc.checks(doc), acc.case_names(doc), check_tests(doc), times, strict=True)]
        suite.set("time", seconds(sum(times)))
        # GitLab shows no property: the suite's output says it too.
        ET.SubElement(suite, "system-out").text = xml_text("\n".join(
            line for line in (headline(doc), non_standard_line(doc)) if line), multiline=True)
    tally(suite, kinds)
    return kinds


def _repair_suite(root: ET.Element, outcome: Outcome) -> list[str]:
    """The bundle's repair plan as a suite of its own: a skipped testcase per planned step (planned, not applied),
    its commands and diff in the case's output; [] when there is no plan."""
    plan, problem = repair_plan(outcome)
    if plan is None and problem is None:
        return []
    suite = ET.SubElement(root, "testsuite", name="linkcheck.repair", timestamp=timestamp(), time="0")
    kinds = []
    if plan is None:
        case = ET.SubElement(suite, "testcase", name="repair", classname="linkcheck.repair", time="0")
        ET.SubElement(case, "error", message=xml_text(problem or ""), type="not shown").text = xml_text(problem or "")
        kinds.append("error")
    else:
        for i, step in enumerate(plan.steps, 1):
            case = ET.SubElement(suite, "testcase", name=xml_text(step_title(i, step)),
                                 classname=xml_text(f"linkcheck.repair.{step.finding.split(':', 1)[0]}"), time="0")
            ET.SubElement(case, "skipped", message="planned, not applied")
            ET.SubElement(case, "system-out").text = xml_text("\n".join(step_lines(step)), multiline=True)
            kinds.append("skipped")
    tally(suite, kinds)
    return kinds


def tally(element: ET.Element, kinds: list[str]) -> None:
    tallies = {"tests": len(kinds), "failures": kinds.count("failure"), "errors": kinds.count("error"),
               "skipped": kinds.count("skipped")}
    for key, count in tallies.items():
        element.set(key, str(count))


def timestamp() -> str:
    # junit-4.xsd's timestamp has no zone designator: it is UTC here, as every linkcheck time.
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")


def render_junit(outcome: Outcome) -> str:
    diagnosis = outcome.diagnosis
    root = ET.Element("testsuites", name="linkcheck")
    suite = ET.SubElement(root, "testsuite", name="linkcheck", timestamp=timestamp(), time="0")
    props = ET.SubElement(suite, "properties")
    decided = acc.bundle_verdict(outcome)  # the acceptance's, where the bundle holds one
    pairs = [("verdict", decided.word), ("exit_code", str(decided.exit_code)),
             ("diagnosis_verdict", diagnosis.verdict.value), ("diagnosis_exit_code", str(int(diagnosis.exit_code))),
             ("tool_version", outcome.bundle.tool_version), ("bundle", str(outcome.bundle.path or "")),
             ("bundle_created", outcome.bundle.created), ("node.a", outcome.link.a.hostname or "?"),
             ("node.b", outcome.link.b.hostname or "?")]
    for name, value in pairs:
        ET.SubElement(props, "property", name=name, value=xml_text(value))
    stage_of = stages(outcome)
    timing = Timing(outcome.bundle.captures)
    needs = {rule.id: rule.needs for rule in outcome.rules}
    # Only a rule that judges the traffic runs measured for as long as they ran; the others read files: 0 s.
    times = [timing.finding(f) if any(n.startswith("bench_") for n in needs.get(f.rule_id, ()))
             or stage_of.get(f.rule_id) in MEASURED_STAGES else 0.0 for f in diagnosis.findings]
    kinds = [finding_case(suite, f, name, stage_of.get(f.rule_id, "rules"), time)
             for f, name, time in zip(diagnosis.findings, case_names(diagnosis.findings), times, strict=True)]
    suite.set("time", seconds(sum(times)))
    tally(suite, kinds)
    said = [decided.line, *([verdict_line(outcome)] if decided.by_acceptance else [])]
    ET.SubElement(suite, "system-out").text = xml_text("\n".join(said), multiline=True)
    if diagnosis.notes:
        ET.SubElement(suite, "system-err").text = xml_text("\n".join(diagnosis.notes), multiline=True)
    accepted = acceptance_suite(root, acc.acceptance(outcome), lambda doc: acc.tested(outcome, doc), timing)
    tally(root, kinds + accepted + _repair_suite(root, outcome))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"

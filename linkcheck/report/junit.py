"""The JUnit XML report, for CI systems: one testcase per judged subject (rule and subject), and one per acceptance
check in a suite of its own when the bundle holds an acceptance.

GitLab reads `testcase@classname` (shown as the suite), `@name`, `@time` and the *text* of
failure/error/skipped, and drops duplicate names; Jenkins follows junit-4.xsd. So: `classname` is
`linkcheck.<stage>` (the rule's playbook), names are unique, the finding's text is inside the element, and
the values are both `properties` and `system-out`. A warning is a `<failure type="warning">` (it exits 1);
a required rule that could not be judged (inconclusive) is an `<error>`; other skips are `<skipped>`.

A cluster's report has a suite per kind of subject, so a pipeline gates on each cable and each node:

- `linkcheck.cluster`: the cluster-wide rules (layout, cabling, switch ports, MTU, ...), one testcase per finding as
  the pair's report has, and the run's verdict, exit code and layout as the suite's properties;
- `linkcheck.cluster.nodes`: one testcase per node, judged by the cluster rules whose subject is that node
  (NODE_SLOW_WITH_EVERY_PARTNER, TRANSIT_FORWARDING_OFF, ...): a failure when one fails, an error when the node
  could not be inspected;
- `linkcheck.cluster.tests`: one testcase per cable test (a cable, or two nodes through the switch, either pass):
  a failure when slow, an error when inconclusive, skipped when the run was interrupted before it.

The XML kinds mean the same in both, and the bundle's acceptance is the same suite in both.
"""

from __future__ import annotations

import datetime as dt
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from typing import Any

from linkcheck import __version__
from linkcheck.accept.text import check_tests, headline, non_standard, non_standard_line
from linkcheck.model import Finding, Status, Verdict
from linkcheck.outcome import CableResult, ClusterCheck, Outcome
from linkcheck.report import acceptance as acc
from linkcheck.report.judged import Judged
from linkcheck.report.repair import repair_plan, step_lines, step_title
from linkcheck.report.safe_text import shown
from linkcheck.report.tables import (
    DIRECTIONS,
    case_names,
    direction_gbps,
    evidence_lines,
    named_direction,
    named_rules,
    stages,
    unique,
    verdict_line,
)
from linkcheck.report.timing import Timing, seconds
from linkcheck.report.verdict import BundleVerdict
from linkcheck.values import evidence_value, gbps, yes_no

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


def _verdict_out(suite: ET.Element, decided: BundleVerdict, own: str) -> None:
    """The suite's output (GitLab shows no property): the bundle's verdict line where an acceptance decided it, then
    the diagnosis's own line (a pair's, or a cluster's check's with its layout)."""
    said = [*([decided.line] if decided.by_acceptance else []), own]
    ET.SubElement(suite, "system-out").text = xml_text("\n".join(said), multiline=True)


def tally(element: ET.Element, kinds: list[str]) -> None:
    tallies = {"tests": len(kinds), "failures": kinds.count("failure"), "errors": kinds.count("error"),
               "skipped": kinds.count("skipped")}
    for key, count in tallies.items():
        element.set(key, str(count))


def timestamp() -> str:
    # junit-4.xsd's timestamp has no zone designator: it is UTC here, as every linkcheck time.
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")


def render_junit(judged: Judged) -> str:
    """A pair's or a cluster's report as JUnit XML, the bundle's acceptance a suite of its own (ends with a
    newline)."""
    if isinstance(judged, ClusterCheck):
        root = ET.Element("testsuites", name="linkcheck.cluster")
        kinds = _cluster(root, judged) + acceptance_suite(root, judged.acceptance, acc.parameters)
    else:
        root = ET.Element("testsuites", name="linkcheck")
        timing = Timing(judged.bundle.captures)
        kinds = _pair(root, judged, timing)
        kinds += acceptance_suite(root, acc.acceptance(judged), lambda doc: acc.tested(judged, doc), timing)
        kinds += _repair_suite(root, judged)
    tally(root, kinds)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _pair(root: ET.Element, outcome: Outcome, timing: Timing) -> list[str]:
    """The pair's suite: a testcase per judged subject, the verdicts and nodes as its properties."""
    diagnosis = outcome.diagnosis
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
    needs = {rule.id: rule.needs for rule in outcome.rules}
    # Only a rule that judges the traffic runs measured for as long as they ran; the others read files: 0 s.
    times = [timing.finding(f) if any(n.startswith("bench_") for n in needs.get(f.rule_id, ()))
             or stage_of.get(f.rule_id) in MEASURED_STAGES else 0.0 for f in diagnosis.findings]
    kinds = [finding_case(suite, f, name, stage_of.get(f.rule_id, "rules"), time)
             for f, name, time in zip(diagnosis.findings, case_names(diagnosis.findings), times, strict=True)]
    suite.set("time", seconds(sum(times)))
    tally(suite, kinds)
    _verdict_out(suite, decided, verdict_line(outcome))
    if diagnosis.notes:
        ET.SubElement(suite, "system-err").text = xml_text("\n".join(diagnosis.notes), multiline=True)
    return kinds


def _cluster(root: ET.Element, check: ClusterCheck) -> list[str]:
    """The cluster's suites: its rules, each node, each test."""
    nodes = {_node_subject(n) for n in check.view.topology.nodes}
    return _cluster_suite(root, check, nodes) + _nodes_suite(root, check) + _tests_suite(root, check)


_PROBLEMS = (Status.FAIL, Status.WARN)


def _node_subject(name: str) -> str:
    return f"node {name}"


def _lines(findings: list[Finding]) -> list[str]:
    return [f"{f.status.value} {f.rule_id} {f.subject}: {f.skip_reason or f.message}" for f in findings]


def _cluster_suite(root: ET.Element, check: ClusterCheck, nodes: set[str]) -> list[str]:
    view = check.view
    topo = view.topology
    suite = ET.SubElement(root, "testsuite", name="linkcheck.cluster", timestamp=timestamp(), time="0")
    props = ET.SubElement(suite, "properties")
    decided = acc.cluster_verdict(check)  # the acceptance's, where the bundle holds one
    for name, value in (("verdict", decided.word), ("exit_code", str(decided.exit_code)),
                        ("check_verdict", check.verdict.value),
                        ("cluster_verdict", view.diagnosis.verdict.value), ("tool_version", __version__),
                        ("layout", topo.layout), ("supported", yes_no(topo.supported)),
                        ("nodes", ", ".join(topo.nodes)), ("interrupted", yes_no(check.interrupted)),
                        *(("flag", f"{flag.kind} {flag.subject}: {flag.message}") for flag in topo.flags)):
        ET.SubElement(props, "property", name=name, value=xml_text(value))
    wide = tuple(f for f in view.diagnosis.findings if f.subject not in nodes)
    kinds = [finding_case(suite, f, name, "cluster") for f, name in zip(wide, case_names(wide), strict=True)]
    tally(suite, kinds)
    _verdict_out(suite, decided, f"verdict: {check.verdict.value} (exit {int(check.exit_code)}), layout {topo.layout}, "
                f"{len(topo.nodes)} nodes: {', '.join(topo.nodes)}")
    errors = [*([f"traffic: {check.traffic_error}"] if check.traffic_error else []),
              *(f"node {n} not inspected: {why}" for n, why in sorted(view.errors.items())), *view.diagnosis.notes]
    if errors:
        ET.SubElement(suite, "system-err").text = xml_text("\n".join(errors), multiline=True)
    return kinds


def _node_case(suite: ET.Element, check: ClusterCheck, name: str) -> str:
    """One node as the cluster's rules judged it: failed, warned, not judged or passed, every finding in its text."""
    findings = [f for f in check.view.diagnosis.findings if f.subject == _node_subject(name)]
    case = ET.SubElement(suite, "testcase", name=xml_text(_node_subject(name)), classname="linkcheck.cluster.node",
                         time="0")
    failed = [f for f in findings if f.status is Status.FAIL]
    warned = [f for f in findings if f.status is Status.WARN]
    unjudged = [f for f in findings if f.status is Status.SKIP and f.required]
    lost = check.view.errors.get(name)
    kind = "pass"
    if failed or warned:
        kind = "failure"
        worst = failed or warned
        ET.SubElement(case, kind, message=xml_text(f"{', '.join(f.rule_id for f in worst)}: {worst[0].title}"),
                      type="error" if failed else "warning").text = xml_text("\n\n".join(
                          f"{f.rule_id}: {finding_text(f)}" for f in failed + warned), multiline=True)
    elif lost is not None or unjudged:
        kind = "error"
        why = f"not inspected: {lost}" if lost is not None else "; ".join(
            f"{f.rule_id}: {f.skip_reason}" for f in unjudged)
        ET.SubElement(case, kind, message=xml_text(f"inconclusive: {why}"), type="inconclusive").text = xml_text(
            f"not judged: {why}")
    if findings:
        props = ET.SubElement(case, "properties")
        for f in findings:
            ET.SubElement(props, "property", name=xml_text(f.rule_id), value=f.status.value)
        ET.SubElement(case, "system-out").text = xml_text("\n".join(_lines(findings)), multiline=True)
    return kind


def _nodes_suite(root: ET.Element, check: ClusterCheck) -> list[str]:
    suite = ET.SubElement(root, "testsuite", name="linkcheck.cluster.nodes", timestamp=timestamp(), time="0")
    kinds = [_node_case(suite, check, name) for name in check.view.topology.nodes]
    tally(suite, kinds)
    return kinds


def _test_name(result: CableResult) -> str:
    test = result.test
    return f"test {test.label} round {test.round}" + (" (2nd pass)" if test.pass_no == 2 else "")


def _rates(result: CableResult) -> str:
    """`a->b 196.02 Gb/s, b->a 26.60 Gb/s, lowest run 13.30 Gb/s`, the directions named by their nodes."""
    both = ", ".join(f"{named_direction(result, d)} {gbps(direction_gbps(result, d))}" for d in DIRECTIONS)
    return f"{both}, lowest run {gbps(result.lowest_gbps)}"


def _test_case(suite: ET.Element, check: ClusterCheck, result: CableResult, name: str, time: float) -> str:
    """One test: a failure when slow (the rules it named, its rates, each finding with its fix), a warning when a
    throughput rule warned, an error when it could not be judged, skipped when the run stopped before it; `time`
    the seconds its runs took."""
    test = result.test
    case = ET.SubElement(suite, "testcase", name=xml_text(name), classname="linkcheck.cluster.test",
                         time=seconds(time))
    problems = [f for f in result.findings if f.status in _PROBLEMS]
    named = named_rules(result)
    cause = check.node_cause(result)
    because = [f"explained by {cause.rule_id} ({cause.subject}): the fix is the node's"] if cause else []
    body = "\n\n".join([*because, *(f"{f.rule_id} {f.subject}: {finding_text(f)}" for f in problems)])
    kind = "pass"
    if result.verdict in (Verdict.FAIL, Verdict.WARN):
        kind = "failure"
        ET.SubElement(case, kind, message=xml_text(f"{result.state}: {named or 'slow'} ({_rates(result)})"),
                      type="error" if result.verdict is Verdict.FAIL else "warning").text = xml_text(body,
                                                                                                   multiline=True)
    elif result.verdict is Verdict.INCONCLUSIVE and check.interrupted and not result.link.bench.rdma:
        kind = "skipped"
        why = result.problem or "not run: the run was interrupted"
        ET.SubElement(case, kind, message=xml_text(why)).text = xml_text(why)
    elif result.verdict is Verdict.INCONCLUSIVE:
        kind = "error"
        why = result.problem or "; ".join(f"{f.rule_id}: {f.skip_reason}" for f in result.findings
                                          if f.status is Status.SKIP) or "not judged"
        ET.SubElement(case, kind, message=xml_text(f"inconclusive: {why}"), type="inconclusive").text = xml_text(
            "\n\n".join([f"not judged: {why}", *([body] if body else [])]), multiline=True)
    props = ET.SubElement(case, "properties")
    for key, value in (("a", test.a), ("b", test.b), ("round", test.round), ("pass", test.pass_no),
                       ("switched", yes_no(test.switched)), ("state", result.state), ("verdict", result.verdict.value),
                       *((named_direction(result, d), gbps(direction_gbps(result, d))) for d in DIRECTIONS),
                       ("lowest", gbps(result.lowest_gbps))):
        ET.SubElement(props, "property", name=xml_text(key), value=xml_text(value))
    runs = [f"{named_direction(result, r.direction)} {r.mode} {r.path_key} ({r.device or '?'}): "
            f"{gbps(r.gbps)}{f' ({r.problem})' if r.problem else ''}" for r in result.link.bench.rdma]
    ET.SubElement(case, "system-out").text = xml_text("\n".join(
        [f"{result.state} {test.label}: {_rates(result)}", *runs, *_lines(list(result.findings))]), multiline=True)
    return kind


def _tests_suite(root: ET.Element, check: ClusterCheck) -> list[str]:
    suite = ET.SubElement(root, "testsuite", name="linkcheck.cluster.tests", timestamp=timestamp(), time="0")
    names = unique([_test_name(r) for r in check.cables])
    # Each test's seconds from the durations its own runs recorded (report/timing.py, as a pair's testcases).
    times = [Timing(r.captures).total() for r in check.cables]
    kinds = [_test_case(suite, check, r, name, time) for r, name, time in zip(check.cables, names, times, strict=True)]
    suite.set("time", seconds(sum(times)))
    tally(suite, kinds)
    return kinds

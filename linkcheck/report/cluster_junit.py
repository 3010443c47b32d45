"""A cluster check as JUnit XML, for CI: a suite per kind of subject, so a pipeline gates on each cable and each node.

- `linkcheck.cluster`: the cluster-wide rules (layout, cabling, switch ports, MTU, ...), one testcase per finding as
  the pair's report has, and the run's verdict, exit code and layout as the suite's properties;
- `linkcheck.cluster.nodes`: one testcase per node, judged by the cluster rules whose subject is that node
  (NODE_SLOW_WITH_EVERY_PARTNER, TRANSIT_FORWARDING_OFF, ...): a failure when one fails, an error when the node
  could not be inspected;
- `linkcheck.cluster.tests`: one testcase per cable test (a cable, or two nodes through the switch, either pass):
  a failure when slow, an error when inconclusive, skipped when the run was interrupted before it.

The XML kinds mean what they mean in the pair's report (report/junit.py): a failure `type="error"` fails, a
`type="warning"` warns (exit 1), an `<error type="inconclusive">` could not be judged. The findings are the
element's text, since GitLab shows only that; node text goes through the pair's `xml_text`, so it stays text.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from linkcheck import __version__
from linkcheck.model import Finding, Status, Verdict
from linkcheck.outcome import CableResult, ClusterCheck
from linkcheck.report import acceptance as acc
from linkcheck.report.cluster import direction_gbps, named_direction
from linkcheck.report.junit import acceptance_suite, finding_case, finding_text, tally, timestamp, xml_text
from linkcheck.report.tables import case_names
from linkcheck.report.timing import Timing, seconds
from linkcheck.values import gbps, yes_no

_PROBLEMS = (Status.FAIL, Status.WARN)
_DIRECTIONS = ("a->b", "b->a")


def _node_subject(name: str) -> str:
    return f"node {name}"


def _unique(names: list[str]) -> list[str]:
    """Each name once (`#2`, ...): GitLab drops a testcase whose name repeats."""
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name} #{seen[name]}")
    return out


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
    ET.SubElement(suite, "system-out").text = xml_text(
        (f"{decided.line}\n" if decided.by_acceptance else "") +
        f"verdict: {check.verdict.value} (exit {int(check.exit_code)}), layout {topo.layout}, "
        f"{len(topo.nodes)} nodes: {', '.join(topo.nodes)}", multiline=True)
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
    both = ", ".join(f"{named_direction(result, d)} {gbps(direction_gbps(result, d))}" for d in _DIRECTIONS)
    return f"{both}, lowest run {gbps(result.lowest_gbps)}"


def _test_case(suite: ET.Element, check: ClusterCheck, result: CableResult, name: str, time: float) -> str:
    """One test: a failure when slow (the rules it named, its rates, each finding with its fix), a warning when a
    throughput rule warned, an error when it could not be judged, skipped when the run stopped before it; `time`
    the seconds its runs took."""
    test = result.test
    case = ET.SubElement(suite, "testcase", name=xml_text(name), classname="linkcheck.cluster.test",
                         time=seconds(time))
    problems = [f for f in result.findings if f.status in _PROBLEMS]
    named = ", ".join(dict.fromkeys(f.rule_id for f in problems))
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
                       *((named_direction(result, d), gbps(direction_gbps(result, d))) for d in _DIRECTIONS),
                       ("lowest", gbps(result.lowest_gbps))):
        ET.SubElement(props, "property", name=xml_text(key), value=xml_text(value))
    runs = [f"{named_direction(result, r.direction)} {r.mode} {r.path_key} ({r.device or '?'}): "
            f"{gbps(r.gbps)}{f' ({r.problem})' if r.problem else ''}" for r in result.link.bench.rdma]
    ET.SubElement(case, "system-out").text = xml_text("\n".join(
        [f"{result.state} {test.label}: {_rates(result)}", *runs, *_lines(list(result.findings))]), multiline=True)
    return kind


def _tests_suite(root: ET.Element, check: ClusterCheck) -> list[str]:
    suite = ET.SubElement(root, "testsuite", name="linkcheck.cluster.tests", timestamp=timestamp(), time="0")
    names = _unique([_test_name(r) for r in check.cables])
    # Each test's seconds from the durations its own runs recorded (report/timing.py, as a pair's testcases).
    times = [Timing(r.captures).total() for r in check.cables]
    kinds = [_test_case(suite, check, r, name, time) for r, name, time in zip(check.cables, names, times, strict=True)]
    suite.set("time", seconds(sum(times)))
    tally(suite, kinds)
    return kinds


def check_junit(check: ClusterCheck) -> str:
    """The cluster check as JUnit XML: the cluster's rules, each node, each test, and the bundle's acceptance as the
    pair's suite (ends with a newline)."""
    root = ET.Element("testsuites", name="linkcheck.cluster")
    nodes = {_node_subject(n) for n in check.view.topology.nodes}
    kinds = _cluster_suite(root, check, nodes) + _nodes_suite(root, check) + _tests_suite(root, check)
    tally(root, kinds + acceptance_suite(root, check.acceptance, acc.parameters))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"

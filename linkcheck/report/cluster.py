"""A cluster for a person or a program: the topology view (`linkcheck topology`) and the check's per-cable table and
N x N matrix (`linkcheck check` over a cluster), as text, JSON and Markdown. Text from the nodes (hostnames,
interface names) is data: shown, never interpreted."""

from __future__ import annotations

import json
from typing import Any

from linkcheck.accept.text import (
    TEST_HEADER,
    cluster_acceptance_text,
    cluster_checks,
    layout_line,
    per_test_rows,
    reasons,
)
from linkcheck.cluster.topology import TwinPath
from linkcheck.model import Finding, Status
from linkcheck.outcome import CableResult, ClusterCheck, ClusterView
from linkcheck.records import plain
from linkcheck.report import acceptance as acc
from linkcheck.report.markdown import acceptance_section, acceptance_table, bullets, md, summary_section, table
from linkcheck.report.safe_text import shown
from linkcheck.report.summary import summary_document, summary_text
from linkcheck.strict_json import dumps
from linkcheck.values import aligned, byte_size, gbps, number


def view_json(view: ClusterView) -> str:
    """The view as one JSON document: the nodes, then the topology (layout, supported, cables with their twin
    paths, segments, flags), the schedule's rounds, the verdict and every finding of the cluster's rules."""
    nodes = [{"name": h.name, "target": str(h.target), "origin": h.origin, "error": view.errors.get(h.name)}
             for h in view.hosts]
    topology = plain(view.topology, properties=True)
    topology.pop("nodes")
    return dumps({"nodes": nodes, **topology, "schedule": plain(view.schedule),
                  "verdict": view.diagnosis.verdict.value,
                  "findings": [f.to_dict() for f in view.diagnosis.findings]}, indent=2)


def _confirmed(path: TwinPath) -> str:
    """What else than the addressing says the twin path is there: the neighbour tables, LLDP."""
    by = [what for what, yes in (("neighbour MAC", path.neighbour_confirmed), ("LLDP", path.lldp_confirmed)) if yes]
    return f"  ({' and '.join(by)} confirmed)" if by else ""


def view_text(view: ClusterView, show_all: bool = False) -> str:
    """The view for a person: the layout, each cable and its twin paths, each switch segment, flags, rounds, then
    each finding that is not a pass (with its fix; with `show_all` the passes too), the notes and the verdict."""
    topo = view.topology
    lines = [f"layout: {topo.layout} ({len(topo.nodes)} nodes; "
             f"{topo.standing})"]
    lines += [f"node {name}: not inspected: {reason}" for name, reason in sorted(view.errors.items())]
    for cable in topo.cables:
        lines.append(f"cable {cable.key}")
        lines += [f"  {p.key}  {p.subnet}{_confirmed(p)}" for p in cable.paths]
    for segment in topo.segments:
        through = f" (LLDP: {', '.join(segment.switches)})" if segment.switches else ""
        lines.append(f"switch segment {segment.subnet}: {', '.join(e.label for e in segment.endpoints)}{through}")
    lines += [f"{flag.kind}: {flag.message}" for flag in topo.flags]
    for r in view.schedule.rounds:
        idle = f"  (idle: {', '.join(r.idle)})" if r.idle else ""
        lines.append(f"round {r.number}: {'; '.join(m.label for m in r.matches)}{idle}")
    unread: dict[str, int] = {}
    for finding in view.diagnosis.findings:
        if finding.status is Status.PASS and not show_all:
            continue
        node = finding.subject.removeprefix("node ")
        if finding.status is Status.SKIP and node in view.errors:
            unread[node] = unread.get(node, 0) + 1  # its one "not inspected" line above says why
            continue
        lines.append(f"{finding.status.value.upper()} {finding.rule_id} ({finding.subject}): "
                     f"{finding.skip_reason or finding.message}")
        lines += [f"  fix: {step}" for step in finding.fix]
    lines += [f"SKIP node {node}: {count} rule(s) not judged: the node was not inspected (above)"
              for node, count in unread.items()]
    lines += [f"note: {note}" for note in view.diagnosis.notes]
    lines.append(f"verdict: {view.diagnosis.verdict.value}")
    return "\n".join(shown(line) for line in lines)  # one line each, whatever a node's text holds


def named_direction(result: CableResult, direction: str) -> str:
    """A test's direction named by its nodes: `a->b` of the pair view is `spark-1->spark-2` here."""
    a, b = result.test.a, result.test.b
    return f"{a}->{b}" if direction == "a->b" else f"{b}->{a}"


def direction_gbps(result: CableResult, direction: str) -> float | None:
    """Gb/s one direction of a test carried: both twins at once when it ran them so, else its best path alone."""
    bench = result.link.bench
    both = bench.totals("concurrent").get(direction)
    if both is not None:
        return both
    alone = [r.gbps for r in bench.rdma if r.direction == direction and r.gbps is not None]
    return max(alone) if alone else None


def matrix(check: ClusterCheck) -> dict[str, dict[str, float | None]]:
    """From node -> to node -> Gb/s of the first pass's test between them in that direction (both twins at once,
    else the best path alone); absent where no test joined them. The second pass's rates are in its tests."""
    out: dict[str, dict[str, float | None]] = {n: {} for n in check.view.topology.nodes}
    for result in check.cables:
        if result.test.pass_no != 1 or result.problem is not None and not result.link.bench.rdma:
            continue
        for direction in ("a->b", "b->a"):
            src, dst = named_direction(result, direction).split("->", 1)
            out.setdefault(src, {})[dst] = direction_gbps(result, direction)
    return out


def _cable_rows(check: ClusterCheck) -> list[list[str]]:
    rows = []
    for r in check.cables:
        named = ", ".join(dict.fromkeys(f.rule_id for f in r.findings if f.status in (Status.FAIL, Status.WARN)))
        rows.append([r.test.label, str(r.test.round) + (" (2nd pass)" if r.test.pass_no == 2 else ""),
                     *(gbps(direction_gbps(r, d)) for d in ("a->b", "b->a")), gbps(r.lowest_gbps), r.state,
                     named or (r.problem or "")])
    return rows


_CABLE_HEAD = ["test", "round", "a->b", "b->a", "lowest", "result", "named"]


def _matrix_rows(check: ClusterCheck) -> tuple[list[str], list[list[str]]]:
    nodes = list(check.view.topology.nodes)
    cells = matrix(check)
    rows = [[src, *("-" if src == dst else gbps(cells[src][dst]) if dst in cells.get(src, {}) else ""
                    for dst in nodes)] for src in nodes]
    return ["from \\ to", *nodes], rows


def _finding_lines(check: ClusterCheck, show_all: bool = False) -> list[str]:
    """Per test, each rule that fired once: the paths it fired on, its first message, and its fix, or the cluster
    finding that explains it (a node slow with every partner: the fix is the node's); with `show_all`, each rule
    that passed there too."""
    lines = []
    for r in check.cables:
        fired: dict[str, list[Finding]] = {}
        for f in r.findings:
            if f.status in (Status.FAIL, Status.WARN):
                fired.setdefault(f.rule_id, []).append(f)
        if show_all:
            passed = dict.fromkeys(f.rule_id for f in r.findings if f.status is Status.PASS and f.rule_id not in fired)
            lines += [f"PASS {rule_id} ({r.test.label})" for rule_id in passed]
        cause = check.node_cause(r)
        for rule_id, findings in fired.items():
            first = findings[0]
            where = ", ".join(f.subject for f in findings)
            lines.append(f"{first.status.value.upper()} {rule_id} ({r.test.label}: {where}): {first.message}")
            lines += ([f"  explained by {cause.rule_id} ({cause.subject})"] if cause
                      else [f"  fix: {step}" for step in first.fix])
        if r.problem:
            lines.append(f"INCONCLUSIVE {r.test.label}: {r.problem}")
    return lines


def check_text(check: ClusterCheck, show_all: bool = False) -> str:
    """The cluster check for a person: the topology view, the per-test table (directions named by the pair view's
    ends: a is the first node of the test's label), the N x N matrix, the tests' findings with their fixes (with
    `show_all` the passed ones too), the verdict."""
    lines = view_text(check.view, show_all).splitlines()[:-1]  # its verdict is the cluster rules' alone
    if check.cables:
        lines += ["", "tests (Gb/s, both twins at once; a is the first node named):",
                  *aligned([_CABLE_HEAD, *_cable_rows(check)])]
        head, rows = _matrix_rows(check)
        lines += ["", "matrix (Gb/s from row to column, both twins at once):", *aligned([head, *rows])]
        lines += _finding_lines(check, show_all)
    lines += _nccl_lines(check)
    if check.traffic_error:
        lines.append(f"traffic: {check.traffic_error}")
    lines.append(f"verdict: {check.verdict.value}")
    lines = [shown(line) for line in lines]  # one line each, whatever a node's text holds
    doc = check.acceptance  # the bundle's acceptance after the check
    if doc is not None:
        lines += ["", f"acceptance: {doc['problem']}" if "problem" in doc else
                  cluster_acceptance_text(doc, closing=False)]
    return "\n".join([*lines, "", *summary_text(acc.cluster_summary(check))])  # last: the bundle's one verdict


def _nccl_lines(check: ClusterCheck) -> list[str]:
    """The NCCL run across every node in one line: bus bandwidth at the largest size, and each rank's transport."""
    run = check.facts.nccl
    if run is None:
        return []
    proven = [r.node for r in run.ranks if r.ib_proven]
    what = ("the transport proof, bandwidth not judged" if run.transport_only else
            f"bus bandwidth {number(run.busbw_gbs)} GB/s" if run.busbw_gbs is not None else "no bus bandwidth")
    size = f" up to {byte_size(run.largest_bytes)}" if run.largest_bytes else ""
    ranks = (f"NET/IB proven on {len(proven)} of {len(run.ranks)} ranks"
             + (f"; fell back to sockets: {', '.join(run.fell_back)}" if run.fell_back else ""))
    return ["", f"nccl: all_gather_perf across {len(run.ranks)} nodes{size}: {what}; {ranks}"
            + (f" ({run.problem})" if run.problem else "")]


def check_json(check: ClusterCheck) -> str:
    """The cluster check as one JSON document: the topology view's keys, then `tests` (each test's nodes, round,
    pass, state, per-direction totals, every run and finding), `matrix` and the overall verdict."""
    data = json.loads(view_json(check.view))
    data["cluster_verdict"] = data.pop("verdict")
    data["tests"] = [{
        "label": r.test.label, "a": r.test.a, "b": r.test.b, "round": r.test.round, "pass": r.test.pass_no,
        "switched": r.test.switched, "state": r.state, "verdict": r.verdict.value, "problem": r.problem,
        "lowest_gbps": r.lowest_gbps,
        "totals_gbps": {named_direction(r, d): direction_gbps(r, d) for d in ("a->b", "b->a")},
        "runs": [{**plain(run), "direction": named_direction(r, run.direction)} for run in r.link.bench.rdma],
        "not_run": [plain(n) for n in r.link.bench.not_run],
        "findings": [f.to_dict() for f in r.findings]} for r in check.cables]
    data["matrix"] = matrix(check)
    data["nccl"] = plain(check.facts.nccl, properties=True) if check.facts.nccl is not None else None
    data["traffic_error"] = check.traffic_error
    data["verdict"] = check.verdict.value
    data["acceptance"] = check.acceptance  # the bundle's acceptance.json, {"problem": ...} when not shown, or None
    data["summary"] = summary_document(acc.cluster_summary(check))  # the bundle's verdict, causes, not judged
    return dumps(data, indent=2)


def check_markdown(check: ClusterCheck) -> str:
    """The cluster check as a Markdown document: verdict, layout, the per-test table, the matrix, the findings."""
    topo = check.view.topology
    summary = acc.cluster_summary(check)
    out = [f"# linkcheck cluster check: {summary.verdict_word.upper()}", "", f"**{md(summary.verdict)}**", ""]
    out += [md(summary.diagnosis), ""] if summary.by_acceptance else []
    out += [f"Layout: {md(topo.layout)}, {len(topo.nodes)} nodes ({md(', '.join(topo.nodes))}); "
            f"{md(topo.standing)}.", ""]
    out += summary_section(summary)
    out += acceptance_section(check.acceptance, acc.parameters, _acceptance_markdown)
    for head, rows, title in ((_CABLE_HEAD, _cable_rows(check), "Tests"), (*_matrix_rows(check), "Matrix")):
        if not rows:
            continue
        out += [f"## {title}", "", "| " + " | ".join(md(h) for h in head) + " |",
                "|" + "---|" * len(head), *("| " + " | ".join(md(c) for c in row) + " |" for row in rows), ""]
    findings = [f"- **{f.status.value.upper()} {f.rule_id}** ({md(f.subject)}): {md(f.message)}"
                for f in check.view.diagnosis.findings if f.status in (Status.FAIL, Status.WARN)]
    findings += [f"- {md(line)}" if not line.startswith("  ") else f"  - {md(line.strip())}"
                 for line in _finding_lines(check)]
    nccl = [line for line in _nccl_lines(check) if line]
    if nccl:
        out += ["## NCCL across the nodes", "", md(nccl[0].removeprefix("nccl: ")), ""]
    if findings:
        out += ["## Findings", "", *findings, ""]
    return "\n".join(out)


def _acceptance_markdown(doc: dict[str, Any]) -> list[str]:
    """A cluster's acceptance checks: each test's verdict and lowest rates, the checks that did not pass and the NCCL
    run's (every check is in the JSON report), the findings and notes that count."""
    shown = cluster_checks(doc)
    lines = [md(layout_line(doc)), "", *table(TEST_HEADER, ["---", "---:", "---", "---:", "---:", "---"],
                                              per_test_rows(doc))]
    lines += ["", *acceptance_table(shown)] if shown else []
    passed = len(acc.checks(doc)) - len(shown)
    lines += ["", f"{passed} passing checks of the tests are not listed: `linkcheck report BUNDLE -f json` has every "
              "one (`acceptance.checks`)."] if passed else []
    return lines + bullets(reasons(doc, checks=False))

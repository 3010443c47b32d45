"""The Markdown report, for a support ticket or a pull request: verdict, nodes, traffic, findings with fix; a
cluster's with its layout, the per-cable table and the N x N matrix."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from linkcheck.accept import text as accept_text
from linkcheck.accept.text import (
    HEADER,
    TEST_HEADER,
    cluster_checks,
    headline,
    layout_line,
    marked_column,
    non_standard_line,
    per_test_rows,
    reasons,
    row,
)
from linkcheck.facts.model import NodeFacts
from linkcheck.model import Finding, Status
from linkcheck.outcome import ClusterCheck, Outcome
from linkcheck.report import acceptance as acc
from linkcheck.report.cable_findings import cable_findings
from linkcheck.report.causes import causes_first, new_fixes
from linkcheck.report.fix_lines import shell_lines
from linkcheck.report.judged import Judged
from linkcheck.report.repair import repair_plan, step_lines, step_title
from linkcheck.report.safe_text import shown
from linkcheck.report.summary import Summary, explains_text, grouped, not_judged_text
from linkcheck.report.tables import (
    ADVISE_HINT,
    CABLE_HEADER,
    LATENCY_HEADER,
    TRAFFIC_HEADER,
    LatencyRow,
    cable_rows,
    cited,
    cluster_latency_rows,
    cluster_nccl_text,
    evidence_lines,
    latency_rows,
    matrix_rows,
    nccl_text,
    node_rows,
    not_run_lines,
    shows_matrix,
    source_numbers,
    traffic_rows,
)

# Markup characters (and `|` in tables, `<` for HTML, `&` for entities such as `&lt;`, a leading `#`), and what
# would make a renderer's autolinker (GFM, linkify) turn a node's text into a link: a `:` before `/` or between
# letters (http://, mailto:x), `@` (an email) and a `.` inside a name (www.x.com, x.io). A backslash-escaped
# character renders as itself.
_SPECIAL = re.compile(r"([\\`*_\[\]<>|~&@]|^#|:(?=/)|(?<=\w):(?=\w)|(?<=\w)\.(?=\w))")


def md(value: object) -> str:
    """Node-derived text as literal Markdown: no markup, no HTML, no entity, no autolink; control and bidi
    characters shown as text (`shown`)."""
    return _SPECIAL.sub(r"\\\1", shown(value))


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _nodes(nodes: Sequence[NodeFacts]) -> list[str]:
    """The nodes table: a column per node, a row per twin slot, then the cable and NCCL_IB_HCA."""
    heads, rows = node_rows(nodes)
    lines = ["## Nodes", "", _row(["cage / domain", *map(md, heads)]), _row(["---"] * (len(heads) + 1))]
    lines += [_row([md(slot), *("<br>".join(map(md, cell)) for cell in cells)]) for slot, cells in rows]
    return [*lines, ""]


def _nccl_loaded(outcome: Outcome) -> list[str]:
    """Per node, the libnccl a job loads on the node and in each container read, or why a container was not."""
    rows = []
    for node in (outcome.link.a, outcome.link.b):
        for view in node.nccl_views:
            lib = view.library
            what = ("-" if lib is None else f"{lib.real_path} ({lib.version or '?'}, {lib.origin}, "
                    f"build {lib.build_id or '?'})") if view.state == "read" else view.note or view.state
            rows.append(_row([md(node.name), md(view.where), md(what), md(view.chosen_by or "-")]))
    if not rows:
        return []
    return ["## NCCL loaded", "", _row(["node", "where", "libnccl", "chosen by"]), _row(["---"] * 4), *rows, ""]


def _traffic(outcome: Outcome) -> list[str]:
    """ib_write_bw per path, mode and direction over its repetitions, the threshold beside them (citing its source,
    listed once under the table) and the statistic that missed it in bold; then the NCCL run."""
    link = outcome.link
    lines: list[str] = []
    found = traffic_rows(outcome, acc.acceptance(outcome))
    if found:
        numbers = source_numbers(found)
        lines += ["## Traffic: ib_write_bw (Gb/s)", "", _row(list(TRAFFIC_HEADER)),
                  _row(["---"] * 3 + ["---:"] * 4 + ["---", "---:"])]
        for row in found:
            cells = [md(cell) for cell in row.cells()]
            cells[TRAFFIC_HEADER.index("threshold")] += "".join(f" [\\[{n}\\]](#traffic-threshold-sources)"
                                                                for n in cited(row, numbers))
            if row.missed:
                at = TRAFFIC_HEADER.index(row.missed)
                cells[at] = f"**{cells[at]}**"
            lines.append(_row(cells))
        lines.append("")
        if numbers:
            lines += ["### Traffic threshold sources", "", *(f"{n}. {md(s)}" for s, n in numbers.items()), ""]
        lines += [f"{md(note)}  " for note in not_run_lines(link)] + ([""] if not_run_lines(link) else [])
    nccl = nccl_text(link)
    if nccl:
        lines += ["## NCCL", "", md(nccl), ""]
    if not lines:
        lines = ["## Traffic", "", "No traffic test in this bundle (run `linkcheck check --bench`).", ""]
    return lines


def _latency(rows: list[LatencyRow]) -> list[str]:
    """The latency test's figures, each labelled measured, beside the published healthy figure (none: no section); a
    pair's (`latency_rows`) or a cluster's (`cluster_latency_rows`)."""
    if not rows:
        return []
    lines = ["## Latency", "", _row(list(LATENCY_HEADER)), _row(["---", "---:", "---", "---"])]
    lines += [_row([md(cell) for cell in row]) for row in rows]
    return [*lines, "", ADVISE_HINT, ""]


def _acceptance(outcome: Outcome) -> list[str]:
    """The bundle's acceptance (`linkcheck accept`): verdict, each check against its threshold, why not PASS."""
    return acceptance_section(acc.acceptance(outcome), lambda doc: acc.tested(outcome, doc), _pair_checks)


def table(head: Sequence[str], align: list[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """A table: its header (Markdown of our own), the alignment row, then each row's cells as escaped text."""
    return [_row(list(head)), _row(align), *(_row([md(cell) for cell in row]) for row in rows)]


def acceptance_table(checks: list[dict[str, Any]]) -> list[str]:
    """Checks as accept/text.py's rows, one table row each, the statistic that missed its line in bold."""
    lines = [_row(list(HEADER)), _row(["---"] * 3 + ["---:"] * 4 + ["---", "---:"])]
    for check in checks:
        cells, at = [md(cell) for cell in row(check)], marked_column(check)
        if at is not None:
            cells[at] = f"**{cells[at]}**"
        lines.append(_row(cells))
    return lines


def bullets(lines: list[str]) -> list[str]:
    """A list after a blank line; nothing for none."""
    return ["", *(f"- {md(line)}" for line in lines)] if lines else []


def _pair_checks(doc: dict[str, Any]) -> list[str]:
    return acceptance_table(acc.checks(doc)) + bullets(reasons(doc))


def acceptance_section(doc: dict[str, Any] | None, tested: Callable[[dict[str, Any]], str],
                       checks: Callable[[dict[str, Any]], list[str]]) -> list[str]:
    """The acceptance section of a pair's or a cluster's report: the headline, what the run was weaker in, how it was
    tested (`tested`), the `checks` part, the threshold sources and who was tested; one line when the record is not
    shown; nothing without one."""
    if doc is None:
        return []
    if "problem" in doc:
        return ["## Acceptance", "", md(doc["problem"]), ""]
    lines = ["## Acceptance", "", f"**{md(headline(doc))}**", ""]
    weaker = non_standard_line(doc)
    lines += [f"**{md(weaker)}**", ""] if weaker else []
    lines += [f"Test: {md(tested(doc))}", ""]
    lines += checks(doc)
    sources = {t["source"] for c in doc.get("checks", []) for t in c.get("thresholds", [])}
    lines += ["", "Threshold sources:", "", *(f"- {md(s)}" for s in sorted(sources))]
    evidence = accept_text.evidence_lines(doc)
    lines += ["", "Tested:", *bullets(evidence)] if evidence else []
    return [*lines, ""]


def _repair(outcome: Outcome) -> list[str]:
    """The bundle's repair plan (`linkcheck fix`): each step's commands, file diff and checks in a code block."""
    plan, problem = repair_plan(outcome)
    if plan is None:
        return ["## Repair plan", "", md(problem), ""] if problem else []
    lines = ["## Repair plan", ""]
    if not plan.steps:
        lines += ["Nothing to repair.", ""]
    for i, step in enumerate(plan.steps, 1):
        body = step_lines(step)
        longest = max((len(run) for line in body for run in re.findall("`+", line)), default=0)
        fence = "`" * max(3, longest + 1)
        lines += [f"### {md(step_title(i, step))}", "", fence + "text", *body, fence, ""]
    lines += [f"- not planned: `{n.finding}`: {md(n.reason)}" for n in plan.not_planned]
    return [*lines, ""] if plan.not_planned else lines


def _finding(finding: Finding, depth: int = 0, printed: set[str] | None = None) -> list[str]:
    """A finding (one that another explains one heading level deeper, under its cause), with the fix lines not
    in `printed` yet."""
    lines = [f"{'#' * min(3 + depth, 6)} {finding.status.value.upper()} `{finding.rule_id}` {md(finding.subject)}", ""]
    if finding.explained_by and depth:
        cause, _, subject = finding.explained_by.partition(":")
        lines += [f"Explained by `{cause}` ({md(subject)}), above.", ""]
    lines += [md(finding.title) + ".", "", md(finding.message), ""]
    lines += [f"- evidence: {md(e)}" for e in evidence_lines(finding)]
    steps = new_fixes(finding.fix, set() if printed is None else printed)
    if steps:
        longest = max((len(run) for step in steps for run in re.findall("`+", step)), default=0)
        fence = "`" * max(3, longest + 1)  # longer than any run of backticks in the steps
        lines += ["", "Fix:", "", fence + "sh", *shell_lines(steps), fence]  # prose as `#` comments
    elif finding.fix:
        lines += ["", "Fix: as above."]
    return [*lines, ""]


def summary_section(summary: Summary) -> list[str]:
    """The answer first: what made an acceptance's run weaker, each cause once with its fix (a shell block) and what
    it explains, the acceptance checks no cause explains, what was not judged and why."""
    lines = ["## Summary", ""]
    lines += [f"**{md(summary.non_standard)}**", ""] if summary.non_standard else []
    lines += [f"**{md(summary.count)}**", ""]
    for cause in summary.causes:
        subjects = md(", ".join(cause.subjects))
        lines += [f"- **{cause.status.upper()}** `{cause.rule_id}` {md(cause.title)}, on {subjects}"]
        if cause.explains or cause.checks:
            lines += [f"  - explains: {md(explains_text(cause))}"]
        if cause.fix:
            longest = max((len(run) for step in cause.fix for run in re.findall("`+", step)), default=0)
            fence = "`" * max(3, longest + 1)
            lines += ["", f"  {fence}sh", *(f"  {line}" for line in shell_lines(list(cause.fix))), f"  {fence}", ""]
    if summary.unexplained_checks:
        lines += [f"Acceptance checks not met that no cause explains: {md(grouped(summary.unexplained_checks))}", ""]
    if summary.not_judged:
        lines += ["Not judged:", "", *(f"- {md(not_judged_text(item))}" for item in summary.not_judged), ""]
    return lines


def _head(title: str, summary: Summary) -> list[str]:
    """The report's head: its title, the bundle's one verdict in bold, and beneath it the diagnosis's line where an
    acceptance decided."""
    lines = [f"# {title}", "", f"**{md(summary.verdict)}**", ""]
    return lines + ([md(summary.diagnosis), ""] if summary.by_acceptance else [])


def render_markdown(judged: Judged) -> str:
    """A pair's or a cluster's report as one Markdown document."""
    return "\n".join(_cluster(judged) if isinstance(judged, ClusterCheck) else _pair(judged))


def _pair(outcome: Outcome) -> list[str]:
    diagnosis = outcome.diagnosis
    bundle = outcome.bundle
    summary = acc.pair_summary(outcome)
    lines = _head("linkcheck report", summary)
    lines += [f"- bundle: {md(bundle.path or '?')} (created {md(bundle.created or '?')}, "
              f"linkcheck {md(bundle.tool_version or '?')})", ""]
    lines += summary_section(summary)
    lines += _acceptance(outcome) + _repair(outcome) + _nodes((outcome.link.a, outcome.link.b)) + _nccl_loaded(outcome)
    lines += _traffic(outcome) + _latency(latency_rows(outcome.link))
    problems = [f for f in diagnosis.findings if f.status in (Status.FAIL, Status.WARN)]
    lines += ["## Findings", ""]
    printed: set[str] = set()
    lines += [line for f, depth in causes_first(problems) for line in _finding(f, depth, printed)] or \
        ["No warning or failure.", ""]
    skips = [f for f in diagnosis.findings if f.status is Status.SKIP]
    if skips:
        lines += ["## Not judged", ""]
        lines += [f"- `{f.rule_id}` ({md(f.subject)}){' **required**' if f.required else ''}: {md(f.skip_reason)}"
                  for f in skips]
        lines.append("")
    if diagnosis.notes:
        lines += ["## Notes", "", *(f"- {md(note)}" for note in diagnosis.notes), ""]
    return lines


def _cluster(check: ClusterCheck) -> list[str]:
    """A cluster's report: verdict, layout, the summary, the acceptance, the per-cable table and the matrix, the
    nodes table (as a pair's, a column per node), the NCCL run across the nodes, the latency test's figures, the
    findings."""
    topo = check.view.topology
    summary = acc.cluster_summary(check)
    out = _head(f"linkcheck cluster check: {summary.verdict_word.upper()}", summary)
    out += [f"Layout: {md(topo.layout)}, {len(topo.nodes)} nodes ({md(', '.join(topo.nodes))}); "
            f"{md(topo.standing)}.", ""]
    out += summary_section(summary)
    out += acceptance_section(check.acceptance, acc.parameters, _cluster_checks)
    tables = [(list(CABLE_HEADER), cable_rows(check), "Tests")]
    tables += [(*matrix_rows(check), "Matrix")] if shows_matrix(check) else []
    for head, rows, title in tables:
        if not rows:
            continue
        out += [f"## {title}", "", "| " + " | ".join(md(h) for h in head) + " |",
                "|" + "---|" * len(head), *("| " + " | ".join(md(c) for c in row) + " |" for row in rows), ""]
    out += _nodes(list(check.facts.nodes.values()))
    nccl = cluster_nccl_text(check)
    if nccl:
        out += ["## NCCL across the nodes", "", md(nccl), ""]
    out += _latency(cluster_latency_rows(check))
    return out + _cluster_findings(check) + _test_findings(check)


def _cluster_findings(check: ClusterCheck) -> list[str]:
    """The cluster's own warnings and failures as a pair's are written (evidence, fix), causes first; what was not
    judged and why; the notes."""
    diagnosis = check.view.diagnosis
    problems = [f for f in diagnosis.findings if f.status in (Status.FAIL, Status.WARN)]
    printed: set[str] = set()
    lines = ["## Cluster findings", ""]
    lines += [line for f, depth in causes_first(problems) for line in _finding(f, depth, printed)] or \
        ["No warning or failure.", ""]
    skips = [f for f in diagnosis.findings if f.status is Status.SKIP]
    if skips:
        lines += ["Not judged:", "", *(f"- `{f.rule_id}` ({md(f.subject)}): {md(f.skip_reason)}" for f in skips), ""]
    return lines + [f"- {md(note)}" for note in diagnosis.notes] + ([""] if diagnosis.notes else [])


def _test_findings(check: ClusterCheck) -> list[str]:
    """Each test that warned, failed or was not measured (report/cable_findings.py), its findings one heading level
    below it; where the cluster names one of its nodes slow with every partner, the fix is that node's, above."""
    lines = []
    for part in cable_findings(check):
        lines += [f"### {md(part.label)} ({md(part.round_text)})", ""]
        lines += [f"Inconclusive: {md(part.problem)}", ""] if part.problem else []
        if part.cause is not None:
            lines += [f"Explained by `{part.cause.rule_id}` ({md(part.cause.subject)}), in the cluster findings "
                      "above: the fix is the node's.", ""]
        printed: set[str] = set()
        lines += [line for f, depth in part.findings for line in _finding(f, depth + 1, printed)]
    return ["## Findings per test", "", *lines] if lines else []


def _cluster_checks(doc: dict[str, Any]) -> list[str]:
    """A cluster's acceptance checks: each test's verdict and lowest rates, the checks that did not pass and the NCCL
    run's (every check is in the JSON report), the findings and notes that count."""
    listed = cluster_checks(doc)
    lines = [md(layout_line(doc)), "", *table(TEST_HEADER, ["---", "---:", "---", "---:", "---:", "---"],
                                              per_test_rows(doc))]
    lines += ["", *acceptance_table(listed)] if listed else []
    passed = len(acc.checks(doc)) - len(listed)
    lines += ["", f"{passed} passing checks of the tests are not listed: `linkcheck report BUNDLE -f json` has every "
              "one (`acceptance.checks`)."] if passed else []
    return lines + bullets(reasons(doc, checks=False))

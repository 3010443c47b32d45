"""The HTML report: one self-contained file (inline CSS, inline SVG plots, no script, no remote URL); a cluster's
with its layout and rounds, the N x N matrix as a heatmap and the per-test table.

For the air-gapped machines these pairs live on, nothing is fetched when the page opens. Every string from
the nodes or the bundle is escaped with html.escape. Plots need matplotlib (`pip install linkcheck[html]`);
without it the page has the same tables and says how to get the plots. The heatmap is plain table cells coloured
by CSS classes, so it needs no matplotlib and prints as it shows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from html import escape
from typing import Any

import msgspec
from msgspec.structs import replace

from linkcheck.accept.text import (
    HEADER,
    STATISTICS,
    TEST_HEADER,
    check_tests,
    layout_line,
    missed,
    non_standard_line,
    per_test_rows,
    reasons,
)
from linkcheck.facts.model import NodeFacts
from linkcheck.model import Finding, Status
from linkcheck.outcome import CableResult, ClusterCheck, Outcome
from linkcheck.report import acceptance as acc
from linkcheck.report.cable_findings import cable_findings
from linkcheck.report.causes import causes_first, new_fixes
from linkcheck.report.fix_lines import shell_lines
from linkcheck.report.judged import Judged
from linkcheck.report.published import PUBLISHED_TOTAL_GBPS
from linkcheck.report.repair import repair_plan, step_lines, step_title
from linkcheck.report.safe_text import shown
from linkcheck.report.summary import Summary, explains_text, grouped, not_judged_text
from linkcheck.report.tables import (
    ADVISE_HINT,
    CABLE_HEADER,
    DIRECTIONS,
    LATENCY_HEADER,
    TRAFFIC_HEADER,
    LatencyRow,
    cited,
    cluster_latency_rows,
    direction_gbps,
    evidence_lines,
    latency_rows,
    matrix,
    named_direction,
    named_rules,
    nccl_text,
    node_rows,
    not_run_lines,
    shows_matrix,
    source_numbers,
    stages,
    traffic_rows,
)
from linkcheck.report.verdict import BundleVerdict
from linkcheck.values import gbps, number, plain_number

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:2em auto;max-width:1100px;color:#1d1d1f;
background:#fff;padding:0 1em}
h1{font-size:1.6em;margin-bottom:.2em}h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;margin:.6em 0;font-size:.9em}th,td{border:1px solid #ccc;padding:.3em .6em;
vertical-align:top;text-align:left}th{background:#f2f4f7}td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.total td{font-weight:bold;background:#fafafa}.verdict{display:inline-block;padding:.3em .8em;border-radius:4px;
font-weight:bold;color:#fff}.pass{background:#2e7d32}.warn{background:#b26a00}.fail{background:#c62828}
.inconclusive,.skip{background:#00838f}.finding{border:1px solid #ddd;border-left:6px solid #999;padding:.4em 1em;
margin:.8em 0}.finding.fail{border-left-color:#c62828;background:#fff}.finding.warn{border-left-color:#b26a00;
background:#fff}.tag{color:#fff;padding:0 .4em;border-radius:3px;font-size:.85em}pre{background:#f6f8fa;
padding:.6em;overflow-x:auto}.finding.explained{margin:.6em 0 .4em;border-left-width:4px}
.because{color:#555;font-style:italic}ul.ev{color:#555;font-size:.9em}figure{margin:1em 0}figure svg{max-width:100%;
height:auto}.muted{color:#666}td.src{font-size:.8em;color:#555;max-width:28em}pre.fix .comment{color:#57606a}
.nonstandard{font-weight:bold;color:#b26a00}details.passed{margin:.3em 0}details.passed summary{cursor:pointer}
details.passed summary .rules{color:#666;font-size:.85em}
section.summary{border:1px solid #ccc;border-radius:6px;padding:.2em 1em .6em;margin:.8em 0;background:#fcfcfd}
section.summary h2{margin-top:.4em}.cause{border-left:6px solid #999;padding:.1em .8em;margin:.5em 0}
.cause.cause-fail{border-left-color:#c62828}.cause.cause-warn{border-left-color:#b26a00}.cause p{margin:.3em 0}
td.miss{background:#fdecea;font-weight:bold;color:#b71c1c}ol.sources{font-size:.85em;color:#444}
sup.src a{text-decoration:none}
@media print{body{max-width:none;margin:0;padding:0;font-size:10pt}
pre{white-space:pre-wrap;overflow-wrap:anywhere;overflow:visible}
.finding,figure,tr,details.passed summary{break-inside:avoid}h2,h3{break-after:avoid}thead{display:table-header-group}
details.passed>table{display:none}
details.passed summary{list-style:none;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.verdict,.tag,.finding,.cause,td.miss{-webkit-print-color-adjust:exact;print-color-adjust:exact}
section.summary{break-inside:avoid}}
"""


def h(value: object) -> str:
    return escape(shown(value, multiline=True), quote=True)


def html_table(heads: list[str], rows: list[list[str]], classes: list[str] | None = None) -> str:
    head = "".join(f"<th>{cell}</th>" for cell in heads)
    body = "".join(f"<tr{f' class={chr(34)}{cls}{chr(34)}' if cls else ''}>" + "".join(rows[i]) + "</tr>"
                   for i, cls in enumerate(classes or [""] * len(rows)))
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _nodes(nodes: Sequence[NodeFacts]) -> str:
    """The nodes table: a column per node, a row per twin slot, then the cable and NCCL_IB_HCA."""
    heads, rows = node_rows(nodes)
    cells = [[f"<th>{h(slot)}</th>", *(f"<td>{'<br>'.join(map(h, lines))}</td>" for lines in per_node)]
             for slot, per_node in rows]
    return "<h2>Nodes</h2>" + html_table(["cage / domain", *map(h, heads)], cells)


def _traffic(outcome: Outcome) -> str:
    """ib_write_bw per path, mode and direction over its repetitions, the threshold beside them linking to its
    source (listed once under the table) and the statistic that missed it marked; then the NCCL run."""
    link = outcome.link
    parts = []
    found = traffic_rows(outcome, acc.acceptance(outcome))
    if found:
        numbers = source_numbers(found)
        numeric = {"min", "median", "max", "runs", "margin"}
        cells, classes = [], []
        for row in found:
            refs = "".join(f' <sup class="src"><a href="#traffic-src-{n}">[{n}]</a></sup>' for n in cited(row, numbers))
            tds = []
            for head, cell in zip(TRAFFIC_HEADER, row.cells(), strict=True):
                css = " ".join(c for c in ("num" if head in numeric else "", "miss" if head == row.missed else "") if c)
                tds.append(f"<td{f' class={chr(34)}{css}{chr(34)}' if css else ''}>{h(cell)}"
                           f"{refs if head == 'threshold' else ''}</td>")
            cells.append(tds)
            classes.append("total" if row.mode == "total" else "")
        notes = "".join(f'<li id="traffic-src-{n}">{h(src)}</li>' for src, n in numbers.items())
        parts.append("<h2>Traffic: ib_write_bw (Gb/s)</h2>" + html_table([h(c) for c in TRAFFIC_HEADER], cells, classes)
                     + (f'<p class="muted">Threshold sources:</p><ol class="sources">{notes}</ol>' if notes else ""))
        parts += [f'<p class="muted">{h(note)}</p>' for note in not_run_lines(link)]
    nccl = nccl_text(link)
    if nccl:
        parts.append(f"<h2>NCCL</h2><p>{h(nccl)}</p>")
    return "".join(parts) or '<h2>Traffic</h2><p class="muted">No traffic test in this bundle.</p>'


def _latency(rows: list[LatencyRow]) -> str:
    """The latency test's figures, each labelled measured, beside the published healthy figure (none: nothing); a
    pair's (`latency_rows`) or a cluster's (`cluster_latency_rows`)."""
    if not rows:
        return ""
    cells = [[f"<td>{h(what)}</td>", f'<td class="num">{h(value)}</td>', f"<td>{h(kind)}</td>", f"<td>{h(ref)}</td>"]
             for what, value, kind, ref in rows]
    hint = h(ADVISE_HINT.replace("`", ""))
    return "<h2>Latency</h2>" + html_table(list(LATENCY_HEADER), cells) + f'<p class="muted">{hint}</p>'


_STATUS_CLASS = {"PASS": "pass", "DEGRADED": "warn", "FAIL": "fail", "INCONCLUSIVE": "inconclusive"}


def _acceptance(outcome: Outcome) -> str:
    """The bundle's acceptance, first on the page: verdict, profile and digest, how it was tested, each check."""
    return acceptance_section(acc.acceptance(outcome), lambda doc: acc.tested(outcome, doc),
                              lambda doc: check_table(acc.checks(doc)))


def status_tag(status: object) -> str:
    """An acceptance status (PASS, DEGRADED, FAIL, INCONCLUSIVE) as a coloured tag."""
    return f'<span class="tag {_STATUS_CLASS.get(str(status), "skip")}">{h(status)}</span>'


def check_table(checks: list[dict[str, Any]], key: str = "acc") -> str:
    """Acceptance checks, a row each: status, check, subject, min, median, max and the run count, the threshold beside
    them and the margin against the line that decides the status; the judged value's cell marked where the check
    did not pass. Each threshold's source once under the table, numbered, the threshold cell linking to it (`key`
    keeps the anchors of several tables on one page apart)."""
    sources: dict[str, int] = {}
    rows = []
    for check in checks:
        refs = []
        for src in acc.sources(check):
            number = sources.setdefault(src, len(sources) + 1)
            refs.append(f'<sup class="src"><a href="#{key}-src-{number}">[{number}]</a></sup>')
        miss = missed(check)
        cells = [f'<td class="num{" miss" if n == miss else ""}">{h(acc.statistic(check, n))}</td>'
                 for n in STATISTICS]
        rows.append([f"<td>{status_tag(check.get('status'))}</td>",
                     f"<td><code>{h(check.get('id'))}</code></td>", f"<td>{h(check.get('subject'))}</td>", *cells,
                     f'<td class="num">{h(acc.runs(check))}</td>',
                     f"<td>{h(acc.threshold(check))} {''.join(dict.fromkeys(refs))}</td>",
                     f'<td class="num">{h(acc.margin(check))}</td>'])
    notes = "".join(f'<li id="{key}-src-{n}">{h(src)}</li>' for src, n in sources.items())
    return (html_table(list(HEADER), rows)
            + (f'<p class="muted">Threshold sources:</p><ol class="sources">{notes}</ol>' if notes else ""))


def acceptance_section(doc: dict[str, Any] | None, tested: Callable[[dict[str, Any]], str],
                       checks: Callable[[dict[str, Any]], str]) -> str:
    """The acceptance section of a pair's or a cluster's page: the verdict, what the run was weaker in, the profile
    and its digest, how it was tested (`tested`), then the `checks` part; one line when the record is not shown;
    nothing without one."""
    if doc is None:
        return ""
    if "problem" in doc:
        return f'<h2>Acceptance</h2><p class="muted">{h(doc["problem"])}</p>'
    profile = doc.get("profile") or {}
    verdict = str(doc.get("verdict"))
    weaker = non_standard_line(doc)
    head = (f'<h2>Acceptance</h2><p><span class="verdict {_STATUS_CLASS.get(verdict, "skip")}">'
            f'acceptance: {h(verdict)} exit {h(doc.get("exit_code"))}</span>'
            + (' <span class="verdict warn">NON-STANDARD</span></p>'
               f'<p class="nonstandard">{h(weaker)}</p>' if weaker else "</p>") +
            f'<p>profile <b>{h(profile.get("name") or "?")}</b>, sha256 <code>{h(profile.get("sha256") or "?")}</code>'
            f"</p><p>tested: {h(tested(doc))}</p>")
    return head + checks(doc)


def summary_box(summary: Summary) -> str:
    """The answer first: what made an acceptance's run weaker, each cause once with its fix (only lines a
    shell runs, the prose as `#` comments) and what it explains, then what was not judged and why."""
    out = ['<section class="summary"><h2>Summary</h2>']  # the diagnosis's line is under the badge above
    if summary.non_standard:
        out.append(f'<p class="nonstandard">{h(summary.non_standard)}</p>')
    out.append(f"<p><b>{h(summary.count)}</b></p>")
    for cause in summary.causes:
        lines = [f'<span class="comment">{h(line)}</span>' if line.startswith("#") else h(line)
                 for line in shell_lines(list(cause.fix))]
        out.append(f'<div class="cause cause-{cause.status}"><p><span class="tag {cause.status}">{cause.status.upper()}'
                   f"</span> <code>{h(cause.rule_id)}</code> <b>{h(cause.title)}</b></p>"
                   f'<p class="muted">on {h(", ".join(cause.subjects))}</p>'
                   + (f'<pre class="fix">{chr(10).join(lines)}</pre>' if lines else "")
                   + (f'<p class="muted">explains: {h(explains_text(cause))}</p>' if cause.explains or cause.checks
                      else "") + "</div>")
    if summary.unexplained_checks:
        out.append(f"<p>Acceptance checks not met that no cause explains: {h(grouped(summary.unexplained_checks))}</p>")
    if summary.not_judged:
        out.append("<p>Not judged:</p><ul>" + "".join(f"<li>{h(not_judged_text(item))}</li>"
                                                      for item in summary.not_judged) + "</ul>")
    return "".join(out) + "</section>"


def verdict_header(title: str, decided: BundleVerdict, beneath: str, extra: str = "") -> str:
    """The page's head: its title, the bundle's one verdict as the badge, what stands beneath it (the diagnosis's
    line, where the acceptance decided)."""
    css = _STATUS_CLASS.get(decided.word, decided.verdict.value) if decided.by_acceptance else decided.verdict.value
    return (f'<h1>{h(title)}</h1><p><span class="verdict {css}">{h(decided.line)}</span></p>'
            + (f"<p>{h(beneath)}</p>" if decided.by_acceptance and beneath else "") + extra)


def _plots(outcome: Outcome) -> str:
    from linkcheck.report.html_plots import have_matplotlib, svg_plots

    if not have_matplotlib():
        return ('<p class="muted">Plots need matplotlib: <code>pip install linkcheck[html]</code>; '
                "this page has the tables only.</p>")
    figures = "".join(f"<figure>{svg}<figcaption>{h(caption)}</figcaption></figure>"
                      for caption, svg in svg_plots(outcome))
    return f"<h2>Plots</h2>{figures}" if figures else ""


def _finding_opened(finding: Finding, depth: int, printed: set[str]) -> str:
    """A finding's box, left open so what it explains nests inside it; the fix lines not in `printed` yet."""
    status = finding.status.value
    evidence = "".join(f"<li>{h(line)}</li>" for line in evidence_lines(finding))
    steps = new_fixes(finding.fix, printed)
    lines = [f'<span class="comment">{h(line)}</span>' if line.startswith("#") else h(line)
             for line in shell_lines(steps)]  # only lines a shell runs: the prose as `#` comments
    fix = (f"<p>Fix:</p><pre class=\"fix\">{chr(10).join(lines)}</pre>" if steps
           else "<p>Fix: as above.</p>" if finding.fix else "")
    because = ""
    if finding.explained_by and depth:
        cause, _, subject = finding.explained_by.partition(":")
        because = f'<p class="because">Explained by <code>{h(cause)}</code> ({h(subject)}), above.</p>'
    return (f'<div class="finding {status}{" explained" if depth else ""}"><h3><span class="tag {status}">'
            f"{status.upper()}</span> <code>{h(finding.rule_id)}</code> {h(finding.subject)}</h3>{because}"
            f"<p><b>{h(finding.title)}</b></p><p>{h(finding.message)}</p><ul class=\"ev\">{evidence}</ul>{fix}")


def finding_boxes(problems: list[Finding]) -> str:
    """Causes before consequences: a finding another explains sits inside its cause's box, one level in, and
    each distinct fix line is printed once."""
    out: list[str] = []
    printed: set[str] = set()
    open_depths: list[int] = []
    for finding, depth in causes_first(problems):
        while open_depths and open_depths[-1] >= depth:
            out.append("</div>")
            open_depths.pop()
        out.append(_finding_opened(finding, depth, printed))
        open_depths.append(depth)
    return "".join(out) + "</div>" * len(open_depths)


def _passed(passed: list[Finding], stage_of: dict[str, str]) -> str:
    """The rules that passed, one line per playbook (`link-state: 14 passed: LINK_DOWN, ...`); each line opens on
    the page to its table, and stays one line on paper."""
    by_stage: dict[str, list[Finding]] = {}
    for f in passed:
        by_stage.setdefault(stage_of.get(f.rule_id, "rules"), []).append(f)
    out = []
    for stage, found in by_stage.items():
        rules = ", ".join(dict.fromkeys(f.rule_id for f in found))
        table = html_table(["rule", "subject", "message"], [
            [f"<td><code>{h(f.rule_id)}</code></td>", f"<td>{h(f.subject)}</td>", f"<td>{h(f.message)}</td>"]
            for f in found])
        out.append(f'<details class="passed"><summary><b>{h(stage)}</b>: {len(found)} passed '
                   f'<span class="rules">{h(rules)}</span></summary>{table}</details>')
    return "".join(out)


def _problem_boxes(title: str, findings: Sequence[Finding]) -> str:
    """A findings section of a pair's page or a cluster's: the warnings and failures, causes first, or one line
    saying there is none."""
    problems = [f for f in findings if f.status in (Status.FAIL, Status.WARN)]
    return f"<h2>{title}</h2>" + (finding_boxes(problems) or "<p>No warning or failure.</p>")


def _findings(outcome: Outcome) -> str:
    diagnosis = outcome.diagnosis
    out = _problem_boxes("Findings", diagnosis.findings)
    skips = [f for f in diagnosis.findings if f.status is Status.SKIP]
    if skips:
        out += "<h2>Not judged</h2>" + html_table(
            ["rule", "subject", "required", "why"],
            [[f"<td><code>{h(f.rule_id)}</code></td>", f"<td>{h(f.subject)}</td>",
              f"<td>{'yes' if f.required else 'no'}</td>", f"<td>{h(f.skip_reason)}</td>"] for f in skips])
    passed = [f for f in diagnosis.findings if f.status is Status.PASS]
    if passed:
        out += "<h2>Passed</h2>" + _passed(passed, stages(outcome))
    if diagnosis.notes:
        out += "<h2>Notes</h2><ul>" + "".join(f"<li>{h(n)}</li>" for n in diagnosis.notes) + "</ul>"
    return out


def _repair(outcome: Outcome) -> str:
    """The bundle's repair plan (`linkcheck fix`): each step's commands, file diff and checks, escaped."""
    plan, problem = repair_plan(outcome)
    if plan is None:
        return f"<h2>Repair plan</h2><p>{h(problem)}</p>" if problem else ""
    out = "<h2>Repair plan</h2>" + ("" if plan.steps else "<p>Nothing to repair.</p>")
    for i, step in enumerate(plan.steps, 1):
        out += f"<h3>{h(step_title(i, step))}</h3><pre>{h(chr(10).join(step_lines(step)))}</pre>"
    if plan.not_planned:
        out += "<ul>" + "".join(f"<li>not planned: {h(n.finding)}: {h(n.reason)}</li>" for n in plan.not_planned)
        out += "</ul>"
    return out


def render_html(judged: Judged) -> str:
    """A pair's or a cluster's report as one self-contained HTML page (ends with a newline)."""
    if isinstance(judged, ClusterCheck):
        title, body = _cluster(judged)
        return html_page(title, body, CSS + _CLUSTER_CSS)
    return html_page(*_pair(judged))


def _pair(outcome: Outcome) -> tuple[str, str]:
    """The pair's page title and body: the verdict, the summary, the acceptance, the repair plan, the nodes, the
    traffic, latency and plots, the findings."""
    bundle = outcome.bundle
    summary = acc.pair_summary(outcome)
    decided = acc.bundle_verdict(outcome)
    header = verdict_header("linkcheck report", decided, summary.diagnosis,
                            f'<p class="muted">bundle {h(bundle.path or "?")}, created {h(bundle.created or "?")}, '
                            f"linkcheck {h(bundle.tool_version or '?')}</p>")
    body = (header + summary_box(summary) + _acceptance(outcome) + _repair(outcome)
            + _nodes((outcome.link.a, outcome.link.b)) + _traffic(outcome) + _latency(latency_rows(outcome.link))
            + _plots(outcome) + _findings(outcome))
    return (f"linkcheck: {decided.word.upper()} {outcome.link.a.hostname or '?'} / "
            f"{outcome.link.b.hostname or '?'}"), body


def html_page(title: str, body: str, css: str = CSS) -> str:
    """The report's page frame: one self-contained file, the title escaped here, `body` already escaped HTML."""
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{h(title)}</title>'
            f"<style>{css}</style></head><body>{body}</body></html>\n")


class Band(msgspec.Struct, frozen=True):
    """A colour of the heatmap: what a cell in it means, for the legend."""

    css: str
    background: str
    ink: str
    meaning: str


# Each band's floor is a total with both twins at once in one direction; each says which state of the pair it is,
# from the pair's throughput rules (playbooks/throughput.yaml) against the published 196.02 Gb/s. The hot-plug state
# (13-15 Gb/s per twin) and one shared PCIe link (~95 in total) are the two known slow signatures: each has its own
# hue, far from the other and from the healthy green, so neither is read as "a bit low".
HEALTHY = Band("healthy", "#1b7f3b", "#fff",
               f"healthy: within 10% of the published {plain_number(PUBLISHED_TOTAL_GBPS)} Gb/s (both twins at ~98 "
               "each)")
NOMINAL = Band("nominal", "#a5d6a7", "#000", "each twin above the nominal floor (80 Gb/s, LINK_BELOW_NOMINAL), but the "
               "total more than 10% below the published figure")
LOW = Band("low", "#ffd54f", "#000", "below nominal, neither known signature (LINK_BELOW_NOMINAL): look at the test's "
           "findings")
ONE_PCIE = Band("one-pcie", "#6a1b9a", "#fff", "~95 Gb/s: both twins share one PCIe x4 link (SINGLE_PCIE_PATH)")
HOTPLUG = Band("hotplug", "#c62828", "#fff", "8-25 Gb/s per twin (13-15 typical): the hot-plug state, slow until "
               "both nodes reboot with the cable attached (LINK_HOTPLUG_DEGRADED)")
NOTHING = Band("nothing", "#212121", "#fff", "below 8 Gb/s per twin: almost nothing passes")
BANDS: tuple[tuple[float, Band], ...] = (
    (0.9 * PUBLISHED_TOTAL_GBPS, HEALTHY), (160.0, NOMINAL), (120.0, LOW), (85.0, ONE_PCIE), (50.0, LOW),
    (16.0, HOTPLUG), (float("-inf"), NOTHING))
# Cells with no total to colour by.
NO_NUMBER = Band("no-number", "#cfd8dc", "#000", "tested, no number: the test is inconclusive (see its problem)")
ALONE_ONLY = Band("alone-only", "#e3f2fd", "#000", "only a twin alone was measured: its best rate, not coloured by "
                  "the bands for both twins at once")
LEGEND = (HEALTHY, NOMINAL, LOW, ONE_PCIE, HOTPLUG, NOTHING, NO_NUMBER, ALONE_ONLY)

_CLUSTER_CSS = "".join(
    f"td.cell.{b.css},span.swatch.{b.css}{{background:{b.background};color:{b.ink}}}" for b in LEGEND) + """
table.heatmap td.cell{text-align:center;min-width:5.5em;font-variant-numeric:tabular-nums}
table.heatmap td.self{background:repeating-linear-gradient(45deg,#eee 0 4px,#fff 4px 8px);color:#888;
text-align:center}table.heatmap td.untested{background:#fff}table.heatmap th{text-align:center}
span.swatch{display:inline-block;width:2.4em;border:1px solid #999;margin-right:.5em;text-align:center}
ul.legend{list-style:none;padding-left:0}ul.legend li{margin:.2em 0}
td.cell,span.swatch{-webkit-print-color-adjust:exact;print-color-adjust:exact}
details.checks{margin:.3em 0}details.checks summary{cursor:pointer}@media print{details.checks>table{display:none}}
"""
_STATE_CLASS = {"pass": "pass", "slow": "fail", "inconclusive": "inconclusive"}


def band(total_gbps: float) -> Band:
    """The band of a total with both twins at once."""
    return next(b for floor, b in BANDS if total_gbps >= floor)


def _both_at_once(result: CableResult, direction: str) -> float | None:
    return result.link.bench.totals("concurrent").get(direction)


def _cell_band(result: CableResult | None, direction: str, value: float | None) -> Band:
    if value is None:
        return NO_NUMBER
    if result is not None and _both_at_once(result, direction) is None:
        return ALONE_ONLY
    return band(value)


def _first_pass(check: ClusterCheck) -> dict[tuple[str, str], tuple[CableResult, str]]:
    """(from, to) -> the first pass's test between them and its direction, as `matrix` reads them."""
    out = {}
    for result in check.cables:
        if result.test.pass_no == 1:
            for direction in DIRECTIONS:
                src, dst = named_direction(result, direction).split("->", 1)
                out[(src, dst)] = (result, direction)
    return out


def _heatmap(check: ClusterCheck) -> str:
    """The N x N matrix from row node to column node: each tested direction's Gb/s in its band's colour, the
    diagonal hatched, a pair no test joined left empty; the legend says what each colour means."""
    nodes = list(check.view.topology.nodes)
    cells = matrix(check)
    tests = _first_pass(check)
    rows = []
    for src in nodes:
        row = [f"<th>{h(src)}</th>"]
        for dst in nodes:
            if src == dst:
                row.append('<td class="self" title="the node itself">-</td>')
            elif dst not in cells.get(src, {}) and (src, dst) in tests:  # scheduled, never measured
                lost = tests[(src, dst)][0]
                title = h(f"{src} to {dst} (test {lost.test.label}): {lost.problem or 'no number'}")
                row.append(f'<td class="cell {NO_NUMBER.css}" title="{title}">{h(lost.state)}</td>')
            elif dst not in cells.get(src, {}):
                row.append(f'<td class="untested" title="{h(f"{src} to {dst}: not tested")}"></td>')
            else:
                value = cells[src][dst]
                result, direction = tests.get((src, dst), (None, "a->b"))
                kind = _cell_band(result, direction, value)
                shown = "no number" if value is None else number(value)
                title = h(f"{src} to {dst}: {gbps(value)}" + (f" (test {result.test.label})" if result else "")
                          + f": {kind.meaning}")
                row.append(f'<td class="cell {kind.css}" title="{title}">{h(shown)}</td>')
        rows.append(row)
    table = ('<table class="heatmap"><thead><tr><th>from \\ to</th>' + "".join(f"<th>{h(n)}</th>" for n in nodes)
             + "</tr></thead><tbody>" + "".join(f"<tr>{''.join(r)}</tr>" for r in rows) + "</tbody></table>")
    legend = "".join(f'<li><span class="swatch {b.css}">&nbsp;</span>{h(_floors(b))}{h(b.meaning)}</li>'
                     for b in LEGEND)
    legend += ('<li><span class="swatch" style="background:repeating-linear-gradient(45deg,#eee 0 4px,#fff 4px 8px)">'
               "&nbsp;</span>the node itself</li>"
               '<li><span class="swatch">&nbsp;</span>empty: no test joined the two nodes</li>')
    return ("<h2>Matrix (Gb/s from row to column, both twins at once)</h2>"
            '<p class="muted">The first pass of each test; a second pass\'s rates are in the table of tests.</p>'
            f'{table}<ul class="legend">{legend}</ul>')


def _floors(b: Band) -> str:
    """`176.42 Gb/s or more: `, `85-120 Gb/s: `: the totals a band holds, for the legend."""
    floors = [floor for floor, x in BANDS if x is b]
    if not floors:
        return ""
    spans = []
    for floor in floors:
        above = [f for f, _ in BANDS if f > floor]
        ceiling = min(above) if above else None
        if ceiling is None:
            spans.append(f"{plain_number(round(floor, 2))} Gb/s or more")
        elif floor == float("-inf"):
            spans.append(f"below {plain_number(ceiling)} Gb/s")
        else:
            spans.append(f"{plain_number(floor)}-{plain_number(round(ceiling, 2))} Gb/s")
    return " or ".join(spans) + ": "


def _value_cell(result: CableResult, direction: str) -> str:
    value = direction_gbps(result, direction)
    kind = _cell_band(result, direction, value)
    text = f"{named_direction(result, direction)}: {gbps(value)}"
    return f'<td class="cell {kind.css}" title="{h(kind.meaning)}">{h(text)}</td>'


def _tests(check: ClusterCheck) -> str:
    """Every test: its label, round and pass, each direction's Gb/s (both twins at once) named by its nodes and
    coloured as the matrix, its lowest run, its state and what it named (or why it is inconclusive)."""
    rows = []
    for r in check.cables:
        named = named_rules(r)
        round_ = str(r.test.round) + (" (2nd pass)" if r.test.pass_no == 2 else "")
        rows.append([f"<td>{h(r.test.label)}</td>", f'<td class="num">{h(round_)}</td>',
                     *(_value_cell(r, d) for d in DIRECTIONS), f'<td class="num">{h(gbps(r.lowest_gbps))}</td>',
                     f'<td><span class="tag {_STATE_CLASS[r.state]}">{h(r.state)}</span></td>',
                     f"<td>{h(named or r.problem or '')}</td>"])
    return ("<h2>Tests (Gb/s, both twins at once)</h2>"
            + html_table(list(CABLE_HEADER), rows))


def _layout(check: ClusterCheck) -> str:
    """The layout, the nodes not inspected, the topology's flags and the rounds the tests ran in."""
    view = check.view
    topo = view.topology
    supported = topo.standing
    out = (f"<h2>Layout</h2><p><b>{h(topo.layout)}</b>, {len(topo.nodes)} nodes ({h(', '.join(topo.nodes))}); "
           f"{h(supported)}.</p>")
    items = [f"<li>node {h(name)}: not inspected: {h(why)}</li>" for name, why in sorted(view.errors.items())]
    items += [f"<li><code>{h(flag.kind)}</code> {h(flag.subject)}: {h(flag.message)}</li>" for flag in topo.flags]
    if items:
        out += f"<ul>{''.join(items)}</ul>"
    rounds = [[f'<td class="num">{r.number}</td>', f"<td>{h('; '.join(m.label for m in r.matches))}</td>",
               f"<td>{h(', '.join(r.idle))}</td>"] for r in view.schedule.rounds]
    if rounds:
        out += html_table(["round", "tests side by side", "idle"], rounds)
    return out


def _cluster_findings(check: ClusterCheck) -> str:
    diagnosis = check.view.diagnosis
    out = _problem_boxes("Cluster findings", diagnosis.findings)
    skips = [f for f in diagnosis.findings if f.status is Status.SKIP]
    if skips:
        out += "<h3>Not judged</h3>" + html_table(
            ["rule", "subject", "why"], [[f"<td><code>{h(f.rule_id)}</code></td>", f"<td>{h(f.subject)}</td>",
                                          f"<td>{h(f.skip_reason)}</td>"] for f in skips])
    if diagnosis.notes:
        out += "<ul>" + "".join(f'<li class="muted">{h(n)}</li>' for n in diagnosis.notes) + "</ul>"
    return out


def _test_findings(check: ClusterCheck) -> str:
    """Each test that warned, failed or was not measured (report/cable_findings.py): its findings with their
    evidence and fixes; where the cluster names one of its nodes slow with every partner, the fix is that node's,
    above."""
    parts = []
    for part in cable_findings(check):
        html = f"<h3>{h(part.label)} <span class=\"muted\">({h(part.round_text)})</span></h3>"
        if part.problem:
            html += f"<p>Inconclusive: {h(part.problem)}</p>"
        if part.cause is not None:
            html += (f'<p class="because">Explained by <code>{h(part.cause.rule_id)}</code> ({h(part.cause.subject)}), '
                     "in the cluster findings above: the fix is the node's.</p>")
        parts.append(html + finding_boxes([f for f, _ in part.findings]))
    return "<h2>Findings per test</h2>" + "".join(parts) if parts else ""


def _problems(check: ClusterCheck) -> str:
    lines: Sequence[str] = [*([f"traffic: {check.traffic_error}"] if check.traffic_error else []),
                            *(["the run was interrupted: the tests not reached are inconclusive"]
                              if check.interrupted else [])]
    return "".join(f"<p><b>{h(line)}</b></p>" for line in lines)


def _acceptance_checks(doc: dict[str, Any]) -> str:
    """A cluster's acceptance checks: each test's verdict and lowest rates; the checks that did not pass and the NCCL
    run's; the findings and notes that count; then each test's every check, folded under a line of its own."""
    tests = [[f"<td>{h(test)}</td>", f'<td class="num">{h(round_)}</td>', f"<td>{status_tag(verdict)}</td>",
              f'<td class="num">{h(path)}</td>', f'<td class="num">{h(total)}</td>', f"<td>{h(why)}</td>"]
             for test, round_, verdict, path, total, why in per_test_rows(doc)]
    out = f"<p>{h(layout_line(doc))}</p>" + html_table(list(TEST_HEADER), tests)
    owned = list(zip(acc.checks(doc), check_tests(doc), strict=True))
    shown = [c for c, test in owned if test is None or c.get("status") != "PASS"]
    if shown:
        out += "<h3>Checks that did not pass, and the NCCL run's</h3>" + check_table(shown)
    why = reasons(doc, checks=False)
    out += "<ul>" + "".join(f"<li>{h(line)}</li>" for line in why) + "</ul>" if why else ""
    for index, test in enumerate((doc.get("cluster") or {}).get("tests") or [], 1):
        its = [c for c, owner in owned if owner is test]
        if not its:
            continue
        passed = sum(1 for c in its if c.get("status") == "PASS")
        again = ", second pass" if test.get("pass") == 2 else ""
        out += (f'<details class="checks"><summary><b>{h(test.get("test"))}</b> (round {h(test.get("round"))}{again})'
                f" {status_tag(test.get('verdict'))} {passed} of {len(its)} checks passed</summary>"
                f"{check_table(its, f'test{index}')}</details>")
    return out


def _cluster(check: ClusterCheck) -> tuple[str, str]:
    """The cluster check's page title and body: the verdict, the summary, the acceptance, problems, the layout and its
    rounds, the heatmap and the per-test table, the nodes table (as a pair's, a column per node), the latency test's
    figures, the cluster's findings and each test's."""
    decided = acc.cluster_verdict(check)  # the acceptance's, where the bundle holds one
    topo = check.view.topology
    summary = acc.cluster_summary(check)
    line = decided.line if decided.by_acceptance else f"{check.verdict.value.upper()}, exit {int(check.exit_code)}"
    header = verdict_header("linkcheck cluster check", replace(decided, line=line), summary.diagnosis)
    body = header + summary_box(summary) + acceptance_section(check.acceptance, acc.parameters, _acceptance_checks)
    body += _problems(check) + _layout(check)
    if check.cables:
        body += (_heatmap(check) if shows_matrix(check) else "") + _tests(check)
    body += _nodes(list(check.facts.nodes.values()))
    body += _latency(cluster_latency_rows(check)) + _cluster_findings(check) + _test_findings(check)
    return f"linkcheck cluster: {decided.word.upper()} {topo.layout}, {', '.join(topo.nodes)}", body

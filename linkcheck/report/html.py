"""The HTML report: one self-contained file (inline CSS, inline SVG plots, no script, no remote URL).

For the air-gapped machines these pairs live on, nothing is fetched when the page opens. Every string from
the nodes or the bundle is escaped with html.escape. Plots need matplotlib (`pip install linkcheck[html]`);
without it the page has the same tables and says how to get the plots.
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape
from typing import Any

from linkcheck.accept.text import HEADER, STATISTICS, missed, non_standard_line
from linkcheck.model import Finding, Status
from linkcheck.outcome import Outcome
from linkcheck.report import acceptance as acc
from linkcheck.report.causes import causes_first, new_fixes
from linkcheck.report.fix_lines import shell_lines
from linkcheck.report.repair import repair_plan, step_lines, step_title
from linkcheck.report.safe_text import shown
from linkcheck.report.summary import Summary, explains_text, grouped, not_judged_text
from linkcheck.report.tables import (
    ADVISE_HINT,
    LATENCY_HEADER,
    TRAFFIC_HEADER,
    cited,
    diagnosis_line,
    evidence_lines,
    latency_rows,
    nccl_text,
    node_rows,
    not_run_lines,
    source_numbers,
    stages,
    traffic_rows,
)
from linkcheck.report.verdict import BundleVerdict

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


def _nodes(outcome: Outcome) -> str:
    heads, rows = node_rows(outcome.link)
    cells = [[f"<th>{h(slot)}</th>", *(f"<td>{'<br>'.join(map(h, lines))}</td>" for lines in (a, b))]
             for slot, a, b in rows]
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


def _latency(outcome: Outcome) -> str:
    """The latency test's figures, each labelled measured, beside the published healthy figure (none: nothing)."""
    rows = latency_rows(outcome.link)
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


def _findings(outcome: Outcome) -> str:
    diagnosis = outcome.diagnosis
    problems = [f for f in diagnosis.findings if f.status in (Status.FAIL, Status.WARN)]
    out = "<h2>Findings</h2>" + (finding_boxes(problems) or "<p>No warning or failure.</p>")
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


def render_html(outcome: Outcome) -> str:
    bundle = outcome.bundle
    decided = acc.bundle_verdict(outcome)
    header = verdict_header("linkcheck report", decided, diagnosis_line(outcome),
                            f'<p class="muted">bundle {h(bundle.path or "?")}, created {h(bundle.created or "?")}, '
                            f"linkcheck {h(bundle.tool_version or '?')}</p>")
    body = (header + summary_box(acc.pair_summary(outcome)) + _acceptance(outcome) + _repair(outcome) + _nodes(outcome)
            + _traffic(outcome) + _latency(outcome) + _plots(outcome) + _findings(outcome))
    return html_page(f"linkcheck: {decided.word.upper()} {outcome.link.a.hostname or '?'} / "
                     f"{outcome.link.b.hostname or '?'}", body)


def html_page(title: str, body: str, css: str = CSS) -> str:
    """The report's page frame: one self-contained file, the title escaped here, `body` already escaped HTML."""
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{h(title)}</title>'
            f"<style>{css}</style></head><body>{body}</body></html>\n")

"""A cluster check as one self-contained HTML page: the verdict, the layout and its rounds, the N x N matrix as a
heatmap, the per-test table, the cluster's findings and each test's, with their fixes.

As the pair's page (report/html.py): inline CSS, no script, no remote URL, and every string from the nodes (names,
labels, interface names, tool output) escaped with its `h`. The heatmap is plain table cells coloured by CSS classes,
so it needs no matplotlib and prints as it shows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
from msgspec.structs import replace

from linkcheck.accept.text import TEST_HEADER, check_tests, layout_line, per_test_rows, reasons
from linkcheck.model import Status
from linkcheck.outcome import CableResult, ClusterCheck
from linkcheck.report import acceptance as acc
from linkcheck.report.cluster import direction_gbps, matrix, named_direction
from linkcheck.report.html import (
    CSS,
    acceptance_section,
    check_table,
    finding_boxes,
    h,
    html_page,
    html_table,
    status_tag,
    summary_box,
    verdict_header,
)
from linkcheck.report.published import PUBLISHED_TOTAL_GBPS
from linkcheck.values import gbps, number, plain_number


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
_DIRECTIONS = ("a->b", "b->a")


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
            for direction in _DIRECTIONS:
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
        named = ", ".join(dict.fromkeys(f.rule_id for f in r.findings if f.status in (Status.FAIL, Status.WARN)))
        round_ = str(r.test.round) + (" (2nd pass)" if r.test.pass_no == 2 else "")
        rows.append([f"<td>{h(r.test.label)}</td>", f'<td class="num">{h(round_)}</td>',
                     *(_value_cell(r, d) for d in _DIRECTIONS), f'<td class="num">{h(gbps(r.lowest_gbps))}</td>',
                     f'<td><span class="tag {_STATE_CLASS[r.state]}">{h(r.state)}</span></td>',
                     f"<td>{h(named or r.problem or '')}</td>"])
    return ("<h2>Tests (Gb/s, both twins at once)</h2>"
            + html_table(["test", "round", "one way", "the other way", "lowest run", "result", "named"], rows))


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
    problems = [f for f in diagnosis.findings if f.status in (Status.FAIL, Status.WARN)]
    out = "<h2>Cluster findings</h2>" + (finding_boxes(problems) or "<p>No warning or failure.</p>")
    skips = [f for f in diagnosis.findings if f.status is Status.SKIP]
    if skips:
        out += "<h3>Not judged</h3>" + html_table(
            ["rule", "subject", "why"], [[f"<td><code>{h(f.rule_id)}</code></td>", f"<td>{h(f.subject)}</td>",
                                          f"<td>{h(f.skip_reason)}</td>"] for f in skips])
    if diagnosis.notes:
        out += "<ul>" + "".join(f'<li class="muted">{h(n)}</li>' for n in diagnosis.notes) + "</ul>"
    return out


def _test_findings(check: ClusterCheck) -> str:
    """Each test that warned, failed or was not measured: its findings with their fixes; where the cluster names
    one of its nodes slow with every partner, the fix is that node's, above, and not repeated here."""
    parts = []
    for r in check.cables:
        problems = [f for f in r.findings if f.status in (Status.FAIL, Status.WARN)]
        if not problems and not r.problem:
            continue
        round_ = f"round {r.test.round}" + (", 2nd pass" if r.test.pass_no == 2 else "")
        part = f"<h3>{h(r.test.label)} <span class=\"muted\">({h(round_)})</span></h3>"
        if r.problem:
            part += f"<p>Inconclusive: {h(r.problem)}</p>"
        cause = check.node_cause(r)
        if cause is not None:
            part += (f'<p class="because">Explained by <code>{h(cause.rule_id)}</code> ({h(cause.subject)}), in the '
                     "cluster findings above: the fix is the node's.</p>")
            problems = [replace(f, fix=()) for f in problems]
        parts.append(part + finding_boxes(problems))
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


def check_html(check: ClusterCheck) -> str:
    """The cluster check as one self-contained HTML page (ends with a newline)."""
    decided = acc.cluster_verdict(check)  # the acceptance's, where the bundle holds one
    topo = check.view.topology
    summary = acc.cluster_summary(check)
    line = decided.line if decided.by_acceptance else f"{check.verdict.value.upper()}, exit {int(check.exit_code)}"
    header = verdict_header("linkcheck cluster check", replace(decided, line=line), summary.diagnosis)
    body = header + summary_box(summary) + acceptance_section(check.acceptance, acc.parameters, _acceptance_checks)
    body += _problems(check) + _layout(check)
    if check.cables:
        body += _heatmap(check) + _tests(check)
    body += _cluster_findings(check) + _test_findings(check)
    title = f"linkcheck cluster: {decided.word.upper()} {topo.layout}, {', '.join(topo.nodes)}"
    return html_page(title, body, CSS + _CLUSTER_CSS)  # the pair's frame, escaping the title

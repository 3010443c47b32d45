"""The console report: both nodes side by side, the traffic results, then findings with evidence and fix, the
acceptance, the repair plan and the summary last; a cluster's as plain lines: its topology, the per-cable table, the
N x N matrix, each test's findings."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Sequence
from typing import Any

from rich import box
from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from linkcheck.accept.text import (
    HEADER,
    closing_line,
    cluster_acceptance_text,
    headline,
    marked_column,
    non_standard_line,
    reasons,
    row,
)
from linkcheck.accept.text import evidence_lines as tested_lines
from linkcheck.facts.model import LinkFacts, NodeFacts
from linkcheck.model import Finding, Status, Verdict
from linkcheck.outcome import ClusterCheck, Outcome
from linkcheck.report.acceptance import acceptance, cluster_summary, pair_summary, tested
from linkcheck.report.causes import causes_first, new_fixes
from linkcheck.report.console_fix import fix_parts
from linkcheck.report.fit import fit, fit_line
from linkcheck.report.judged import Judged
from linkcheck.report.repair import plan_text_lines, repair_plan
from linkcheck.report.safe_text import shown
from linkcheck.report.stdout import output_error, stdout_gone, write_stdout
from linkcheck.report.summary import Summary, explains_text, grouped, not_judged_text, summary_text
from linkcheck.report.tables import (
    CABLE_HEADER,
    TRAFFIC_HEADER,
    cable_finding_lines,
    cable_rows,
    cited,
    cluster_nccl_text,
    evidence_lines,
    matrix_rows,
    nccl_text,
    node_rows,
    not_run_lines,
    shows_matrix,
    source_numbers,
    traffic_rows,
    verdict_line,
)
from linkcheck.report.topology import view_text
from linkcheck.report.verdict import ACCEPT_VERDICT
from linkcheck.values import aligned

STYLE = {Status.PASS: "green", Status.WARN: "yellow", Status.FAIL: "bold red", Status.SKIP: "cyan"}
VERDICT_STYLE = {Verdict.PASS: "bold green", Verdict.WARN: "bold yellow", Verdict.FAIL: "bold red",
                 Verdict.INCONCLUSIVE: "bold cyan"}


def node_table(nodes: Sequence[NodeFacts]) -> Table:
    """One row per twin slot (cage, PCI domain); one column per node."""
    heads, rows = node_rows(nodes)
    table = Table(title="Nodes", show_lines=True)
    table.add_column("cage / domain")
    for head in heads:
        table.add_column(Text(head))  # shown already: never read as markup
    for name, cells in rows:
        table.add_row(Text(name), *(Text("\n".join(lines)) for lines in cells))
    return table


def node_blocks(nodes: Sequence[NodeFacts]) -> list[str]:
    """The nodes table as plain lines, one block per node under its column head: a cluster's console report, whose
    N columns side by side would not fit a terminal."""
    heads, rows = node_rows(nodes)
    width = max(len(label) for label, _ in rows)
    out = []
    for i, head in enumerate(heads):
        out.append(head)
        for label, cells in rows:
            out += [f"  {label if j == 0 else '':<{width}}  {line}" for j, line in enumerate(cells[i] or ["-"])]
    return out


def bench_table(outcome: Outcome, doc: dict[str, Any] | None) -> Table | None:
    """ib_write_bw per path, mode and direction over its repetitions (min / median / max, runs), the threshold
    beside them and the statistic that missed it marked, then both paths' total; each threshold source once under
    the table, the threshold citing it by number.

    Narrower than the file formats' table, for a terminal: the path is written once for its rows (with a break
    point at `<->`), mode and direction share a column."""
    found = traffic_rows(outcome, doc)
    if not found:
        return None
    table = Table(title="Traffic: ib_write_bw (Gb/s)", show_edge=False)
    heads = ("path", "run", *TRAFFIC_HEADER[3:])
    for col in heads:  # `concurrent` stays whole: a narrow terminal wraps the run at its space, not in a word
        table.add_column(col, justify="right" if col in ("min", *NUMERIC) else "left", overflow="fold",
                         min_width=len("concurrent") if col == "run" else None)
    numbers = source_numbers(found)
    last_path = None
    for traffic in found:
        cells = traffic.cells()
        line = cells[TRAFFIC_HEADER.index("threshold")].replace(" Gb/s", "")  # the title gives the unit
        cells[TRAFFIC_HEADER.index("threshold")] = line + "".join(f" [{n}]" for n in cited(traffic, numbers))
        at = TRAFFIC_HEADER.index(traffic.missed) - 1 if traffic.missed else None
        path = "" if traffic.path == last_path else traffic.path.replace("<->", " <-> ")
        if traffic.path != last_path and last_path is not None:
            table.add_section()
        last_path = traffic.path
        row = [path, f"{traffic.mode} {traffic.direction}", *cells[3:]]
        table.add_row(*(as_text(cell, MISSED if i == at else "") for i, cell in enumerate(row)),
                      style="bold" if traffic.mode == "total" else "")
    notes = [f"[{n}] {source}" for source, n in numbers.items()] + not_run_lines(outcome.link)
    if notes:
        table.caption = as_text("\n".join(notes), "dim")
        table.caption_justify = "left"
    return table


def nccl_line(link: LinkFacts) -> Text | None:
    text = nccl_text(link)
    return None if text is None else as_text(text)


def _finding_panel(finding: Finding, printed: set[str], effects: list[tuple[Finding, int]]) -> Panel:
    """A finding with its evidence and the fix lines not printed yet, and one line for each finding it explains
    (then their fix lines not printed yet)."""
    body: list[RenderableType] = [as_text(finding.message)]
    for line in evidence_lines(finding):
        body.append(as_text(f"  evidence: {line}", "dim"))
    body += _fixes(finding.fix, printed)
    if effects:
        body.append(as_text(f"  explains {len(effects)} finding{'s' if len(effects) > 1 else ''}:", "bold"))
        for effect, depth in effects:
            said = effect.message if effect.message.startswith(effect.subject) else \
                f"{effect.subject}: {effect.message}"
            body.append(Text.assemble("  " * depth, (effect.status.value.upper(), STYLE[effect.status]),
                                      as_text(f" {effect.rule_id}  {said}")))
        body += _fixes([step for effect, _ in effects for step in effect.fix], printed)
    title = Text.assemble((finding.status.value.upper(), STYLE[finding.status]),
                          as_text(f" {finding.rule_id}  {finding.subject}", multiline=False))
    return Panel(Group(*body), title=title, title_align="left", expand=True)


def _fixes(steps: Sequence[str], printed: set[str]) -> list[RenderableType]:
    """The fix lines not printed yet (prose wrapping as text, each command on lines rich never breaks)."""
    fresh = new_fixes(steps, printed)
    if steps and not fresh:
        return [as_text("  fix: as above", "bold")]
    return fix_parts(fresh)


def print_report(outcome: Outcome, console: Console, *, show_all: bool = False, verdict: bool = True) -> None:
    """Nodes, traffic, findings (causes first), what was not judged, notes, then (with `verdict`) the diagnosis's
    verdict line; `print_console` leaves that line to the summary, which ends the output."""
    link, diagnosis = outcome.link, outcome.diagnosis
    console.print(node_table((link.a, link.b)))
    for part in (bench_table(outcome, acceptance(outcome)), nccl_line(link)):
        if part is not None:
            console.print(part)
    shown = causes_first([f for f in diagnosis.findings if show_all or f.status in (Status.FAIL, Status.WARN)])
    printed: set[str] = set()
    for i, (finding, depth) in enumerate(shown):
        if depth == 0:  # a cause first, with what it explains in its panel
            effects = list(itertools.takewhile(lambda item: item[1] > 0, shown[i + 1:]))
            console.print(_finding_panel(finding, printed, effects))
    skips = [f for f in diagnosis.findings if f.status is Status.SKIP]
    if skips and not show_all:
        console.print(Text("Not judged:", style="cyan"))
        for f in skips:
            console.print(as_text(f"  {f.rule_id} ({f.subject}): {f.skip_reason}", "cyan"))
    for note in diagnosis.notes:
        console.print(as_text(f"note: {note}", "cyan"))
    if verdict:
        console.print(Text(verdict_line(outcome), style=VERDICT_STYLE[diagnosis.verdict]))


def summary_view(summary: Summary) -> Group:
    """The summary for the terminal, printed last so that it is what stays in view: the diagnosis beside an
    acceptance's verdict, each cause once with its fix and what it explains, what was not judged and why, then the
    bundle's one verdict line."""
    body: list[RenderableType] = []
    if summary.by_acceptance:
        body.append(as_text(summary.diagnosis))
    if summary.non_standard:
        body.append(as_text(summary.non_standard, "bold yellow"))
    body.append(Text(summary.count + (":" if summary.causes else ""), style="bold"))
    for cause in summary.causes:
        status = Status(cause.status)
        body.append(Text.assemble((cause.status.upper(), STYLE[status]), as_text(f" {cause.rule_id}: {cause.title}")))
        body.append(as_text(f"  on {', '.join(cause.subjects)}"))
        body += fix_parts(cause.fix)
        if cause.explains:
            body.append(as_text(f"  explains: {explains_text(cause)}", "dim"))
    if summary.unexplained_checks:
        body.append(as_text(f"acceptance checks not met that no cause explains: {grouped(summary.unexplained_checks)}"))
    if summary.not_judged:
        body.append(Text("not judged:", style="cyan"))
        body += [as_text(f"  {not_judged_text(item)}", "cyan") for item in summary.not_judged]
    style = VERDICT_STYLE.get(ACCEPT_VERDICT.get(summary.verdict_word, Verdict.PASS), "bold") \
        if summary.by_acceptance else VERDICT_STYLE[Verdict(summary.verdict_word)]
    return Group(Panel(Group(*body), title=Text("Summary", style="bold"), title_align="left", expand=True),
                 as_text(summary.verdict, style))


ACCEPT_STYLE = {"PASS": "green", "DEGRADED": "yellow", "FAIL": "bold red", "INCONCLUSIVE": "cyan"}
MISSED = "bold red reverse"  # the measured cell that missed its line
NUMERIC = ("median", "max", "runs", "margin")  # right-aligned; `min` also holds a text check's values


def acceptance_view(doc: dict[str, Any], test_line: str = "", *, closing: bool = True) -> Group:
    """The acceptance for the terminal: the headline, each check as a table row that fits the console's width
    (long cells wrap inside their column), why the verdict is not PASS, who was tested."""
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, padding=(0, 1, 0, 0), show_edge=False)
    for head in HEADER:
        table.add_column(head, overflow="fold", justify="right" if head in NUMERIC else "left",
                         no_wrap=head in ("status", "margin", "runs"))
    for check in (c for c in doc.get("checks", []) if isinstance(c, dict)):
        cells, at = row(check), marked_column(check)
        table.add_row(*(as_text(cell, ACCEPT_STYLE.get(cell, "") if i == 0 else MISSED if i == at else "")
                        for i, cell in enumerate(cells)))
    parts: list[Any] = [Text(""), as_text(headline(doc), ACCEPT_STYLE.get(str(doc.get("verdict")), "bold"))]
    weaker = non_standard_line(doc)
    if weaker:
        parts.append(as_text(weaker, "bold yellow"))
    parts.append(table)
    parts += [as_text(f"  - {line}") for line in reasons(doc)]
    parts += [as_text(f"  test: {test_line}", "dim")] if test_line else []
    parts += [as_text(f"  {line}", "dim") for line in tested_lines(doc)]
    if closing:
        parts.append(as_text(closing_line(doc), ACCEPT_STYLE.get(str(doc.get("verdict")), "bold")))
    return Group(*parts)


def as_text(value: object, style: str = "", *, multiline: bool = True) -> Text:
    """A rich `Text` of `shown(value)`: styled as asked, its brackets printed, never read as markup."""
    return Text(shown(value, multiline=multiline), style=style)


class _Console(Console):
    def on_broken_pipe(self) -> None:
        self.quiet = True
        stdout_gone()


def _console() -> Console:
    if sys.stdout is None:
        raise output_error(OSError("standard output is closed"))
    return _Console(emoji=False)  # `:name:` stays text


def print_console(judged: Judged, *, show_all: bool = False) -> None:
    """The console report of a pair or a cluster on stdout (with `show_all` the passed findings too), ending with
    the summary and the bundle's one verdict line, each line within the terminal's width. A reader that stops early
    (`| head`) ends the output, never the exit code; a full or closed stdout is one line (exit 74)."""
    if isinstance(judged, ClusterCheck):
        write_stdout(fit(shown(_cluster_text(judged, show_all), multiline=True)) + "\n")
        return
    try:
        print_report(judged, _console(), show_all=show_all, verdict=False)  # the summary's line ends the output
    except (OSError, ValueError) as exc:
        raise output_error(exc) from None
    doc = acceptance(judged)  # `accept`'s record, or why it is not shown
    if doc is not None:
        print_acceptance(doc, "" if "problem" in doc else tested(judged, doc), closing=False)
    plan, problem = repair_plan(judged)  # `fix`'s plan, or why it is not shown
    if plan is not None or problem is not None:
        print_lines(["repair plan:", *(plan_text_lines(plan) if plan is not None else [problem or ""])])
    print_summary(pair_summary(judged))  # last: what a terminal keeps in view, ending with the one verdict


def _cluster_text(check: ClusterCheck, show_all: bool = False) -> str:
    """The cluster check for a person: the topology view, each node's facts (the nodes table), the per-test table
    (directions named by the order of the nodes in the test's label), the N x N matrix, the
    tests' findings with their fixes (with `show_all` the passed ones too), the NCCL run, the verdict, the
    acceptance and the summary."""
    lines = view_text(check.view, show_all).splitlines()[:-1]  # its verdict is the cluster rules' alone
    lines += ["", "nodes:", *node_blocks(list(check.facts.nodes.values()))]
    if check.cables:
        lines += ["", "tests (Gb/s, both twins at once; first, second: the nodes in the label's order):",
                  *aligned([list(CABLE_HEADER), *cable_rows(check)])]
        if shows_matrix(check):
            head, rows = matrix_rows(check)
            lines += ["", "matrix (Gb/s from row to column, both twins at once):", *aligned([head, *rows])]
        lines += cable_finding_lines(check, show_all)
    nccl = cluster_nccl_text(check)
    lines += ["", f"nccl: {nccl}"] if nccl else []
    if check.traffic_error:
        lines.append(f"traffic: {check.traffic_error}")
    lines.append(f"verdict: {check.verdict.value}")
    lines = [shown(line) for line in lines]  # one line each, whatever a node's text holds
    doc = check.acceptance  # the bundle's acceptance after the check
    if doc is not None:
        lines += ["", f"acceptance: {doc['problem']}" if "problem" in doc else
                  cluster_acceptance_text(doc, closing=False)]
    return "\n".join([*lines, "", *summary_text(cluster_summary(check))])  # last: the bundle's one verdict


def print_acceptance(doc: dict[str, Any], test_line: str = "", *, closing: bool = True) -> None:
    """The acceptance table after the console report, as wide as the terminal at most, with how the pair was
    tested (`test_line`); a record that is not shown, one line saying why."""
    try:
        _console().print(as_text(f"acceptance: {doc['problem']}", "cyan") if "problem" in doc
                         else acceptance_view(doc, test_line, closing=closing))
    except (OSError, ValueError) as exc:
        raise output_error(exc) from None


def print_summary(summary: Summary) -> None:
    """The summary and the bundle's verdict line, last on the console."""
    try:
        _console().print(summary_view(summary))
    except (OSError, ValueError) as exc:
        raise output_error(exc) from None


def print_lines(lines: list[str]) -> None:
    """Plain lines after the console report (the repair plan), node text shown as text, never as markup."""
    try:
        console = _console()
        for line in lines:  # prose wrapped, a command continued with ` \` (report/fit.py)
            for part in fit_line(shown(line), console.width):
                console.print(as_text(part, ""), soft_wrap=True)
    except (OSError, ValueError) as exc:
        raise output_error(exc) from None

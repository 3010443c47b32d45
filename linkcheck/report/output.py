"""Print a diagnosis: JSON, or the console report (with the bundle's acceptance and repair plan after it, when it
holds them, and the summary last, ending with the bundle's one verdict line)."""

from __future__ import annotations

from linkcheck.outcome import Outcome
from linkcheck.report.acceptance import pair_summary, tested
from linkcheck.report.console import print_acceptance, print_console_report, print_lines, print_summary
from linkcheck.report.json_report import acceptance_document, render_json
from linkcheck.report.repair import plan_text_lines, repair_plan
from linkcheck.report.stdout import write_stdout


def print_outcome(outcome: Outcome, *, as_json: bool, show_all: bool) -> None:
    """Print the report. A reader that stops early (`| head`) ends the output, never the exit code: that
    stays the verdict's (rich alone would exit 1, "warnings", and a JSON write would raise)."""
    if as_json:
        write_stdout(render_json(outcome) + "\n")
        return
    print_console_report(outcome, show_all=show_all, verdict=False)
    acceptance = acceptance_document(outcome)  # `accept`'s record, or why it is not shown
    if acceptance is not None:
        print_acceptance(acceptance, "" if "problem" in acceptance else tested(outcome, acceptance), closing=False)
    plan, problem = repair_plan(outcome)  # `fix`'s plan, or why it is not shown
    if plan is not None or problem is not None:
        print_lines(["repair plan:", *(plan_text_lines(plan) if plan is not None else [problem or ""])])
    print_summary(pair_summary(outcome))  # last: what a terminal keeps in view, ending with the one verdict

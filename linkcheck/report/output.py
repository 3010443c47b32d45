"""Print a diagnosis: JSON, or the console report (with the bundle's acceptance and repair plan after it, when it
holds them)."""

from __future__ import annotations

from linkcheck.outcome import Outcome
from linkcheck.report.acceptance import tested
from linkcheck.report.console import print_acceptance, print_console_report, print_lines
from linkcheck.report.json_report import acceptance_document, render_json
from linkcheck.report.repair import plan_text_lines, repair_plan
from linkcheck.report.stdout import write_stdout


def print_outcome(outcome: Outcome, *, as_json: bool, show_all: bool) -> None:
    """Print the report. A reader that stops early (`| head`) ends the output, never the exit code: that
    stays the verdict's (rich alone would exit 1, "warnings", and a JSON write would raise)."""
    if as_json:
        write_stdout(render_json(outcome) + "\n")
        return
    print_console_report(outcome, show_all=show_all)
    acceptance = acceptance_document(outcome)  # `accept`'s record, or why it is not shown
    if acceptance is not None:
        print_acceptance(acceptance, "" if "problem" in acceptance else tested(outcome, acceptance))
    plan, problem = repair_plan(outcome)  # `fix`'s plan, or why it is not shown
    if plan is not None or problem is not None:
        print_lines(["repair plan:", *(plan_text_lines(plan) if plan is not None else [problem or ""])])

"""Print a report on stdout: JSON, or the console report (a pair's with the bundle's acceptance and repair plan
after it, when it holds them, and the summary last, ending with the bundle's one verdict line)."""

from __future__ import annotations

from linkcheck.report.console import print_console
from linkcheck.report.json_report import render_json
from linkcheck.report.judged import Judged
from linkcheck.report.stdout import write_stdout


def print_outcome(judged: Judged, *, as_json: bool, show_all: bool) -> None:
    """Print the report of a pair or a cluster. A reader that stops early (`| head`) ends the output, never the exit
    code: that stays the verdict's (rich alone would exit 1, "warnings", and a JSON write would raise)."""
    if as_json:
        write_stdout(render_json(judged) + "\n")
        return
    print_console(judged, show_all=show_all)

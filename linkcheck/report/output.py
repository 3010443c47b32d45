"""Print a report on stdout: the JSON document or the console tables, for a reader that may stop early."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from linkcheck.pipeline import Outcome


def print_outcome(outcome: Outcome, *, as_json: bool, show_all: bool) -> None:
    """Print the report. A reader that stops early (`| head`) ends the output, never the exit code: that
    stays the verdict's (rich alone would exit 1, "warnings", and a JSON write would raise)."""
    if as_json:
        from linkcheck.report.json_report import render_json

        try:
            sys.stdout.write(render_json(outcome) + "\n")
            sys.stdout.flush()
        except BrokenPipeError:
            _stdout_gone()
        return
    from rich.console import Console

    from linkcheck.report.console import print_report

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            _stdout_gone()

    print_report(outcome, _Console(), show_all=show_all)


def _stdout_gone() -> None:
    """Send the rest of stdout nowhere, so that later writes and the final flush cannot fail."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)

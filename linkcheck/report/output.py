"""Print a report on stdout: the JSON document or the console tables, for a reader that may stop early."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from rich.console import Console

from linkcheck.errors import OutputError
from linkcheck.report.console import acceptance_view, print_report
from linkcheck.report.json_report import render_json

if TYPE_CHECKING:
    from linkcheck.errors import OutputError
    from linkcheck.outcome import Outcome


def write_stdout(text: str) -> None:
    """Write text and flush: a reader that stopped early ends the output; a full or closed stdout is an
    OutputError (one line, exit 74), never a traceback or a silent success."""
    try:
        if sys.stdout is None:
            raise OSError("standard output is closed")
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        _stdout_gone()
    except (OSError, ValueError) as exc:
        raise _output_error(exc) from None


def _output_error(exc: BaseException) -> OutputError:
    reason = getattr(exc, "strerror", None) or str(exc)
    return OutputError(f"cannot write the report to standard output: {reason}",
                       fix="redirect it to a file with room, or to /dev/null")


class _Console(Console):
    def on_broken_pipe(self) -> None:
        self.quiet = True
        _stdout_gone()


def _console() -> Console:
    if sys.stdout is None:
        raise _output_error(OSError("standard output is closed"))
    return _Console(emoji=False)  # `:name:` stays text


def print_outcome(outcome: Outcome, *, as_json: bool, show_all: bool) -> None:
    """Print the report. A reader that stops early (`| head`) ends the output, never the exit code: that
    stays the verdict's (rich alone would exit 1, "warnings", and a JSON write would raise)."""
    if as_json:
        write_stdout(render_json(outcome) + "\n")
        return
    try:
        print_report(outcome, _console(), show_all=show_all)
    except (OSError, ValueError) as exc:
        raise _output_error(exc) from None


def print_acceptance(doc: dict[str, Any]) -> None:
    """The acceptance table after the console report, as wide as the terminal at most."""
    try:
        _console().print(acceptance_view(doc))
    except (OSError, ValueError) as exc:
        raise _output_error(exc) from None


def _stdout_gone() -> None:
    """Send the rest of stdout nowhere, so that later writes and the final flush cannot fail."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)

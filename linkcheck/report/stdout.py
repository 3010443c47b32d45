"""Standard output as the reports use it: a reader that stops early ends the output quietly, and a full or closed
stdout is one line and exit 74, never a traceback."""

from __future__ import annotations

import os
import sys

from linkcheck.errors import OutputError


def write_stdout(text: str) -> None:
    """Write text and flush: a reader that stopped early ends the output; a full or closed stdout is an
    OutputError (one line, exit 74), never a traceback or a silent success."""
    try:
        if sys.stdout is None:
            raise OSError("standard output is closed")
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        stdout_gone()
    except (OSError, ValueError) as exc:
        raise output_error(exc) from None


def output_error(exc: BaseException) -> OutputError:
    reason = getattr(exc, "strerror", None) or str(exc)
    return OutputError(f"cannot write the report to standard output: {reason}",
                       fix="redirect it to a file with room, or to /dev/null")


def stdout_gone() -> None:
    """Send the rest of stdout nowhere, so that later writes and the final flush cannot fail."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)

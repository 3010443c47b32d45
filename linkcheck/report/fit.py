"""Plain text laid out for the terminal: every line at most as wide as it (COLUMNS, else the terminal, else 80, as rich
measures it). A line of prose wraps at spaces, its continuation indented under its first word (a `- ` bullet's text
under the text); a command (report/fix_lines.py) is continued with ` \\`, so that a copy of its lines runs as the same
command; a word longer than the width (a URL) is never cut."""

from __future__ import annotations

import re
import shutil
import textwrap

from linkcheck.report.fix_lines import continued, runnable

_LEAD = re.compile(r"^(\s*(?:[-*] |\d+\. |[A-Za-z_][\w .-]{0,30}: )?)")


def width() -> int:
    return max(40, shutil.get_terminal_size((80, 24)).columns)


def fit_line(line: str, columns: int) -> list[str]:
    if len(line) <= columns:
        return [line]
    body = line.lstrip(" ")
    indent = line[:len(line) - len(body)]
    if runnable(body.split("  #", 1)[0].strip()):
        return continued(body, columns, indent=indent)
    lead = _LEAD.match(line)
    hang = " " * min(len(lead.group(1)) if lead else len(indent), columns // 2)
    return textwrap.wrap(line, columns, subsequent_indent=hang if hang.strip() == "" and hang else indent + "  ",
                         break_long_words=False, break_on_hyphens=False, drop_whitespace=True) or [line]


def fit(text: str, columns: int | None = None) -> str:
    """`text` with each line wider than `columns` (default: the terminal's) wrapped or continued as the module says."""
    cols = columns or width()
    return "\n".join(part for line in text.split("\n") for part in fit_line(line, cols))

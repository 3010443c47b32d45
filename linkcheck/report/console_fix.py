"""A finding's fix on the console: the words of each step wrap as text, each command sits on lines of its own that
rich never wraps; one wider than the console is continued with ` \\` (report/fix_lines.py), so a copy of its lines
runs as the same command."""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Iterator

from rich.console import Console, ConsoleOptions, RenderableType
from rich.text import Text

from linkcheck.report.fix_lines import continued, split_step
from linkcheck.report.safe_text import shown


class CommandLines:
    """One command, laid out for the width it is given (a panel's inside, the terminal)."""

    def __init__(self, command: str, style: str = "bold") -> None:
        self.command = shown(command)
        self.style = style

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Text]:
        for line in continued(self.command, options.max_width):
            yield Text(line, style=self.style, no_wrap=True, overflow="ignore")


class CommentLines:
    """A command's note as shell comments: every line it wraps to starts with `#`, so no part of it runs."""

    def __init__(self, note: str) -> None:
        self.note = shown(note)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Text]:
        for line in textwrap.wrap(self.note, max(20, options.max_width - 6), break_on_hyphens=False):
            yield Text(f"    # {line}", style="dim", no_wrap=True, overflow="fold")


def fix_parts(steps: Iterable[str]) -> list[RenderableType]:
    """`  fix: prose` (wrapping as text), then each command on its own lines, then its note as `#` comments."""
    parts: list[RenderableType] = []
    for step in map(split_step, steps):
        parts.append(Text(shown(f"  fix: {step.prose}".rstrip()), style="bold"))
        parts += [CommandLines(command) for command in step.commands]
        if step.note:
            parts.append(CommentLines(step.note))
    return parts

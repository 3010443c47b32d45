"""The report formats of `linkcheck report`: name -> render function (Outcome -> text).

Each entry imports its renderer only when called, so this registry is cheap to import and one format's
dependencies (matplotlib for html) never load for another. To add a format, add one function here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from linkcheck.outcome import Outcome

Renderer = Callable[["Outcome"], str]


def _json(outcome: Outcome) -> str:
    from linkcheck.report.json_report import render_json

    return render_json(outcome) + "\n"


def _junit(outcome: Outcome) -> str:
    from linkcheck.report.junit import render_junit

    return render_junit(outcome)


def _markdown(outcome: Outcome) -> str:
    from linkcheck.report.markdown import render_markdown

    return render_markdown(outcome)


def _html(outcome: Outcome) -> str:
    from linkcheck.report.html import render_html

    return render_html(outcome)


def _prometheus(outcome: Outcome) -> str:
    from linkcheck.report.prometheus import render_prometheus

    return render_prometheus(outcome)


FORMATS: dict[str, Renderer] = {
    "json": _json,
    "junit": _junit,
    "markdown": _markdown,
    "html": _html,
    "prometheus": _prometheus,
}


def renderer(name: str) -> Renderer:
    """The render function for `name`; UsageError (exit 4) naming the known formats otherwise."""
    from linkcheck.errors import UsageError

    if name not in FORMATS:
        raise UsageError(f"unknown report format {name!r}; choose one of: {', '.join(FORMATS)}")
    return FORMATS[name]

"""The report formats of `linkcheck report`: name -> render function, each taking a pair's or a cluster's record
(report/judged.py) and returning the file's text.

To add a format, add its render function here.
"""

from __future__ import annotations

from collections.abc import Callable

from linkcheck.errors import UsageError
from linkcheck.report.html import render_html
from linkcheck.report.json_report import render_json
from linkcheck.report.judged import Judged
from linkcheck.report.junit import render_junit
from linkcheck.report.markdown import render_markdown
from linkcheck.report.prometheus import render_prometheus

Renderer = Callable[[Judged], str]


def _json(judged: Judged) -> str:
    return render_json(judged) + "\n"  # a text file ends with one, a pair's report and a cluster's alike


FORMATS: dict[str, Renderer] = {
    "json": _json,
    "junit": render_junit,
    "markdown": render_markdown,
    "html": render_html,
    "prometheus": render_prometheus,
}


def renderer(name: str) -> Renderer:
    """The render function for `name`; UsageError (exit 4) naming the known formats otherwise."""
    if name not in FORMATS:
        raise UsageError(f"unknown report format {name!r}; choose one of: {', '.join(FORMATS)}")
    return FORMATS[name]

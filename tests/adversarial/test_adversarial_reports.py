"""Node strings in the Prometheus, Markdown and HTML reports: no raw control character in the exposition, no
markup, entity or autolink in the rendered Markdown, and unique ids across the HTML page's plots."""

from __future__ import annotations

import re
from collections import Counter
from html.parser import HTMLParser

import pytest
from msgspec.structs import replace
from prometheus_client.parser import text_string_to_metric_families

from linkcheck.app.offline import Outcome, diagnose_bundle
from linkcheck.model import Finding, Severity, Status
from linkcheck.report.exposition import escape
from linkcheck.report.html_plots import have_matplotlib, scoped_ids
from linkcheck.report.markdown import _finding, md, render_markdown
from linkcheck.report.prometheus import render_prometheus
from tests.adversarial.adversarial_helpers import HEALTHY, ROOT

# C0 but tab and newline, DEL, C1, line/paragraph separators, bidi embeddings, overrides and isolates.
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
CONTROLS = [
    "\x1b]2;owned\x07", "\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\", "\x1b[2J", "\x9b31m",
    "\x9d0;t\x9c", "a\rb", "a\x08b", "\x00nul", "\u202eevil", "\u2066iso\u2069", "x\x7fy", "a\u2028b",
]
LINKS = [
    "http://evil.example/x", "https://evil.example", "www.evil.com", "evil.com", "admin@evil.com",
    "mailto:admin@evil.com", "<http://evil.example>", "[x](http://evil.example)", "ftp://evil.example",
    "spark-a.io", "<b>bold</b>", "&lt;script&gt;", "&#x27;", "![i](http://evil.example/i.png)",
]


def _with_hostname(name: str) -> Outcome:
    outcome = diagnose_bundle(HEALTHY)
    odd = replace(outcome, link=replace(outcome.link, a=replace(outcome.link.a, hostname=name)))
    assert isinstance(odd, Outcome)
    return odd


@pytest.mark.parametrize("text", CONTROLS)
def test_prometheus_label_values_carry_no_raw_control(text: str) -> None:
    out = render_prometheus(_with_hostname(f"spark{text}one"))
    assert not RAW.search(out), repr(out[:300])
    families = {f.name: f for f in text_string_to_metric_families(out)}
    label = families["linkcheck_info"].samples[0].labels["node_a"]
    assert not RAW.search(label) and label.startswith("spark") and label.endswith("one")


def test_prometheus_escape_keeps_the_format_escapes() -> None:
    assert escape('a"b\\c\nd') == 'a\\"b\\\\c\\nd'
    assert escape("a\x1bb") == "a\\\\x1bb"  # shown as `\x1b`, whose backslash the format then escapes


def _markdown_it() -> object:
    from markdown_it import MarkdownIt

    try:
        import linkify_it  # noqa: F401 - the autolinker GFM-like renderers use
    except ImportError:
        return MarkdownIt("commonmark")
    return MarkdownIt("gfm-like")


def _html_of(markdown: str) -> str:
    renderer = _markdown_it()
    html = renderer.render(markdown)  # type: ignore[attr-defined]
    assert isinstance(html, str)
    return html


@pytest.mark.parametrize("text", LINKS + CONTROLS)
def test_markdown_node_text_is_never_a_link_tag_or_entity(text: str) -> None:
    html = _html_of(f"- value: {md(text)}\n\n| a | b |\n| --- | --- |\n| {md(text)} | x |\n")
    assert "<a " not in html and "<img" not in html and "<b>" not in html and "<script" not in html
    assert not RAW.search(html)


@pytest.mark.parametrize("text", ["a & b", "&amp;", "&#60;", "x < y", "1.2.3.4", "fe80::1", "a@b"])
def test_markdown_renders_node_text_as_itself(text: str) -> None:
    import html as html_lib

    rendered = _html_of(md(text))
    inner = re.sub(r"</?p>\n?", "", rendered)
    assert html_lib.unescape(inner) == text


def test_markdown_report_has_no_link_from_a_hostile_hostname() -> None:
    for text in LINKS:
        report = render_markdown(_with_hostname(text))
        html = _html_of(report)
        assert "evil" not in "".join(re.findall(r"<a [^>]*>", html)), text
        assert "<b>bold" not in html and "<img" not in html


def test_markdown_bidi_and_controls_are_shown() -> None:
    assert "\u202e" not in md("\u202eevil") and "u202e" in md("\u202eevil")


@pytest.mark.parametrize("fix", [["echo ```"], ["echo ````"], ["a ``````` b", "c"]])
def test_fix_fence_is_longer_than_any_backtick_run(fix: list[str]) -> None:
    finding = Finding("R", Status.FAIL, Severity.ERROR, "s", "t", "m", fix=tuple(fix))
    lines = _finding(finding)
    fence = next(line for line in lines if line.startswith("```")).removesuffix("sh")
    longest = max(len(run) for step in fix for run in re.findall("`+", step))
    assert len(fence) > longest and lines[lines.index(fence + "sh") + len(fix) + 1] == fence


class _Ids(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.refs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name == "id" and value is not None:
                self.ids.append(value)
            elif value and name in ("href", "xlink:href") and value.startswith("#"):
                self.refs.append(value[1:])
            elif value and "url(#" in value:
                self.refs += re.findall(r"url\(#([^)]*)\)", value)


def _page_ids(page: str) -> _Ids:
    parser = _Ids()
    parser.feed(page)
    return parser


@pytest.mark.skipif(not have_matplotlib(), reason="plots need matplotlib")
@pytest.mark.parametrize("fixture", ["healthy", "real-healthy-gx10", "hotplug-degraded"])
def test_html_ids_are_unique_across_plots(fixture: str) -> None:
    from linkcheck.report.html import render_html

    page = render_html(diagnose_bundle(ROOT / "fixtures" / fixture))
    found = _page_ids(page)
    assert found.ids, "no plot drawn"
    assert [i for i, n in Counter(found.ids).items() if n > 1] == []
    assert set(found.refs) <= set(found.ids)  # every clip-path and glyph reference still resolves


def test_scoped_ids_prefixes_ids_and_their_references_only() -> None:
    svg = ('<svg><defs><clipPath id="c1"/><path id="g"/></defs><g clip-path="url(#c1)"><use xlink:href="#g"/>'
           '<a href="#elsewhere"/></g></svg>')
    out = scoped_ids(svg, "plot2-")
    assert 'id="plot2-c1"' in out and 'url(#plot2-c1)' in out and 'xlink:href="#plot2-g"' in out
    assert 'href="#elsewhere"' in out

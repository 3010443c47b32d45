"""lazy_re: a pattern compiled on first use answers exactly as re.compile's would, before and after that use."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from linkcheck.parsers._lazy_re import LazyPattern, lazy_re

PATTERNS = [(r"(\w+)=(\d+)", 0), (r"^\s*(?P<k>[a-z]+):", re.MULTILINE), (r"x|(y)", re.IGNORECASE), (r"", 0)]


def _calls(p: LazyPattern | re.Pattern[str], text: str) -> list[object]:
    def span(m: re.Match[str] | None) -> object:
        return None if m is None else (m.span(), m.groups())

    return [span(p.match(text)), span(p.match(text, 1)), span(p.fullmatch(text)), span(p.search(text, 0, 3)),
            p.findall(text), [m.span() for m in p.finditer(text)], p.split(text), p.split(text, 1),
            p.sub("<>", text), p.sub(lambda m: m.group(0).upper(), text, 1)]


@settings(max_examples=200)
@given(st.text(alphabet="ab=1 \nxyY:", max_size=30), st.sampled_from(PATTERNS))
def test_same_answers_as_re_compile(text: str, spec: tuple[str, int]) -> None:
    pattern, flags = spec
    lazy, eager = lazy_re(pattern, flags), re.compile(pattern, flags)
    assert _calls(lazy, text) == _calls(eager, text)  # first use compiles
    assert _calls(lazy, text) == _calls(eager, text)  # later uses go straight to the compiled pattern


def test_compiles_only_when_used() -> None:
    lazy = lazy_re(r"never(")  # invalid: an eager compile would raise at import
    assert lazy.pattern == "never("
    assert "match" not in vars(lazy)
    ok = lazy_re(r"a+")
    assert ok.match("aa") is not None
    assert vars(ok)["match"].__self__ is ok.compiled()

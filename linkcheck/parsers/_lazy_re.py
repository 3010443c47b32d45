"""Regular expressions compiled on first use: a parser module holds dozens, and one output needs few of them."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from typing import Any


class LazyPattern:
    """Stands in for `re.compile(pattern, flags)` and compiles on the first call.

    That first call puts the compiled pattern's own bound methods in the instance dict, where they
    shadow the methods below: later calls cost what `re.Pattern` calls cost, with no extra frame.
    """

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self._flags = flags

    def compiled(self) -> re.Pattern[str]:
        pat = re.compile(self.pattern, self._flags)
        self.__dict__.update(
            compiled=lambda: pat, match=pat.match, fullmatch=pat.fullmatch, search=pat.search, sub=pat.sub,
            split=pat.split, findall=pat.findall, finditer=pat.finditer,
        )
        return pat

    def match(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled().match(string, pos, endpos)

    def fullmatch(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled().fullmatch(string, pos, endpos)

    def search(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled().search(string, pos, endpos)

    def sub(self, repl: str | Callable[[re.Match[str]], str], string: str, count: int = 0) -> str:
        return self.compiled().sub(repl, string, count)

    def split(self, string: str, maxsplit: int = 0) -> list[str | Any]:
        return self.compiled().split(string, maxsplit)

    def findall(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> list[Any]:
        return self.compiled().findall(string, pos, endpos)

    def finditer(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> Iterator[re.Match[str]]:
        return self.compiled().finditer(string, pos, endpos)


def lazy_re(pattern: str, flags: int = 0) -> LazyPattern:
    """`re.compile` deferred to the first match: module import stays cheap.

    >>> word = lazy_re(r"[a-z]+")
    >>> word.findall("one two"), word.fullmatch("three") is not None, word.search("4 five").group()
    (['one', 'two'], True, 'five')
    """
    return LazyPattern(pattern, flags)

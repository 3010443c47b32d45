"""`cat /etc/os-release`: what is refused. The examples (quoted or not, a captured file) are cases:
tests/parsers/cases/os_release/."""

from __future__ import annotations

import pytest

from linkcheck.errors import ParseError
from linkcheck.parsers.kernel import parse_os_release


def test_text_without_any_key_is_refused() -> None:
    with pytest.raises(ParseError):
        parse_os_release("cat: /etc/os-release: No such file or directory\n")
    assert parse_os_release("").pretty_name is None

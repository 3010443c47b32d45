"""`cat /etc/os-release`: the name and version of the distribution, quoted or not."""

from __future__ import annotations

from pathlib import Path

import pytest

from linkcheck.errors import ParseError
from linkcheck.parsers.kernel import parse_os_release

SAMPLES = Path(__file__).resolve().parents[1] / "samples" / "system"


def test_debian_12_as_captured_on_this_kind_of_machine() -> None:
    rel = parse_os_release((SAMPLES / "os_release_debian12_captured.txt").read_text())
    assert (rel.pretty_name, rel.id, rel.version_id) == ("Debian GNU/Linux 12 (bookworm)", "debian", "12")


def test_unquoted_single_quoted_and_escaped_values() -> None:
    rel = parse_os_release("# comment\n\nID=ubuntu\nVERSION_ID='24.04'\nPRETTY_NAME=\"DGX \\\"Spark\\\" OS\"\n")
    assert (rel.pretty_name, rel.id, rel.version_id) == ('DGX "Spark" OS', "ubuntu", "24.04")


def test_text_without_any_key_is_refused() -> None:
    with pytest.raises(ParseError):
        parse_os_release("cat: /etc/os-release: No such file or directory\n")
    assert parse_os_release("").pretty_name is None

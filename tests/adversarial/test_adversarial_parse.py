"""`linkcheck parse KIND FILE` with garbage, binary, huge or hostile input: a record or one error line, fast."""

from __future__ import annotations

from pathlib import Path

import pytest

from linkcheck.parsers import PARSERS
from tests.adversarial.adversarial_helpers import assert_no_raw_controls, one_line_error, run

INPUTS = {
    "garbage": b"hello world\nthis is not the tool you are looking for\n\t:::: ==> [] {}\n",
    "binary": bytes(range(1, 256)) * 8,
    "hostile": (b"\x1b]2;owned\x07 \x1b[2J [blink]x[/] [/] \x9b31m \r\x08\x08 : 1 ==> "
                b"\x1b]8;;http://e/\x1b\\ (Up)\n") * 5,
    "huge-lines": b"a" * 300_000 + b"\n",
    "nul": b"abc\x00def\n",
}


@pytest.mark.parametrize("name", sorted(INPUTS))
@pytest.mark.parametrize("kind", sorted(PARSERS))
def test_parse_kind_with_bad_input(tmp_path: Path, kind: str, name: str) -> None:
    path = tmp_path / "out.txt"
    path.write_bytes(INPUTS[name])
    proc = run("parse", kind, str(path), timeout=60)
    assert "Traceback" not in proc.stderr
    assert_no_raw_controls(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        one_line_error(proc, 4, "out.txt")

"""`linkcheck parse`: read one raw tool output, run its parser, and render the record as JSON or text."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from linkcheck import strict_json
from linkcheck.errors import InputFileError, ParseError, UsageError
from linkcheck.parsers import PARSERS, get_parser
from linkcheck.records import plain
from linkcheck.safe_read import read_capped, read_stream_capped

MAX_INPUT_BYTES = 16 << 20  # as much as one capture of a bundle may hold


def parse_file(kind: str, path: Path) -> Any:
    if kind not in PARSERS:
        raise UsageError(f"unknown kind {kind!r}", fix="`linkcheck parse --help` lists the kinds")
    try:
        data = (read_stream_capped(sys.stdin.buffer, MAX_INPUT_BYTES) if str(path) == "-"
                else read_capped(path, MAX_INPUT_BYTES))
    except OSError as exc:
        raise InputFileError(str(path), exc.strerror or str(exc)) from None
    if b"\x00" in data:
        raise InputFileError(str(path), f"binary data, not {kind} output")
    try:
        return get_parser(kind)(data.decode("utf-8", errors="replace"))
    except ParseError as exc:
        raise InputFileError(str(path), f"not valid {kind} output: {exc.reason}", line=exc.line_no) from None


def record_to_json(record: Any) -> str:
    return strict_json.dumps({"record": plain(record, properties=True)}, indent=2, default=str)


def record_lines(record: Any) -> list[str]:
    """`path: value` per value; a value's own newlines stay in its line (the caller shows each line as one)."""
    lines: list[str] = []
    _walk(plain(record, properties=True), "", lines)
    return lines


def _walk(value: Any, prefix: str, lines: list[str]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            _walk(item, f"{prefix}.{key}" if prefix else key, lines)
    elif isinstance(value, list) and value and isinstance(value[0], (dict, list)):
        for index, item in enumerate(value):
            _walk(item, f"{prefix}[{index}]", lines)
    else:
        lines.append(f"{prefix}: {value}")

"""Load perftest's --out_json files: standard JSON (>= 24.01, tolerating the trailing comma that
`--output=bandwidth` still writes) and the pre-24.01 pseudo-JSON (one `key: value,` per line)."""

from __future__ import annotations

import json
import re
from typing import Any

from linkcheck.errors import ParseError

SPEC = "perftest"
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")
_PSEUDO_KEY = re.compile(r'[^":{}]+')  # a key, once blanks and its optional quotes are cut
_NUM = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|nan|inf)")
_INT = re.compile(r"[0-9]{1,30}")  # bounded: int() refuses 4300+ digit strings


def load_json(text: str) -> dict[str, Any]:
    try:  # current perftest still writes a trailing comma with --output=bandwidth
        data = json.loads(_TRAILING_COMMA.sub(r"\1", text))
    except (ValueError, RecursionError):
        data = _load_pseudo_json(text)
    if not isinstance(data, dict):
        raise ParseError(SPEC, "JSON is not an object")
    return data


def _load_pseudo_json(text: str) -> dict[str, Any]:
    """Read perftest 4.5-0.11 .. 23.10 --out_json: one `key: value,` per line, mostly unquoted."""
    stack: list[dict[str, Any]] = []
    root: dict[str, Any] | None = None
    for no, raw in enumerate(text.split("\n"), start=1):
        line = raw.strip()
        if line == "{" and root is None:
            root = {}
            stack.append(root)
        elif line in ("}", "},") and stack:
            stack.pop()
        elif line:
            _pseudo_line(stack, line, no)
    if root is None or stack:
        raise ParseError(SPEC, "truncated JSON (unbalanced braces)")
    return root


def _pseudo_line(stack: list[dict[str, Any]], line: str, no: int) -> None:
    # Split at the first ':' in code: a regex "(.*?)\s*,?$" for the value backtracks quadratically.
    key_text, sep, rest = line.partition(":")
    key = key_text.strip()
    key = key[1:] if key.startswith('"') else key
    key = (key[:-1] if key.endswith('"') else key).strip()
    if not sep or not stack or not _PSEUDO_KEY.fullmatch(key):
        raise ParseError(SPEC, "neither JSON nor perftest's pre-24.01 pseudo-JSON", no)
    value = rest.strip()
    value = value[:-1].rstrip() if value.endswith(",") else value
    if value == "{":
        child: dict[str, Any] = {}
        stack[-1][key] = child
        stack.append(child)
    elif len(value) >= 2 and value[0] == value[-1] == '"':
        stack[-1][key] = value[1:-1]
    elif _INT.fullmatch(value):
        stack[-1][key] = int(value)
    else:
        stack[-1][key] = float(value) if _NUM.fullmatch(value) else value

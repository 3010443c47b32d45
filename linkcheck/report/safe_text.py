"""Strings from nodes, bundles and playbook files reach the terminal as text, never as controls or markup.

A hostname, a cable part number, an interface name or a tool's output quoted as evidence comes from a
machine we do not control. Printed raw, an escape sequence in it can retitle the window (OSC 2), plant a
hyperlink (OSC 8), move the cursor or rewrite the line (CSI, `\\r`, backspace); handed to rich as a
markup string, `[link=...]` or an unbalanced `[/]` is interpreted or crashes the report. `shown` is the
one place that neutralises them; every renderer passes foreign strings through it (the console report through
`console.as_text`, which builds a rich `Text` and so never parses markup).
"""

from __future__ import annotations

import re

# C0 controls but tab, DEL, C1 controls (8-bit CSI/OSC), line and paragraph separators, bidi overrides, BOM, and
# lone surrogates: a JSON `\udc80` decodes to one, and no UTF-8 stream (stdout, a report file) can write it.
_UNSAFE = "\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff\ufeff"
_ONE_LINE = re.compile(f"[{_UNSAFE}\n]")
_LINES = re.compile(f"[{_UNSAFE}]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\b": "\\b", "\x1b": "\\x1b"}


def _visible(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def shown(value: object, *, multiline: bool = False) -> str:
    """`value` as printable text: each control character becomes a visible escape such as `\\x1b`.

    Newlines are kept only with `multiline` (a record or a rule spread over lines); a one-line message
    stays one line whatever its parts contain.
    """
    text = value if isinstance(value, str) else str(value)
    return (_LINES if multiline else _ONE_LINE).sub(_visible, text)

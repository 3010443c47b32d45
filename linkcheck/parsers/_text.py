"""Small helpers shared by parsers: input sanity checks that every parser applies first."""

from __future__ import annotations

from linkcheck.errors import ParseError


def require_text(spec: str, text: str) -> str:
    """Reject binary or empty input with a ParseError; return the text with CRLF normalised."""
    if "\x00" in text:
        raise ParseError(spec, "binary data (NUL bytes)")
    if not text.strip():
        raise ParseError(spec, "empty output")
    return text.replace("\r\n", "\n")

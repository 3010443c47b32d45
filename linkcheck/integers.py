"""Whole numbers as users and nodes write them: ASCII digits only, within a stated range.

`str.isdigit()` takes `²` (which `int()` then refuses) and `int()` takes `٣`, `1_000` and ` 7 `, and refuses a text of
more than 4300 digits with an error no caller expects. Every integer that comes from a user (an option, a hostfile,
an inventory, `$SLURM_JOB_NODELIST`, a YAML file) or from a node goes through `bounded_int`, so each is read one way:
`[0-9]+` (a leading `-` only where the range goes below 0), at most as long as the range's bound, then compared.
"""

from __future__ import annotations

import re

_UNSIGNED = re.compile(r"[0-9]+")
_SIGNED = re.compile(r"-?[0-9]+")
SHOWN_CHARS = 24  # a refused value is quoted at most this long: a number of 5,000 digits is not echoed whole


class NumberError(ValueError):
    """A number that is not ASCII digits or is out of its range; the message says which, the caller says where."""


def quoted(text: str) -> str:
    """`text` quoted for a message (repr: a control character or a surrogate stays visible), cut when long."""
    if len(text) <= SHOWN_CHARS:
        return repr(text)
    return f"{text[:SHOWN_CHARS]!r}... ({len(text)} characters)"


def bounded_int(text: object, low: int, high: int, what: str = "number") -> int:
    """`text` as an integer from `low` to `high`; NumberError saying what is wrong otherwise. An int (a YAML
    file's) is only compared; anything else that is not text (a float, a bool, a list) is refused.

    >>> bounded_int("2222", 1, 65535, "port")
    2222
    >>> bounded_int("²", 1, 65535, "port")
    Traceback (most recent call last):
    ...
    linkcheck.integers.NumberError: port '²' is not a whole number in ASCII digits 0-9
    """
    if isinstance(text, int) and not isinstance(text, bool):
        if not low <= text <= high:  # compared, never printed whole: str() of a 5,000-digit int raises
            raise NumberError(f"{what} {text if abs(text) < 10**SHOWN_CHARS else 'of many digits'} is out of range "
                              f"({low} to {high})")
        return text
    pattern = _SIGNED if low < 0 else _UNSIGNED
    if not isinstance(text, str):
        shown_value = repr(text) if isinstance(text, (float, bool)) else f"of type {type(text).__name__}"
        raise NumberError(f"{what} {shown_value} is not a whole number")
    if pattern.fullmatch(text) is None:
        raise NumberError(f"{what} {quoted(text)} is not a whole number in ASCII digits 0-9")
    digits = text.lstrip("-").lstrip("0")
    if len(digits) > max(len(str(abs(low))), len(str(abs(high)))):  # beyond either bound: no int() of it needed
        raise NumberError(f"{what} {quoted(text)} is out of range ({low} to {high})")
    value = int(digits or "0") * (-1 if text.startswith("-") else 1)  # leading zeros, however many, dropped
    if not low <= value <= high:
        raise NumberError(f"{what} {value} is out of range ({low} to {high})")
    return value


def ascii_int(text: str, low: int, high: int) -> int | None:
    """bounded_int for text a node printed and a parser reads: None where that refuses it."""
    try:
        return bounded_int(text, low, high)
    except NumberError:
        return None


DECIMAL_RE = re.compile(r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]{1,3})?")
MAXDECIMAL_RE_CHARS = 64


def bounded_decimal(text: object, low: float, high: float, what: str = "number") -> float:
    """`text` (ASCII: `12`, `-0.5`, `1.5e3`) as a finite number from `low` to `high`; NumberError otherwise. No `nan`,
    `inf`, `1_0` or digits of other scripts, which float() would take."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = float(text) if not isinstance(text, int) or abs(text) < 1 << 53 else float("inf")
    elif not isinstance(text, str) or len(text) > MAXDECIMAL_RE_CHARS or DECIMAL_RE.fullmatch(text) is None:
        raise NumberError(f"{what} {quoted(str(text))} is not a number in ASCII digits (such as 12 or 0.5)")
    else:
        value = float(text)
    if not (low <= value <= high):  # nan and the infinities fail this too
        raise NumberError(f"{what} {value:g} is out of range ({low:g} to {high:g})")
    return value

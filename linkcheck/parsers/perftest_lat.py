"""Parse perftest latency reports (ib_write_lat, ib_read_lat, ib_send_lat) into rows of microseconds.

The result header names its columns (tool-formats.md 1.7), so they are located by name: perftest >= 4.x prints
`t_min t_max t_typical t_avg t_stdev 99% 99.9%`, the oldest releases only `t_min t_max t_typical`, and the
duration mode (-D) `t_avg[usec]  tps average`. Histogram lines (-H/-U: `#, usec` then `i, value`), the CPU
frequency warning interleaved from stderr and the error messages of the BW tests are handled as there.
Times are half a round trip for WRITE and SEND, a full one for READ, as perftest reports them.
"""

from __future__ import annotations

import math
import re

import msgspec

from linkcheck.errors import ParseError
from linkcheck.parsers._text import require_text
from linkcheck.parsers.perftest import (
    _BANNER,
    _ERROR_OPENINGS,
    _ERROR_RE,
    _FIELDS,
    _INT_FIELDS,
    _TITLE,
    _WARNING,
)

SPEC = "perftest latency"

# Column names as perftest prints them (RESULT_FMT_LAT, RESULT_FMT_LAT_DUR), each with the field it fills.
_COLUMNS = (
    ("#bytes", "size_bytes"), ("#iterations", "iterations"), ("t_min[usec]", "t_min_us"),
    ("t_max[usec]", "t_max_us"), ("t_typical[usec]", "t_typical_us"), ("t_avg[usec]", "t_avg_us"),
    ("t_stdev[usec]", "t_stdev_us"), ("99% percentile[usec]", "p99_us"), ("99.9% percentile[usec]", "p999_us"),
    ("tps average", "tps"),
)
_COLUMN_RE = re.compile("|".join(re.escape(name) for name, _ in _COLUMNS))
_BW_HEADER = re.compile(r"#bytes\s+(#sl\s+)?#iterations\s+BW peak")
_HISTOGRAM = re.compile(r"^\s*(?:#, usec|[0-9]+, [0-9.]+)\s*$")
_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]*)?|(?i:nan|-?inf(?:inity)?)")
_INT = re.compile(r"[0-9]{1,30}")
_CPU_FREQ = re.compile(  # only where glued to other text, so line numbers stay true otherwise
    r"(?<=[^\n])(?=Conflicting CPU frequency values detected:)|(?<=CPU Frequency is not max\.)(?=[^\n])"
)


class LatencyRow(msgspec.Struct, frozen=True):
    """One message size; times in microseconds (None where this perftest does not print the column)."""

    size_bytes: int
    iterations: int
    t_min_us: float | None = None
    t_max_us: float | None = None
    t_typical_us: float | None = None
    t_avg_us: float | None = None
    t_stdev_us: float | None = None
    p99_us: float | None = None
    p999_us: float | None = None
    tps: float | None = None

    @property
    def typical_us(self) -> float | None:
        """The figure a latency is quoted by: t_typical (the median), else t_avg (duration mode)."""
        return self.t_typical_us if self.t_typical_us is not None else self.t_avg_us


class LatencyResult(msgspec.Struct, frozen=True):
    """One side's perftest latency report; `rows` is empty when the run died before its first result."""

    test: str | None
    role: str | None
    device: str | None
    link_type: str | None
    mtu_bytes: int | None
    gid_index: int | None
    data_exchange: str | None
    rows: tuple[LatencyRow, ...]
    errors: tuple[str, ...]
    warnings: tuple[str, ...]

    def row(self, size_bytes: int) -> LatencyRow | None:
        """The row of one message size (the last one printed, should a size repeat)."""
        return next((r for r in reversed(self.rows) if r.size_bytes == size_bytes), None)


class _Acc(msgspec.Struct):
    test: str | None = None
    server: bool = False
    banner: dict[str, str] = msgspec.field(default_factory=dict)
    columns: list[str] | None = None
    rows: list[LatencyRow] = msgspec.field(default_factory=list)
    errors: list[str] = msgspec.field(default_factory=list)
    warnings: list[str] = msgspec.field(default_factory=list)
    recognised: bool = False


def parse_perftest_lat(text: str) -> LatencyResult:
    """Parse one perftest latency output (client or server).

    >>> r = parse_perftest_lat(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]\\n"
    ...                        " 2       1000          1.42           1.93         1.47\\n")
    >>> r.rows[0].typical_us, r.rows[0].t_avg_us
    (1.47, None)
    """
    text = _CPU_FREQ.sub("\n", require_text(SPEC, text))
    acc = _Acc()
    for no, line in enumerate(text.split("\n"), start=1):
        if line.strip() and _line(acc, line, no):
            acc.recognised = True
    if not acc.recognised:
        raise ParseError(SPEC, "no perftest banner, latency header, result or error line")
    b = acc.banner
    ints = {k: int(b[k]) if k in b else None for k in _INT_FIELDS}
    return LatencyResult(
        test=acc.test, role="server" if acc.server else ("client" if "tx_depth" in b else None),
        device=b.get("device"), link_type=b.get("link_type"), mtu_bytes=ints["mtu_bytes"],
        gid_index=ints["gid_index"], data_exchange=b.get("data_exchange"), rows=tuple(acc.rows),
        errors=tuple(acc.errors), warnings=tuple(acc.warnings))


def _line(acc: _Acc, line: str, no: int) -> bool:
    return any(handler(acc, line, no) for handler in _HANDLERS)


def _title(acc: _Acc, line: str, no: int) -> bool:
    if "Waiting for client to connect" in line:
        acc.server = True
        return True
    title = _TITLE.match(line)
    if title is not None and " BW " in f" {title.group(1)} ":
        raise ParseError(SPEC, "bandwidth test output; parse it as ib_write_bw", no)
    if title is not None:
        acc.test = title.group(1)
    return title is not None


def _header(acc: _Acc, line: str, no: int) -> bool:
    if _BW_HEADER.search(line):
        raise ParseError(SPEC, "bandwidth test output; parse it as ib_write_bw", no)
    if "#bytes" in line and "#iterations" in line and "[usec]" in line:
        acc.columns = [dict(_COLUMNS)[m.group(0)] for m in _COLUMN_RE.finditer(line)]
        return True
    return False


def _message(acc: _Acc, line: str, no: int) -> bool:
    stripped = line.strip()
    if stripped.startswith(_ERROR_OPENINGS) or _ERROR_RE.match(stripped):
        acc.errors.append(stripped)
    elif _WARNING.match(stripped):
        acc.warnings.append(stripped)
    else:
        return _HISTOGRAM.match(line) is not None  # -H/-U samples: not results
    return True


def _banner(acc: _Acc, line: str, no: int) -> bool:
    if not _BANNER.match(line):
        return False
    for name, pattern in _FIELDS.items():
        m = pattern.search(line)
        if m is not None:
            acc.banner[name] = m.group(1)
    return True


def _row(acc: _Acc, line: str, no: int) -> bool:
    tokens = line.split()
    if acc.columns is None or not tokens or not all(_NUMBER.fullmatch(t) for t in tokens):
        return False
    if len(tokens) < min(len(acc.columns), 3) or not (_INT.fullmatch(tokens[0]) and _INT.fullmatch(tokens[1])):
        raise ParseError(SPEC, "truncated or malformed result row", no)
    fields: dict[str, float | int] = {"size_bytes": int(tokens[0]), "iterations": int(tokens[1])}
    for name, token in zip(acc.columns[2:], tokens[2:], strict=False):
        fields[name] = _time(token, name, no)
    acc.rows.append(msgspec.convert(fields, LatencyRow))
    return True


def _time(value: str, name: str, no: int) -> float:
    """A measured time: finite, at least 0; perftest prints nan or inf for a run without samples."""
    number = float(value)
    if not math.isfinite(number) or number < 0:
        raise ParseError(SPEC, f"{name} is {value!r}, not a finite time", no)
    return number


_HANDLERS = (_title, _header, _message, _banner, _row)

"""Parse nccl-tests output (all_gather_perf, all_reduce_perf; stdout of every era, or the -J JSON file).

Columns are located from the table header, so legacy (no root column, `error` column), current (13
fields), -S (timestamp appended), -I (per-iteration columns after each side) and trace-replay rows
(in-place only) all parse. NCCL INFO lines and mpirun noise between rows are ignored. The JSON `env`
object holds rank 0's whole environment and is never read.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import msgspec

from linkcheck.errors import ParseError
from linkcheck.parsers._text import require_text

SPEC = "nccl-tests"

# v2.20 builds from git add the commit: "# nccl-tests version 2.20.0 (b4d5bee) nccl-headers=..."
_VERSION = re.compile(
    r"^# nccl-tests version (\S+) (?:\([0-9a-f]{4,40}\) )?nccl-headers=[0-9]+ nccl-library=([0-9]{1,18})\b"
)
_PROGRAM = re.compile(r"^# Collective test (?:starting|concluded): (\S+)")
# The first nccl-tests (2017-2018, up to cbe7f65) printed "nThread ..." and the footer without "# " and the rank
# lines without a Pid; pasted output often loses the "#"s too.
_NTHREAD = re.compile(r"^(?:# )?nThread [0-9]+ ")
_RANK = re.compile(  # "Group" appeared in v2.11, "Pid" in 2019; hostnames are cut at the first "."
    r"^#\s+Rank\s+[0-9]+\s+(?:Group\s+[0-9]+\s+)?(?:Pid\s+[0-9]+\s+)?on\s+(\S+)\s+device\s+[0-9]+\s+\["
)
_OOB = re.compile(r"^#?\s*Out of bounds values\s*: ([0-9]{1,18})\b")
_AVG = re.compile(r"^#?\s*Avg bus bandwidth\s*: (\S+)\s*(\S*)")
_ERROR = re.compile(
    r"Test (?:CUDA|NCCL) failure|Test timeout \(|^\s*\.\. \S+ pid [0-9]+: Test failure|^# error: \S"
    r"|^Invalid number of GPUs|^invalid sizes? |^invalid option"
)
_INT = re.compile(r"-?[0-9]+")
_WORD = re.compile(r"\S+")
_TIME_LABELS = ("time", "cputime")


class NcclTestRow(msgspec.Struct, frozen=True):
    """One size of the sweep; times in microseconds, bandwidths in GB/s (10^9 bytes/s)."""

    size_bytes: int
    count: int
    dtype: str
    redop: str
    root: int
    oop_time_us: float | None
    oop_algbw_gbs: float | None
    oop_busbw_gbs: float | None
    oop_wrong: int | None
    ip_time_us: float | None
    ip_algbw_gbs: float | None
    ip_busbw_gbs: float | None
    ip_wrong: int | None


class NcclTestResult(msgspec.Struct, frozen=True):
    """One nccl-tests run as rank 0 reported it; `completed` is False for output cut before the footer."""

    program: str | None
    version: str | None
    nccl_version: int | None
    ranks: int
    hosts: tuple[str, ...]
    rows: tuple[NcclTestRow, ...]
    avg_busbw_gbs: float | None
    out_of_bounds: int | None
    errors: tuple[str, ...]
    completed: bool
    format: str
    header_blocks: int = 1

    @property
    def max_busbw_gbs(self) -> float | None:
        """Highest bus bandwidth over every row and both placements (NaN ignored)."""
        values = [v for r in self.rows for v in (r.oop_busbw_gbs, r.ip_busbw_gbs) if v is not None]
        values = [v for v in values if not math.isnan(v)]
        return max(values) if values else None

    @property
    def wrong_total(self) -> int:
        """Sum of the #wrong columns that were checked (None with -c 0 is skipped)."""
        return sum(w for r in self.rows for w in (r.oop_wrong, r.ip_wrong) if w is not None)

    @property
    def independent_runs(self) -> int:
        """Header blocks seen; more than 1 means a binary built without MPI=1 was started by mpirun."""
        return self.header_blocks


class _Layout(msgspec.Struct, frozen=True):
    """Where the columns are, read from the `#  size  count ...` header line."""

    pre: int = 5  # size count type [redop] [root]: all_gather before 2.x printed neither redop nor root
    width: int = 4  # fields per placement: time algbw busbw #wrong [i_min i_max i_p99 i_cv%]
    has_root: bool = True
    wrong_is_count: bool = True  # <= v2.10 printed the max error value ("error"), not a count
    has_redop: bool = True
    time_scale: float = 1.0  # the first nccl-tests ("bytes N ..." header) printed milliseconds


class _Acc(msgspec.Struct):
    program: str | None = None
    version: str | None = None
    nccl_version: int | None = None
    ranks: int = 0
    hosts: dict[str, None] = msgspec.field(default_factory=dict)  # ordered set: `not in list` is quadratic
    rows: list[NcclTestRow] = msgspec.field(default_factory=list)
    avg: float | None = None
    oob: int | None = None
    errors: list[str] = msgspec.field(default_factory=list)
    blocks: int = 0
    footers: int = 0
    layout: _Layout = msgspec.field(default_factory=_Layout)
    bad_row: int | None = None
    recognised: bool = False
    header_seen: bool = False


def parse_nccl_tests(text: str) -> NcclTestResult:
    """Parse all_gather_perf / all_reduce_perf stdout, or the JSON file written with -J.

    >>> r = parse_nccl_tests(
    ...     "#       size         count      type   redop    root     time   algbw   busbw  #wrong"
    ...     "     time   algbw   busbw  #wrong\\n"
    ...     "  1073741824     134217728     float    none      -1  27211.0   39.46   19.73       0"
    ...     "  25806.7   41.61   20.80       0\\n"
    ...     "# Out of bounds values : 0 OK\\n# Avg bus bandwidth    : 20.265 \\n")
    >>> r.completed, r.avg_busbw_gbs, r.max_busbw_gbs, r.wrong_total
    (True, 20.265, 20.8, 0)
    """
    text = require_text(SPEC, text)
    if text.lstrip().startswith("{"):
        return _from_json(text)
    acc = _Acc()
    for no, line in enumerate(text.split("\n"), start=1):
        if any(handler(acc, line, no) for handler in _HANDLERS):
            acc.recognised = True
    if not acc.recognised:
        raise ParseError(SPEC, "no nccl-tests header, result row, footer or error line")
    completed = acc.footers > 0 and acc.footers >= acc.blocks
    if completed and acc.bad_row is not None:
        raise ParseError(SPEC, "malformed result row", acc.bad_row)
    return NcclTestResult(
        program=acc.program, version=acc.version, nccl_version=acc.nccl_version, ranks=acc.ranks,
        hosts=tuple(acc.hosts), rows=tuple(acc.rows), avg_busbw_gbs=acc.avg, out_of_bounds=acc.oob,
        errors=tuple(acc.errors), completed=completed, format="text", header_blocks=max(acc.blocks, 1),
    )


def _preamble(acc: _Acc, line: str, no: int) -> bool:
    m = _VERSION.match(line)
    if m is not None:
        acc.version, acc.nccl_version = m.group(1), int(m.group(2))
    elif (m := _PROGRAM.match(line)) is not None:
        acc.program = m.group(1)
    elif _NTHREAD.match(line):
        acc.blocks += 1
    elif (m := _RANK.match(line)) is not None:
        acc.ranks += 1
        acc.hosts.setdefault(m.group(1), None)
    return m is not None or _NTHREAD.match(line) is not None


def _table_header(acc: _Acc, line: str, no: int) -> bool:
    names = line[1:].split() if line.startswith("#") else line.split()  # pasted output may lose its "#"
    if names[:2] not in (["size", "count"], ["bytes", "N"]):
        return False
    starts = [i for i, name in enumerate(names) if name in _TIME_LABELS]
    if len(starts) == 2 and starts[0] in (3, 4, 5) and starts[1] - starts[0] >= 4:
        pre, width = starts[0], starts[1] - starts[0]
        acc.layout = _Layout(pre, width, "root" in names[:pre], names[pre + 3] == "#wrong",
                             has_redop=bool({"redop", "op"} & set(names[:pre])),
                             time_scale=1000.0 if names[0] == "bytes" else 1.0)
        acc.header_seen = True
    return True


def _footer(acc: _Acc, line: str, no: int) -> bool:
    m = _OOB.match(line)
    if m is not None:
        acc.oob = (acc.oob or 0) + int(m.group(1))  # independent runs: any corruption anywhere counts
        return True
    m = _AVG.match(line)
    if m is None:
        return False
    try:
        acc.avg = float(m.group(1))
    except ValueError as exc:
        raise ParseError(SPEC, f"average bus bandwidth {m.group(1)!r} is not a number", no) from exc
    acc.footers += 1
    if m.group(2) == "FAILED":  # NCCL_TESTS_MIN_BW was set and not reached
        acc.errors.append(line.lstrip("# ").strip())
    return True


def _error(acc: _Acc, line: str, no: int) -> bool:
    if _ERROR.search(line) is None:
        return False
    acc.errors.append(line.strip())
    return True


def _row(acc: _Acc, line: str, no: int) -> bool:
    tokens = line.split()
    if len(tokens) < 2 or not (tokens[0].isascii() and tokens[0].isdigit() and _INT.fullmatch(tokens[1])):
        return False
    words = [m.span() for m in _WORD.finditer(line)]
    layout = acc.layout if acc.header_seen else _guess_layout(tokens)
    pre = layout.pre
    # trace replay prints 32 blanks instead of the out-of-place fields; a normal row has <= 8 there
    oop_blank = len(words) > pre and words[pre][0] - words[pre - 1][1] >= 30
    try:
        acc.rows.append(_make_row(tokens, layout, oop_blank))
    except (ValueError, OverflowError):
        acc.bad_row = no  # a cut-off last row is normal in truncated output
    return True


def _guess_layout(tokens: list[str]) -> _Layout:
    """Columns of a row pasted without its table header: 12 fields are the <= v2.10 rows (no root column),
    11 the <= v2.10 all_gather rows (no redop either)."""
    if len(tokens) == 12 and not _INT.fullmatch(tokens[4]):
        return _Layout(4, 4, False, _INT.fullmatch(tokens[7]) is not None)  # "0e+00": max error, not a count
    if len(tokens) == 11 and not _INT.fullmatch(tokens[3]):
        return _Layout(3, 4, False, _INT.fullmatch(tokens[6]) is not None, has_redop=False)
    return _Layout()


_HANDLERS = (_preamble, _table_header, _footer, _error, _row)


def _make_row(tokens: list[str], lay: _Layout, oop_blank: bool) -> NcclTestRow:
    if len(tokens) < lay.pre + (1 if oop_blank else 2) * lay.width:
        raise ValueError("too few fields")  # a row cut short
    oop = None if oop_blank else tokens[lay.pre:lay.pre + 4]
    start = lay.pre if oop_blank else lay.pre + lay.width
    ip = tokens[start:start + 4]
    o_t, o_a, o_b, o_w = _side(oop, lay.wrong_is_count, lay.time_scale)
    i_t, i_a, i_b, i_w = _side(ip, lay.wrong_is_count, lay.time_scale)
    root = int(tokens[lay.pre - 1]) if lay.has_root else -1
    return NcclTestRow(int(tokens[0]), int(tokens[1]), tokens[2], tokens[3] if lay.has_redop else "", root,
                       o_t, o_a, o_b, o_w, i_t, i_a, i_b, i_w)


_Side = tuple[float | None, float | None, float | None, int | None]


def _side(fields: list[str] | None, wrong_is_count: bool, time_scale: float = 1.0) -> _Side:
    if fields is None:
        return None, None, None, None
    time_us, algbw, busbw = (float(f) for f in fields[:3])
    time_us *= time_scale
    wrong = None if fields[3] == "N/A" or not wrong_is_count else int(float(fields[3]))
    return time_us, algbw, busbw, wrong


def _from_json(text: str) -> NcclTestResult:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ParseError(SPEC, f"invalid or truncated JSON: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise ParseError(SPEC, "JSON is not an nccl-tests report (no 'results' list)")
    devices = [d for d in _jlist(_jobj(data.get("config")).get("devices")) if isinstance(d, dict)]
    hosts = [d["hostname"] for d in devices if isinstance(d.get("hostname"), str)]
    args = _jlist(data.get("args"))
    oob = _jobj(data.get("out_of_bounds")).get("count")
    avg = _jfloat(_jobj(data.get("average_bus_bandwidth")).get("bandwidth"))
    version = data.get("nccl_version")
    return NcclTestResult(
        program=args[0].rsplit("/", 1)[-1] if args and isinstance(args[0], str) else None,
        version=None,  # the JSON "version" key is the file-format version, not the nccl-tests release
        nccl_version=version if isinstance(version, int) and not isinstance(version, bool) else None,
        ranks=len(devices), hosts=tuple(dict.fromkeys(hosts)),
        rows=tuple(_json_row(r) for r in data["results"]), avg_busbw_gbs=avg,
        out_of_bounds=oob if isinstance(oob, int) and not isinstance(oob, bool) else None,
        errors=tuple(e.strip() for e in _jlist(data.get("errors")) if isinstance(e, str) and e.strip()),
        completed=avg is not None, format="json",
    )


def _json_row(row: object) -> NcclTestRow:
    if not isinstance(row, dict):
        raise ParseError(SPEC, "JSON result entry is not an object")
    try:  # root is a padded string ("    -1"); size and count are integers
        size, count, root = (int(str(row.get(k)).strip()) for k in ("size", "count", "root"))
    except ValueError as exc:
        raise ParseError(SPEC, "JSON result size/count/root is not an integer") from exc
    o_t, o_a, o_b, o_w = _json_side(row.get("out_of_place"))
    i_t, i_a, i_b, i_w = _json_side(row.get("in_place"))
    return NcclTestRow(size, count, str(row.get("type")), str(row.get("redop")), root,
                       o_t, o_a, o_b, o_w, i_t, i_a, i_b, i_w)


def _json_side(side: object) -> _Side:
    if side is None:  # trace replay writes "out_of_place": null
        return None, None, None, None
    if not isinstance(side, dict):
        raise ParseError(SPEC, "JSON placement is not an object")
    time_us = _jfloat(side.get("time", side.get("cpu_time")))  # "cpu_time" with -C 1
    wrong = _jfloat(side.get("nwrong"))  # null with -c 0
    if wrong is not None and not math.isfinite(wrong):
        raise ParseError(SPEC, "JSON nwrong is not a finite number")
    return (time_us, _jfloat(side.get("alg_bw")), _jfloat(side.get("bus_bw")),
            None if wrong is None else int(wrong))


def _jfloat(value: object) -> float | None:
    """JSON numbers; doubles that were NaN arrive as the string "nan"."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ParseError(SPEC, f"JSON value {value!r} is not a number")
    try:
        return float(value)
    except (ValueError, OverflowError) as exc:
        raise ParseError(SPEC, f"JSON value {value!r} is not a number") from exc


def _jobj(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _jlist(value: object) -> list[Any]:
    return value if isinstance(value, list) else []

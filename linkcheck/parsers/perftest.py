"""Parse perftest BW reports (ib_write/read/send_bw: text, --output=bandwidth, --out_json) into Gb/s rows.

Every era is accepted: MB/sec (<= 6.21), MiB/sec (>= 6.22) and Gb/sec headers, tab padding of any width,
6-decimal rows, --cpu_util, duration mode, stderr interleaved, server and client sides, and the three JSON
shapes (pseudo-JSON before 24.01, standard JSON, standard JSON with a trailing comma).
"""

from __future__ import annotations

import ipaddress
import math
import re
from typing import Any

import msgspec

from linkcheck.errors import ParseError
from linkcheck.parsers._perftest_json import load_json as _load_json
from linkcheck.parsers._text import require_text
from linkcheck.parsers.identity import PerftestVersion, parse_perftest_version  # noqa: F401 - kept importable here

SPEC = "perftest"
_MIB_GBPS = 1048576 * 8 / 1e9  # MB/sec and MiB/sec are both 2^20 bytes per second
UNIT_TO_GBPS = {"MB/sec": _MIB_GBPS, "MiB/sec": _MIB_GBPS, "Gb/sec": 1.0}
_INFER_MIB_ABOVE = 500.0  # no 200-400G link reaches 500 Gb/s, and no working one stays under 500 MiB/s

_NUM = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|(?i:nan|inf(?:inity)?))")  # non-finite ones are refused by _rate
_INT = re.compile(r"[0-9]{1,30}")  # bounded: int() refuses 4300+ digit strings
_TITLE = re.compile(r"^\s+([A-Za-z_]+(?: [A-Za-z_]+)* (?:BW|Latency)(?: Multicast)? Test)\s*$")
_HEADER = re.compile(r"#bytes\s+(#sl\s+)?#iterations\s+BW peak\[([^\]]*)\]\s+BW average\[([^\]]*)\]")
_LAT_HEADER = re.compile(r"#bytes\s+#iterations\s+t_(?:min|avg)")
_ADDRESS = re.compile(r"^\s*(local|remote) address:")
_GID = re.compile(r"^\s*GID: ((?:[0-9]{1,3}:){15}[0-9]{1,3})\s*$")
_BANNER = re.compile(
    r"^\s(?:Dual-port|Number of qps|Connection type|PCIe relax order|ibv_wr\* API|TX depth|Post List|RX depth"
    r"|CQ Moderation|CQE Poll Batch|Mtu|Link type|GID index|Max inline data|Outstand reads|rdma_cm QPs"
    r"|Use ROCm memory|Data ex\. method|NUMA node)\s*:"
)
_FIELDS = {  # searched, not split: copies with tabs expanded to spaces still parse
    "device": re.compile(r"\bDevice\s*:\s*(\S+)"),
    "qps": re.compile(r"Number of qps\s*:\s*([0-9]{1,18})\b"),
    "connection_type": re.compile(r"Connection type\s*:\s*(\S+)"),
    "link_type": re.compile(r"Link type\s*:\s*(\S+)"),
    "mtu_bytes": re.compile(r"Mtu\s*:\s*([0-9]{1,18})\b"),
    "gid_index": re.compile(r"GID index\s*:\s*(-?[0-9]{1,18})\b"),
    "data_exchange": re.compile(r"Data ex\. method\s*:\s*(\S+)"),
    "tx_depth": re.compile(r"TX depth\s*:\s*([0-9]{1,18})\b"),
}
_INT_FIELDS = ("qps", "mtu_bytes", "gid_index", "tx_depth")
_JSON_KEYS = {
    "device": "Device", "qps": "Number_of_qps", "connection_type": "Connection_type",
    "link_type": "Link_type", "mtu_bytes": "Mtu", "gid_index": "GID_index",
    "data_exchange": "Data_ex_method", "tx_depth": "TX_depth",
}
# tool-formats.md 1.10: the fatal messages, matched at the start of the stripped line. Most open with fixed
# words; the few that carry a device name or a number are one small pattern.
_ERROR_OPENINGS = (
    "Did not detect devices", "If device exists, check if driver is up", "No IB devices found",
    "Unable to find the Infiniband/RoCE device", "Couldn't get context for the device", "Unable to query port",
    "Link layer on port", "Couldn't set the link layer", "Couldn't connect to", "Couldn't listen to port",
    "Problem in resolving basic address and port", "Unable to open file descriptor for socket",
    "Unable to init the socket connection", "ethernet_read_keys:", "Failed to exchange data",
    "Current implementation is not compatible", "Unable to set up socket connection", "Failed to modify QP",
    "Found Incompatibility issue with GID types", "Please Try to use a different IP version",
    "Unable to Connect the HCA's through the link", "Unable to create RDMA_CM resources",
    "Failed to create RDMA CM connection", "Unable to connect (retries", "unexpected CM event",
    "Completion with error at", "Failed status",
    "Failed to complete run_iter_bw", "Did not get Message for", "Total Received=", "Can't produce a report",
    "Error: ", "Parser function exited with Error", "Invalid Command", "Duplicated argument",
    "Message Size should be between", "Gid index should be between", "IB Port can't be less than",
    "Unsupported memory type", "Invalid verbosity level", "please check that DURATION",
    "Duration mode currently doesn't support", "Please check command line",
)
_ERROR_RE = re.compile(
    r"^(?:IB device \S+ not found|Port number [0-9]+ state is|Unable to (?:read|write) (?:from|to) socket/rdma_cm"
    r"|Received [0-9]+ times ADDR_ERROR|rdma_resolve_(?:addr|route) failed|[sr]cnt=)"
)
_WARNING = re.compile(  # non-fatal: the run goes on (MTU corrected, peak not measured, CPU not at max)
    r"^(?:WARNING:|Conflicting CPU frequency values detected|Requested mtu is higher|Changing to active mtu"
    r"|Invalid MTU|Please choose mtu from|Will run with the port active mtu)"
)
_NOTICE = re.compile(r"Client closed connection|Waiting for client rdma_cm QP|Please run the same command")
_BARE_NUMBER = re.compile(r"^\s*[0-9]+(?:\.[0-9]+)?\s*$")
# perftest <= 23.10 forgot a newline between two messages; stderr may land inside a stdout line.
_GLUED = re.compile(r"(socket connection)( Unable to init)")
_CPU_FREQ = re.compile(  # only where glued to other text, so line numbers stay true otherwise
    r"(?<=[^\n])(?=Conflicting CPU frequency values detected:)|(?<=CPU Frequency is not max\.)(?=[^\n])"
)


class PerftestRow(msgspec.Struct, frozen=True):
    """One result row; bandwidths already converted to Gb/s (10^9 bit/s)."""

    size_bytes: int
    iterations: int
    bw_peak_gbps: float
    bw_avg_gbps: float
    msg_rate_mpps: float
    cpu_util_pct: float | None = None


class PerftestResult(msgspec.Struct, frozen=True):
    """One side's perftest BW report; `rows` is empty when the run died before its first result."""

    test: str | None
    role: str | None
    device: str | None
    qps: int | None
    connection_type: str | None
    link_type: str | None
    mtu_bytes: int | None
    gid_index: int | None
    data_exchange: str | None
    unit: str | None
    unit_inferred: bool
    rows: tuple[PerftestRow, ...]
    local_gids: tuple[str, ...]
    remote_gids: tuple[str, ...]
    errors: tuple[str, ...]
    warnings: tuple[str, ...]
    format: str

    @property
    def bw_avg_gbps(self) -> float | None:
        """Average bandwidth of the last row (the largest size with -a), None without a row."""
        return self.rows[-1].bw_avg_gbps if self.rows else None

    @property
    def bw_mean_gbps(self) -> float | None:
        """Mean of every row's average: the figure of interest for --run_infinitely."""
        return sum(r.bw_avg_gbps for r in self.rows) / len(self.rows) if self.rows else None


class _Acc(msgspec.Struct):
    """Mutable state while reading text lines."""

    test: str | None = None
    server: bool = False
    banner: dict[str, str] = msgspec.field(default_factory=dict)
    unit: str | None = None
    sl_col: bool = False
    cpu_col: bool = False
    rows: list[PerftestRow] = msgspec.field(default_factory=list)
    side: str | None = None
    gids: dict[str, list[str]] = msgspec.field(default_factory=lambda: {"local": [], "remote": []})
    errors: list[str] = msgspec.field(default_factory=list)
    warnings: list[str] = msgspec.field(default_factory=list)
    numbers: list[float] = msgspec.field(default_factory=list)
    recognised: bool = False


def parse_perftest(text: str, *, report_gbits: bool | None = None) -> PerftestResult:
    """Parse one perftest BW output; `report_gbits`: was --report_gbits passed (None: unknown).

    >>> r = parse_perftest(" #bytes  #iterations  BW peak[Gb/sec]  BW average[Gb/sec]   MsgRate[Mpps]\\n"
    ...                    " 65536      5000             384.33             384.12 \\t\\t     0.732647\\n")
    >>> r.bw_avg_gbps, r.unit, r.rows[0].size_bytes
    (384.12, 'Gb/sec', 65536)
    """
    text = require_text(SPEC, text)
    if text.lstrip().startswith("{"):
        return _from_json(_load_json(text), report_gbits)
    text = _CPU_FREQ.sub("\n", _GLUED.sub(r"\1\n\2", text))
    acc = _Acc()
    for no, line in enumerate(text.split("\n"), start=1):
        if line.strip() and any(handler(acc, line, no) for handler in _HANDLERS):
            acc.recognised = True
    if acc.unit is None and acc.numbers and acc.test is None and not acc.banner:
        return _bandwidth_only(acc, report_gbits)
    if not acc.recognised:
        raise ParseError(SPEC, "no perftest banner, result header, result or error line")
    return _result(acc, acc.unit, False, "text")


def _header(acc: _Acc, line: str, no: int) -> bool:
    if _LAT_HEADER.search(line):
        raise ParseError(SPEC, "latency test output; only BW tests are parsed", no)
    m = _HEADER.search(line)
    if m is None:
        return False
    if m.group(3) not in UNIT_TO_GBPS:
        raise ParseError(SPEC, f"unknown bandwidth unit {m.group(3)!r}", no)
    acc.unit, acc.sl_col, acc.cpu_col = m.group(3), m.group(1) is not None, "CPU_Util" in line
    return True


def _row(acc: _Acc, line: str, no: int) -> bool:
    tokens = line.split()
    if acc.unit is None or not all(_NUM.fullmatch(t) for t in tokens):
        return False
    if acc.sl_col and len(tokens) > 1:  # raw_qos: "#bytes #sl #iterations ..."
        del tokens[1]
    if len(tokens) < 5 or not (_INT.fullmatch(tokens[0]) and _INT.fullmatch(tokens[1])):
        raise ParseError(SPEC, "truncated or malformed result row", no)
    f = UNIT_TO_GBPS[acc.unit]
    cpu = _rate(tokens[5], "CPU_Util", no) if acc.cpu_col and len(tokens) > 5 else None
    peak, avg, rate = (_rate(tokens[i], name, no) for i, name in ((2, "BW peak"), (3, "BW average"), (4, "MsgRate")))
    acc.rows.append(PerftestRow(int(tokens[0]), int(tokens[1]), peak * f, avg * f, rate, cpu))
    return True


def _title(acc: _Acc, line: str, no: int) -> bool:
    if "Waiting for client to connect" in line:
        acc.server = True
        return True
    m = _TITLE.match(line)
    if m is not None:
        acc.test = m.group(1)
    return m is not None


def _address(acc: _Acc, line: str, no: int) -> bool:
    m = _ADDRESS.match(line)
    if m is not None:
        acc.side = m.group(1)
        return True
    m = _GID.match(line)
    if m is not None and acc.side is not None:  # GID lines follow their own address line
        acc.gids[acc.side].append(gid_text(m.group(1).split(":"), no))
    return m is not None


def gid_text(fields: list[str], line_no: int | None = None) -> str:
    """Turn perftest's 16 decimal GID bytes into normal text; IPv4-mapped GIDs print as ::ffff:a.b.c.d."""
    raw = [int(f, 10) for f in fields]
    if len(raw) != 16 or any(b > 255 for b in raw):
        raise ParseError(SPEC, "GID is not 16 bytes of 0..255", line_no)
    addr = ipaddress.IPv6Address(bytes(raw))
    return f"::ffff:{addr.ipv4_mapped}" if addr.ipv4_mapped is not None else str(addr)


def _message(acc: _Acc, line: str, no: int) -> bool:
    stripped = line.strip()
    if stripped.startswith(_ERROR_OPENINGS) or _ERROR_RE.match(stripped):
        acc.errors.append(stripped)
    elif _WARNING.match(stripped):
        acc.warnings.append(stripped)
    else:
        return _NOTICE.search(line) is not None
    return True


def _banner(acc: _Acc, line: str, no: int) -> bool:
    if not _BANNER.match(line):
        return False
    for name, pattern in _FIELDS.items():
        m = pattern.search(line)
        if m is not None:
            acc.banner[name] = m.group(1)
    return True


def _rate(value: str | float, name: str, no: int | None = None) -> float:
    """A measured figure: a finite number, at least 0. perftest prints `nan` or `inf` when a run had no
    time or no data, and such a figure must never be judged (nor a ratio taken of it): the output is refused."""
    number = float(value)
    if not math.isfinite(number) or number < 0:
        raise ParseError(SPEC, f"{name} is {value!r}, not a finite rate", no)
    return number


def _number(acc: _Acc, line: str, no: int) -> bool:
    if _BARE_NUMBER.match(line):
        acc.numbers.append(_rate(line.strip(), "the bandwidth", no))
        return True
    return False


_HANDLERS = (_header, _row, _title, _address, _message, _banner, _number)


def _result(acc: _Acc, unit: str | None, inferred: bool, fmt: str) -> PerftestResult:
    b = acc.banner
    ints = {k: int(b[k]) if k in b else None for k in _INT_FIELDS}
    return PerftestResult(
        test=acc.test, role="server" if acc.server else ("client" if "tx_depth" in b else None),
        device=b.get("device"), qps=ints["qps"], connection_type=b.get("connection_type"),
        link_type=b.get("link_type"), mtu_bytes=ints["mtu_bytes"], gid_index=ints["gid_index"],
        data_exchange=b.get("data_exchange"), unit=unit, unit_inferred=inferred, rows=tuple(acc.rows),
        local_gids=tuple(acc.gids["local"]), remote_gids=tuple(acc.gids["remote"]),
        errors=tuple(acc.errors), warnings=tuple(acc.warnings), format=fmt,
    )


def _unit_for(value: float, report_gbits: bool | None) -> tuple[str, bool]:
    if report_gbits is not None:
        return ("Gb/sec" if report_gbits else "MiB/sec"), False
    return ("MiB/sec" if value > _INFER_MIB_ABOVE else "Gb/sec"), True


def _bandwidth_only(acc: _Acc, report_gbits: bool | None) -> PerftestResult:
    # --output=bandwidth prints only each size's average: size, iterations, peak and rate are unknown (0).
    value = acc.numbers[-1]
    unit, inferred = _unit_for(value, report_gbits)
    acc.rows = [PerftestRow(0, 0, 0.0, value * UNIT_TO_GBPS[unit], 0.0)]
    return _result(acc, unit, inferred, "bandwidth-only")


def _from_json(data: dict[str, Any], report_gbits: bool | None) -> PerftestResult:
    info, results = data.get("test_info", {}), data.get("results", {})
    if not isinstance(info, dict) or not isinstance(results, dict) or not (info or results):
        raise ParseError(SPEC, "JSON without 'test_info'/'results' objects")
    acc = _Acc(test=info.get("test") if isinstance(info.get("test"), str) else None)
    acc.banner = {k: str(info[j]) for k, j in _JSON_KEYS.items() if _banner_value(info.get(j), k)}
    acc.warnings = [str(v) for k, v in info.items() if k.startswith("WARNING")]
    avg_key = next((k for k in ("BW_average", "bw_avg") if k in results), None)
    if avg_key is None:  # e.g. --output=message_rate: no bandwidth in the file
        return _result(acc, None if report_gbits is None else _unit_for(0.0, report_gbits)[0], False, "json")
    avg = _jnum(results, avg_key)
    unit, inferred = _unit_for(avg, report_gbits)
    f = UNIT_TO_GBPS[unit]
    if avg_key == "bw_avg":
        acc.rows = [PerftestRow(0, 0, 0.0, avg * f, 0.0)]
    else:
        cpu = _jnum(results, "CPU_util") if "CPU_util" in results else None
        acc.rows = [PerftestRow(_jint(results, "MsgSize"), _jint(results, "n_iterations"),
                                _jnum(results, "BW_peak") * f, avg * f, _jnum(results, "MsgRate"), cpu)]
    return _result(acc, unit, inferred, "json")


def _banner_value(value: object, name: str) -> bool:
    """Keep integers for numeric banner keys and strings for the others; drop anything else."""
    if name in _INT_FIELDS:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, str)


def _jnum(obj: dict[str, Any], key: str) -> float:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ParseError(SPEC, f"JSON results key {key!r} is missing or not a number")
    try:
        return _rate(value, f"JSON results key {key!r}")
    except OverflowError as exc:
        raise ParseError(SPEC, f"JSON results key {key!r} is out of range") from exc


def _jint(obj: dict[str, Any], key: str) -> int:
    value = obj.get(key)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    number = _jnum(obj, key)
    if not number.is_integer():
        raise ParseError(SPEC, f"JSON results key {key!r} is not an integer")
    return int(number)

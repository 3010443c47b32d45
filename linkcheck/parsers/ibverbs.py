"""Verbs-level port views from `ibv_devinfo` and `ibstat`, all versions: lane speed and width, GIDs, rate.

Split from rdma.py so that a diagnosis, which reads these only as a fallback, does not define their records.
"""

from __future__ import annotations

import re

import msgspec

from linkcheck.errors import ParseError
from linkcheck.parsers._text import require_text
from linkcheck.parsers.gids import masked_gid, normalize_gid, roce_version

_INT_RE = re.compile(r"^[0-9]{1,9}$")
_NUM_RE = re.compile(r"^\s*([0-9]{1,9}(?:\.[0-9]{1,9})?)")
_CODE_RE = re.compile(r"\(([0-9]{1,9})\)\s*$")


def _int(text: str | None) -> int | None:
    return int(text) if text is not None and _INT_RE.match(text.strip()) else None


def _num(text: str | None) -> float | None:
    match = _NUM_RE.match(text) if text is not None else None
    return float(match.group(1)) if match else None


# ---------------------------------------------------------------- ibv_devinfo (rdma-core devinfo.c)

# The value is taken whole and stripped in code: "(.*?)\s*$" backtracks quadratically over inner blank runs.
_KV_RE = re.compile(r"^\s*(GID\[\s*[0-9]{1,6}\]|[A-Za-z_][A-Za-z0-9_ ]{0,60}?):(.*)$")
_MTU_BY_CODE = {1: 256, 2: 512, 3: 1024, 4: 2048, 5: 4096}
_LANES_BY_CODE = {1: 1, 2: 4, 4: 8, 8: 12, 16: 2}
# rdma-core < v39 prints "invalid speed (128)" for 100G lanes: decode the code ourselves.
_LANE_GBPS_BY_CODE = {1: 2.5, 2: 5.0, 4: 10.0, 8: 10.0, 16: 14.0, 32: 25.0, 64: 50.0, 128: 100.0, 256: 200.0}
_PORT_KEYS = frozenset(
    {"state", "phys_state", "max_mtu", "active_mtu", "link_layer", "active_width", "active_speed",
     "effective_speed", "gid_tbl_len"}
)
_DEVICE_KEYS = frozenset(
    {"fw_ver", "node_guid", "sys_image_guid", "vendor_part_id", "board_id", "phys_port_cnt"}
)


class IbvGid(msgspec.Struct, frozen=True):
    """One GID line of `ibv_devinfo -v`; roce_version is None without a ', RoCE vN' suffix."""

    index: int
    gid: str
    roce_version: int | None
    masked: bool = False  # hex digits pasted as 'x': `gid` keeps the text as given


class IbvPort(msgspec.Struct, frozen=True):
    """One port block; active_speed_gbps is per lane, rate_gbps = lanes x lane speed.

    `port` is None for an excerpt that starts inside a port block (`ibv_devinfo -v | grep active_`).
    """

    port: int | None
    state: str | None
    phys_state: str | None
    max_mtu_bytes: int | None
    active_mtu_bytes: int | None
    link_layer: str | None
    active_width_lanes: int | None
    active_speed_gbps: float | None
    gid_tbl_len: int | None
    gids: tuple[IbvGid, ...]
    effective_speed_gbps: float | None

    @property
    def rate_gbps(self) -> float | None:
        if self.active_width_lanes is None or self.active_speed_gbps is None:
            return None
        return self.active_width_lanes * self.active_speed_gbps


class IbvDevice(msgspec.Struct, frozen=True):
    """One `hca_id:` block; `hca_id` is None for an excerpt pasted without its `hca_id:` line."""

    hca_id: str | None
    fw_ver: str | None
    node_guid: str | None
    sys_image_guid: str | None
    vendor_part_id: int | None
    board_id: str | None
    ports: tuple[IbvPort, ...]


class _PortDraft(msgspec.Struct):
    port: int | None
    line_no: int
    fields: dict[str, str] = msgspec.field(default_factory=dict)
    gids: list[IbvGid] = msgspec.field(default_factory=list)


class _DeviceDraft(msgspec.Struct):
    hca_id: str | None
    fields: dict[str, str] = msgspec.field(default_factory=dict)
    ports: list[_PortDraft] = msgspec.field(default_factory=list)


def _code(value: str | None) -> int | None:
    match = _CODE_RE.search(value) if value else None
    return int(match.group(1)) if match else None


def _name(value: str | None) -> str | None:
    """'PORT_ACTIVE (4)' -> 'PORT_ACTIVE'."""
    if not value:
        return None
    return _CODE_RE.sub("", value).strip() or None


def _mtu(value: str | None) -> int | None:
    number = _int(_name(value))
    return number if number is not None else _MTU_BY_CODE.get(_code(value) or 0)


def _gid_line(key: str, value: str, line_no: int) -> IbvGid:
    gid_text, _, suffix = value.partition(",")
    gid = normalize_gid(gid_text)
    masked = gid is None and masked_gid(gid_text) is not None
    gid = masked_gid(gid_text) if masked else gid
    if gid is None:
        raise ParseError("ibv_devinfo", f"invalid GID {gid_text!r}", line_no)
    index = int("".join(c for c in key if c in "0123456789"))
    return IbvGid(index, gid, roce_version(suffix) if "RoCE" in suffix else None, masked)


def _build_port(draft: _PortDraft, excerpt: bool) -> IbvPort:
    f = draft.fields
    if "state" not in f and not excerpt:  # an excerpt (no hca_id line) may hold any subset of lines
        raise ParseError("ibv_devinfo", f"port {draft.port} has no state line: truncated", draft.line_no)
    width, width_code = f.get("active_width"), _code(f.get("active_width"))
    lanes = _LANES_BY_CODE.get(width_code) if width_code is not None else _int((width or "").rstrip("X"))
    speed = _num(f.get("active_speed"))
    if speed is None:
        speed = _LANE_GBPS_BY_CODE.get(_code(f.get("active_speed")) or 0)
    return IbvPort(draft.port, _name(f.get("state")), _name(f.get("phys_state")), _mtu(f.get("max_mtu")),
                   _mtu(f.get("active_mtu")), f.get("link_layer"), lanes, speed, _int(f.get("gid_tbl_len")),
                   tuple(draft.gids), _num(f.get("effective_speed")))


def _build_device(draft: _DeviceDraft) -> IbvDevice:
    f = draft.fields
    if not draft.ports and (_int(f.get("phys_port_cnt")) or 0) > 0:
        raise ParseError("ibv_devinfo", f"{draft.hca_id}: no port block: truncated")
    ports = tuple(_build_port(p, draft.hca_id is None or p.port is None) for p in draft.ports)
    return IbvDevice(draft.hca_id, f.get("fw_ver"), f.get("node_guid"), f.get("sys_image_guid"),
                     _int(f.get("vendor_part_id")), f.get("board_id"), ports)


def _devinfo_field(dev: _DeviceDraft, key: str, value: str, line_no: int) -> None:
    if key == "port":
        number = _int(value)
        if number is None:
            raise ParseError("ibv_devinfo", f"bad port number {value!r}", line_no)
        dev.ports.append(_PortDraft(number, line_no))
    elif key.startswith("GID[") or (key in _PORT_KEYS and key not in _DEVICE_KEYS):
        if not dev.ports:  # an excerpt that starts inside the port block
            dev.ports.append(_PortDraft(None, line_no))
        if key.startswith("GID["):
            dev.ports[-1].gids.append(_gid_line(key, value, line_no))
        else:
            dev.ports[-1].fields.setdefault(key, value)
    elif not dev.ports and key in _DEVICE_KEYS:
        dev.fields.setdefault(key, value)


def _excerpt_key(key: str) -> bool:
    """A key that an excerpt without `hca_id:` may start with."""
    return key in _PORT_KEYS or key in _DEVICE_KEYS or key in ("port", "transport") or key.startswith("GID[")


def _devinfo_line(devices: list[_DeviceDraft], line: str, line_no: int) -> None:
    match = _KV_RE.match(line)
    value = match.group(2).strip() if match else ""
    if match and match.group(1) == "hca_id" and value:
        devices.append(_DeviceDraft(value))
    elif not devices and not (match and _excerpt_key(match.group(1))):
        raise ParseError("ibv_devinfo", f"unexpected text before the first hca_id: {line.strip()[:80]!r}", line_no)
    elif match:
        if not devices:  # pasted without its hca_id line
            devices.append(_DeviceDraft(None))
        _devinfo_field(devices[-1], match.group(1), value, line_no)
    # else: capability flag lines and "... not supported" notes of -v: not needed


def parse_ibv_devinfo(text: str) -> tuple[IbvDevice, ...]:
    """Parse `ibv_devinfo [-v]`, rdma-core v28 (long GIDs, no suffix) to v64+ (effective_speed).

    "No IB devices found" (stderr, when merged) -> (); any other error text is a ParseError.

    >>> d = parse_ibv_devinfo('''hca_id:\\trocep1s0f0
    ... \\t\\tport:\\t1
    ... \\t\\t\\tstate:\\t\\t\\tPORT_ACTIVE (4)
    ... \\t\\t\\tactive_width:\\t\\t2X (16)
    ... \\t\\t\\tactive_speed:\\t\\t100.0 Gbps (128)
    ... \\t\\t\\tGID[  3]:\\t\\t::ffff:192.168.100.10, RoCE v2''')
    >>> p = d[0].ports[0]; p.state, p.active_width_lanes, p.rate_gbps, p.gids[0].roce_version
    ('PORT_ACTIVE', 2, 200.0, 2)
    """
    spec = "ibv_devinfo"
    text = require_text(spec, text)
    devices: list[_DeviceDraft] = []
    no_devices = False
    for line_no, line in enumerate(text.split("\n"), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("libibverbs: Warning"):
            continue
        if stripped == "No IB devices found":
            no_devices = True
            continue
        if stripped.startswith(("Failed", "IB device ", "Invalid port")):
            raise ParseError(spec, f"tool error: {stripped[:80]!r}", line_no)
        _devinfo_line(devices, line, line_no)
    if no_devices and devices:
        raise ParseError(spec, "'No IB devices found' next to device blocks")
    if not devices and not no_devices:
        raise ParseError(spec, "no hca_id block")
    return tuple(_build_device(d) for d in devices)


# ---------------------------------------------------------------- ibstat (infiniband-diags ibstat.c)

_CA_RE = re.compile(r"^(?:CA|Switch|Router|iWARP RNIC|\?\?\?):? '(.+)'$")
_PORT_RE = re.compile(r"^Port ([0-9]{1,4}):$")
_IBSTAT_PORT_KEYS = frozenset({"State", "Physical state", "Rate", "Base lid", "LMC", "SM lid", "Capability mask",
                               "Port GUID", "Link layer"})
_IBSTAT_KV_RE = re.compile(r"^([A-Za-z][A-Za-z ]{0,40}?):(.*)$")  # value stripped in code, as _KV_RE


class IbstatPort(msgspec.Struct, frozen=True):
    """One `Port N:` block; a Down port reports `Rate: 40`, so read the rate only with State Active.

    `port` is None for an excerpt that starts inside the block (`ibstat | grep -A3 State`).
    """

    port: int | None
    state: str | None
    physical_state: str | None
    rate_gbps: float | None
    link_layer: str | None
    port_guid: str | None


class IbstatCa(msgspec.Struct, frozen=True):
    """One `CA '<name>'` block."""

    name: str | None  # None for an excerpt pasted without its "CA '<name>'" line
    ca_type: str | None
    fw_version: str | None
    node_guid: str | None
    ports: tuple[IbstatPort, ...]


def _ibstat_port(port: int | None, f: dict[str, str], line_no: int, excerpt: bool = False) -> IbstatPort:
    if ("State" not in f or "Physical state" not in f) and not excerpt:
        raise ParseError("ibstat", f"port {port} lacks State/Physical state: truncated", line_no)
    return IbstatPort(port, f.get("State"), f.get("Physical state"), _num(f.get("Rate")), f.get("Link layer"),
                      f.get("Port GUID"))


def _ibstat_ca(name: str | None, f: dict[str, str], ports: list[IbstatPort]) -> IbstatCa:
    declared = _int(f.get("Number of ports"))
    if declared is not None and 0 < len(ports) < declared:
        raise ParseError("ibstat", f"CA {name}: {len(ports)} of {declared} ports: truncated")
    return IbstatCa(name, f.get("CA type"), f.get("Firmware version"), f.get("Node GUID"), tuple(ports))


_PortAcc = tuple[int | None, dict[str, str], int, bool]  # port, fields, line, excerpt


def _implicit_port(port: _PortAcc | None, kv: re.Match[str] | None, line_no: int) -> _PortAcc | None:
    """Open a port of unknown number for port lines pasted without their "Port N:" line."""
    if port is None and kv is not None and kv.group(1) in _IBSTAT_PORT_KEYS:
        return (None, {}, line_no, True)
    return port


def _ibstat_line(s: str, line_no: int) -> tuple[re.Match[str] | None, re.Match[str] | None, re.Match[str] | None]:
    """(CA line, Port line, key: value line) matches of one stripped line; anything else is an error."""
    ca, new_port, kv = _CA_RE.match(s), _PORT_RE.match(s), _IBSTAT_KV_RE.match(s)
    if s.startswith(("ibpanic:", "iberror:")) or not (ca or new_port or kv):
        raise ParseError("ibstat", f"unexpected line {s[:80]!r}", line_no)
    return ca, new_port, kv


def parse_ibstat(text: str) -> tuple[IbstatCa, ...]:
    """Parse `ibstat` (all CAs) or `ibstat <ca> <port>`; empty output = no CAs (ibstat exits 0 then).

    >>> cas = parse_ibstat("CA 'rocep1s0f0'\\n\\tCA type: MT4129\\n\\tPort 1:\\n\\t\\tState: Active\\n"
    ...                    "\\t\\tPhysical state: LinkUp\\n\\t\\tRate: 200\\n\\t\\tLink layer: Ethernet\\n")
    >>> cas[0].ca_type, cas[0].ports[0].rate_gbps
    ('MT4129', 200.0)
    """
    spec = "ibstat"
    if "\x00" in text:
        raise ParseError(spec, "binary data (NUL bytes)")
    cas: list[tuple[str | None, dict[str, str], list[IbstatPort]]] = []
    port: _PortAcc | None = None
    for line_no, line in enumerate(text.splitlines(), start=1):
        s = line.strip()
        if not s or s.startswith("ibwarn:"):
            continue
        ca, new_port, kv = _ibstat_line(s, line_no)
        if not cas and not ca:  # an excerpt pasted without its CA line
            cas.append((None, {}, []))
        port = _implicit_port(port, kv, line_no)
        if (ca or new_port) and port is not None:
            cas[-1][2].append(_ibstat_port(*port))
            port = None
        if ca:
            cas.append((ca.group(1), {}, []))
        elif new_port:
            port = (int(new_port.group(1)), {}, line_no, cas[-1][0] is None)
        elif kv:
            (port[1] if port is not None else cas[-1][1]).setdefault(kv.group(1), kv.group(2).strip())
    if port is not None:
        cas[-1][2].append(_ibstat_port(*port))
    return tuple(_ibstat_ca(*c) for c in cas)

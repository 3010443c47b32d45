"""Parsers for ethtool's text output: link settings, driver info, NIC counters and module EEPROM.

Formats follow ethtool 5.x-6.x (netlink and ioctl paths); see tool-formats.md 3.7. ethtool has no JSON
for these commands in common versions, so the text is the interface.
"""

from __future__ import annotations

import json
import re

import msgspec

from linkcheck.errors import ParseError
from linkcheck.integers import ascii_int, quoted
from linkcheck.parsers import _eeprom
from linkcheck.parsers._text import require_text

U64_MAX = 2**64 - 1  # the kernel's counters and ethtool's link fields are at most u64
LABEL_RE = re.compile(r"^([A-Za-z][A-Za-z0-9 ()/_,-]*):(?:\s(.*))?$")
LINK_DETECTED_RE = re.compile(r"^(yes|no)(?: \((.*)\))?$")
# Lines ethtool prints instead of data; the text after the prefix is the reason we report.
ERROR_PREFIXES = ("netlink error: ", "Cannot get ", "No data available", "no stats available")
LIST_KEYS = ("Supported link modes", "Advertised link modes")


def _error_reason(lines: list[str]) -> str | None:
    """The first ethtool error message in the output, without its 'netlink error: ' prefix."""
    for line in lines:
        stripped = line.strip()
        if stripped.startswith(ERROR_PREFIXES):
            return stripped.removeprefix("netlink error: ")
    return None


class EthtoolSettings(msgspec.Struct, frozen=True):
    """`ethtool IFACE`: negotiated link state and the link modes on offer."""

    ifname: str | None
    speed_mbps: int | None
    lanes: int | None
    duplex: str | None
    autoneg: bool | None
    port: str | None
    link_detected: bool | None
    link_down_reason: str | None
    supported_link_modes: tuple[str, ...]
    advertised_link_modes: tuple[str, ...]
    link_down_events: int | None


def _settings_fields(lines: list[str]) -> tuple[str | None, dict[str, tuple[int, str]]]:
    """Collect `Key: value` lines (value, line number); continuation lines extend the link-mode lists."""
    ifname: str | None = None
    fields: dict[str, tuple[int, str]] = {}
    continued: dict[str, list[str]] = {}  # joined once at the end: `value += mode` per line is quadratic
    current: str | None = None
    for line_no, line in enumerate(lines, start=1):
        stripped = line.strip()
        if line.startswith("Settings for ") and stripped.endswith(":"):
            if ifname is not None:
                raise ParseError("ethtool", "output for more than one device", line_no)
            ifname = stripped[len("Settings for ") : -1]
            continue
        match = LABEL_RE.match(stripped)
        if match is not None:
            current = match.group(1)
            fields.setdefault(current, (line_no, (match.group(2) or "").strip()))
        elif stripped and current in LIST_KEYS:
            # Link modes continue on lines indented with TAB + spaces ("\n\t%*s" in netlink/settings.c).
            continued.setdefault(current, []).append(stripped)
    for key, more in continued.items():
        first_line, value = fields[key]
        fields[key] = (first_line, " ".join([value, *more]))
    return ifname, fields


def _int_field(fields: dict[str, tuple[int, str]], key: str, pattern: str = r"(\d+)") -> int | None:
    if key not in fields:
        return None
    line_no, value = fields[key]
    match = re.fullmatch(pattern, value)
    number = ascii_int(match.group(1), 0, U64_MAX) if match else None  # ASCII, bounded: int() never sees 4,300 digits
    if number is None:
        raise ParseError("ethtool", f"unexpected {key} value {quoted(value)}", line_no)
    return number


def _speed_mbps(fields: dict[str, tuple[int, str]]) -> int | None:
    if fields.get("Speed", (0, ""))[1].startswith("Unknown"):
        return None
    return _int_field(fields, "Speed", r"(\d+)Mb/s")


def _autoneg(fields: dict[str, tuple[int, str]]) -> bool | None:
    if "Auto-negotiation" not in fields:
        return None
    line_no, value = fields["Auto-negotiation"]
    if value not in ("on", "off"):
        raise ParseError("ethtool", f"unexpected Auto-negotiation value {value!r}", line_no)
    return value == "on"


def _link_detected(fields: dict[str, tuple[int, str]]) -> tuple[bool | None, str | None]:
    if "Link detected" not in fields:
        return None, None
    line_no, value = fields["Link detected"]
    match = LINK_DETECTED_RE.match(value)
    if match is None:
        raise ParseError("ethtool", f"unexpected Link detected value {value!r}", line_no)
    return match.group(1) == "yes", match.group(2)


def _modes(fields: dict[str, tuple[int, str]], key: str) -> tuple[str, ...]:
    value = fields.get(key, (0, ""))[1]
    return () if value in ("", "Not reported") else tuple(value.split())


def parse_ethtool(text: str) -> EthtoolSettings:
    """Parse `ethtool IFACE`; unknown speed and duplex ("Unknown!") become None.

    >>> s = parse_ethtool("Settings for enp1s0f0np0:\\n\\tSpeed: 200000Mb/s\\n\\tLink detected: yes\\n")
    >>> s.ifname, s.speed_mbps, s.link_detected
    ('enp1s0f0np0', 200000, True)
    """
    lines = require_text("ethtool", text).split("\n")
    ifname, fields = _settings_fields(lines)
    if ifname is None:
        raise ParseError("ethtool", _error_reason(lines) or "no 'Settings for' line")
    duplex = fields.get("Duplex", (0, None))[1]
    detected, reason = _link_detected(fields)
    return EthtoolSettings(
        ifname=ifname,
        speed_mbps=_speed_mbps(fields),
        lanes=_int_field(fields, "Lanes"),
        duplex=None if duplex is None or duplex.startswith("Unknown") else duplex,
        autoneg=_autoneg(fields),
        port=fields.get("Port", (0, None))[1],
        link_detected=detected,
        link_down_reason=reason,
        supported_link_modes=_modes(fields, "Supported link modes"),
        advertised_link_modes=_modes(fields, "Advertised link modes"),
        link_down_events=_int_field(fields, "Link Down Events"),
    )


class EthtoolDriver(msgspec.Struct, frozen=True):
    """`ethtool -i IFACE`: driver, firmware (mlx5 appends the board PSID) and PCI address."""

    driver: str | None
    version: str | None
    firmware_version: str | None
    psid: str | None
    bus_info: str | None


def parse_ethtool_i(text: str) -> EthtoolDriver:
    """Parse `ethtool -i IFACE`; mlx5's "28.39.1002 (MT_0000000838)" splits into firmware and PSID.

    >>> d = parse_ethtool_i("driver: mlx5_core\\nfirmware-version: 28.45.4028 (NVD0000000087)\\n")
    >>> d.driver, d.firmware_version, d.psid
    ('mlx5_core', '28.45.4028', 'NVD0000000087')
    """
    lines = require_text("ethtool_i", text).split("\n")
    values: dict[str, str] = {}
    for line_no, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        key, sep, value = line.partition(":")
        if not sep or not re.fullmatch(r"[a-z][a-z-]*", key):
            raise ParseError("ethtool_i", _error_reason([line]) or f"not a 'key: value' line: {line[:60]!r}",
                             line_no)
        values.setdefault(key, value.strip())
    if "driver" not in values:
        raise ParseError("ethtool_i", "no 'driver:' line")
    firmware = values.get("firmware-version") or None
    psid = None
    match = re.fullmatch(r"(\S+) \((.+)\)", firmware or "")
    if match is not None:
        firmware, psid = match.group(1), match.group(2)
    return EthtoolDriver(
        driver=values["driver"] or None,
        version=values.get("version") or None,
        firmware_version=firmware,
        psid=psid,
        bus_info=values.get("bus-info") or None,
    )


class EthtoolStats(msgspec.Struct, frozen=True):
    """`ethtool -S IFACE`: driver counters in output order (first occurrence wins on duplicates)."""

    counters: tuple[tuple[str, int], ...]

    def get(self, name: str) -> int | None:
        """The counter's value, or None when the driver does not report it."""
        return self.as_dict.get(name)

    @property
    def as_dict(self) -> dict[str, int]:
        result: dict[str, int] = {}
        for name, value in self.counters:
            result.setdefault(name, value)
        return result


def parse_ethtool_s(text: str) -> EthtoolStats:
    """Parse `ethtool -S IFACE`: "NIC statistics:" then "     name: value" lines.

    >>> parse_ethtool_s("NIC statistics:\\n     rx_discards_phy: 12\\n").get("rx_discards_phy")
    12
    """
    lines = require_text("ethtool_s", text).split("\n")
    start = next((i for i, line in enumerate(lines) if line.strip() == "NIC statistics:"), None)
    if start is None:
        raise ParseError("ethtool_s", _error_reason(lines) or "no 'NIC statistics:' header")
    counters: list[tuple[str, int]] = []
    for line_no, line in enumerate(lines[start + 1 :], start=start + 2):
        stripped = line.strip()
        if not stripped or (not line[0].isspace() and stripped.endswith(":")):
            continue  # blank, or a section header of newer ethtool (--all-groups)
        # Counter names may contain ':' on some drivers, values never do.
        name, sep, value = stripped.rpartition(":")
        count = ascii_int(value.strip(), 0, (1 << 64) - 1) if sep and name else None  # ethtool's u64 counters
        if count is None:
            raise ParseError("ethtool_s", f"not a 'name: value' counter line: {stripped[:60]!r}", line_no)
        counters.append((name.strip(), count))
    return EthtoolStats(counters=tuple(counters))


class ModuleEeprom(msgspec.Struct, frozen=True):
    """`ethtool -m IFACE`: the cable's identity (vendor, part number, serial, length) and every field."""

    memory_map: str
    identifier_code: int | None
    identifier: str | None
    connector: str | None
    vendor_name: str | None
    vendor_oui: str | None
    vendor_pn: str | None
    vendor_rev: str | None
    vendor_sn: str | None
    date_code: str | None
    length_m: float | None
    transmitter_technology: str | None
    fields: tuple[tuple[str, str], ...]
    vendor_sn_masked: bool = False  # pasted with characters replaced by 'x' ("APF25xxxxxxx"): kept as given

    @property
    def identified(self) -> bool:
        """True when the EEPROM named the part (a vendor PN was read)."""
        return self.vendor_pn is not None


LENGTH_LABELS = ("Length (Copper or Active cable)", "Cable assembly length", "Length (Copper)")


def _memory_map(code: int | None, labels: set[str]) -> str:
    if code in _eeprom.CMIS_IDS or "Cable assembly length" in labels or "Module State" in labels:
        return "cmis"
    if code in _eeprom.SFF8636_IDS:
        return "sff8636"
    if code in (0x01, 0x02, 0x03):
        return "sff8472"
    return "unknown"


def _decoded_fields(lines: list[str]) -> list[tuple[str, str]]:
    """Split each "\\t%-41s : %s" line on the first " : "; other lines (none in practice) are skipped."""
    fields = []
    for line in lines:
        label, sep, value = line.partition(" : ")
        if sep and label.strip():
            fields.append((label.strip(), value.strip()))
    return fields


def _length_m(value: str | None) -> float | None:
    match = re.fullmatch(r"([\d.]+)\s*(m|km)", value or "")
    if match is None:
        return None
    try:
        length = float(match.group(1))
    except ValueError:
        return None
    return length * 1000 if match.group(2) == "km" else length


def _module_from_fields(memory_map: str | None, fields: list[tuple[str, str]]) -> ModuleEeprom:
    first: dict[str, str] = {}
    for label, value in fields:
        first.setdefault(label, value)
    identifier = first.get("Identifier")
    code_match = re.match(r"0x([0-9a-fA-F]{1,2})\b", identifier or "")
    code = int(code_match.group(1), 16) if code_match else None
    length = next((first[label] for label in LENGTH_LABELS if label in first), None)
    return ModuleEeprom(
        memory_map=memory_map or _memory_map(code, set(first)),
        identifier_code=code,
        identifier=identifier,
        connector=first.get("Connector") or None,
        vendor_name=first.get("Vendor name") or None,
        vendor_oui=first.get("Vendor OUI") or None,
        vendor_pn=first.get("Vendor PN") or None,
        vendor_rev=first.get("Vendor rev") or None,
        vendor_sn=first.get("Vendor SN") or None,
        date_code=first.get("Date code") or None,
        length_m=_length_m(length),
        transmitter_technology=first.get("Transmitter technology") or None,
        fields=tuple(fields),
        vendor_sn_masked=_masked_serial(first.get("Vendor SN")),
    )


def _masked_serial(value: str | None) -> bool:
    """A serial whose tail was replaced by a run of 'x' or '*' before pasting."""
    return value is not None and re.search(r"(?:xxx|XXX|\*\*\*)[xX*]*$", value) is not None


def parse_ethtool_m(text: str) -> ModuleEeprom:
    """Parse `ethtool -m IFACE`: decoded SFF-8636 / CMIS / SFF-8472 lines, or the hex dump of old ethtool.

    >>> m = parse_ethtool_m("\\tIdentifier                                : 0x11 (QSFP28)\\n"
    ...                     "\\tVendor PN                                 : NJAAKK-N911\\n")
    >>> m.memory_map, m.identifier_code, m.vendor_pn, m.identified
    ('sff8636', 17, 'NJAAKK-N911', True)
    """
    lines = require_text("ethtool_m", text).split("\n")
    if _eeprom.is_hex_dump(lines):
        data = _eeprom.read_hex_dump("ethtool_m", lines)
        return _module_from_fields("hexdump", _eeprom.decode_identity(data))
    fields = _decoded_fields(lines)
    body = [ln for ln in lines if ln.strip()]
    if fields and body and " : " not in body[-1] and not _error_reason(body[-1:]):
        # Every decoded line is "label : value"; a last line without one was cut off mid-line.
        raise ParseError("ethtool_m", f"truncated: the last line {body[-1].strip()[:40]!r} has no value",
                         len(lines) - lines[::-1].index(body[-1]))
    if not any(label == "Identifier" for label, _ in fields):
        # ethtool prints the Identifier first for every memory map; without it there is no module data
        # ("netlink error: Operation not supported" when no module, "... not permitted" without root).
        raise ParseError("ethtool_m", _error_reason(lines) or "no 'Identifier' line")
    return _module_from_fields(None, fields)


class FecStatistic(msgspec.Struct, frozen=True):
    """One FEC counter of `ethtool -I --show-fec`: its total and, where the driver reports them, per lane."""

    name: str  # corrected_blocks, uncorrectable_blocks, corrected_bits, fec_bit_err_<low>[_to_<high>]
    total: int
    lanes: tuple[int, ...] = ()


class EthtoolFec(msgspec.Struct, frozen=True):
    """`ethtool --show-fec IFACE` (text, either prompt) or `ethtool --json --show-fec IFACE`.

    Encodings are kept as ethtool prints them: RS, BaseR, LLRS, Off, None, Auto (and BIT<n> for a mode
    ethtool has no name for). `Active FEC encoding: None` means no FEC is running on the link.
    """

    ifname: str | None
    configured: tuple[str, ...]
    active: tuple[str, ...]
    statistics: tuple[FecStatistic, ...] = ()
    form: str = "text"  # "text" (Supported/Configured prompt, ethtool >= 5.18), "text-legacy" (Configured), "json"

    def statistic(self, name: str) -> int | None:
        """A counter's total, or None when the output has none (mlx5 reports none while FEC is off)."""
        return next((s.total for s in self.statistics if s.name == name), None)

    @property
    def corrected_blocks(self) -> int | None:
        return self.statistic("corrected_blocks")

    @property
    def uncorrectable_blocks(self) -> int | None:
        return self.statistic("uncorrectable_blocks")


_FEC_HEADER_RE = re.compile(r"^FEC parameters for (\S+):$")
_FEC_CONFIG_RE = re.compile(r"^(Supported/Configured|Configured) FEC encodings:(.*)$")
_FEC_ACTIVE_RE = re.compile(r"^Active FEC encoding:(.*)$")
_FEC_MODE_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")
_FEC_STAT_RE = re.compile(r"^([a-z][a-z0-9_]*): (\d+)(?: \[ per_lane:\s*([\d,\s]*)\])?$")
_FEC_LANE_RE = re.compile(r"^Lane (\d+): (\d+)$")


def _fec_modes(value: str, line_no: int) -> tuple[str, ...]:
    modes = tuple(value.split())
    for mode in modes:
        if not _FEC_MODE_RE.match(mode):
            raise ParseError("ethtool_fec", f"unexpected FEC encoding {mode!r}", line_no)
    return modes


def _fec_stat_line(stats: list[FecStatistic], stripped: str, line_no: int) -> bool:
    """Add one `Statistics:` line (a counter, a lane of the last counter); False when it is neither."""
    if match := _FEC_LANE_RE.match(stripped):
        if not stats:
            raise ParseError("ethtool_fec", "a lane count before any FEC counter", line_no)
        last = stats[-1]
        stats[-1] = FecStatistic(last.name, last.total, (*last.lanes, _counter(match.group(2), line_no)))
        return True
    if match := _FEC_STAT_RE.match(stripped):
        lanes = tuple(_counter(v, line_no) for v in re.split(r"[,\s]+", match.group(3) or "") if v)
        stats.append(FecStatistic(match.group(1), _counter(match.group(2), line_no), lanes))
        return True
    return False


def _counter(text: str, line_no: int) -> int:
    """A FEC counter: the kernel's u64 in ASCII digits; anything else refuses the capture in one line."""
    number = ascii_int(text, 0, U64_MAX)
    if number is None:
        raise ParseError("ethtool_fec", f"counter {quoted(text)} is not a u64 in ASCII digits", line_no)
    return number


def _fec_text(lines: list[str]) -> EthtoolFec:
    ifname: str | None = None
    found: dict[str, tuple[str, ...]] = {}
    legacy = False
    stats: list[FecStatistic] | None = None  # a list once the `Statistics:` header was seen
    for line_no, line in enumerate(lines, start=1):
        stripped = line.strip()
        if match := _FEC_HEADER_RE.match(stripped):
            if ifname is not None:
                raise ParseError("ethtool_fec", "output for more than one device", line_no)
            ifname = match.group(1)
        elif ifname is None or not stripped:
            continue  # blank, or a shell prompt or a heading pasted above the output
        elif match := _FEC_CONFIG_RE.match(stripped):
            legacy = match.group(1) == "Configured"
            found["configured"] = _fec_modes(match.group(2), line_no)
        elif match := _FEC_ACTIVE_RE.match(stripped):
            found["active"] = _fec_modes(match.group(1), line_no)
        elif stripped == "Statistics:":
            stats = []
        elif stats is None or not _fec_stat_line(stats, stripped, line_no):
            raise ParseError("ethtool_fec", f"unexpected line {stripped[:60]!r}", line_no)
    if ifname is None:
        # `netlink error: Operation not supported` (a driver without FEC), `Cannot get FEC settings: ...` (ioctl)
        raise ParseError("ethtool_fec", _error_reason(lines) or "no 'FEC parameters for' line")
    return _fec_record(ifname, found, stats, legacy)


def _fec_record(ifname: str, found: dict[str, tuple[str, ...]], stats: list[FecStatistic] | None,
                legacy: bool) -> EthtoolFec:
    for key, label in (("configured", "Configured FEC encodings"), ("active", "Active FEC encoding")):
        if key not in found:
            raise ParseError("ethtool_fec", f"truncated: no '{label}' line")
    return EthtoolFec(ifname, found["configured"], found["active"], tuple(stats or ()),
                      "text-legacy" if legacy else "text")


def _json_modes(value: object, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and _FEC_MODE_RE.match(v) for v in value):
        raise ParseError("ethtool_fec", f"JSON '{key}' is not a list of FEC encodings")
    return tuple(value)


def _json_count(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ParseError("ethtool_fec", f"JSON {what} is not a count")
    return value


def _json_stats(value: object) -> tuple[FecStatistic, ...]:
    if value is None:
        return ()
    if not isinstance(value, dict):
        raise ParseError("ethtool_fec", "JSON 'statistics' is not an object")
    out = []
    for name, item in value.items():
        if name == "hist":  # error histogram bins (ethtool >= 6.18): named as the text form names them
            for b in item if isinstance(item, list) else []:
                if not isinstance(b, dict):
                    raise ParseError("ethtool_fec", "JSON 'hist' bin is not an object")
                low, high = _json_count(b.get("bin_low"), "bin_low"), _json_count(b.get("bin_high"), "bin_high")
                label = f"fec_bit_err_{low}" + (f"_to_{high}" if high != low else "")
                lanes = tuple(_json_count(v, "lane") for v in b.get("lanes", []))
                out.append(FecStatistic(label, _json_count(b.get("total"), "total"), lanes))
            continue
        if not isinstance(item, dict):
            raise ParseError("ethtool_fec", f"JSON statistic {name!r} is not an object")
        lanes = item.get("lanes", [])
        if not isinstance(lanes, list):
            raise ParseError("ethtool_fec", f"JSON lanes of {name!r} are not a list")
        out.append(FecStatistic(str(name), _json_count(item.get("total"), f"{name} total"),
                                tuple(_json_count(v, "lane") for v in lanes)))
    return tuple(out)


def _fec_json(text: str) -> EthtoolFec:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ParseError("ethtool_fec", f"invalid JSON: {exc}") from None
    items = data if isinstance(data, list) else [data]
    if len(items) != 1 or not isinstance(items[0], dict):
        raise ParseError("ethtool_fec", "JSON is not one device's FEC object")
    obj = items[0]
    if "config" not in obj or "active" not in obj:
        raise ParseError("ethtool_fec", "JSON object without 'config' and 'active'")
    ifname = obj.get("ifname")
    return EthtoolFec(
        ifname=ifname if isinstance(ifname, str) else None,
        configured=_json_modes(obj["config"], "config"),
        active=_json_modes(obj["active"], "active"),
        statistics=_json_stats(obj.get("statistics")),
        form="json",
    )


def parse_ethtool_fec(text: str) -> EthtoolFec:
    """Parse `ethtool [-I] --show-fec IFACE`, in the text of any ethtool version or as `--json`.

    >>> f = parse_ethtool_fec("FEC parameters for enp1s0f1np1:\\nSupported/Configured FEC encodings: Auto\\n"
    ...                       "Active FEC encoding: RS\\n")
    >>> f.ifname, f.configured, f.active
    ('enp1s0f1np1', ('Auto',), ('RS',))
    """
    body = require_text("ethtool_fec", text)
    if body.lstrip().startswith(("[", "{")):
        return _fec_json(body)
    return _fec_text(body.split("\n"))

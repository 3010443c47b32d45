"""Parsers for kernel state: dmesg link and hot-plug events, /proc/uptime, sysctl and /proc/meminfo.

dmesg tells whether the CX-7 came up through the hot-plug path (cable plugged long after boot), the
state that runs at ~13 Gb/s until both nodes reboot (spark-link.md 3b), and when links flapped.
"""

from __future__ import annotations

import re

import msgspec

from linkcheck.errors import ParseError
from linkcheck.parsers._text import require_text

BDF = r"[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]"
# `dmesg -x` facility/level prefix, then "[  123.456789]" or `dmesg -T` "[Fri Aug  7 03:13:00 2026]"
# (year missing in some pastes) or `--time-format iso`, then an optional CONFIG_PRINTK_CALLER "[T123]".
STAMP_RE = re.compile(
    r"^(?:[a-z]+\s*:[a-z]+\s*: )?"
    r"(?:\[\s*(?P<mono>\d+\.\d+)\]"
    r"|\[(?P<wall>[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?: \d{4})?)\]"
    r"|(?P<iso>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[,.]\d+[+-]\d\d:?\d\d))"
    r"\s?(?:\[\s*[TC]\d+\]\s?)?"
)
# "<driver> <bdf>[ <netdev or rdma device>]: <message>" as printed by dev_*/netdev_*/ibdev_* helpers.
# netdev_* appends " (unregistering)" or " (unnamed net_device)" to the name in some states.
DEVICE_RE = re.compile(
    rf"^(?P<driver>\S+) (?P<bdf>{BDF})(?: (?P<name>[^\s:]+)(?: \([^)]*\))?)?: (?P<msg>.*)$"
)
HOTPLUG_RE = re.compile(r"^cx7-pcie-hotplug (?P<dev>\S+): (?P<msg>.*)$")
AER_RECEIVED_RE = re.compile(rf"AER: .*error received: (?P<bdf>{BDF})")
RESTRICTED = "read kernel buffer failed: Operation not permitted"
# What every line _classify can take as an event contains: the hot-plug driver's name, mlx5_core's, or the root
# port's "AER: ... error received".
EVENT_WORDS = ("cx7-pcie-hotplug", "mlx5_core", "AER")

# mlx5_core messages: (kind, regex on the message, device taken from the netdev/rdma name?)
MLX5_EVENTS = (
    ("module_cable_plugged", re.compile(r"^Port module event: module \d+, Cable plugged"), False),
    ("module_cable_unplugged", re.compile(r"^Port module event: module \d+, Cable unplugged"), False),
    ("module_cable_error", re.compile(r"^Port module event\[error\]: module \d+"), False),
    ("netdev_link_up", re.compile(r"^Link up\b"), True),
    ("netdev_link_down", re.compile(r"^Link down\b"), True),
    ("rdma_port_active", re.compile(r"^Port: \d+ Link ACTIVE"), True),
    ("rdma_port_down", re.compile(r"^Port: \d+ Link DOWN"), True),
    ("pcie_insufficient_power", re.compile(r"Detected insufficient power on the PCIe slot"), False),
    # The AER report spans lines: "PCIe Bus Error: ...", "device [15b3:1021] error status/mask=...",
    # then one "[ 0] RxErr" line per error bit.
    ("aer_error", re.compile(r"AER|PCIe Bus Error|error status/mask=|^\s*\[\s*\d+\]\s+[A-Za-z]"), False),
    ("cable_unplugged_probe", re.compile(r"Cable unplugged"), False),
)


class DmesgEvent(msgspec.Struct, frozen=True):
    """One kernel message that matters for the CX-7 link; `device` is the netdev, RDMA device or BDF."""

    time_s: float | None
    wallclock: str | None
    kind: str
    device: str | None
    text: str
    bdf: str | None = None


class DmesgLog(msgspec.Struct, frozen=True):
    """The recognised events in log order, how many non-empty lines were read, and dmesg_restrict."""

    events: tuple[DmesgEvent, ...]
    lines: int
    restricted: bool


def _split_stamp(line: str) -> tuple[float | None, str | None, str]:
    match = STAMP_RE.match(line)
    if match is None:
        return None, None, line.strip()
    mono = match.group("mono")
    wall = match.group("wall") or match.group("iso")
    return (float(mono) if mono else None), wall, line[match.end() :].strip()


def _classify(message: str, mlx5_bdfs: set[str]) -> tuple[str, str | None, str | None] | None:
    """(kind, device, bdf) for a message we care about, else None."""
    hotplug = HOTPLUG_RE.match(message)
    if hotplug is not None:
        msg = hotplug.group("msg")
        if re.match(r"Cable plug ?in", msg, re.IGNORECASE):
            return "cx7_cable_plugin", hotplug.group("dev"), None
        if re.match(r"Cable unplug", msg, re.IGNORECASE):
            return "cx7_cable_unplug", hotplug.group("dev"), None
        return None
    device = DEVICE_RE.match(message)
    if device is None:
        return None
    bdf = device.group("bdf")
    if device.group("driver") != "mlx5_core":
        # The root port reports AER for the function below it: "AER: ... error received: <bdf>".
        received = AER_RECEIVED_RE.search(device.group("msg"))
        if received is not None and received.group("bdf") in mlx5_bdfs:
            return "aer_error", received.group("bdf"), received.group("bdf")
        return None
    for kind, pattern, named in MLX5_EVENTS:
        if pattern.search(device.group("msg")):
            return kind, (device.group("name") if named else None) or bdf, bdf
    return None


def parse_dmesg(text: str) -> DmesgLog:
    """Parse `dmesg` (monotonic or -T stamps) into CX-7 hot-plug, module, link, power and AER events.

    >>> log = parse_dmesg("[ 5.1] mlx5_core 0000:01:00.0 enp1s0f0np0: Link up\\n[ 6.0] usb 1-1: new\\n")
    >>> [(e.time_s, e.kind, e.device) for e in log.events], log.lines
    ([(5.1, 'netdev_link_up', 'enp1s0f0np0')], 2)
    """
    if not text.strip():
        return DmesgLog((), 0, False)
    lines = [line for line in require_text("dmesg", text).split("\n") if line.strip()]
    # Only a line naming one of these can be an event (_classify): the rest of a node's ~2,500 lines are read
    # with one substring test each instead of four regular expressions.
    stamped = [_split_stamp(line) for line in lines if any(word in line for word in EVENT_WORDS)]
    mlx5_bdfs = {m.group("bdf") for _, _, msg in stamped if (m := DEVICE_RE.match(msg))
                 and m.group("driver") == "mlx5_core"}
    events = []
    for time_s, wallclock, message in stamped:
        found = _classify(message, mlx5_bdfs)
        if found is not None:
            kind, device, bdf = found
            events.append(DmesgEvent(time_s, wallclock, kind, device, message, bdf))
    restricted = any(RESTRICTED in line for line in lines)
    return DmesgLog(events=tuple(events), lines=len(lines), restricted=restricted)


class OsRelease(msgspec.Struct, frozen=True):
    """/etc/os-release (os-release(5)): the distribution's name and version."""

    pretty_name: str | None
    id: str | None
    version_id: str | None


_OS_LINE_RE = re.compile(r"^([A-Z][A-Z0-9_]*)=(.*)$")


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        value = value[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    return value


def parse_os_release(text: str) -> OsRelease:
    """Parse `cat /etc/os-release`: KEY=value lines, values optionally quoted; comments and blanks skipped.

    >>> parse_os_release('PRETTY_NAME="Ubuntu 24.04.3 LTS"\\nID=ubuntu\\nVERSION_ID="24.04"\\n').pretty_name
    'Ubuntu 24.04.3 LTS'
    """
    values: dict[str, str] = {}
    for line in text.splitlines():
        match = _OS_LINE_RE.match(line.strip())
        if match:
            values[match.group(1)] = _unquote(match.group(2))
    if not values and text.strip():
        raise ParseError("os_release", "no KEY=value line", 1)
    return OsRelease(values.get("PRETTY_NAME"), values.get("ID"), values.get("VERSION_ID"))


class Uptime(msgspec.Struct, frozen=True):
    """/proc/uptime: seconds since boot, and summed idle seconds of all CPUs."""

    uptime_s: float
    idle_s: float | None


def parse_uptime(text: str) -> Uptime:
    """Parse /proc/uptime ("506.63 929.77").

    >>> parse_uptime("506.63 929.77\\n")
    Uptime(uptime_s=506.63, idle_s=929.77)
    """
    fields = require_text("uptime", text).split()
    if not 1 <= len(fields) <= 2 or not all(re.fullmatch(r"\d+(?:\.\d+)?", f) for f in fields):
        raise ParseError("uptime", f"expected '<uptime> <idle>' seconds, got {text.strip()[:40]!r}", 1)
    return Uptime(uptime_s=float(fields[0]), idle_s=float(fields[1]) if len(fields) == 2 else None)


class SysctlValues(msgspec.Struct, frozen=True):
    """`sysctl KEY...` output, in order; keys that could not be read are absent."""

    values: tuple[tuple[str, str], ...]

    def get(self, key: str) -> str | None:
        """The value as printed (multi-value keys keep their TABs), or None when not reported."""
        return dict(self.values).get(key)


def parse_sysctl(text: str) -> SysctlValues:
    """Parse `sysctl` "key = value" lines; "sysctl: cannot stat ..." lines are skipped.

    >>> parse_sysctl("net.ipv4.conf.all.arp_ignore = 1\\n").get("net.ipv4.conf.all.arp_ignore")
    '1'
    """
    values = []
    for line_no, line in enumerate(require_text("sysctl", text).split("\n"), start=1):
        if not line.strip() or line.startswith("sysctl: "):
            continue  # blank, or an error for one key (missing key, permission denied)
        match = re.fullmatch(r"([A-Za-z0-9_.:/*-]+) =(?: (.*))?", line)
        if match is None:
            raise ParseError("sysctl", f"not a 'key = value' line: {line[:60]!r}", line_no)
        values.append((match.group(1), match.group(2) or ""))
    return SysctlValues(values=tuple(values))


class MemInfo(msgspec.Struct, frozen=True):
    """/proc/meminfo totals that size NCCL buffers on the GB10's unified memory."""

    mem_total_kib: int | None
    mem_available_kib: int | None


def parse_meminfo(text: str) -> MemInfo:
    """Parse /proc/meminfo; MemAvailable is absent on kernels older than 3.14.

    >>> parse_meminfo("MemTotal:       24684092 kB\\nMemFree:        23176212 kB\\n")
    MemInfo(mem_total_kib=24684092, mem_available_kib=None)
    """
    values: dict[str, int] = {}
    for line_no, line in enumerate(require_text("meminfo", text).split("\n"), start=1):
        if not line.strip():
            continue
        match = re.fullmatch(r"([A-Za-z0-9_()]+):\s+([0-9]{1,20})(?: kB)?\s*", line)  # ASCII, int() of it bounded
        if match is None:
            raise ParseError("meminfo", f"not a 'Name: N kB' line: {line[:60]!r}", line_no)
        values.setdefault(match.group(1), int(match.group(2)))
    return MemInfo(mem_total_kib=values.get("MemTotal"), mem_available_kib=values.get("MemAvailable"))

"""Parser for `lspci -vv`: each PCI function's PCIe link capability (LnkCap) and negotiated state (LnkSta).

A GB10 CX-7 function should train at 32GT/s x4; x2 on the 0002 domain is a known OEM BIOS defect, so the
width is what matters most. Formats from pciutils `ls-caps.c` `cap_express_link()`, v3.6 to v3.14.
"""

from __future__ import annotations

import re

import msgspec

from linkcheck.errors import ParseError

# "0002:01:00.0 Ethernet controller: ..." (domain printed with -D or when any device has a non-zero domain).
HEADER_RE = re.compile(r"^((?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+(.*)$")
SPEED = r"([\d.]+)GT/s|unknown"
LNKCAP_RE = re.compile(rf"^LnkCap:\s+Port #\d+, Speed (?:{SPEED}), Width x([0-9]{{1,2}})")
# pciutils <= 3.7: " (ok)" / " (downgraded)" / " (strange)" after both; >= 3.8: nothing when equal,
# " (downgraded)" when lower (endpoints only), " (overdriven)" when higher.
LNKSTA_RE = re.compile(rf"^LnkSta:\s+Speed (?:{SPEED})(?: \((\w+)\))?, Width x([0-9]{{1,2}})(?: \((\w+)\))?")
# Which note wins when speed and width disagree: the one that signals trouble.
NOTE_RANK = ("downgraded", "overdriven", "strange", "ok")


class PciLink(msgspec.Struct, frozen=True):
    """One PCI function's PCIe link as lspci reports it; speeds None when unknown or not readable.

    `sta_note` is the more alarming of lspci's speed and width suffixes ("downgraded" > "overdriven" >
    "strange" > "ok"); None when none was printed, which pciutils >= 3.8 does when LnkSta equals LnkCap.
    """

    bdf: str | None
    description: str | None
    cap_speed_gts: float | None
    cap_width: int | None
    sta_speed_gts: float | None
    sta_width: int | None
    sta_note: str | None
    access_denied: bool


def _speed(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _combined_note(*notes: str | None) -> str | None:
    present = [note for note in notes if note is not None]
    for note in NOTE_RANK:
        if note in present:
            return note
    return present[0] if present else None


class _Device:
    """Mutable accumulator for one device block."""

    def __init__(self, bdf: str | None, description: str) -> None:
        self.bdf = bdf
        self.description = description
        self.cap: tuple[float | None, int] | None = None
        self.sta: tuple[float | None, int, str | None] | None = None
        self.access_denied = False

    def feed(self, stripped: str, line_no: int) -> None:
        if stripped.startswith("Capabilities: <access denied>"):
            self.access_denied = True
        elif stripped.startswith("LnkCap:") and self.cap is None:
            cap = LNKCAP_RE.match(stripped)
            if cap is None:
                raise ParseError("lspci", f"unrecognised LnkCap line {stripped[:80]!r}", line_no)
            self.cap = (_speed(cap.group(1)), int(cap.group(2)))
        elif stripped.startswith("LnkSta:") and self.sta is None:
            sta = LNKSTA_RE.match(stripped)
            if sta is None:
                raise ParseError("lspci", f"unrecognised LnkSta line {stripped[:80]!r}", line_no)
            self.sta = (_speed(sta.group(1)), int(sta.group(3)), _combined_note(sta.group(2), sta.group(4)))

    def record(self) -> PciLink:
        cap_speed, cap_width = self.cap if self.cap else (None, None)
        sta_speed, sta_width, note = self.sta if self.sta else (None, None, None)
        return PciLink(
            bdf=self.bdf,
            description=self.description or None,
            cap_speed_gts=cap_speed,
            cap_width=cap_width,
            sta_speed_gts=sta_speed,
            sta_width=sta_width,
            sta_note=note,
            access_denied=self.access_denied,
        )


def _starts_excerpt(devices: list[_Device], stripped: str) -> bool:
    """A LnkCap/LnkSta line that cannot belong to the current block: no block yet, or a headerless one full."""
    if not stripped.startswith(("LnkCap:", "LnkSta:")):
        return False
    if not devices:
        return True
    last = devices[-1]
    return last.bdf is None and (last.cap is not None if stripped.startswith("LnkCap:") else last.sta is not None)


def parse_lspci(text: str) -> tuple[PciLink, ...]:
    """Parse `lspci -vv` (one or many devices); empty output means no matching device, not an error.

    `lspci -d 15b3:` prints nothing on a Spark without a QSFP cable: the CX-7 functions are removed.

    >>> (link,) = parse_lspci("0000:01:00.0 Ethernet controller: Mellanox Technologies MT2910 Family\\n"
    ...                       "\\t\\tLnkCap:\\tPort #0, Speed 32GT/s, Width x4, ASPM not supported\\n"
    ...                       "\\t\\tLnkSta:\\tSpeed 32GT/s, Width x2 (downgraded)\\n")
    >>> link.bdf, link.cap_width, link.sta_width, link.sta_note
    ('0000:01:00.0', 4, 2, 'downgraded')
    """
    if "\x00" in text:
        raise ParseError("lspci", "binary data (NUL bytes)")
    devices: list[_Device] = []
    other: list[str] = []
    for line_no, line in enumerate(text.replace("\r\n", "\n").split("\n"), start=1):
        header = None if line[:1].isspace() else HEADER_RE.match(line)
        if header is not None:
            devices.append(_Device(header.group(1), header.group(2).strip()))
        elif _starts_excerpt(devices, line.strip()):
            # `lspci -vv -s BDF | grep -E 'LnkCap|LnkSta'`: link lines without their device header
            devices.append(_Device(None, ""))
            devices[-1].feed(line.strip(), line_no)
        elif devices:
            devices[-1].feed(line.strip(), line_no)
        elif line.strip():
            other.append(line.strip())
    if not devices and other:
        # e.g. "pcilib: Cannot open /proc/bus/pci" / "lspci: Cannot find any working access method."
        raise ParseError("lspci", f"no device header; output starts with {other[0][:80]!r}")
    return tuple(device.record() for device in devices)

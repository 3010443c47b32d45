"""Decode module identity from an `ethtool -m` hex dump, which ethtool < 6.7 prints for QSFP112 (ID 0x1E).

Byte offsets are those of ethtool's own decoders (`cmis.h`, `qsfp.h`, ethtool 6.5), which follow CMIS
rev. 4/5 upper page 00h and SFF-8636 upper page 00h. Only bytes present in the dump are used: the default
netlink fallback dumps bytes 0-127 only, so vendor fields need `hex on` or a `page 0 offset 128` dump.
"""

from __future__ import annotations

import re

from linkcheck.errors import ParseError

HEX_ROW_RE = re.compile(r"^0x([0-9a-fA-F]{4}):\s*((?:[0-9a-fA-F]{2}\s*)+)$")
HEX_HEADER_LINES = ("Offset\t\tValues", "------\t\t------")

CMIS_IDS = frozenset({0x18, 0x19, 0x1B, 0x1E})
SFF8636_IDS = frozenset({0x0C, 0x0D, 0x11})

# SFF-8024 identifier texts as ethtool prints them (sff-common.c; 0x1E text from ethtool >= 6.7).
IDENTIFIER_NAMES = {
    0x03: "SFP",
    0x0C: "QSFP",
    0x0D: "QSFP+",
    0x11: "QSFP28",
    0x18: "QSFP-DD Double Density 8X Pluggable Transceiver (INF-8628)",
    0x19: "OSFP 8X Pluggable Transceiver",
    0x1B: "DSFP Dual Small Form Factor Pluggable Transceiver",
    0x1E: "QSFP+ or later with Common Management Interface Specification (CMIS)",
}
CONNECTOR_NAMES = {0x07: "LC", 0x0C: "MPO Parallel Optic", 0x21: "Copper pigtail", 0x22: "RJ45",
                   0x23: "No separable connector"}

# (label, first byte, last byte) of the ASCII fields, inclusive.
CMIS_ASCII = (("Vendor name", 0x81, 0x90), ("Vendor PN", 0x94, 0xA3), ("Vendor rev", 0xA4, 0xA5),
              ("Vendor SN", 0xA6, 0xB5), ("Date code", 0xB6, 0xBD))
SFF8636_ASCII = (("Vendor name", 0x94, 0xA3), ("Vendor PN", 0xA8, 0xB7), ("Vendor rev", 0xB8, 0xB9),
                 ("Vendor SN", 0xC4, 0xD3), ("Date code", 0xD4, 0xDB))
CMIS_OUI, SFF8636_OUI = 0x91, 0xA5
CMIS_CONNECTOR, SFF8636_CONNECTOR = 0xCB, 0x82
CMIS_CABLE_LEN, SFF8636_COPPER_LEN = 0xCA, 0x92
CMIS_LEN_MULTIPLIERS = (0.1, 1.0, 10.0, 100.0)


def is_hex_dump(lines: list[str]) -> bool:
    """True when the output is ethtool's `dump_hex()` format rather than decoded lines."""
    return any(line.rstrip(" ") in HEX_HEADER_LINES for line in lines[:4])


def read_hex_dump(spec: str, lines: list[str]) -> dict[int, int]:
    """Map byte offset -> value from one or more `Offset/Values` blocks; a malformed row is a ParseError."""
    data: dict[int, int] = {}
    for line_no, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not stripped or line.rstrip(" ") in HEX_HEADER_LINES:
            continue
        match = HEX_ROW_RE.match(stripped)
        if match is None:
            raise ParseError(spec, f"malformed hex dump row {stripped[:40]!r}", line_no)
        base = int(match.group(1), 16)
        for i, token in enumerate(match.group(2).split()):
            data[base + i] = int(token, 16)
    if 0 not in data:
        raise ParseError(spec, "hex dump without byte 0 (the SFF-8024 identifier)")
    return data


def _ascii(data: dict[int, int], first: int, last: int) -> str | None:
    """Bytes first..last as ethtool prints them: trailing blanks cut, non-printables as '_'."""
    if any(offset not in data for offset in range(first, last + 1)):
        return None
    raw = [data[offset] for offset in range(first, last + 1)]
    while raw and raw[-1] in (0x20, 0x00):
        raw.pop()
    text = "".join(chr(b) if 32 <= b <= 126 else "_" for b in raw)
    return text or None


def _code_text(code: int, names: dict[int, str]) -> str:
    return f"0x{code:02x} ({names.get(code, 'reserved or unknown')})"


def _cable_length_m(data: dict[int, int], cmis: bool) -> str | None:
    """Cable length as ethtool would print it: CMIS byte 202 (multiplier bits 7-6), SFF-8636 byte 146."""
    offset = CMIS_CABLE_LEN if cmis else SFF8636_COPPER_LEN
    if offset not in data:
        return None
    raw = data[offset]
    if not cmis:
        return f"{raw}m"
    if raw == 0xFF:
        return "> 6.3km"
    return f"{(raw & 0x3F) * CMIS_LEN_MULTIPLIERS[raw >> 6]:.2f}m"


def decode_identity(data: dict[int, int]) -> list[tuple[str, str]]:
    """Identity fields decodable from the dumped bytes, labelled like ethtool's decoded output."""
    code = data[0]
    fields = [("Identifier", _code_text(code, IDENTIFIER_NAMES))]
    cmis = code in CMIS_IDS
    if not cmis and code not in SFF8636_IDS:
        return fields
    connector = CMIS_CONNECTOR if cmis else SFF8636_CONNECTOR
    if connector in data:
        fields.append(("Connector", _code_text(data[connector], CONNECTOR_NAMES)))
    length = _cable_length_m(data, cmis)
    if length is not None:
        fields.append(("Cable assembly length" if cmis else "Length (Copper or Active cable)", length))
    oui = CMIS_OUI if cmis else SFF8636_OUI
    for label, first, last in CMIS_ASCII if cmis else SFF8636_ASCII:
        value = _ascii(data, first, last)
        if value is not None:
            fields.append((label, value))
        if label == "Vendor name" and all(o in data for o in range(oui, oui + 3)):
            fields.append(("Vendor OUI", ":".join(f"{data[o]:02x}" for o in range(oui, oui + 3))))
    return fields

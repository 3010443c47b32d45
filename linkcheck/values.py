"""Values as an engineer writes them: the one place where a number, a yes/no, a missing value or a list
becomes text in a human report (console, Markdown, HTML, JUnit, the acceptance table).

`48.10 Gb/s`, `200 Gb/s (both)`, `32 GT/s x4 (both)`, `GID index 3 -> 4`, `unset`, `yes`: never a Python
repr (`['a']`, `{'k': 1}`, `'RS'`), never `None`/`True`/`False` for a missing or yes/no value, never float
noise (`26.560000000000002`). A tool's own word stays as the tool wrote it (ethtool's FEC `None`).
Machine formats (JSON, Prometheus) keep exact numbers and do not use this module.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from linkcheck.model import Evidence, Finding

MISSING = "-"
UNSET = "unset"
_UNIT_SOURCES = ("Gb/s", "GB/s", "Mb/s", "bytes")  # an evidence `source` that names the value's unit
_RATE_FACTS = re.compile(r"ib_write_bw|concurrent .* path|\bbandwidth\b")
_GTS = re.compile(r"\b(\d+)\.0 GT/s")  # "32.0 GT/s" as sysfs-derived text writes it: "32 GT/s"
_ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]+(?: on [ab])?$")


def number(value: float, digits: int = 2) -> str:
    """A measured number: a float with `digits` decimals (48.10, 109.00), an int as itself (9000); not a finite
    number as `nan`/`inf`."""
    if isinstance(value, bool):
        return yes_no(value)
    if isinstance(value, int):
        return str(value)
    if not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return f"{value:.{digits}f}"


def plain_number(value: float) -> str:
    """A number with at most 4 decimals and no trailing zeros (0.8333, 26.56, 3320000000)."""
    if isinstance(value, bool):
        return yes_no(value)
    if isinstance(value, int) or not math.isfinite(value):
        return number(value)
    text = f"{value:.4f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def signed(value: float) -> str:
    """A margin: always signed, at most 4 decimals (+1.5, -0.25, +0)."""
    text = plain_number(value)
    return text if text.startswith("-") else f"+{text}"


def yes_no(value: bool | None) -> str:
    return "?" if value is None else "yes" if value else "no"


def gbps(value: float | None) -> str:
    return MISSING if value is None else f"{number(value)} Gb/s"


def pcie(speed_gts: float | None, width: int | None) -> str:
    """`32 GT/s x4`; `PCIe ?` when the node did not say."""
    if not speed_gts or not width:
        return "PCIe ?"
    return f"{plain_number(speed_gts)} GT/s x{width}"


def byte_size(value: int) -> str:
    """17179869184 -> `16 GiB`; a size that is not a whole power-of-1024 unit stays in bytes."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if value >= scale and value % scale == 0:
            return f"{value // scale} {unit}"
    return f"{value} bytes"


def text(value: Any, *, missing: str = MISSING) -> str:
    """Any value as text: a string as itself, numbers without noise, yes/no, lists joined, mappings as
    `key value`, a baseline/now pair as `was -> now`."""
    if value is None:
        return missing
    if isinstance(value, str):
        return _GTS.sub(r"\1 GT/s", value) if value else '""'
    if isinstance(value, bool):
        return yes_no(value)
    if isinstance(value, (int, float)):
        return plain_number(value)
    if isinstance(value, Mapping):
        return _mapping(value, missing)
    if isinstance(value, Sequence):
        items = [text(v, missing=missing) for v in value]
        return ", ".join(items) if items else "(none)"
    return str(value)


def _mapping(value: Mapping[Any, Any], missing: str) -> str:
    if "baseline" in value and "now" in value:
        out = f"{text(value['baseline'], missing=missing)} -> {text(value['now'], missing=missing)}"
        ratio = value.get("ratio")
        return out + (f" (x{plain_number(ratio)})" if isinstance(ratio, (int, float)) else "")
    return ", ".join(f"{k} {text(v, missing=missing)}" for k, v in value.items()) or "(none)"


def _with_unit(value: Any, unit: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return text(value)
    if unit == "Mb/s" and isinstance(value, int) and value % 1000 == 0:
        return f"{value // 1000} Gb/s"
    if unit == "bytes" and isinstance(value, int):
        return byte_size(value)
    return f"{number(value)} {unit}"


def _unit_of(ev: Evidence) -> tuple[str, str]:
    """(unit, what is left of the source): `Gb/s` -> ("Gb/s", ""), `GB/s, all_gather_perf` -> ("GB/s",
    "all_gather_perf"), `ethtool Mb/s` -> ("Mb/s", "ethtool"); an ib_write_bw rate is in Gb/s."""
    source = ev.source
    for unit in _UNIT_SOURCES:
        if source == unit:
            return unit, ""
        if source.startswith(unit + ", "):
            return unit, source[len(unit) + 2:]
        if source.endswith(" " + unit):
            return unit, source[: -len(unit) - 1]
    if source == "ib_write_bw" or _RATE_FACTS.search(ev.fact):
        return "Gb/s", source
    return "", source


def evidence_value(ev: Evidence) -> tuple[str, str]:
    """(the value as text, with its unit; the source left to show): a pair of equal values is `X (both)`."""
    unit, source = _unit_of(ev)
    missing = UNSET if source in ("not set", "unset") or _ENV_NAME.match(ev.fact) else MISSING
    value = ev.value
    if value is None and missing == UNSET and source in ("not set", "unset"):
        return UNSET, ""
    if isinstance(value, (list, tuple)) and len(value) == 2 and value[0] == value[1] and value[0] is not None:
        return f"{_with_unit(value[0], unit) if unit else text(value[0])} (both)", source
    if unit and isinstance(value, (list, tuple)):
        return ", ".join(_with_unit(v, unit) for v in value), source
    if unit:
        return _with_unit(value, unit), source
    return text(value, missing=missing), source


def evidence_line(ev: Evidence) -> str:
    """`fact = value unit  [source]`."""
    value, source = evidence_value(ev)
    return f"{ev.fact} = {value}" + (f"  [{source}]" if source else "")


def evidence_lines(finding: Finding) -> list[str]:
    return [evidence_line(ev) for ev in finding.evidence]


def aligned(table: list[list[str]], indent: str = "") -> list[str]:
    """Rows of cells as plain-text lines, each column padded to its widest cell, two spaces between columns."""
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))] if table else []
    return [indent + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in table]

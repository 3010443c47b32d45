"""The Prometheus exposition format's text, for every linkcheck textfile (a pair's, a cluster's): label values
escaped, sample values spelled as the format allows, rates in base units, gauge families with HELP and TYPE once.

One module, so that a pair's and a cluster's series keep node text inert the same way and write the same numbers.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from decimal import Decimal

from linkcheck.report.safe_text import shown

Labels = dict[str, str]


def escape(value: str) -> str:
    """A label value as the exposition format wants it: backslash, double quote and newline escaped; and, as the
    file may be read on a terminal (`cat`, `report -f prometheus`), every other control character (ESC, OSC,
    C0, C1, bidi) from a node's string shown as text (`\\x1b`), never written raw."""
    return shown(value, multiline=True).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def help_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def number(value: float) -> str:
    """A sample value; NaN and the infinities as the exposition format spells them (int() of them would raise)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value)) if value != int(value) or abs(value) >= 1e15 else str(int(value))


def scaled(value: float, factor: int) -> float:
    """`value * factor` computed on the number as written (26.56 Gb/s -> 3320000000 B/s, not
    3320000000.0000005): the decimal the float stands for, times an exact integer, rounded once."""
    if not math.isfinite(value):
        return value * factor
    return float(Decimal(repr(float(value))) * factor)


def bytes_per_second(gbps: float) -> float:
    return scaled(gbps, 125_000_000)  # Gb/s: 1e9 bits / 8


class Metrics:
    """Metric families in order, each with its HELP and TYPE lines once and its samples."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def family(self, name: str, help_: str, samples: Iterable[tuple[Labels, float]]) -> None:
        rows = list(samples)
        if not rows:
            return
        self.lines += [f"# HELP {name} {help_text(help_)}", f"# TYPE {name} gauge"]
        for labels, value in rows:
            inner = ",".join(f'{k}="{escape(v)}"' for k, v in labels.items())
            self.lines.append(f"{name}{{{inner}}} {number(value)}" if inner else f"{name} {number(value)}")

    def comment(self, text: str) -> None:
        """A `#` line that a reader skips: one line, node text shown as text."""
        self.lines.append(f"# {shown(text)}")

    def text(self) -> str:
        """The families as a textfile: one sample per line, ending with a newline."""
        return "\n".join(self.lines) + "\n"

"""JSON as RFC 8259 defines it: no `NaN`, `Infinity` or `-Infinity`, which Python's json writes by default and
strict readers (jq, JavaScript's JSON.parse, Go) refuse. A non-finite number becomes null, and the caller is
told where, so that it can say so."""

from __future__ import annotations

import json
import math
from typing import Any


def finite_only(value: Any, where: str = "") -> tuple[Any, list[str]]:
    """`value` with every non-finite float replaced by None, and the places (`bench.rdma[0].gbps`) replaced."""
    spots: list[str] = []

    def walk(item: Any, at: str) -> Any:
        if isinstance(item, float) and not math.isfinite(item):
            spots.append(at or "(the document)")
            return None
        if isinstance(item, dict):
            return {k: walk(v, f"{at}.{k}" if at else str(k)) for k, v in item.items()}
        if isinstance(item, (list, tuple)):
            return [walk(v, f"{at}[{i}]") for i, v in enumerate(item)]
        return item

    return walk(value, where), spots


def dumps(value: Any, **options: Any) -> str:
    """json.dumps that never writes NaN or Infinity: non-finite numbers become null."""
    clean, _ = finite_only(value)
    return json.dumps(clean, allow_nan=False, **options)

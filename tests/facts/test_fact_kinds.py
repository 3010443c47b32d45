"""What kind of value each fact holds, read from the fact records' annotations: playbook operators are
checked against it when a playbook loads (`lt` needs a number, ...)."""

from __future__ import annotations

import pytest

from linkcheck.diagnose.operands import fact_kind


@pytest.mark.parametrize(("scope", "fact", "kind"), [
    # containers (tuples, dicts, read-only mappings) are neither numbers nor text
    ("node", "nccl", "other"), ("node", "nccl_sources", "other"), ("node", "unavailable", "other"),
    ("node", "functions", "other"), ("node", "routes", "other"),
    ("function", "fec_active", "other"),
    ("node", "mem_available_kib", "number"), ("node", "uptime_s", "number"), ("function", "mtu", "number"),
    ("function", "pcie_speed_gts", "number"), ("function", "carrier", "bool"),
    ("function", "netdev", "text"), ("node", "hostname", "text"), ("path", "a.mtu", "number"),
])
def test_fact_kind_follows_the_annotation(scope: str, fact: str, kind: str) -> None:
    assert fact_kind(scope, fact) == kind

"""The acceptance's closing line names the findings that gave its verdict when no check did."""

from __future__ import annotations

from typing import Any

import pytest

from linkcheck.accept.text import closing_line


def _doc(verdict: str, checks: list[str], findings: list[tuple[str, str]]) -> dict[str, Any]:
    return {"verdict": verdict, "exit_code": {"PASS": 0, "DEGRADED": 1, "FAIL": 2}[verdict],
            "checks": [{"id": f"c{i}", "status": s} for i, s in enumerate(checks)],
            "diagnosis": {"verdict": verdict.lower(), "findings": [{"id": i, "status": s} for i, s in findings]}}


def test_a_verdict_no_check_gave_names_the_findings_that_gave_it() -> None:
    failed = _doc("FAIL", ["PASS", "PASS"], [("RDMA_LATENCY_HIGH", "fail"), ("MTU_MISMATCH", "pass"),
                                              ("RDMA_LATENCY_HIGH", "fail"), ("NCCL_BUSBW_LOW", "warn")])
    assert closing_line(failed) == "ACCEPTANCE: FAIL (0 of 2 checks; by the findings RDMA_LATENCY_HIGH) exit 2"
    degraded = _doc("DEGRADED", ["PASS"], [("NCCL_BUSBW_LOW", "warn")])
    assert closing_line(degraded) == "ACCEPTANCE: DEGRADED (0 of 1 checks; by the findings NCCL_BUSBW_LOW) exit 1"


@pytest.mark.parametrize(("verdict", "checks", "findings", "line"), [
    ("FAIL", ["FAIL", "PASS"], [("LINK_HOTPLUG_DEGRADED", "fail")], "ACCEPTANCE: FAIL (1 of 2 checks) exit 2"),
    ("PASS", ["PASS"], [], "ACCEPTANCE: PASS (1 of 1 checks) exit 0"),
    # A saved record's text is no rule id: not put on the terminal.
    ("FAIL", ["PASS"], [("\x1b]2;owned\x07", "fail")], "ACCEPTANCE: FAIL (0 of 1 checks) exit 2"),
])
def test_a_verdict_a_check_gave_or_no_rule_id_keeps_the_line_as_it_was(verdict: str, checks: list[str],
                                                                       findings: list[tuple[str, str]],
                                                                       line: str) -> None:
    assert closing_line(_doc(verdict, checks, findings)) == line

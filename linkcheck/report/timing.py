"""How long each JUnit testcase's measurement ran, from the durations the bundle recorded for its traffic runs.

A bundle records each command's wall time (`captures[].duration_s`). ib_write_bw writes two captures per client
run (its text and its JSON result, the second 0 s), so a run's time is its client captures' sum; the paths of a
concurrent round ran at once, so a round's time is its longest client run. A testcase that measured no traffic (a
cable's part number, a PCIe width) is read from files and takes no time: 0.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from linkcheck.facts.bench_facts import pair_job
from linkcheck.model import Capture, Finding


class Timing:
    """The bundle's traffic runs' seconds, indexed the ways the testcases name them."""

    def __init__(self, captures: Iterable[Capture]) -> None:
        self.runs: dict[tuple[str, str, str], float] = {}  # (mode, path, direction) -> seconds over its rounds
        self.rounds: dict[tuple[str, str], dict[str, float]] = {}  # (mode, direction) -> round -> its longest run
        self.nccl = 0.0
        for cap in captures:
            meta = cap.meta
            if pair_job(cap):
                self.nccl += cap.duration_s
            if meta.get("kind") != "rdma" or meta.get("role") != "client":
                continue
            key = (meta.get("mode", ""), meta.get("path", ""), meta.get("direction", ""))
            self.runs[key] = self.runs.get(key, 0.0) + cap.duration_s
            rounds = self.rounds.setdefault((key[0], key[2]), {})
            name = meta.get("round", "")
            rounds[name] = max(rounds.get(name, 0.0), cap.duration_s)

    def total(self) -> float:
        """Every run's seconds as they ran one after the other: each round's longest client run (a concurrent
        round's paths ran at once), and the NCCL runs; a cluster's test is timed so from its own captures."""
        return sum(sum(rounds.values()) for rounds in self.rounds.values()) + self.nccl

    def check(self, check: dict[str, Any]) -> float:
        """An acceptance check's seconds: its path's runs in its mode and direction, both paths' rounds for a total,
        the NCCL runs for a collective's check."""
        check_id, subject = str(check.get("id")), str(check.get("subject"))
        if check_id.startswith("nccl_"):
            return self.nccl
        for mode in ("alone", "concurrent"):
            if check_id == f"rdma_{mode}_gbps":
                return sum(s for (m, path, d), s in self.runs.items() if m == mode and subject == f"{path} {d}")
        if check_id == "rdma_concurrent_total_gbps" and subject.startswith("both paths "):
            return sum(self.rounds.get(("concurrent", subject.removeprefix("both paths ")), {}).values())
        return 0.0

    def finding(self, finding: Finding) -> float:
        """A finding's seconds: every run on its path for a path's rule, the NCCL runs for the collective's."""
        if finding.subject == "nccl":
            return self.nccl
        return sum(s for (_, path, _), s in self.runs.items() if path == finding.subject)


def seconds(value: float) -> str:
    """JUnit's `time`: seconds with millisecond precision, as the bundle records them."""
    return f"{value:.3f}"

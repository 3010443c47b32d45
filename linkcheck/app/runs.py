"""After a run is diagnosed (against the baseline asked for, if any): keep its record."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from linkcheck.baseline.history import append_judged
from linkcheck.outcome import Judged
from linkcheck.report.prometheus import write_textfile

if TYPE_CHECKING:
    from linkcheck.baseline.store import ClusterBaseline
    from linkcheck.facts.snapshot_model import Baseline


class RunRecord(msgspec.Struct, frozen=True):
    """What to do with a run's outcome besides the report: which command it was, the baseline to compare with."""

    command: str  # check | bench rdma | bench nccl | accept | diagnose
    baseline: Baseline | ClusterBaseline | None = None  # a cluster's is read for the pair's cable
    prometheus: Path | None = None
    acceptance: str | None = None  # an `accept` run's verdict (PASS, DEGRADED, FAIL, INCONCLUSIVE), kept beside
    history: bool = False  # an offline `diagnose` appends to the history only when asked (--record)


def finish_run(judged: Judged, record: RunRecord) -> list[str]:
    """Record a run diagnosed with its baseline in its facts (`judge_bundle` and `check_cluster`
    attach it, so each run is diagnosed once): the history (a pair's run, or each test of a cluster's in its
    pair's), the textfile; the lines to say on stderr about anything that could not be recorded. An offline
    `diagnose` of a bundle already there is the same run: it is not recorded twice."""
    problems: list[str] = []
    if record.command != "diagnose" or record.history:  # an old bundle is no new run unless the user says so
        try:
            append_judged(judged, record.command, record.acceptance, once=record.command == "diagnose")
        except OSError as exc:
            problems.append(_not_recorded(exc))
    if record.prometheus is not None:
        write_textfile(record.prometheus, judged)
    return problems


def _not_recorded(exc: OSError) -> str:
    """Why the history could not be written: the run itself stands, its report and exit code are not lost to this."""
    return f"the run history was not recorded: {exc.strerror or exc}"

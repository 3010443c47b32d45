"""After a run is diagnosed (against the baseline asked for, if any): keep its record."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from linkcheck.baseline.history import already_recorded, append_cluster_run, append_run
from linkcheck.bundle.format import Bundle
from linkcheck.bundle.verify import load_trusted
from linkcheck.outcome import ClusterCheck
from linkcheck.report.prometheus import write_textfile

if TYPE_CHECKING:
    from linkcheck.baseline.store import ClusterBaseline
    from linkcheck.facts.snapshot_model import Baseline
    from linkcheck.outcome import Outcome


class RunRecord(msgspec.Struct, frozen=True):
    """What to do with a run's outcome besides the report: which command it was, the baseline to compare with."""

    command: str  # check | bench rdma | bench nccl | accept | diagnose
    baseline: Baseline | ClusterBaseline | None = None  # a cluster's is read for the pair's cable
    prometheus: Path | None = None
    acceptance: str | None = None  # an `accept` run's verdict (PASS, DEGRADED, FAIL, INCONCLUSIVE), kept beside
    history: bool = False  # an offline `diagnose` appends to the history only when asked (--record)


def finish_run(outcome: Outcome, record: RunRecord) -> list[str]:
    """Record a run diagnosed with the record's baseline in its facts (`diagnose_bundle` and `run_live` attach
    it, so each run is diagnosed once): the history, the textfile; the lines to say on stderr about anything
    that could not be recorded."""
    problems: list[str] = []
    if record.command != "diagnose" or record.history:  # an old bundle is no new run unless the user says so
        try:
            if record.command == "diagnose" and already_recorded(outcome):
                return _textfile(outcome, record, problems)  # a bundle in the history already: not twice
            append_run(outcome, record.command, record.baseline.name if record.baseline else None, record.acceptance)
        except OSError as exc:
            problems.append(_not_recorded(exc))
    return _textfile(outcome, record, problems)


def _textfile(outcome: Outcome, record: RunRecord, problems: list[str]) -> list[str]:
    if record.prometheus is not None:
        write_textfile(record.prometheus, outcome)
    return problems


def finish_cluster_run(check: ClusterCheck, bundle: Bundle, saved: Path, command: str,
                       baseline: str | None = None) -> list[str]:
    """Record a cluster's run (judged against the baseline named, if any) in the history of each test's pair (each
    cable, or pair through the switch); the lines to say on stderr when that could not be done. An offline
    `diagnose` of a bundle already there is the same run: its tests are not recorded twice."""
    try:
        append_cluster_run(check, bundle.captures, command, saved, bundle.created, baseline,
                           once=command == "diagnose")
    except OSError as exc:
        return [_not_recorded(exc)]
    return []


def record_saved_cluster(check: ClusterCheck, path: Path, baseline: str | None, *,
                         allow_unverified: bool = False) -> list[str]:
    """An offline `diagnose --record` of a cluster's bundle: each test in its pair's history under the bundle's
    date, as its live run would have recorded it (never twice); the lines to say on stderr when it could not be."""
    bundle = load_trusted(path, allow_unverified=allow_unverified)  # its runs' records, as judged just before
    return finish_cluster_run(check, bundle, path, "diagnose", baseline)


def _not_recorded(exc: OSError) -> str:
    """Why the history could not be written: the run itself stands, its report and exit code are not lost to this."""
    return f"the run history was not recorded: {exc.strerror or exc}"

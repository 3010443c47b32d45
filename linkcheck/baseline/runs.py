"""After a run is diagnosed: compare it with the baseline asked for, and keep its record."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from linkcheck.baseline.model import Baseline
    from linkcheck.collect.config import Config
    from linkcheck.pipeline import Outcome


@dataclass(frozen=True)
class RunRecord:
    """What to do with a run's outcome besides the report: which command it was, the baseline to compare with."""

    command: str  # check | bench rdma | bench nccl | diagnose
    baseline: Baseline | None = None
    prometheus: Path | None = None


def finish_run(outcome: Outcome, record: RunRecord, config: Config | None) -> tuple[Outcome, list[str]]:
    """The outcome compared with the record's baseline (a live run is diagnosed again with it in the facts);
    and lines to say on stderr about anything that could not be recorded."""
    if record.baseline is not None and outcome.link.baseline is None:
        from linkcheck.pipeline import configured_rules, with_baseline

        outcome = with_baseline(outcome, record.baseline, configured_rules([], config))
    problems: list[str] = []
    if record.command != "diagnose" or record.baseline is not None:
        from linkcheck.baseline.history import append_run

        try:
            append_run(outcome, record.command, record.baseline.name if record.baseline else None)
        except OSError as exc:  # the run itself stands: its report and exit code are not lost to this
            problems.append(f"the run history was not recorded: {exc.strerror or exc}")
    if record.prometheus is not None:
        from linkcheck.report.prometheus import write_textfile

        write_textfile(record.prometheus, outcome)
    return outcome, problems

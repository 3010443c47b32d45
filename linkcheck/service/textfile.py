"""The service's own textfile (`linkcheck-service.prom`, beside the check's `linkcheck.prom` in node_exporter's
textfile folder): when the service last ran and how, whether each node answered, why a run is inconclusive, and
when the known-good run it compares with was collected (the alert on an acceptance that expired reads it).

Its names all start with `linkcheck_service_`, so they never collide with the check's series in the same folder
(node_exporter drops colliding series silently). The report writers' conventions hold: gauges, base units, no
timestamps, label values escaped (report/exposition.py)."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import msgspec

from linkcheck.baseline.store import resolve_any
from linkcheck.errors import LinkcheckError
from linkcheck.report.exposition import Metrics
from linkcheck.report.writer import write_output

SERVICE_TEXTFILE = "linkcheck-service.prom"
_SAMPLE = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{?)(.*)")


def check_textfile(kind: str) -> str:
    """The check's series of a boot run and of a timer run live in two files, `linkcheck-boot.prom` and
    `linkcheck-timer.prom`, so that the timer's inspection never replaces what the boot run's traffic test found:
    that stands until the next boot, or until a run with traffic is asked for."""
    return f"linkcheck-{kind}.prom"


def labelled(text: str, kind: str) -> str:
    """A check's textfile with `run="boot"` or `run="timer"` on every series: the two files' series then differ,
    where two files with the same series would lose one of them silently in node_exporter."""
    out = []
    for line in text.split("\n"):
        match = _SAMPLE.fullmatch(line) if line and not line.startswith("#") else None
        if match is None:
            out.append(line)
            continue
        name, brace, rest = match.groups()
        if brace:
            out.append(f'{name}{{run="{kind}"{"" if rest.startswith("}") else ","}{rest}')
        else:
            out.append(f'{name}{{run="{kind}"}}{rest}')
    return "\n".join(out)


def write_check(path: Path, text: str, kind: str) -> None:
    write_output(path, labelled(text, kind), "--textfile-dir", "textfile")


class ServiceRun(msgspec.Struct, frozen=True):
    """What one service run reports about itself."""

    kind: str  # boot | timer
    finished: float  # Unix time
    exit_code: int
    verdict: str  # the check's, or inconclusive when it gave none
    reason: str | None  # why the run is inconclusive when the check could not say it itself
    answered: dict[str, bool]
    baseline: str | None = None
    baseline_created: float | None = None  # when the baseline's run was collected (Unix time)


def baseline_created(name: str | None) -> float | None:
    """When the saved baseline's run was collected; None without one, or when it cannot be read (the check itself
    then refuses it and says why)."""
    if name is None:
        return None
    try:
        stamp = dt.datetime.fromisoformat(resolve_any(name).bundle_created)
    except (LinkcheckError, ValueError):
        return None
    return (stamp if stamp.tzinfo else stamp.replace(tzinfo=dt.timezone.utc)).timestamp()


def render_service(run: ServiceRun) -> str:
    m = Metrics()
    m.family("linkcheck_service_last_run_timestamp_seconds", "When the service's last run ended (Unix time), by "
             "kind: boot (with traffic) or timer (inspection only).", [({"kind": run.kind}, round(run.finished, 3))])
    m.family("linkcheck_service_exit_code", "The exit code of the service's last check (3 when it gave none).",
             [({}, run.exit_code)])
    m.family("linkcheck_service_node_answered", "1 when the node's SSH port answered before the check, else 0.",
             [({"peer": name}, 1 if ok else 0) for name, ok in sorted(run.answered.items())])
    m.family("linkcheck_service_inconclusive", "1 when the service's last run is inconclusive, with the reason "
             "(a node that did not answer, a check that gave no verdict); else 0 with reason none.",
             [({"reason": run.reason or ("the check's own" if run.verdict == "inconclusive" else "none")},
               1 if run.verdict == "inconclusive" or run.reason else 0)])
    if run.baseline is not None and run.baseline_created is not None:
        m.family("linkcheck_service_baseline_timestamp_seconds", "When the known-good run the service compares with "
                 "(its saved baseline, normally an acceptance) was collected (Unix time).",
                 [({"baseline": run.baseline}, round(run.baseline_created, 3))])
    return m.text()


def write_service(path: Path, run: ServiceRun) -> None:
    """Written atomically, as every linkcheck textfile (a temporary file node_exporter does not read, renamed)."""
    write_output(path, render_service(run), "--textfile-dir", "service textfile")

"""What every command shares: the global flags, the options that recur, and the few ways a command speaks (a line
on stderr, text on stdout, the report of a diagnosis) and starts (its config, its bundle folder, its record)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import msgspec
import typer
from msgspec.structs import replace

from linkcheck.app.runs import RunRecord, finish_run
from linkcheck.baseline.store import resolve_any
from linkcheck.bundle.save_dir import check_save_dir, default_save_dir
from linkcheck.collect.specs import validate_container
from linkcheck.config import Config, SshOptions, default_config_present, find_config
from linkcheck.errors import UsageError
from linkcheck.integers import DECIMAL_RE, NumberError, ascii_int, bounded_decimal, bounded_int, quoted
from linkcheck.outcome import Judged
from linkcheck.report.acceptance import judged_verdict
from linkcheck.report.fit import fit
from linkcheck.report.markdown import render_markdown
from linkcheck.report.output import print_outcome
from linkcheck.report.prometheus import check_textfile_path
from linkcheck.report.safe_text import shown
from linkcheck.report.stdout import write_stdout
from linkcheck.report.verdict import BundleVerdict
from linkcheck.report.writer import write_output
from linkcheck.transport.base import NodeTarget


class ProgramFlags(msgspec.Struct):
    """What the program sets once per process: the global flags, and whether Ctrl-C has been said."""

    quiet: bool = False  # --quiet: no report body, only the verdict line on stderr and the exit code
    debug: bool = False  # --debug: tracebacks, and the libraries' log messages
    interruption_said: bool = False  # a line has told the user that Ctrl-C ended the run


FLAGS = ProgramFlags()


class Format(str, Enum):
    console = "console"
    json = "json"


def integer_in(low: int, high: int) -> Callable[[object], int]:
    """An option's parser: ASCII digits from `low` to `high` (click's int() would take `١٢`, `1_0` or ` 7`, and
    quote a number of 5,000 digits whole); anything else a usage error naming the option (exit 4), worded as
    click words its own."""
    def integer(value: object) -> int:
        try:
            return bounded_int(value, low, high, "")
        except NumberError:
            if isinstance(value, str) and ascii_int(value.lstrip("-"), 0, 10**30) is not None:
                raise typer.BadParameter(f"{value} is not in the range {low}<=x<={high}.") from None
            raise typer.BadParameter(f"{quoted(str(value))} is not a valid int (ASCII digits 0-9).") from None
    return integer


def decimal_in(low: float, high: float) -> Callable[[object], float]:
    """integer_in for a number with decimals (`12`, `0.5`) from `low` to `high`; `nan` and `inf` are passed on, for
    the caller to refuse with its own words."""
    def number(value: object) -> float:
        if isinstance(value, str) and value.strip().lower().lstrip("+-") in ("nan", "inf", "infinity"):
            return float(value)
        try:
            return bounded_decimal(value, low, high, "")
        except NumberError:
            if isinstance(value, str) and len(value) <= 64 and DECIMAL_RE.fullmatch(value):
                raise typer.BadParameter(f"{value} is not in the range {low:g}<=x<={high:g}.") from None
            raise typer.BadParameter(f"{quoted(str(value))} is not a valid float (ASCII digits, such as 12 or "
                                     "0.5).") from None
    return number


PlaybookOpt = Annotated[
    Optional[list[Path]],  # noqa: UP045 - typer needs Optional at runtime on Python 3.10
    typer.Option("--playbook", "-p", help="Extra playbook file or folder (repeatable)."),
]
BaselineOpt = Annotated[Optional[str], typer.Option(  # noqa: UP045
    "--baseline", help="Compare with this saved baseline (a name from `linkcheck baseline list`, or a baseline "
    "JSON file): DRIFT_* findings; over a cluster, a cluster's baseline, per cable and node.")]
UnverifiedOpt = Annotated[bool, typer.Option(
    "--allow-unverified", help="Read a bundle that `linkcheck verify` rejects: each problem is said on stderr, and "
    "the files in doubt are not read (their rules skip), so they can never pass or fail a rule.")]
PrometheusOpt = Annotated[Optional[Path], typer.Option(  # noqa: UP045
    "--prometheus-textfile", help="Also write the run as a node_exporter textfile (e.g. "
    "/var/lib/prometheus/node-exporter/linkcheck.prom), atomically.")]
NodeOpt = Annotated[
    Optional[list[str]],  # noqa: UP045
    typer.Option("--node", "-n", help="a=USER@HOST[:PORT] or b=...: the pair's nodes, overriding linkcheck.yaml "
                 "(repeatable); NAME=TARGET or TARGET: a cluster's, two to eight (two: the cluster of one cable)."),
]
ContainerOpt = Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
    "--container", help="Also read the NCCL this container loads, on every node, through the node's docker or "
    "podman (repeatable; linkcheck.yaml's `containers:` names them per node).")]
HostfileOpt = Annotated[Optional[Path], typer.Option(  # noqa: UP045
    "--hostfile", help="An Open MPI hostfile naming the nodes (a cluster).")]
InventoryOpt = Annotated[Optional[Path], typer.Option(  # noqa: UP045
    "--inventory", "-i", help="An Ansible inventory (INI or YAML) naming the nodes (a cluster).")]
GroupOpt = Annotated[Optional[str], typer.Option(  # noqa: UP045
    "--group", help="Only the inventory's hosts of this group (and its children).")]
ConfigOpt = Annotated[Optional[Path], typer.Option("--config", "-c", help="Config file (default ./linkcheck.yaml).")]  # noqa: UP045
OfflineConfigOpt = Annotated[Optional[Path], typer.Option(  # noqa: UP045
    "--config", "-c", help="linkcheck.yaml, as for `diagnose`.")]
AcceptOpt = Annotated[bool, typer.Option("--accept-new-host-keys",
                                         help="Trust and record unknown host keys (never a changed one).")]
SaveOpt = Annotated[Optional[Path], typer.Option("--save", help="Bundle folder (default linkcheck-<timestamp>).")]  # noqa: UP045
AnonOpt = Annotated[bool, typer.Option("--anonymize", help="Replace hostnames, IPs, MACs, GUIDs and serials.")]
FmtOpt = Annotated[Format, typer.Option("--format", "-f", help="Output format.")]
AllOpt = Annotated[bool, typer.Option("--all", help="Also show passed findings.")]

def say(line: str) -> None:
    """One line on stderr, its foreign parts (hostnames, tool output) shown as text."""
    if "interrupted" in line:
        FLAGS.interruption_said = True
    typer.echo(shown(line), err=True)


def out(text: str) -> None:
    """Text for stdout, shown as text and written so that a full or closed stdout is an error line."""
    write_stdout(shown(text, multiline=True) + "\n")


def out_fitted(text: str) -> None:
    """Text for a person on stdout, each line as wide as the terminal at most (report/fit.py)."""
    out(fit(shown(text, multiline=True)))


def warn_unverified(line: str) -> None:
    """What --allow-unverified reads past, said on stderr."""
    say(f"linkcheck: {line}")


def verdict_of(judged: Judged) -> BundleVerdict:
    """The bundle's one verdict (its acceptance's, where it holds one): its line for -q, its exit code."""
    return judged_verdict(judged)


def say_verdict(judged: Judged) -> None:
    """The bundle's one verdict line (its acceptance's, where it holds one)."""
    say(verdict_of(judged).line)


def say_node_errors(judged: Judged) -> None:
    for line in judged.node_problems():
        say(f"linkcheck: {line}")


def emit(judged: Judged, fmt: Format, show_all: bool, report: Path | None = None) -> None:
    """The report of a pair's diagnosis or a cluster's check on stdout as text (with the passed findings when
    `show_all`) or JSON, or with --quiet only its verdict line on stderr; the Markdown report to `report`."""
    if report is not None:
        write_output(report, render_markdown(judged), "--report")
        say(f"report written to {report}")
    if FLAGS.quiet:
        say_verdict(judged)
    else:
        print_outcome(judged, as_json=fmt is Format.json, show_all=show_all)  # the text within the terminal


def offline_config(path: Path | None) -> Config | None:
    """linkcheck.yaml for an offline diagnosis, found as `check` finds it; None when there is none."""
    if path is None and not default_config_present():
        return None
    return find_config(path)


def quiet_libraries() -> None:
    """paramiko logs tracebacks from its transport thread; our one-line errors already say what failed.

    Only the commands that contact nodes log."""
    logging.basicConfig(level=logging.DEBUG if FLAGS.debug else logging.WARNING, format="%(name)s: %(message)s")
    if not FLAGS.debug:
        logging.getLogger("paramiko").setLevel(logging.CRITICAL + 1)


def checked_containers(names: list[str] | None) -> tuple[str, ...]:
    """--container's names, each one a container name docker and podman could have given; refused before any work."""
    try:
        return tuple(dict.fromkeys(validate_container(n) for n in names or ()))
    except ValueError as exc:
        raise UsageError(f"--container: {exc}", fix="name it as `docker ps` or `podman ps` on the node shows it") \
            from None


def with_containers(target: NodeTarget, names: tuple[str, ...]) -> NodeTarget:
    """The node with --container's names added to those linkcheck.yaml gives it."""
    return replace(target, containers=tuple(dict.fromkeys((*target.containers, *names)))) if names else target


def ssh_options(found: Config | None, accept: bool) -> SshOptions:
    """linkcheck.yaml's SSH options (the defaults without one), unknown host keys trusted when asked: every live
    run's."""
    ssh = found.ssh if found else SshOptions()
    return replace(ssh, accept_new_host_keys=accept or ssh.accept_new_host_keys)


def checked_save(save: Path | None) -> Path:
    """The bundle folder, refused before any work when it cannot receive a bundle."""
    target = save or default_save_dir()
    check_save_dir(target, "--save" if save else "the default bundle folder")
    return target


def run_record(command: str, baseline: str | None, prometheus: Path | None = None, *,
               history: bool = False) -> RunRecord:
    """What the run records besides its report (`history`: an offline diagnosis asked to join the history); the
    baseline and the textfile's folder are checked before any work."""
    if prometheus is not None:
        check_textfile_path(prometheus)
    return RunRecord(command, baseline=resolve_any(baseline) if baseline is not None else None,
                     prometheus=prometheus, history=history)


def finish(judged: Judged, record: RunRecord) -> None:
    """The run, diagnosed with its baseline, recorded (textfile, history); what could not be recorded is said."""
    for line in finish_run(judged, record):
        say(f"linkcheck: {line}")

"""What linkcheck keeps and the user manages: `playbooks`, `profiles` and `baseline` (list, show, validate, save,
delete) and `history` (the recorded runs)."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from linkcheck.accept.profile import builtin_profiles, load_profile_file, resolve_profile, yaml_text
from linkcheck.accept.text import describe_profile
from linkcheck.app.baseline import list_text, save_baseline, show_text
from linkcheck.app.history import history_count, history_text, history_trend
from linkcheck.baseline.store import delete
from linkcheck.cli.common import FLAGS, ConfigOpt, PlaybookOpt, offline_config, out, out_fitted, say
from linkcheck.diagnose.playbook import load_playbooks, renamed, resolve_id
from linkcheck.diagnose.rule_text import describe_rule, rule_source
from linkcheck.errors import ExitCode, UsageError

PathsOpt = Annotated[bool, typer.Option("--paths", help="Name each playbook by its full path (default: a built-in's "
                                        "file name).")]


def playbooks_list(playbook: PlaybookOpt = None, paths: PathsOpt = False) -> None:
    """List every rule: id, severity, scope and playbook on one line, its title under it."""
    rules = load_playbooks(playbook, kind="all")
    both = len(rules) - len({r.id for r in rules})  # a rule judging a pair and a cluster is listed in each layout
    lines = [f"{len(rules) - both} rules ({both} of them in a pair's and a cluster's layout, listed in each): id, "
             "severity, scope, playbook:line; the title under each", ""]
    for rule in rules:
        lines += [f"{rule.id}  {rule.severity.value}  {rule.scope}  {rule_source(rule, paths)}", f"  {rule.title}"]
    out_fitted("\n".join(lines))


def playbooks_show(rule_id: Annotated[str, typer.Argument(metavar="ID")], playbook: PlaybookOpt = None,
                   paths: PathsOpt = False) -> None:
    """Show one rule in full: condition or check, thresholds, message, mechanism, fix, references; a rule that judges
    a pair and a cluster under one id in both layouts, a former id as the rule that replaced it."""
    rules = load_playbooks(playbook, kind="all")
    wanted = resolve_id(rule_id, renamed(rules), "playbooks show")
    layouts = [r for r in rules if r.id == wanted]
    if not layouts:
        raise UsageError(f"no rule {rule_id!r}; `linkcheck playbooks list` shows the ids")
    out_fitted("\n\n".join(describe_rule(r, paths) for r in layouts))


def playbooks_validate(
    paths: Annotated[Optional[list[Path]], typer.Argument(help="Playbook files or folders.")] = None,  # noqa: UP045
) -> None:
    """Validate playbook files strictly (file:line on the first problem); the built-ins when none given."""
    rules = load_playbooks(paths, kind="all")
    out(f"ok: {len({r.id for r in rules})} rules")


def profiles_list() -> None:
    """The built-in acceptance profiles: name and description."""
    lines = ["built-in acceptance profiles (`linkcheck profiles show NAME` for one in full):", ""]
    for name, path in builtin_profiles().items():
        lines += [name, f"  {load_profile_file(path).description}"]
    out_fitted("\n".join(lines))


def profiles_show(
    name: Annotated[str, typer.Argument(help="A built-in profile's name, or a profile file.")],
    as_yaml: Annotated[bool, typer.Option("--yaml", help="Print the profile's YAML file as it is, to copy and edit "
                                          "(`linkcheck profiles validate` accepts it).")] = False,
) -> None:
    """One profile in full: the test it runs and every threshold with its unit and source; --yaml: its file."""
    prof = resolve_profile(name)
    if as_yaml:
        out(yaml_text(prof))  # the file as it is, to copy: never rewrapped
    else:
        out_fitted(describe_profile(prof))


def profiles_validate(path: Annotated[Path, typer.Argument(help="A profile file.")]) -> None:
    """Validate a profile file strictly: file:line on the first problem (exit 4)."""
    prof = load_profile_file(path)
    out(f"ok: profile {prof.name}, {len(prof.checks)} checks, sha256 {prof.sha256}")


def baseline_save(
    name: Annotated[str, typer.Argument(help="The baseline's name (A-Z a-z 0-9 _ . -).")],
    bundle: Annotated[Optional[Path], typer.Argument(  # noqa: UP045
        help="A saved bundle (default: the newest linkcheck-* folder here).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Save a failing or inconclusive run too; replace a "
                                        "baseline of the same name.")] = False,
    playbook: PlaybookOpt = None, config: ConfigOpt = None,
) -> None:
    """Record a passing run as the pair's known-good state, under $XDG_DATA_HOME/linkcheck/baselines/."""
    path, verdict = save_baseline(name, bundle, force=force, playbooks=playbook, config=offline_config(config))
    out(f"baseline {name} saved to {path} (run verdict: {verdict})")


def baseline_list() -> None:
    """Every saved baseline: name, pair, when, the run's verdict, the bundle it came from. An entry that cannot be
    read is named on stderr, one line each, after the others are listed (exit 4)."""
    table, problems = list_text()
    out_fitted(table)
    for problem in problems:
        say(f"linkcheck: {problem}")
    if problems:
        raise typer.Exit(int(ExitCode.BAD_INPUT))


def baseline_show(name: Annotated[str, typer.Argument(help="A saved baseline's name, or a baseline file.")]) -> None:
    """One baseline in full (its JSON): identity, configuration, GID indices, performance with its parameters."""
    out(show_text(name))


def baseline_delete(name: Annotated[str, typer.Argument(help="A saved baseline's name.")]) -> None:
    """Remove a saved baseline."""
    out(f"deleted {delete(name)}")


class HistoryFormat(str, Enum):
    table = "table"
    csv = "csv"
    json = "json"


def history(
    pair: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--pair", help="Only this pair (its history file's name, or a part of it such as a hostname).")] = None,
    since: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--since", help="Only runs from this date or time on (YYYY-MM-DD or ISO 8601).")] = None,
    fmt: Annotated[HistoryFormat, typer.Option(
        "--format", "-f", help="table (fits the terminal), csv or json.")] = HistoryFormat.table,
    last: Annotated[Optional[int], typer.Option(  # noqa: UP045
        "--last", min=0, help="Only the last N runs (0: all); the table shows the last 100 by default, CSV and "
        "JSON all.")] = None,
    trend: Annotated[bool, typer.Option(
        "--trend", help="Per pair and link, month by month: runs, median, 5th percentile, rolling median and the "
        "drift from the first month (needs pandas: pip install 'linkcheck[trend]').")] = False,
    window: Annotated[str, typer.Option(
        "--window", help="With --trend: the rolling median's time window (7D, 36h, ...).")] = "7D",
) -> None:
    """The recorded runs as a log, one row per run: time, command, -D and repetitions, each path's lowest rate,
    the concurrent total, the NCCL bus bandwidth, the verdict and the bundle; --trend: the months' statistics."""
    if trend:
        out(history_trend(pair, since, fmt.value, window))
        return
    if FLAGS.quiet:  # no body: the count and the last run's verdict on stderr
        count, newest = history_count(pair, since)
        last_run = f", the last {newest['verdict'].upper()} at {newest['time']}" if newest else ""
        say(f"history: {count} runs{last_run}")
        return
    out(history_text(pair, since, fmt.value, last=last))

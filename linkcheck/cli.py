"""The linkcheck command line: parse options, call one library function, render, exit with the verdict."""

from __future__ import annotations

# The Ctrl-C handler goes in before anything else loads, so an interrupt while the command starts ends with the
# documented line and code, not a traceback from inside an import.
import os
import signal
import sys
from types import FrameType

from linkcheck.app.offline import configured_rules, diagnose_bundle
from linkcheck.report.writer import check_output_path, is_stdout, write_output


def _interrupted_while_starting(signum: int, frame: FrameType | None) -> None:
    """Ctrl-C before `main` runs (while typer and rich import): the documented line and code, no traceback
    (the interpreter prints none for SystemExit, wherever in an import it is raised)."""
    os.write(2, b"linkcheck: interrupted\n")
    raise SystemExit(130)


if __name__ == "__main__" or os.path.basename(sys.argv[0]) == "linkcheck":
    signal.signal(signal.SIGINT, _interrupted_while_starting)

import contextlib
import logging
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer
from msgspec.structs import replace

from linkcheck import __version__, strict_json
from linkcheck.accept.budget import expected_paths, plan_line
from linkcheck.accept.profile import Profile, builtin_profiles, load_profile_file, resolve_profile, yaml_text
from linkcheck.accept.text import cluster_acceptance_text, describe_profile, headline
from linkcheck.app.advise import Workload, advice_exit_code, advise_bundle, load_workload
from linkcheck.app.baseline import list_text, save_baseline, show_text
from linkcheck.app.cluster_accept import run_cluster_accept
from linkcheck.app.cluster_baseline import cluster_bundle_against
from linkcheck.app.cluster_check import ClusterTraffic, check_cluster, cluster_bundle, save_cluster
from linkcheck.app.fix import ApplyOptions, FixResult, apply_fix, fix_bundle, fix_live, restore_fix
from linkcheck.app.init import write_cluster_config, write_initial_config
from linkcheck.app.runs import RunRecord, finish_run
from linkcheck.app.topology import discover
from linkcheck.baseline.cluster import ClusterBaseline, cluster_baseline, pair_baseline
from linkcheck.baseline.cluster_drift import compare
from linkcheck.baseline.store import delete
from linkcheck.bench.nccl import TRANSPORT_PROOF_BYTES, NcclOptions
from linkcheck.bench.plan import RdmaOptions, quick_options
from linkcheck.bundle.format import load_bundle
from linkcheck.bundle.save_dir import check_save_dir, default_save_dir
from linkcheck.bundle.verify import verify_bundle
from linkcheck.cluster.hosts import ClusterHost, cluster_hosts
from linkcheck.cluster.record import is_cluster_bundle
from linkcheck.cluster_outcome import ClusterCheck
from linkcheck.config import Config, SshOptions, default_config_present, find_config, resolve_config
from linkcheck.diagnose.playbook import load_playbooks
from linkcheck.diagnose.rule import Rule
from linkcheck.diagnose.rule_text import describe_rule
from linkcheck.errors import ExitCode, LinkcheckError, OutputError, UsageError
from linkcheck.facts.snapshot_model import Baseline
from linkcheck.outcome import Outcome
from linkcheck.parsers import PARSERS
from linkcheck.parsers.parse_file import parse_file, record_to_json, record_to_text
from linkcheck.repair.record import steps_json
from linkcheck.report.advice import advice_html, advice_json, advice_markdown, advice_text
from linkcheck.report.cluster import check_json, check_markdown, check_text, view_json, view_text
from linkcheck.report.cluster_formats import cluster_renderer
from linkcheck.report.output import print_outcome
from linkcheck.report.problems import node_problem_lines
from linkcheck.report.prometheus import check_textfile_path
from linkcheck.report.repair import plan_text_lines
from linkcheck.report.safe_text import shown
from linkcheck.report.stdout import write_stdout
from linkcheck.report.tables import verdict_line

if TYPE_CHECKING:
    from linkcheck.app.live import TrafficRequest
    from linkcheck.bench.latency import LatencyOptions

# The older commands import the part of the library they run inside their bodies (marked "the command's own code"
# below), as typer builds every command at start; newer commands import theirs at the top, as the rest of the house
# does, and tests/architecture caps the ones inside.
app = typer.Typer(
    help="Validate the direct 200 Gb/s RoCE link between two DGX Spark-class (GB10) nodes.\n\n"
    "Exit codes: 0 pass, 1 warnings, 2 failures, 3 inconclusive (could not measure), "
    "4 bad input (unknown option, malformed bundle, playbook, config or tool output), 70 internal error, "
    "74 output could not be written, 130 interrupted.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=True,
)
playbooks_app = typer.Typer(help="List, show and validate playbooks (rules as data).", no_args_is_help=True)
app.add_typer(playbooks_app, name="playbooks")
bench_app = typer.Typer(help="Traffic tests (inspection first, then the test; bundle saved and diagnosed).",
                        no_args_is_help=True)
app.add_typer(bench_app, name="bench")
baseline_app = typer.Typer(help="Save, list, show and delete the pair's known-good states (baselines).",
                           no_args_is_help=True)
app.add_typer(baseline_app, name="baseline")
profiles_app = typer.Typer(help="List, show and validate acceptance profiles (what `accept` judges by).",
                           no_args_is_help=True)
app.add_typer(profiles_app, name="profiles")


class Format(str, Enum):
    console = "console"
    json = "json"


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


def _unverified(line: str) -> None:
    _say(f"linkcheck: {line}")


PrometheusOpt = Annotated[Optional[Path], typer.Option(  # noqa: UP045
    "--prometheus-textfile", help="Also write the run as a node_exporter textfile (e.g. "
    "/var/lib/prometheus/node-exporter/linkcheck.prom), atomically.")]


def _baseline(name: str | None) -> Baseline | None:
    """The baseline to compare with, loaded (and validated) before any work; its code loads only when asked."""
    if name is None:
        return None
    return pair_baseline(name)


_QUIET: list[bool] = []  # --quiet: no report body, only the verdict line on stderr and the exit code
_DEBUG: list[bool] = []  # --debug: tracebacks, and the libraries' log messages


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"linkcheck {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks (also after the command).")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No report body: only the verdict line on stderr "
                                        "and the exit code (also after the command).")] = False,
    version: Annotated[bool, typer.Option("--version", is_eager=True, callback=_show_version,
                                          help="Print linkcheck's version and exit.")] = False,
) -> None:
    """Global options."""
    if quiet:
        _QUIET.append(True)


@app.command()
def diagnose(
    bundle: Annotated[Path, typer.Argument(help="A bundle folder written by `linkcheck collect` or a fixture.")],
    fmt: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.console,
    playbook: PlaybookOpt = None,
    show_all: Annotated[bool, typer.Option("--all", help="Also show passed findings.")] = False,
    config: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        "--config", "-c", help="linkcheck.yaml whose playbooks, thresholds and recorded link apply, as in "
        "`check` (default ./linkcheck.yaml when present).")] = None,
    baseline: BaselineOpt = None, prometheus: PrometheusOpt = None, allow_unverified: UnverifiedOpt = False,
) -> None:
    """Diagnose a saved bundle offline: both nodes side by side, findings with evidence and fix. A bundle that
    `linkcheck verify` rejects is refused (exit 4) unless --allow-unverified. A cluster's bundle is judged as its
    check judged it (text or JSON)."""
    if is_cluster_bundle(bundle):
        if prometheus:
            raise UsageError("--prometheus-textfile judges a pair's bundle, not a cluster's")
        against = cluster_baseline(baseline) if baseline else None
        result = _cluster_bundle(bundle, playbook, config, allow_unverified, against)
        _emit_cluster(result, fmt, None)
        raise typer.Exit(int(result.exit_code))
    record = _record("diagnose", baseline, prometheus) if baseline or prometheus else None
    outcome = diagnose_bundle(bundle, playbook, _offline_config(config), record.baseline if record else None,
                              allow_unverified=allow_unverified, warn=_unverified)
    if record is not None:
        _finish(outcome, record)
    _emit(outcome, fmt, show_all)
    raise typer.Exit(int(outcome.diagnosis.exit_code))


@app.command()
def report(
    bundle: Annotated[Path, typer.Argument(help="A bundle folder written by `linkcheck collect` or a fixture.")],
    fmt: Annotated[str, typer.Option("--format", "-f", help="json, junit, markdown, html or prometheus (the names in "
                                     "linkcheck/report/formats.py).")] = "json",
    output: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        "--output", "-o", help="Write the report to this file instead of standard output ('-'): a regular file is "
        "replaced atomically (through a symbolic link, its target), a FIFO or a device written straight.")] = None,
    playbook: PlaybookOpt = None,
    config: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        "--config", "-c", help="linkcheck.yaml, as for `diagnose`.")] = None,
    allow_unverified: UnverifiedOpt = False,
) -> None:
    """Diagnose a bundle like `diagnose` and write a report: JSON, JUnit XML, Markdown, HTML or Prometheus."""

    from linkcheck.report.formats import renderer  # the command's own code

    target = check_output_path(output) if output is not None and not is_stdout(output) else None
    if is_cluster_bundle(bundle):
        result = _cluster_bundle(bundle, playbook, config, allow_unverified)
        _write_report(cluster_renderer(fmt)(result), target, result.verdict.value)
        raise typer.Exit(int(result.exit_code))
    render = renderer(fmt)
    outcome = diagnose_bundle(bundle, playbook, _offline_config(config), allow_unverified=allow_unverified,
                              warn=_unverified)
    text = render(outcome)
    if target is not None:
        write_output(target, text)
        _verdict_line(outcome) if _QUIET else _say(f"report written to {target}")
    elif _QUIET:
        _verdict_line(outcome)
    else:
        write_stdout(text)
    raise typer.Exit(int(outcome.diagnosis.exit_code))


def _cluster_bundle(bundle: Path, playbook: list[Path] | None, config: Path | None,
                    allow_unverified: bool, baseline: ClusterBaseline | None = None) -> ClusterCheck:
    found = _offline_config(config)
    rules = configured_rules(list(playbook or []), found, kind="all")
    if baseline is not None:
        return cluster_bundle_against(bundle, rules, baseline, allow_unverified=allow_unverified, warn=_unverified,
                                      config=found)
    return cluster_bundle(bundle, rules, allow_unverified=allow_unverified, warn=_unverified,
                          expected=found.expected_cluster if found else None)


def _write_report(text: str, target: Path | None, verdict: str) -> None:
    if target is not None:
        write_output(target, text)
        _say(f"verdict: {verdict}" if _QUIET else f"report written to {target}")
    elif _QUIET:
        _say(f"verdict: {verdict}")
    else:
        write_stdout(text)


def _offline_config(path: Path | None) -> Config | None:
    """linkcheck.yaml for an offline diagnosis, found as `check` finds it; the config code loads only if one exists."""
    if path is None and not default_config_present():
        return None
    return find_config(path)


def _emit(outcome: Outcome, fmt: Format, show_all: bool) -> None:
    if _QUIET:
        _verdict_line(outcome)
        return
    print_outcome(outcome, as_json=fmt is Format.json, show_all=show_all)


def _verdict_line(outcome: Outcome) -> None:
    _say(verdict_line(outcome))


NodeOpt = Annotated[
    Optional[list[str]],  # noqa: UP045
    typer.Option("--node", "-n", help="a=USER@HOST[:PORT] or b=...; overrides linkcheck.yaml (repeatable)."),
]
HostfileOpt = Annotated[Optional[Path], typer.Option(  # noqa: UP045
    "--hostfile", help="An Open MPI hostfile naming the nodes (a cluster).")]
InventoryOpt = Annotated[Optional[Path], typer.Option(  # noqa: UP045
    "--inventory", "-i", help="An Ansible inventory (INI or YAML) naming the nodes (a cluster).")]
GroupOpt = Annotated[Optional[str], typer.Option(  # noqa: UP045
    "--group", help="Only the inventory's hosts of this group (and its children).")]
ConfigOpt = Annotated[Optional[Path], typer.Option("--config", "-c", help="Config file (default ./linkcheck.yaml).")]  # noqa: UP045
AcceptOpt = Annotated[bool, typer.Option("--accept-new-host-keys",
                                         help="Trust and record unknown host keys (never a changed one).")]
SaveOpt = Annotated[Optional[Path], typer.Option("--save", help="Bundle folder (default linkcheck-<timestamp>).")]  # noqa: UP045
AnonOpt = Annotated[bool, typer.Option("--anonymize", help="Replace hostnames, IPs, MACs, GUIDs and serials.")]


def _live_config(config: Path | None, node: list[str] | None, accept: bool) -> Config:
    """The resolved config of a command that contacts the nodes (each such command starts here)."""
    _quiet_libraries(bool(_DEBUG))
    resolved = resolve_config(config, node or [])
    if resolved.playbooks or resolved.thresholds:  # an unknown rule or threshold is refused before any work

        configured_rules([], resolved)
    accept = accept or resolved.ssh.accept_new_host_keys
    return replace(resolved, ssh=replace(resolved.ssh, accept_new_host_keys=accept))


_INTERRUPTION_SAID: list[bool] = []  # set once a line has told the user that Ctrl-C ended the run


def _say(line: str) -> None:
    """One line on stderr, its foreign parts (hostnames, tool output) shown as text."""
    if "interrupted" in line:
        _INTERRUPTION_SAID.append(True)
    typer.echo(shown(line), err=True)


def _out(text: str) -> None:
    """Text for stdout, shown as text and written so that a full or closed stdout is an error line."""
    write_stdout(shown(text, multiline=True) + "\n")


def _checked_save(save: Path | None) -> Path:
    """The bundle folder, refused before any work when it cannot receive a bundle."""
    target = save or default_save_dir()
    check_save_dir(target, "--save" if save else "the default bundle folder")
    return target


def _node_errors(outcome: Outcome) -> None:
    for line in node_problem_lines(outcome):
        _say(f"linkcheck: {line}")


def _record(command: str, baseline: str | None, prometheus: Path | None = None) -> RunRecord:
    """What the run records besides its report; the baseline and the textfile's folder are checked before any
    work."""
    if prometheus is not None:
        check_textfile_path(prometheus)
    return RunRecord(command, baseline=_baseline(baseline), prometheus=prometheus)


def _finish(outcome: Outcome, record: RunRecord) -> None:
    """The run, diagnosed with its baseline, recorded (textfile, history); what could not be recorded is said."""
    for line in finish_run(outcome, record):
        _say(f"linkcheck: {line}")


def _run_check(config: Path | None, node: list[str] | None, save: Path | None, anonymize: bool, accept: bool,
               fmt: Format, show_all: bool, traffic: TrafficRequest | None, record: RunRecord) -> None:
    cfg = _live_config(config, node, accept)
    save = _checked_save(save)
    said = ""
    if fmt is Format.console and not _QUIET and (traffic is not None or sys.stderr.isatty()):
        said = _plan(command_name(record), expected_paths(cfg), traffic)
        _say(said)
    from linkcheck.app.live import run_live  # the command's own code
    from linkcheck.report.progress import ConsoleProgress  # the command's own code

    progress = None
    if fmt is Format.console and traffic is not None:  # the live display only serves the traffic tests
        progress = ConsoleProgress.on_stderr(
            lambda paths, nccl: _plan(command_name(record), paths, traffic, nccl) if said else "", said)
    result = run_live(cfg, save, anonymize=anonymize, diagnose=True, traffic=traffic, progress=progress,
                      baseline=record.baseline)
    if result.outcome is None:  # Ctrl-C before any node answered: nothing to diagnose
        _say(f"partial bundle saved to {result.saved}")
        raise typer.Exit(130)
    _node_errors(result.outcome)
    outcome = result.outcome
    _finish(outcome, record)
    _emit(outcome, fmt, show_all)
    _say(f"bundle saved to {result.saved}")
    raise typer.Exit(130 if result.interrupted else int(outcome.diagnosis.exit_code))


def command_name(record: RunRecord) -> str:
    return record.command


def _plan(command: str, paths: int, traffic: TrafficRequest | None, nccl_bytes: int | None = None) -> str:
    """The planned wall time, said before the run starts (with the traffic tests, and on a terminal without), and
    again once the inspection has found the paths and the NCCL size the nodes' memory allows, if that differs."""
    rdma, nccl = getattr(traffic, "rdma", None), getattr(traffic, "nccl", None)
    return plan_line(command, paths=paths, duration_s=rdma.duration_s if rdma else None,
                     nccl_max_bytes=(nccl_bytes or nccl.max_bytes) if nccl else None,
                     traffic_total=rdma is not None and rdma.adaptive, adaptive=rdma is not None and rdma.adaptive,
                     latency=getattr(traffic, "latency", None) is not None)


DEFAULT_DURATION_S = 10  # = RdmaOptions.duration_s (kept literal here: the CLI must not import bench/ to start)
QUICK_COMMAND = "check --quick"
FmtOpt = Annotated[Format, typer.Option("--format", "-f", help="Output format.")]
AllOpt = Annotated[bool, typer.Option("--all", help="Also show passed findings.")]
_DURATION_HELP = ("Seconds per ib_write_bw run (-D); perftest leaves a quarter (rounded down) out at each "
                  "end (10 s: a 6 s window, as the published GB10 numbers).")
DurationOpt = Annotated[int, typer.Option("--duration", min=1, max=3600, help=_DURATION_HELP)]
CheckDurationOpt = Annotated[Optional[int], typer.Option(  # noqa: UP045
    "--duration", min=1, max=3600, help=_DURATION_HELP + " With --bench (default 10).")]
SizeOpt = Annotated[int, typer.Option("--size", min=1, max=1 << 30, help="ib_write_bw message size in bytes (-s).")]
QpsOpt = Annotated[int, typer.Option("--qps", min=1, max=1024, help="ib_write_bw queue pairs (-q).")]
PortOpt = Annotated[Optional[int], typer.Option("--port-base", min=1024, max=65000,  # noqa: UP045
                                                help="First TCP port for perftest servers.")]
NcclMaxOpt = Annotated[int, typer.Option("--nccl-max-bytes", min=8, max=1 << 40,
                                         help="Largest all_gather size (capped by free memory).")]
NcclBinOpt = Annotated[Optional[str], typer.Option("--nccl-binary", help="Path of all_gather_perf on the nodes.")]  # noqa: UP045
_LATENCY_HELP = ("the latency test: ib_write_lat per path at 2 B and 48 KiB, one run at a time, then all_reduce_perf "
                 "16-64 KiB across the nodes (~9 s on a healthy pair); judged by RDMA_LATENCY_HIGH and "
                 "NCCL_ALLREDUCE_LATENCY_HIGH, read by `linkcheck advise`")
LatencyOpt = Annotated[bool, typer.Option("--latency", help="Also run " + _LATENCY_HELP + ".")]


def _traffic(rdma: bool, nccl: bool, duration: int, size: int, qps: int, port_base: int | None,
             nccl_max_bytes: int, nccl_binary: str | None, latency: bool = False) -> TrafficRequest:
    from linkcheck.app.live import TrafficRequest  # the command's own code

    return TrafficRequest(
        rdma=RdmaOptions(duration_s=duration, size_bytes=size, qps=qps, port_base=port_base) if rdma else None,
        nccl=NcclOptions(max_bytes=nccl_max_bytes, binary=nccl_binary) if nccl else None,
        latency=_latency_options(port_base, nccl_binary) if latency else None)


def _latency_options(port_base: int | None, nccl_binary: str | None) -> LatencyOptions:
    """The latency test's options; all_reduce_perf is looked for beside an all_gather_perf given by path."""
    from linkcheck.bench.latency import ALLREDUCE, LatencyOptions  # the command's own code

    sibling = str(Path(nccl_binary).with_name(ALLREDUCE)) if nccl_binary and "/" in nccl_binary else None
    return LatencyOptions(port_base=port_base, allreduce_binary=sibling)


@app.command()
def check(
    node: NodeOpt = None, config: ConfigOpt = None, save: SaveOpt = None, anonymize: AnonOpt = False,
    accept_new_host_keys: AcceptOpt = False, fmt: FmtOpt = Format.console, show_all: AllOpt = False,
    bench: Annotated[bool, typer.Option("--bench", help="Also run ib_write_bw and all_gather_perf.")] = False,
    quick: Annotated[bool, typer.Option("--quick", help="The quick traffic tier: ib_write_bw -D 4 with both paths "
                                        "at once in each direction (8 s of traffic), each path alone only where "
                                        "one is low; catches the hot-plug state and a single PCIe path.")] = False,
    quick_nccl: Annotated[bool, typer.Option("--nccl", help="With --quick: also a short all_gather_perf sweep "
                                             "(up to 256 MiB) whose NCCL log proves NET/IB on both HCAs; its bus "
                                             "bandwidth is recorded, not judged.")] = False,
    duration: CheckDurationOpt = None,
    size: SizeOpt = 1048576, qps: QpsOpt = 1, port_base: PortOpt = None,
    nccl_max_bytes: NcclMaxOpt = 1 << 30, nccl_binary: NcclBinOpt = None, baseline: BaselineOpt = None,
    prometheus: PrometheusOpt = None, latency: LatencyOpt = False,
    hostfile: HostfileOpt = None, inventory: InventoryOpt = None, group: GroupOpt = None,
    report: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        "--report", help="Over a cluster: also write the Markdown report (per-cable table, matrix) here.")] = None,
) -> None:
    """Inspect both nodes over SSH (one round trip each, in parallel), save the bundle, diagnose it; --quick adds
    short ib_write_bw rounds (8 s of traffic on a healthy pair), --bench the full traffic tests, --latency the
    latency test (after any other test). Three or more --node, --hostfile or --inventory check a cluster: every
    node inspected, the cabling inferred, and with --quick or --bench every cable measured in rounds."""
    if quick and (bench or duration is not None):
        raise UsageError("--quick runs its own short ib_write_bw rounds (-D 4); for other durations use "
                         "--bench --duration S or `linkcheck bench rdma --duration S`")
    if quick_nccl and not quick:
        raise UsageError("--nccl goes with --quick (the transport proof); --bench already runs all_gather_perf")
    cluster = _is_cluster(node, hostfile, inventory, group, config)
    if report is not None and not cluster:
        raise UsageError("--report writes a cluster's report; for a pair: linkcheck report BUNDLE -f markdown")
    if cluster:
        if latency or prometheus or anonymize:
            raise UsageError("over a cluster, check runs the inspection, the RDMA rounds per cable and NCCL across "
                             "the nodes; --latency, --prometheus-textfile and --anonymize judge a pair")
        against = cluster_baseline(baseline) if baseline else None  # refused before any node is touched
        rdma = quick_options(size_bytes=size, qps=qps, port_base=port_base) if quick else RdmaOptions(
            duration_s=duration or DEFAULT_DURATION_S, size_bytes=size, qps=qps, port_base=port_base) if bench \
            else None
        nccl = NcclOptions(max_bytes=nccl_max_bytes, binary=nccl_binary) if bench else NcclOptions(
            max_bytes=TRANSPORT_PROOF_BYTES, binary=nccl_binary, transport_only=True) if quick_nccl else None
        _run_cluster_check((node or [], hostfile, inventory, group), config, accept_new_host_keys, fmt,
                           (rdma, nccl), report, save, against)
    traffic = _traffic(True, True, duration or DEFAULT_DURATION_S, size, qps, port_base, nccl_max_bytes,
                       nccl_binary) if bench else _quick_traffic(size, qps, port_base, quick_nccl, nccl_binary) \
        if quick else None
    if latency:
        options = _latency_options(port_base, nccl_binary)
        traffic = replace(traffic, latency=options) if traffic is not None else _latency_only(options)
    _run_check(config, node, save, anonymize, accept_new_host_keys, fmt, show_all, traffic,
               _record(QUICK_COMMAND if quick else "check", baseline, prometheus))


def _is_cluster(node: list[str] | None, hostfile: Path | None, inventory: Path | None, group: str | None,
                config: Path | None) -> bool:
    """Whether the nodes make a cluster: a hostfile or inventory, three or more --node, or linkcheck.yaml's
    `cluster:` nodes when no --node is given."""
    return hostfile is not None or inventory is not None or group is not None or len(node or ()) > 2 or (
        not node and (recorded := _offline_config(config)) is not None and bool(recorded.cluster_nodes))


def _cluster_setup(named: tuple[list[str], Path | None, Path | None, str | None], config: Path | None,
                   accept: bool) -> tuple[Config | None, tuple[ClusterHost, ...], SshOptions, list[Rule]]:
    """What a cluster's live run needs: linkcheck.yaml (when there is one), the nodes, the SSH options (host-key
    policy as asked) and the rules (the config's playbooks and threshold overrides too)."""
    _quiet_libraries(bool(_DEBUG))
    found = find_config(config)
    hosts = _cluster_nodes(named, found)
    ssh = found.ssh if found else SshOptions()
    return (found, hosts, replace(ssh, accept_new_host_keys=accept or ssh.accept_new_host_keys),
            configured_rules([], found, kind="all"))


def _run_cluster_check(named: tuple[list[str], Path | None, Path | None, str | None], config: Path | None,
                       accept: bool, fmt: Format, traffic: tuple[RdmaOptions | None, NcclOptions | None],
                       report: Path | None, save: Path | None, baseline: ClusterBaseline | None = None) -> None:
    """A cluster's check: inspection, topology, the rounds per cable when asked, the cluster's and the cables'
    findings (and the drift from `baseline`); text or JSON on stdout, a Markdown report to `report`, the bundle
    saved, the verdict's exit code."""
    if report is not None:
        check_output_path(report, "--report")
    target = _checked_save(save)
    rdma, nccl = traffic
    found, hosts, ssh, rules = _cluster_setup(named, config, accept)
    if not _QUIET and fmt is Format.console:
        _say(f"checking {len(hosts)} nodes: " + ("inspection only" if rdma is None else
             f"inspection, then ib_write_bw -D {rdma.duration_s} per cable in rounds (no node in two tests at once)")
             + ("" if nccl is None else ", then all_gather_perf across every node"
                + (" (the transport proof)" if nccl.transport_only else "")))
    from linkcheck.report.progress import ConsoleProgress  # the command's own code

    # The live table of each round's paths and rates, as for a pair: tests of one round share a table.
    progress = ConsoleProgress.on_stderr() if rdma is not None and fmt is Format.console and not _QUIET else None
    result, bundle, doc = check_cluster(hosts, ssh, rules, ClusterTraffic(rdma, nccl), progress,
                                        expected=found.expected_cluster if found else None)
    save_cluster(bundle, doc, target)
    if baseline is not None:
        _say(f"bundle saved to {target}")  # said first: a baseline of another cluster stops here (exit 4)
        result = compare(result, baseline, bundle.captures, rules)
    _emit_cluster(result, fmt, report)
    if baseline is None:
        _say(f"bundle saved to {target}")
    raise typer.Exit(int(result.exit_code))


def _run_cluster_accept(named: tuple[list[str], Path | None, Path | None, str | None], config: Path | None,
                        accept: bool, fmt: Format, show_all: bool,
                        chosen: tuple[Profile | None, int | None, int | None], save: Path | None) -> None:
    """A cluster's acceptance: the run of `check --bench` with the profile's test, repeated, judged by the profile
    of the layout; the acceptance on stdout and in the saved bundle, its verdict's exit code."""
    target = _checked_save(save)
    found, hosts, ssh, rules = _cluster_setup(named, config, accept)
    given, repetitions, duration = chosen
    if not _QUIET and fmt is Format.console:
        _say(f"accepting {len(hosts)} nodes: inspection, then the profile of the layout they show"
             + (f" ({given.name})" if given else "") + ": ib_write_bw per cable in rounds, repeated, then "
             "all_gather_perf across every node")
    from linkcheck.report.progress import ConsoleProgress  # the command's own code

    progress = ConsoleProgress.on_stderr() if fmt is Format.console and not _QUIET else None
    run = run_cluster_accept(hosts, ssh, rules, given, repetitions, duration, target, progress,
                             found.expected_cluster if found else None)
    if run.acceptance is None:
        _say(f"bundle saved to {run.saved}")
        raise LinkcheckError(run.problem or "no profile was chosen")
    if _QUIET:
        _say(headline(run.record))
    else:
        _out(strict_json.dumps(run.record, indent=2) if fmt is Format.json else
             cluster_acceptance_text(run.record, show_all))
    _say(f"bundle saved to {run.saved}")
    raise typer.Exit(130 if run.check.interrupted else int(run.acceptance.exit_code))


def _cluster_nodes(named: tuple[list[str], Path | None, Path | None, str | None],
                   found: Config | None) -> tuple[ClusterHost, ...]:
    """The cluster's nodes: --node, --hostfile or --inventory, else linkcheck.yaml's `cluster:` nodes, else Slurm's."""
    nodes, hostfile, inventory, group = named
    return cluster_hosts(nodes=nodes, hostfile=hostfile, inventory=inventory, group=group, environ=os.environ,
                         configured=found.cluster_nodes if found else ())


def _emit_cluster(result: ClusterCheck, fmt: Format, report: Path | None) -> None:
    if report is not None:
        write_output(report, check_markdown(result), "--report")
        _say(f"report written to {report}")
    if not _QUIET:
        _out(check_json(result) if fmt is Format.json else check_text(result))


def _quick_traffic(size: int, qps: int, port_base: int | None, nccl: bool, nccl_binary: str | None) -> TrafficRequest:
    from linkcheck.app.live import TrafficRequest  # the command's own code

    proof = NcclOptions(max_bytes=TRANSPORT_PROOF_BYTES, binary=nccl_binary, transport_only=True) if nccl else None
    return TrafficRequest(rdma=quick_options(size_bytes=size, qps=qps, port_base=port_base), nccl=proof)


@app.command()
def fix(
    bundle: Annotated[Optional[Path], typer.Argument(  # noqa: UP045
        help="A bundle folder to plan from; without it, both nodes are inspected live (as `check`).")] = None,
    node: NodeOpt = None, config: ConfigOpt = None, save: SaveOpt = None, accept_new_host_keys: AcceptOpt = False,
    fmt: FmtOpt = Format.console, playbook: PlaybookOpt = None, allow_unverified: UnverifiedOpt = False,
    apply: Annotated[bool, typer.Option(
        "--apply", help="Apply the plan, one node at a time, as a transaction that puts a node back as it was when "
        "its change does not verify (or on Ctrl-C); a bundle's plan only to the pair and state it was made for.")
    ] = False,
    restore: Annotated[bool, typer.Option(
        "--restore", help="Put back the files of each node's latest `fix --apply` from its journal and undo its "
        "runtime change.")] = False,
    allow_reboot: Annotated[bool, typer.Option(
        "--allow-reboot", help="With --apply: also run the plan's reboot steps, wait for the nodes, re-check.")
    ] = False,
    try_timeout: Annotated[int, typer.Option(
        "--try-timeout", min=10, max=3600, help="Seconds `netplan try` waits for linkcheck's confirmation before "
        "it reverts a node's netplan change.")] = 120,
    reboot_wait: Annotated[int, typer.Option(
        "--reboot-wait", min=1, max=3600, help="Seconds to wait for a rebooted node to answer again.")] = 600,
) -> None:
    """Plan the repairs of the findings that have one: per node, ordered steps, each with its runtime change, its
    persistent change as a file diff (netplan, NetworkManager or nccl.conf), how it is verified and what it touches.
    Read-only unless --apply: the plan is printed and saved in the bundle (repair.json), nothing on the nodes
    changes. --apply applies it (journal per node, verified, rolled back on failure); --restore undoes the last."""

    if restore or apply:
        _fix_apply(bundle, node, config, save, accept_new_host_keys, fmt, playbook, restore, allow_reboot,
                   try_timeout, reboot_wait)
        return
    if allow_reboot:
        raise UsageError("--allow-reboot goes with --apply")
    if bundle is not None:
        if node or save:
            raise UsageError("--node and --save are for a live plan; a bundle's plan is saved in the bundle")
        result = fix_bundle(bundle, playbook, _offline_config(config), allow_unverified=allow_unverified,
                            warn=_unverified)
    else:
        cfg = _live_config(config, node, accept_new_host_keys)
        live = fix_live(cfg, _checked_save(save))
        if live is None:
            raise typer.Exit(130)
        _node_errors(live.outcome)
        result = live
    _show_plan(result, fmt)
    if _QUIET:
        _verdict_line(result.outcome)
    raise typer.Exit(130 if result.interrupted else int(result.outcome.diagnosis.exit_code))


def _show_plan(result: FixResult, fmt: Format) -> None:
    if result.save_problem:
        _say(f"linkcheck: {result.save_problem}")
    elif result.saved is not None:
        _say(f"repair plan saved to {result.saved / 'repair.json'}")
    if not _QUIET:
        if fmt is Format.json:
            write_stdout(steps_json(result.plan))
        else:
            _out("\n".join(plan_text_lines(result.plan)))


def _fix_apply(bundle: Path | None, node: list[str] | None, config: Path | None, save: Path | None, accept: bool,
               fmt: Format, playbook: list[Path] | None, restore: bool, allow_reboot: bool, try_timeout: int,
               reboot_wait: int) -> None:
    """fix --apply / --restore: the live config, the plan shown first, then each node's transaction."""
    if restore and (bundle is not None or allow_reboot):
        raise UsageError("--restore takes no bundle, --apply or --allow-reboot: it undoes each node's last apply")
    options = ApplyOptions(allow_reboot=allow_reboot, try_timeout_s=try_timeout)
    cfg = _live_config(config, node, accept)
    if restore:
        outcomes = restore_fix(cfg, options, lambda line: _say(f"linkcheck: {line}"))
        for r in outcomes:
            _say(f"node {r.node}: " + {"restored": f"run {r.run_id} restored", "nothing": "nothing to restore",
                                       "failed": f"run {r.run_id} not fully restored"}[r.state])
        raise typer.Exit(2 if any(r.state == "failed" for r in outcomes) else 0)
    result = apply_fix(cfg, _checked_save(save), bundle, options, lambda line: _say(f"linkcheck: {line}"),
                       playbooks=playbook, reboot_wait_s=reboot_wait, shown=lambda r: _show_plan(r, fmt))
    if result.nothing_to_do:
        reboot = any(s.reboot for s in result.before.plan.steps)
        _say("linkcheck: nothing to apply: the plan has no step" + (" but reboots (they need --allow-reboot)"
                                                                     if reboot and not allow_reboot else ""))
        raise typer.Exit(int(result.before.outcome.diagnosis.exit_code))
    for o in result.outcomes:
        _say(f"node {o.node}: {o.state} (journal {o.journal})" + "".join(f"; {p}" for p in o.problems))
    if any(o.state != "committed" for o in result.outcomes):
        raise typer.Exit(int(ExitCode.FAIL))
    if result.after is not None:
        _say(f"after the repair: {verdict_line(result.after)} (bundle {result.after_saved})")
        raise typer.Exit(int(result.after.diagnosis.exit_code))
    raise typer.Exit(0)


def _latency_only(options: LatencyOptions) -> TrafficRequest:
    from linkcheck.app.live import TrafficRequest  # the command's own code

    return TrafficRequest(latency=options)


@bench_app.command("rdma")
def bench_rdma(
    node: NodeOpt = None, config: ConfigOpt = None, save: SaveOpt = None, anonymize: AnonOpt = False,
    accept_new_host_keys: AcceptOpt = False, fmt: FmtOpt = Format.console, show_all: AllOpt = False,
    duration: DurationOpt = DEFAULT_DURATION_S, size: SizeOpt = 1048576, qps: QpsOpt = 1, port_base: PortOpt = None,
    baseline: BaselineOpt = None, prometheus: PrometheusOpt = None,
) -> None:
    """ib_write_bw on each path alone, then both at once, both directions; with counters before and after."""
    traffic = _traffic(True, False, duration, size, qps, port_base, 0, None)
    _run_check(config, node, save, anonymize, accept_new_host_keys, fmt, show_all, traffic,
               _record("bench rdma", baseline, prometheus))


@bench_app.command("nccl")
def bench_nccl(
    node: NodeOpt = None, config: ConfigOpt = None, save: SaveOpt = None, anonymize: AnonOpt = False,
    accept_new_host_keys: AcceptOpt = False, fmt: FmtOpt = Format.console, show_all: AllOpt = False,
    nccl_max_bytes: NcclMaxOpt = 1 << 30, nccl_binary: NcclBinOpt = None, baseline: BaselineOpt = None,
    prometheus: PrometheusOpt = None,
) -> None:
    """nccl-tests all_gather_perf across both nodes with mpirun; transport proven from the NCCL log."""
    traffic = _traffic(False, True, DEFAULT_DURATION_S, 1048576, 1, None, nccl_max_bytes, nccl_binary)
    _run_check(config, node, save, anonymize, accept_new_host_keys, fmt, show_all, traffic,
               _record("bench nccl", baseline, prometheus))


@bench_app.command("latency")
def bench_latency(
    node: NodeOpt = None, config: ConfigOpt = None, save: SaveOpt = None, anonymize: AnonOpt = False,
    accept_new_host_keys: AcceptOpt = False, fmt: FmtOpt = Format.console, show_all: AllOpt = False,
    port_base: PortOpt = None, nccl_binary: NcclBinOpt = None, baseline: BaselineOpt = None,
    prometheus: PrometheusOpt = None,
) -> None:
    """The latency test: ib_write_lat per path at 2 B and 48 KiB, one run at a time, then all_reduce_perf 16-64 KiB
    across the nodes; what `linkcheck advise` reads. Same as `check --latency`."""
    traffic = _latency_only(_latency_options(port_base, nccl_binary))
    _run_check(config, node, save, anonymize, accept_new_host_keys, fmt, show_all, traffic,
               _record("bench latency", baseline, prometheus))


@app.command()
def accept(
    profile: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--profile", "-P", help="A built-in profile's name (`linkcheck profiles list`) or a profile file "
        "(default dgx-spark-pair).")] = None,
    repetitions: Annotated[Optional[int], typer.Option(  # noqa: UP045
        "--repetitions", "-r", min=1, max=100, help="Run the RDMA rounds this many times (default: the "
        "profile's, 3); the lowest of each measurement is judged. Fewer than the built-in profile's 3 mark the "
        "run NON-STANDARD.")] = None,
    duration: Annotated[Optional[int], typer.Option(  # noqa: UP045
        "--duration", min=1, max=3600, help="Seconds per ib_write_bw run (-D) instead of the profile's (10); "
        "shorter than the built-in profile's marks the run NON-STANDARD in the record and every report.")] = None,
    node: NodeOpt = None, config: ConfigOpt = None, save: SaveOpt = None, accept_new_host_keys: AcceptOpt = False,
    fmt: FmtOpt = Format.console, show_all: AllOpt = False,
    hostfile: HostfileOpt = None, inventory: InventoryOpt = None, group: GroupOpt = None,
) -> None:
    """Acceptance: inspection, ib_write_bw on each path alone and both at once, both directions, repeated;
    NCCL all_gather; judged against a profile. Exit 0 PASS, 1 DEGRADED, 2 FAIL, 3 INCONCLUSIVE. Three or more
    --node, --hostfile or --inventory accept a cluster: every cable (or pair through the switch) in rounds, NCCL
    across every node, judged by the profile of the layout the nodes show (dgx-spark-ring3, dgx-spark-switch)."""
    if _is_cluster(node, hostfile, inventory, group, config):
        given = resolve_profile(profile) if profile else None  # a bad profile stops here, before any node
        if given is not None and not given.cluster:
            raise UsageError(f"profile {given.name} accepts a pair (layout: pair); three or more nodes are a "
                             "cluster", fix="--profile dgx-spark-ring3 or dgx-spark-switch, or none: the layout's")
        _run_cluster_accept((node or [], hostfile, inventory, group), config, accept_new_host_keys, fmt, show_all,
                            (given, repetitions, duration), save)
    prof = resolve_profile(profile)  # a bad profile stops here, before any node is touched
    if prof.cluster:
        raise UsageError(f"profile {prof.name} accepts a cluster (layout: {prof.layout}); give its nodes with "
                         "three or more --node, --hostfile or --inventory",
                         fix="for two nodes: --profile dgx-spark-pair")
    if duration is not None:  # the run's -D; the record's `test` says it, and `standard` whether it is weaker
        prof = replace(prof, test=replace(prof.test, duration_s=duration))
    reps = repetitions or prof.test.repetitions
    cfg = _live_config(config, node, accept_new_host_keys)
    target = _checked_save(save)
    from linkcheck.app.accept import run_accept  # the command's own code
    from linkcheck.report.progress import ConsoleProgress  # the command's own code

    progress = None
    if fmt is Format.console and not _QUIET:
        def plan(paths: int, nccl: int | None) -> str:
            return plan_line("accept", paths=paths, duration_s=prof.test.duration_s, repetitions=reps,
                             nccl_max_bytes=nccl or prof.test.nccl_max_bytes, latency=prof.test.latency)

        said = plan(expected_paths(cfg), None)
        _say(said)
        progress = ConsoleProgress.on_stderr(plan, said)
    result = run_accept(cfg, prof, reps, target, progress)
    if result.outcome is None or result.acceptance is None:
        _say(f"partial bundle saved to {result.saved}")
        raise typer.Exit(130)
    _node_errors(result.outcome)
    if _QUIET:
        _say(headline(result.acceptance.to_dict()))
    else:
        _emit(result.outcome, fmt, show_all)  # the report, then the acceptance the bundle now holds
    _say(f"bundle saved to {result.saved}")
    raise typer.Exit(130 if result.interrupted else int(result.acceptance.exit_code))


class AdviceFormat(str, Enum):
    console = "console"
    json = "json"
    markdown = "markdown"
    html = "html"


@app.command()
def advise(
    bundle: Annotated[Path, typer.Argument(help="A bundle folder (best one with latency runs: ib_write_lat per path "
                                           "and the small all_reduce).")],
    model_gib: Annotated[Optional[float], typer.Option(  # noqa: UP045
        "--model-gib", help="The model's weights in GiB.")] = None,
    concurrency: Annotated[Optional[int], typer.Option(  # noqa: UP045
        "--concurrency", help="Concurrent requests (users, or the batch) to serve.")] = None,
    moe: Annotated[bool, typer.Option("--moe", help="A mixture-of-experts model (default: dense).")] = False,
    context: Annotated[int, typer.Option("--context", help="Tokens of context per request (for the KV cache).")] = 0,
    kv_kib_per_token: Annotated[Optional[float], typer.Option(  # noqa: UP045
        "--kv-kib-per-token", help="KV cache per token of context in KiB (default: 128, said to be an estimate).")
    ] = None,
    layers: Annotated[Optional[int], typer.Option(  # noqa: UP045
        "--layers", help="The model's layers: two all-reduces each under tensor parallelism (default: the "
        "published ~100 per decode step).")] = None,
    active_gib: Annotated[Optional[float], typer.Option(  # noqa: UP045
        "--active-gib", help="MoE: the weights one token reads, in GiB (for the decode estimate).")] = None,
    workload: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        "--workload", "-w", help="A workload file (YAML: model_gib, concurrency, moe, context_tokens, "
        "kv_kib_per_token, layers, active_gib) instead of the options.")] = None,
    fmt: Annotated[AdviceFormat, typer.Option("--format", "-f", help="console, json, markdown or html.")
                   ] = AdviceFormat.console,
    playbook: PlaybookOpt = None,
    config: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        "--config", "-c", help="linkcheck.yaml, as for `diagnose`.")] = None,
) -> None:
    """How to use the pair for a workload: two residents, one model across both (tensor or pipeline parallel) or
    one node, with the reasons; any finding that degrades the link voids a split and says what to fix first.
    Exit 0 with advice, 1 or 2 when the link must be fixed first (warnings, failures), 4 on bad input."""

    given = {"--model-gib": model_gib, "--concurrency": concurrency}
    if workload is not None:
        if any(v is not None for v in given.values()):
            raise UsageError("give the workload either as --workload FILE or as options, not both")
        wanted = load_workload(workload)
    else:
        missing = [name for name, v in given.items() if v is None]
        if missing:
            raise UsageError(f"advise needs {' and '.join(missing)} (or --workload FILE)")
        assert model_gib is not None and concurrency is not None
        wanted = Workload(model_gib, concurrency, moe, context, kv_kib_per_token, layers, active_gib)
    _, advice = advise_bundle(bundle, wanted, playbooks=playbook, config=_offline_config(config))
    if _QUIET:
        _say(f"ADVICE: {advice.headline}")
    else:
        render = {AdviceFormat.console: advice_text, AdviceFormat.markdown: advice_markdown,
                  AdviceFormat.html: advice_html, AdviceFormat.json: advice_json}[fmt]
        write_stdout(render(advice).rstrip("\n") + "\n")
    raise typer.Exit(int(advice_exit_code(advice)))


@app.command()
def collect(
    node: NodeOpt = None, config: ConfigOpt = None, save: SaveOpt = None, anonymize: AnonOpt = False,
    accept_new_host_keys: AcceptOpt = False,
) -> None:
    """Inspect both nodes and save the bundle without diagnosing (exit 3 if a node could not be read)."""
    from linkcheck.app.live import run_live  # the command's own code

    cfg = _live_config(config, node, accept_new_host_keys)
    result = run_live(cfg, _checked_save(save), anonymize=anonymize, diagnose=False)
    errors = load_bundle(result.saved).collection_errors
    for error in errors.values():
        _say(f"linkcheck: {error}")
    _say(f"bundle saved to {result.saved}")
    raise typer.Exit(130 if result.interrupted else int(ExitCode.INCONCLUSIVE) if errors else 0)


@app.command()
def anonymize(
    bundle: Annotated[Path, typer.Argument(help="A saved bundle folder.")],
    out: Annotated[Path, typer.Argument(help="Where to write the anonymised copy (absent or empty).")],
) -> None:
    """Write an anonymised copy of a saved bundle: hostnames, users, IPs, MACs, GUIDs and serials replaced."""
    from linkcheck.bundle.anonymize import anonymize_saved  # the command's own code

    anonymize_saved(bundle, out, warn=_unverified)
    typer.echo(f"anonymised bundle saved to {out}", err=True)


@app.command()
def verify(bundle: Annotated[Path, typer.Argument(help="A saved bundle folder.")]) -> None:
    """Check a bundle against its manifest and SHA256SUMS: exit 0 when intact, 2 naming each changed, added or
    removed file (one line each), 4 when it is not a bundle."""
    result = verify_bundle(bundle)
    if _QUIET:
        _say(result.summary())
    else:
        if result.problems:
            _out("\n".join(result.problems))
        _out(result.summary())
    raise typer.Exit(int(ExitCode.PASS if result.ok else ExitCode.FAIL))


@app.command()
def init(
    node: NodeOpt = None, config: ConfigOpt = None,
    output: Annotated[Path, typer.Option("--output", "-o", help="Where to write.")] = Path("linkcheck.yaml"),
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
    accept_new_host_keys: AcceptOpt = False,
    hostfile: HostfileOpt = None, inventory: InventoryOpt = None, group: GroupOpt = None,
) -> None:
    """Connect to both nodes, discover the cabled cage and twin pairing, write a commented linkcheck.yaml. With three
    or more --node, --hostfile or --inventory: every node of a cluster, and the cabling found (its cables and the
    nodes on the switch), which topology and check then compare (CLUSTER_LINK_CHANGED)."""
    if hostfile is not None or inventory is not None or group is not None or len(node or ()) > 2:
        _quiet_libraries(bool(_DEBUG))
        found = find_config(config)
        ssh = found.ssh if found else SshOptions()
        hosts = _cluster_nodes((node or [], hostfile, inventory, group), found)
        facts = write_cluster_config(hosts, replace(ssh, accept_new_host_keys=accept_new_host_keys or
                                                    ssh.accept_new_host_keys), output, force=force)
        _out(f"wrote {output}: {len(hosts)} nodes, layout {facts.topology.layout}, "
             f"{len(facts.topology.cables)} cable(s), "
             f"{len({n for s in facts.topology.segments for n in s.nodes})} node(s) on the switch")
        return
    cfg = _live_config(config, node, accept_new_host_keys)
    link = write_initial_config(cfg, output, force=force)
    _out(f"wrote {output}: cage {','.join(link.a.cabled_cages) or 'none'}, "
               f"{len(link.paths)} path(s): " + "; ".join(p.key for p in link.paths))


ClusterNodeOpt = Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
    "--node", "-n", help="A node as name=[user@]host[:port] or [user@]host[:port] (repeat for each node).")]


@app.command()
def topology(
    node: ClusterNodeOpt = None,
    hostfile: HostfileOpt = None, inventory: InventoryOpt = None, group: GroupOpt = None,
    config: ConfigOpt = None, accept_new_host_keys: AcceptOpt = False,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.console,
) -> None:
    """Inspect every node of a cluster (from --node, --hostfile, --inventory or $SLURM_JOB_NODELIST) and print its
    cables, its layout, the flags, the test rounds and the cluster rules' findings (exit 0; 1 when flagged or a rule
    warns; 2 when a rule fails; 3 when a node could not be read)."""

    _quiet_libraries(bool(_DEBUG))
    found = find_config(config)
    hosts = _cluster_nodes((node or [], hostfile, inventory, group), found)
    ssh = found.ssh if found else SshOptions()
    rules = configured_rules([], found, kind="cluster")  # the config's playbooks and threshold overrides too
    view = discover(hosts, replace(ssh, accept_new_host_keys=accept_new_host_keys or ssh.accept_new_host_keys),
                    rules, found.expected_cluster if found else None)
    if not _QUIET:
        _out(view_json(view) if fmt is Format.json else view_text(view))
    raise typer.Exit(int(view.exit_code))


def _parse_help() -> str:
    kinds = "\n".join(f"  {k:<18} {d}" for k, (_, d) in PARSERS.items())
    return f"Parse one raw tool output and print the normalised record.\n\nKINDS:\n\n{kinds}"


@app.command(help=_parse_help())
def parse(
    kind: Annotated[str, typer.Argument(help="What produced the file (see KINDS).")],
    file: Annotated[Path, typer.Argument(help="The raw output; '-' reads standard input.")],
    fmt: Annotated[Format, typer.Option("--format", "-f")] = Format.console,
) -> None:
    record = parse_file(kind, file)
    _out(record_to_json(record) if fmt is Format.json else record_to_text(record))


@playbooks_app.command("list")
def playbooks_list(playbook: PlaybookOpt = None) -> None:
    """List every rule: id, severity, scope, title, source file."""
    _out("\n".join(f"{rule.id:<24} {rule.severity.value:<8} {rule.scope:<12} {rule.title}  [{rule.source}]"
                   for rule in load_playbooks(playbook, kind="all")))


@playbooks_app.command("show")
def playbooks_show(rule_id: Annotated[str, typer.Argument(metavar="ID")], playbook: PlaybookOpt = None) -> None:
    """Show one rule in full: condition or check, thresholds, message, mechanism, fix, references."""
    rules = {r.id: r for r in load_playbooks(playbook, kind="all")}
    if rule_id not in rules:
        raise UsageError(f"no rule {rule_id!r}; `linkcheck playbooks list` shows the ids")
    _out(describe_rule(rules[rule_id]))


@playbooks_app.command("validate")
def playbooks_validate(
    paths: Annotated[Optional[list[Path]], typer.Argument(help="Playbook files or folders.")] = None,  # noqa: UP045
) -> None:
    """Validate playbook files strictly (file:line on the first problem); the built-ins when none given."""
    rules = load_playbooks(paths, kind="all")
    _out(f"ok: {len(rules)} rules")


@profiles_app.command("list")
def profiles_list() -> None:
    """The built-in acceptance profiles: name and description."""
    _out("\n".join(f"{name:<20} {load_profile_file(path).description}" for name, path in builtin_profiles().items()))


@profiles_app.command("show")
def profiles_show(
    name: Annotated[str, typer.Argument(help="A built-in profile's name, or a profile file.")],
    as_yaml: Annotated[bool, typer.Option("--yaml", help="Print the profile's YAML file as it is, to copy and edit "
                                          "(`linkcheck profiles validate` accepts it).")] = False,
) -> None:
    """One profile in full: the test it runs and every threshold with its unit and source; --yaml: its file."""
    prof = resolve_profile(name)
    _out(yaml_text(prof) if as_yaml else describe_profile(prof))


@profiles_app.command("validate")
def profiles_validate(path: Annotated[Path, typer.Argument(help="A profile file.")]) -> None:
    """Validate a profile file strictly: file:line on the first problem (exit 4)."""
    prof = load_profile_file(path)
    _out(f"ok: profile {prof.name}, {len(prof.checks)} checks, sha256 {prof.sha256}")


class HistoryFormat(str, Enum):
    table = "table"
    csv = "csv"
    json = "json"


@app.command()
def history(
    pair: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--pair", help="Only this pair (its history file's name, or a part of it such as a hostname).")] = None,
    since: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--since", help="Only runs from this date or time on (YYYY-MM-DD or ISO 8601).")] = None,
    fmt: Annotated[HistoryFormat, typer.Option(
        "--format", "-f", help="table (fits the terminal), csv or json.")] = HistoryFormat.table,
) -> None:
    """The recorded runs as a log, one row per run: time, command, -D and repetitions, each path's lowest rate,
    the concurrent total, the NCCL bus bandwidth, the verdict and the bundle."""
    from linkcheck.app.history import history_rows, history_text  # the command's own code

    if _QUIET:  # no body: the count and the last run's verdict on stderr
        rows = history_rows(pair, since)
        last = f", the last {rows[-1]['verdict'].upper()} at {rows[-1]['time']}" if rows else ""
        _say(f"history: {len(rows)} runs{last}")
        return
    _out(history_text(pair, since, fmt.value))

# What the shell sets when it asks linkcheck for completions (click's convention: _<PROG>_COMPLETE).


COMPLETE_VAR = "_LINKCHECK_COMPLETE"


@baseline_app.command("save")
def baseline_save(
    name: Annotated[str, typer.Argument(help="The baseline's name (A-Z a-z 0-9 _ . -).")],
    bundle: Annotated[Optional[Path], typer.Argument(  # noqa: UP045
        help="A saved bundle (default: the newest linkcheck-* folder here).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Save a failing or inconclusive run too; replace a "
                                        "baseline of the same name.")] = False,
    playbook: PlaybookOpt = None, config: ConfigOpt = None,
) -> None:
    """Record a passing run as the pair's known-good state, under $XDG_DATA_HOME/linkcheck/baselines/."""
    path, verdict = save_baseline(name, bundle, force=force, playbooks=playbook, config=_offline_config(config))
    _out(f"baseline {name} saved to {path} (run verdict: {verdict})")


@baseline_app.command("list")
def baseline_list() -> None:
    """Every saved baseline: name, pair, when, the run's verdict, the bundle it came from."""
    _out(list_text())


@baseline_app.command("show")
def baseline_show(name: Annotated[str, typer.Argument(help="A saved baseline's name, or a baseline file.")]) -> None:
    """One baseline in full (its JSON): identity, configuration, GID indices, performance with its parameters."""
    _out(show_text(name))


@baseline_app.command("delete")
def baseline_delete(name: Annotated[str, typer.Argument(help="A saved baseline's name.")]) -> None:
    """Remove a saved baseline."""
    _out(f"deleted {delete(name)}")


def _click_usage(exc: BaseException) -> int | None:
    """Exit code for click's own usage errors (typer may vendor click, so match by shape, not class)."""
    if type(exc).__name__ == "NoArgsIsHelpError":
        return 0  # bare `linkcheck` printed the help
    message = getattr(exc, "format_message", None)
    if callable(message) and hasattr(exc, "exit_code"):
        ctx = getattr(exc, "ctx", None)
        command = getattr(ctx, "command_path", None) or "linkcheck"
        _say(f"linkcheck: {message()} (see `{command} --help`)")
        return int(ExitCode.BAD_INPUT)  # click would exit 2, which means "failures" here
    return None


def _quiet_libraries(debug: bool) -> None:
    """paramiko logs tracebacks from its transport thread; our one-line errors already say what failed.

    Only the commands that contact nodes log (offline ones never load logging)."""
    logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING, format="%(name)s: %(message)s")
    if not debug:
        logging.getLogger("paramiko").setLevel(logging.CRITICAL + 1)


def _require_stdout() -> None:
    """Started with stdout closed (`>&-`): nothing could be reported, so say so before any work."""
    if sys.stdout is None:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - takes fd 1, so no later file lands there
        raise OutputError("standard output is closed; nothing can be reported",
                          fix="redirect it to a file or /dev/null")


def _said_if_interrupted(code: int) -> int:
    """typer turns Ctrl-C into a silent 130; the documented "interrupted" line goes with it."""
    if code == ExitCode.INTERRUPTED and not _INTERRUPTION_SAID:
        _say("linkcheck: interrupted")
    return code


_GLOBAL_FLAGS = ("--debug", "--quiet", "-q")


def _hoisted(args: list[str]) -> list[str]:
    """The global flags are accepted after the command too (`linkcheck diagnose X --debug`): moved to the front,
    where click reads them. Nothing after a `--` is touched."""
    end = args.index("--") if "--" in args else len(args)
    flags = [a for a in args[:end] if a in _GLOBAL_FLAGS]
    return [*dict.fromkeys(flags), *(a for a in args[:end] if a not in _GLOBAL_FLAGS), *args[end:]]


def main() -> None:
    """Console-script entry: one line per error, documented exit codes, a traceback only with --debug."""
    args = _hoisted(sys.argv[1:])
    debug = "--debug" in args
    if debug:
        _DEBUG.append(True)
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)  # from here Ctrl-C unwinds and cleans up
        _require_stdout()
        code = app(args=args, prog_name="linkcheck", complete_var=COMPLETE_VAR, standalone_mode=False)
        sys.exit(_said_if_interrupted(code if isinstance(code, int) else 0))
    except typer.Exit as exc:
        sys.exit(_said_if_interrupted(exc.exit_code))
    except (typer.Abort, KeyboardInterrupt):
        _say("linkcheck: interrupted")
        sys.exit(130)
    except LinkcheckError as exc:
        if debug:
            raise
        for line in getattr(exc, "lines", None) or [str(exc)]:
            _say(f"linkcheck: {line}")
        sys.exit(int(exc.exit_code))
    except Exception as exc:
        usage = _click_usage(exc)
        if usage is not None:
            sys.exit(usage)
        if debug:
            raise
        _say(f"linkcheck: internal error: {type(exc).__name__}: {exc} (rerun with --debug)")
        sys.exit(int(ExitCode.INTERNAL))


def run() -> None:
    """The `linkcheck` program: `main`, with stdout and stderr flushed before it exits with main's status.

    A reader that stopped early (`| head`) takes nothing more: what is still buffered goes to /dev/null,
    so that neither this flush nor the interpreter's own one at exit turns the status into a failure."""
    try:
        main()
        code: object = 0
    except SystemExit as exc:
        code = exc.code
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # done: a late Ctrl-C must not kill the teardown (exit -2)
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)  # what sys.exit("message") does
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except ValueError:  # closed: nothing is buffered any more
            continue
        except OSError:
            with contextlib.suppress(OSError, ValueError):
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, stream.fileno())
                os.close(devnull)
    sys.exit(code or 0)


if __name__ == "__main__":
    run()

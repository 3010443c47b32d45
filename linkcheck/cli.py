"""The linkcheck command line: parse options, call one library function, render, exit with the verdict."""

from __future__ import annotations

import contextlib
import os
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from linkcheck.errors import ExitCode, LinkcheckError, UsageError

app = typer.Typer(
    help="Validate the direct 200 Gb/s RoCE link between two DGX Spark-class (GB10) nodes.\n\n"
    "Exit codes: 0 pass, 1 warnings, 2 failures, 3 inconclusive (could not measure), "
    "4 bad input (unknown option, malformed bundle, playbook, config or tool output), 70 internal error.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
playbooks_app = typer.Typer(help="List, show and validate playbooks (rules as data).", no_args_is_help=True)
app.add_typer(playbooks_app, name="playbooks")
bench_app = typer.Typer(help="Traffic tests (inspection first, then the test; bundle saved and diagnosed).",
                        no_args_is_help=True)
app.add_typer(bench_app, name="bench")


class Format(str, Enum):
    console = "console"
    json = "json"


PlaybookOpt = Annotated[
    Optional[list[Path]],  # noqa: UP045 - typer needs Optional at runtime on Python 3.10
    typer.Option("--playbook", "-p", help="Extra playbook file or folder (repeatable)."),
]


@app.callback()
def _root(debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks for errors.")] = False) -> None:
    """Global options."""


@app.command()
def diagnose(
    bundle: Annotated[Path, typer.Argument(help="A bundle folder written by `linkcheck collect` or a fixture.")],
    fmt: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.console,
    playbook: PlaybookOpt = None,
    show_all: Annotated[bool, typer.Option("--all", help="Also show passed findings.")] = False,
    config: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        "--config", "-c", help="linkcheck.yaml whose playbooks, thresholds and recorded link apply, as in "
        "`check` (default ./linkcheck.yaml when present).")] = None,
) -> None:
    """Diagnose a saved bundle offline: both nodes side by side, findings with evidence and fix."""
    from linkcheck.config import find_config
    from linkcheck.pipeline import diagnose_bundle

    outcome = diagnose_bundle(bundle, playbook, find_config(config))
    _emit(outcome, fmt, show_all)
    raise typer.Exit(int(outcome.diagnosis.exit_code))


def _emit(outcome: object, fmt: Format, show_all: bool) -> None:
    from linkcheck.pipeline import Outcome
    from linkcheck.report.output import print_outcome

    assert isinstance(outcome, Outcome)
    print_outcome(outcome, as_json=fmt is Format.json, show_all=show_all)


NodeOpt = Annotated[
    Optional[list[str]],  # noqa: UP045
    typer.Option("--node", "-n", help="a=USER@HOST[:PORT] or b=...; overrides linkcheck.yaml (repeatable)."),
]
ConfigOpt = Annotated[Optional[Path], typer.Option("--config", "-c", help="Config file (default ./linkcheck.yaml).")]  # noqa: UP045
AcceptOpt = Annotated[bool, typer.Option("--accept-new-host-keys",
                                         help="Trust and record unknown host keys (never a changed one).")]
SaveOpt = Annotated[Optional[Path], typer.Option("--save", help="Bundle folder (default linkcheck-<timestamp>).")]  # noqa: UP045
AnonOpt = Annotated[bool, typer.Option("--anonymize", help="Replace hostnames, IPs, MACs, GUIDs and serials.")]


def _live_config(config: Path | None, node: list[str] | None, accept: bool) -> object:
    from dataclasses import replace

    from linkcheck.config import resolve_config

    resolved = resolve_config(config, node or [])
    accept = accept or resolved.ssh.accept_new_host_keys
    return replace(resolved, ssh=replace(resolved.ssh, accept_new_host_keys=accept))


def _node_errors(outcome: object) -> None:
    from linkcheck.pipeline import Outcome
    from linkcheck.report.problems import node_problem_lines

    assert isinstance(outcome, Outcome)
    for line in node_problem_lines(outcome):
        typer.echo(f"linkcheck: {line}", err=True)


def _run_check(config: Path | None, node: list[str] | None, save: Path | None, anonymize: bool, accept: bool,
               fmt: Format, show_all: bool, traffic: object | None) -> None:
    from linkcheck.config import Config
    from linkcheck.live import TrafficRequest, run_live

    cfg = _live_config(config, node, accept)
    assert isinstance(cfg, Config) and (traffic is None or isinstance(traffic, TrafficRequest))
    progress = None
    if fmt is Format.console and traffic is not None:  # the live display only serves the traffic tests
        from rich.console import Console

        from linkcheck.report.progress import ConsoleProgress

        progress = ConsoleProgress(Console(stderr=True))
    result = run_live(cfg, save, anonymize=anonymize, diagnose=True, traffic=traffic, progress=progress)
    assert result.outcome is not None
    _node_errors(result.outcome)
    _emit(result.outcome, fmt, show_all)
    typer.echo(f"bundle saved to {result.saved}", err=True)
    raise typer.Exit(130 if result.interrupted else int(result.outcome.diagnosis.exit_code))


DEFAULT_DURATION_S = 10  # = RdmaOptions.duration_s (kept literal here: the CLI must not import bench/ to start)
FmtOpt = Annotated[Format, typer.Option("--format", "-f", help="Output format.")]
AllOpt = Annotated[bool, typer.Option("--all", help="Also show passed findings.")]
DurationOpt = Annotated[int, typer.Option("--duration", help="Seconds per ib_write_bw run (-D); perftest measures the "
                                         "middle half (10 s: a 6 s window, as the published GB10 numbers).")]
SizeOpt = Annotated[int, typer.Option("--size", help="ib_write_bw message size in bytes (-s).")]
QpsOpt = Annotated[int, typer.Option("--qps", help="ib_write_bw queue pairs (-q).")]
PortOpt = Annotated[Optional[int], typer.Option("--port-base", help="First TCP port for perftest servers.")]  # noqa: UP045
NcclMaxOpt = Annotated[int, typer.Option("--nccl-max-bytes", help="Largest all_gather size (capped by free memory).")]
NcclBinOpt = Annotated[Optional[str], typer.Option("--nccl-binary", help="Path of all_gather_perf on the nodes.")]  # noqa: UP045


def _traffic(rdma: bool, nccl: bool, duration: int, size: int, qps: int, port_base: int | None,
             nccl_max_bytes: int, nccl_binary: str | None) -> object:
    from linkcheck.bench.nccl import NcclOptions
    from linkcheck.bench.plan import RdmaOptions
    from linkcheck.live import TrafficRequest

    return TrafficRequest(
        rdma=RdmaOptions(duration_s=duration, size_bytes=size, qps=qps, port_base=port_base) if rdma else None,
        nccl=NcclOptions(max_bytes=nccl_max_bytes, binary=nccl_binary) if nccl else None)


@app.command()
def check(
    node: NodeOpt = None, config: ConfigOpt = None, save: SaveOpt = None, anonymize: AnonOpt = False,
    accept_new_host_keys: AcceptOpt = False, fmt: FmtOpt = Format.console, show_all: AllOpt = False,
    bench: Annotated[bool, typer.Option("--bench", help="Also run ib_write_bw and all_gather_perf.")] = False,
    duration: DurationOpt = DEFAULT_DURATION_S, size: SizeOpt = 1048576, qps: QpsOpt = 1, port_base: PortOpt = None,
    nccl_max_bytes: NcclMaxOpt = 1 << 30, nccl_binary: NcclBinOpt = None,
) -> None:
    """Inspect both nodes over SSH (one round trip each, in parallel), save the bundle, diagnose it."""
    traffic = _traffic(True, True, duration, size, qps, port_base, nccl_max_bytes, nccl_binary) if bench else None
    _run_check(config, node, save, anonymize, accept_new_host_keys, fmt, show_all, traffic)


@bench_app.command("rdma")
def bench_rdma(
    node: NodeOpt = None, config: ConfigOpt = None, save: SaveOpt = None, anonymize: AnonOpt = False,
    accept_new_host_keys: AcceptOpt = False, fmt: FmtOpt = Format.console, show_all: AllOpt = False,
    duration: DurationOpt = DEFAULT_DURATION_S, size: SizeOpt = 1048576, qps: QpsOpt = 1, port_base: PortOpt = None,
) -> None:
    """ib_write_bw on each path alone, then both at once, both directions; with counters before and after."""
    traffic = _traffic(True, False, duration, size, qps, port_base, 0, None)
    _run_check(config, node, save, anonymize, accept_new_host_keys, fmt, show_all, traffic)


@bench_app.command("nccl")
def bench_nccl(
    node: NodeOpt = None, config: ConfigOpt = None, save: SaveOpt = None, anonymize: AnonOpt = False,
    accept_new_host_keys: AcceptOpt = False, fmt: FmtOpt = Format.console, show_all: AllOpt = False,
    nccl_max_bytes: NcclMaxOpt = 1 << 30, nccl_binary: NcclBinOpt = None,
) -> None:
    """nccl-tests all_gather_perf across both nodes with mpirun; transport proven from the NCCL log."""
    traffic = _traffic(False, True, DEFAULT_DURATION_S, 1048576, 1, None, nccl_max_bytes, nccl_binary)
    _run_check(config, node, save, anonymize, accept_new_host_keys, fmt, show_all, traffic)


@app.command()
def collect(
    node: NodeOpt = None, config: ConfigOpt = None, save: SaveOpt = None, anonymize: AnonOpt = False,
    accept_new_host_keys: AcceptOpt = False,
) -> None:
    """Inspect both nodes and save the bundle without diagnosing (exit 3 if a node could not be read)."""
    from linkcheck.collect.bundle import load_bundle
    from linkcheck.config import Config
    from linkcheck.live import run_live

    cfg = _live_config(config, node, accept_new_host_keys)
    assert isinstance(cfg, Config)
    result = run_live(cfg, save, anonymize=anonymize, diagnose=False)
    errors = load_bundle(result.saved).collection_errors
    for error in errors.values():
        typer.echo(f"linkcheck: {error}", err=True)
    typer.echo(f"bundle saved to {result.saved}", err=True)
    raise typer.Exit(int(ExitCode.INCONCLUSIVE) if errors else 0)


@app.command()
def anonymize(
    bundle: Annotated[Path, typer.Argument(help="A saved bundle folder.")],
    out: Annotated[Path, typer.Argument(help="Where to write the anonymised copy (absent or empty).")],
) -> None:
    """Write an anonymised copy of a saved bundle: hostnames, users, IPs, MACs, GUIDs and serials replaced."""
    from linkcheck.collect.anonymize import anonymize_saved

    anonymize_saved(bundle, out)
    typer.echo(f"anonymised bundle saved to {out}", err=True)


@app.command()
def init(
    node: NodeOpt = None, config: ConfigOpt = None,
    output: Annotated[Path, typer.Option("--output", "-o", help="Where to write.")] = Path("linkcheck.yaml"),
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
    accept_new_host_keys: AcceptOpt = False,
) -> None:
    """Connect to both nodes, discover the cabled cage and twin pairing, write a commented linkcheck.yaml."""
    from linkcheck.config import Config
    from linkcheck.init_config import write_initial_config

    cfg = _live_config(config, node, accept_new_host_keys)
    assert isinstance(cfg, Config)
    link = write_initial_config(cfg, output, force=force)
    typer.echo(f"wrote {output}: cage {','.join(link.a.cabled_cages) or 'none'}, "
               f"{len(link.paths)} path(s): " + "; ".join(p.key for p in link.paths))


def _parse_help() -> str:
    from linkcheck.parsers import PARSERS

    kinds = "\n".join(f"  {k:<18} {d}" for k, (_, d) in PARSERS.items())
    return f"Parse one raw tool output and print the normalised record.\n\nKINDS:\n\n{kinds}"


@app.command(help=_parse_help())
def parse(
    kind: Annotated[str, typer.Argument(help="What produced the file (see KINDS).")],
    file: Annotated[Path, typer.Argument(help="The raw output; '-' reads standard input.")],
    fmt: Annotated[Format, typer.Option("--format", "-f")] = Format.console,
) -> None:
    from linkcheck.parse_file import parse_file, record_to_json, record_to_text

    record = parse_file(kind, file)
    typer.echo(record_to_json(record) if fmt is Format.json else record_to_text(record))


@playbooks_app.command("list")
def playbooks_list(playbook: PlaybookOpt = None) -> None:
    """List every rule: id, severity, scope, title, source file."""
    from linkcheck.diagnose.playbook import load_playbooks

    for rule in load_playbooks(playbook):
        typer.echo(f"{rule.id:<24} {rule.severity.value:<8} {rule.scope:<9} {rule.title}  [{rule.source}]")


@playbooks_app.command("show")
def playbooks_show(rule_id: Annotated[str, typer.Argument(metavar="ID")], playbook: PlaybookOpt = None) -> None:
    """Show one rule in full: condition or check, thresholds, message, mechanism, fix, references."""
    from linkcheck.diagnose.playbook import load_playbooks
    from linkcheck.diagnose.rule_text import describe_rule

    rules = {r.id: r for r in load_playbooks(playbook)}
    if rule_id not in rules:
        raise UsageError(f"no rule {rule_id!r}; `linkcheck playbooks list` shows the ids")
    typer.echo(describe_rule(rules[rule_id]))


@playbooks_app.command("validate")
def playbooks_validate(
    paths: Annotated[Optional[list[Path]], typer.Argument(help="Playbook files or folders.")] = None,  # noqa: UP045
) -> None:
    """Validate playbook files strictly (file:line on the first problem); the built-ins when none given."""
    from linkcheck.diagnose.playbook import load_playbooks

    rules = load_playbooks(paths)
    typer.echo(f"ok: {len(rules)} rules")


def _click_usage(exc: BaseException) -> int | None:
    """Exit code for click's own usage errors (typer may vendor click, so match by shape, not class)."""
    if type(exc).__name__ == "NoArgsIsHelpError":
        return 0  # bare `linkcheck` printed the help
    show = getattr(exc, "show", None)
    if callable(show) and hasattr(exc, "exit_code"):
        show()
        return int(ExitCode.BAD_INPUT)  # click would exit 2, which means "failures" here
    return None


def _quiet_libraries(debug: bool) -> None:
    """paramiko logs tracebacks from its transport thread; our one-line errors already say what failed."""
    import logging

    logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING, format="%(name)s: %(message)s")
    if not debug:
        logging.getLogger("paramiko").setLevel(logging.CRITICAL + 1)


def main() -> None:
    """Console-script entry: one line per error, documented exit codes, a traceback only with --debug."""
    debug = "--debug" in sys.argv[1:]
    _quiet_libraries(debug)
    try:
        code = app(standalone_mode=False)
        sys.exit(code if isinstance(code, int) else 0)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        typer.echo("linkcheck: interrupted", err=True)
        sys.exit(130)
    except LinkcheckError as exc:
        if debug:
            raise
        typer.echo(f"linkcheck: {exc}", err=True)
        sys.exit(int(exc.exit_code))
    except Exception as exc:
        usage = _click_usage(exc)
        if usage is not None:
            sys.exit(usage)
        if debug:
            raise
        typer.echo(f"linkcheck: internal error: {type(exc).__name__}: {exc} (rerun with --debug)", err=True)
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

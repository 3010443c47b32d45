"""The linkcheck program: the command table, and `main`/`run`, which turn what a command raises into one line on
stderr and a documented exit code.

Each command parses its options, makes one library call through `app/`, renders and exits with the verdict; the
commands live by what they touch: offline.py (bundles on disk), live.py (a pair), cluster.py (three or more nodes),
fix.py (repairs), manage.py (playbooks, profiles, baselines, history); common.py holds what they share."""

from __future__ import annotations

# The Ctrl-C handler goes in before anything else loads, so an interrupt while the program starts ends with the
# documented line and code, not a traceback from inside an import. "-m" is argv[0] while `python -m linkcheck.cli`
# imports this package.
import os
import signal
import sys
from types import FrameType


def _interrupted_while_starting(signum: int, frame: FrameType | None) -> None:
    """Ctrl-C before `main` runs (while the libraries import): the documented line and code, no traceback (the
    interpreter prints none for SystemExit, wherever in an import it is raised)."""
    os.write(2, b"linkcheck: interrupted\n")
    raise SystemExit(130)


if os.path.basename(sys.argv[0]) in ("linkcheck", "-m"):
    signal.signal(signal.SIGINT, _interrupted_while_starting)

import contextlib
from collections.abc import Callable
from typing import Annotated

import typer

from linkcheck import __version__
from linkcheck.cli import fix, live, manage, offline, service, topology
from linkcheck.cli.common import FLAGS, say
from linkcheck.errors import ExitCode, LinkcheckError, OutputError

app = typer.Typer(
    help="Validate the 200 Gb/s RoCE links of two to eight DGX Spark-class (GB10) nodes: a pair on one cable, a "
    "ring, or a switch, every cable judged as a pair's.\n\n"
    "Exit codes: 0 pass, 1 warnings, 2 failures, 3 inconclusive (could not measure), "
    "4 bad input (unknown option, malformed bundle, playbook, config or tool output), 70 internal error, "
    "74 output could not be written, 130 interrupted.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=True,
)
for command in (offline.diagnose, offline.report, live.check, fix.fix, live.accept, offline.advise, live.collect,
                offline.anonymize, offline.verify, live.init, topology.topology):
    app.command()(command)
app.command(help=offline.parse_help())(offline.parse)
app.command()(manage.history)


def _group(name: str, help_text: str, commands: dict[str, Callable[..., None]]) -> None:
    """A command with subcommands (`linkcheck bench rdma`); bare, it prints its help."""
    group = typer.Typer(help=help_text, no_args_is_help=True)
    for sub, function in commands.items():
        group.command(sub)(function)
    app.add_typer(group, name=name)


_group("playbooks", "List, show and validate playbooks (rules as data).",
       {"list": manage.playbooks_list, "show": manage.playbooks_show, "validate": manage.playbooks_validate})
_group("bench", "Traffic tests (inspection first, then the test; bundle saved and diagnosed).",
       {"rdma": live.bench_rdma, "nccl": live.bench_nccl, "latency": live.bench_latency})
_group("baseline", "Save, list, show and delete the pair's known-good states (baselines).",
       {"save": manage.baseline_save, "list": manage.baseline_list, "show": manage.baseline_show,
        "delete": manage.baseline_delete})
_group("service", "The systemd units that check the link after boot and every 5 minutes, and their run.",
       {"install": service.install_units, "run": service.run})
_group("profiles", "List, show and validate acceptance profiles (what `accept` judges by).",
       {"list": manage.profiles_list, "show": manage.profiles_show, "validate": manage.profiles_validate})

# What the shell sets when it asks linkcheck for completions (click's convention: _<PROG>_COMPLETE).
COMPLETE_VAR = "_LINKCHECK_COMPLETE"


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
        FLAGS.quiet = True


def _click_usage(exc: BaseException) -> int | None:
    """Exit code for click's own usage errors (typer may vendor click, so match by shape, not class)."""
    if type(exc).__name__ == "NoArgsIsHelpError":
        return 0  # bare `linkcheck` printed the help
    message = getattr(exc, "format_message", None)
    if callable(message) and hasattr(exc, "exit_code"):
        ctx = getattr(exc, "ctx", None)
        command = getattr(ctx, "command_path", None) or "linkcheck"
        say(f"linkcheck: {message()} (see `{command} --help`)")
        return int(ExitCode.BAD_INPUT)  # click would exit 2, which means "failures" here
    return None


def _require_stdout() -> None:
    """Started with stdout closed (`>&-`): nothing could be reported, so say so before any work."""
    if sys.stdout is None:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - takes fd 1, so no later file lands there
        raise OutputError("standard output is closed; nothing can be reported",
                          fix="redirect it to a file or /dev/null")


def _said_if_interrupted(code: int) -> int:
    """typer turns Ctrl-C into a silent 130; the documented "interrupted" line goes with it."""
    if code == ExitCode.INTERRUPTED and not FLAGS.interruption_said:
        say("linkcheck: interrupted")
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
        FLAGS.debug = True
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)  # from here Ctrl-C unwinds and cleans up
        _require_stdout()
        code = app(args=args, prog_name="linkcheck", complete_var=COMPLETE_VAR, standalone_mode=False)
        sys.exit(_said_if_interrupted(code if isinstance(code, int) else 0))
    except typer.Exit as exc:
        sys.exit(_said_if_interrupted(exc.exit_code))
    except (typer.Abort, KeyboardInterrupt):
        say("linkcheck: interrupted")
        sys.exit(130)
    except LinkcheckError as exc:
        if debug:
            raise
        for line in getattr(exc, "lines", None) or [str(exc)]:
            say(f"linkcheck: {line}")
        sys.exit(int(exc.exit_code))
    except Exception as exc:
        usage = _click_usage(exc)
        if usage is not None:
            sys.exit(usage)
        if debug:
            raise
        say(f"linkcheck: internal error: {type(exc).__name__}: {exc} (rerun with --debug)")
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

"""Fixtures of every test: a private XDG_DATA_HOME, SIGINT handling restored after each test, and `cli`,
linkcheck run in process (the live end-to-end tests' own fixtures are in tests/live/conftest.py)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import xdist_groups


def pytest_configure(config: pytest.Config) -> None:
    xdist_groups.configure(config)


@pytest.hookimpl(trylast=True)  # after `-m` has deselected: the tests that run
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    xdist_groups.record_groups(config, items)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    rootfs = sys.modules.get("tests.lab.rootfs")  # imported only where a lab was built
    if rootfs is not None:
        rootfs.drop_sysfs_cache()  # the lab's rendered /sys trees: an xdist worker exits past atexit


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist, absent under `-p no:xdist`
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """`--dist loadgroup` that keeps each xdist_group on one worker under pytest 9 (tests/xdist_groups.py)."""
    return xdist_groups.make_scheduler(config, log)


@pytest.fixture(autouse=True)
def _sigint_handler_restored() -> Iterator[None]:
    """`linkcheck.cli.run()` ignores Ctrl-C once it is done (its process is exiting); a test that calls it in
    process must not leave pytest ignoring SIGINT, which every later subprocess would inherit."""
    import signal

    previous = signal.getsignal(signal.SIGINT)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.fixture(autouse=True)
def _private_data_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs append to a per-pair history and baselines live under XDG_DATA_HOME: every test, and every linkcheck
    it starts, uses its own, never the user's (which would also make results depend on earlier runs)."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("xdg-data")))


@dataclass(frozen=True)
class CliResult:
    """One in-process `linkcheck` run; named like subprocess.CompletedProcess, so the same checks read both."""

    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


def run_cli(*args: str, stdin: str | bytes | None = None, cwd: Path | None = None,
            env: Mapping[str, str | None] | None = None, timeout: float | None = None) -> CliResult:
    """`linkcheck ARGS` in this interpreter: typer's CliRunner holds stdin, stdout, stderr and the environment,
    and `linkcheck.cli.main` runs as the program does (argv, the one-line errors, the documented exit codes,
    global flags after the command), so a test pays no interpreter start. `env` values of None unset a variable;
    `timeout` is an upper bound the run must stay under. What the program sets once per process (the global flags,
    the loggers' levels and the root logger's handlers) is put back afterwards.

    What needs a real process stays a subprocess test: signals (Ctrl-C), pipes and a closed or full stdout,
    the `python -m linkcheck.cli` entry point, and --debug's traceback (the interpreter prints it).
    """
    import logging

    from typer.testing import CliRunner

    from linkcheck import cli
    from linkcheck.cli.common import FLAGS

    flags = {name: getattr(FLAGS, name) for name in ("quiet", "debug", "interruption_said")}
    for name in flags:
        setattr(FLAGS, name, False)
    loggers = {name: logging.getLogger(name).level for name in ("", "paramiko")}  # set by live commands
    handlers = logging.getLogger().handlers[:]  # basicConfig's would write to this run's stderr, closed after it
    runner = CliRunner()
    here = Path.cwd()
    start = time.monotonic()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with runner.isolation(input=stdin, env=env) as (out, err, _):
            saved_argv = sys.argv
            sys.argv = ["linkcheck", *args]
            try:
                cli.main()
                code: object = 0
            except SystemExit as exc:
                code = exc.code
            finally:
                sys.argv = saved_argv
                sys.stdout.flush()
                sys.stderr.flush()
            stdout, stderr = out.getvalue(), err.getvalue()
    finally:
        os.chdir(here)
        for name, level in loggers.items():
            logging.getLogger(name).setLevel(level)
        logging.getLogger().handlers[:] = handlers
        for name, value in flags.items():
            setattr(FLAGS, name, value)
    elapsed = time.monotonic() - start
    if timeout is not None:
        assert elapsed < timeout, f"`linkcheck {' '.join(args)}` took {elapsed:.1f} s (limit {timeout} s)"
    assert code is None or isinstance(code, int), code
    return CliResult(tuple(args), code or 0, stdout.decode("utf-8", "replace"), stderr.decode("utf-8", "replace"))


class InProcessCli:
    """The `cli` fixture: run_cli as a callable (`cli("diagnose", path)`)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self._monkeypatch = monkeypatch

    def __call__(self, *args: str, stdin: str | bytes | None = None, cwd: Path | None = None,
                 env: Mapping[str, str | None] | None = None, timeout: float | None = None) -> CliResult:
        return run_cli(*args, stdin=stdin, cwd=cwd, env=env, timeout=timeout)


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> InProcessCli:
    """linkcheck run in process: `cli("diagnose", path)` -> CliResult (returncode, stdout, stderr)."""
    return InProcessCli(monkeypatch)

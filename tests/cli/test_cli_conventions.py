"""CLI conventions: --version, --quiet, --debug after the command, NO_COLOR, UTC timestamps."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from linkcheck import __version__
from linkcheck.cli import _hoisted

if TYPE_CHECKING:
    from tests.conftest import CliResult, InProcessCli

ROOT = Path(__file__).resolve().parents[2]
HEALTHY = str(ROOT / "fixtures" / "healthy")
STALE = str(ROOT / "fixtures" / "gid-stale")


_NO_COLOUR_SETTINGS: dict[str, str | None] = {"NO_COLOR": None, "FORCE_COLOR": None, "TERM": None}


def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The CLI as a program (`python -m linkcheck.cli`), for what only a real process shows."""
    base = {k: v for k, v in os.environ.items() if k not in _NO_COLOUR_SETTINGS}
    return subprocess.run([sys.executable, "-m", "linkcheck.cli", *args], capture_output=True, text=True,
                          timeout=60, env={**base, **env})


def run_in_process(cli: InProcessCli, *args: str, **env: str) -> CliResult:
    """`run`'s environment (no colour settings but those given), the CLI in process."""
    return cli(*args, env={**_NO_COLOUR_SETTINGS, **env})


def test_version(cli: InProcessCli) -> None:
    proc = run_in_process(cli, "--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"linkcheck {__version__}"


@pytest.mark.parametrize("where", ["before", "after"])
def test_quiet_prints_only_the_verdict_line(cli: InProcessCli, where: str) -> None:
    args = ["--quiet", "diagnose", STALE] if where == "before" else ["diagnose", STALE, "--quiet"]
    proc = run_in_process(cli, *args)
    loud = run_in_process(cli, "diagnose", STALE)
    assert proc.returncode == loud.returncode == 2
    assert proc.stdout == "" and loud.stdout
    assert proc.stderr.strip().splitlines() == [loud.stdout.strip().splitlines()[-1]]


def test_quiet_report_and_verify(cli: InProcessCli) -> None:
    report = run_in_process(cli, "report", HEALTHY, "-f", "junit", "-q")
    assert report.returncode == 0 and report.stdout == "" and report.stderr.startswith("verdict: PASS")
    verify = run_in_process(cli, "verify", HEALTHY, "-q")
    assert verify.returncode == 0 and verify.stdout == "" and "intact" in verify.stderr


def test_debug_after_the_command_shows_the_traceback() -> None:
    """The traceback is the interpreter's, printed as the program ends: a real process."""
    plain = run("diagnose", "/nonexistent-bundle")
    after = run("diagnose", "/nonexistent-bundle", "--debug")
    assert plain.returncode == 4 and "Traceback" not in plain.stderr
    assert "Traceback" in after.stderr and "BundleError" in after.stderr


def test_hoisting_stops_at_double_dash() -> None:
    assert _hoisted(["diagnose", "X", "--debug", "-q"]) == ["--debug", "-q", "diagnose", "X"]
    assert _hoisted(["parse", "nccl_log", "--", "--debug"]) == ["parse", "nccl_log", "--", "--debug"]


def _colours(text: str) -> set[str]:
    """The SGR colour parameters in `text` (foreground, background, 256-colour and truecolour); bold is not one."""
    found = set()
    for params in re.findall(r"\x1b\[([0-9;]*)m", text):
        for p in params.split(";"):
            if p.isdigit() and (30 <= int(p) <= 38 or 40 <= int(p) <= 48 or 90 <= int(p) <= 107):
                found.add(p)
    return found


def test_no_color_is_honoured(cli: InProcessCli) -> None:
    forced = run_in_process(cli, "diagnose", STALE, FORCE_COLOR="1", TERM="xterm-256color")
    assert _colours(forced.stdout)  # the check can fail: colour is on when forced
    plain = run_in_process(cli, "diagnose", STALE, FORCE_COLOR="1", TERM="xterm-256color", NO_COLOR="1")
    assert not _colours(plain.stdout) and "GID_INDEX_STALE" in plain.stdout


def test_timestamps_are_utc_iso8601(cli: InProcessCli, tmp_path: Path) -> None:
    document = json.loads(run_in_process(cli, "report", HEALTHY, "-f", "json").stdout)
    assert dt.datetime.fromisoformat(document["created"]).utcoffset() == dt.timedelta(0)
    from linkcheck.bundle.format import Bundle, write_bundle

    write_bundle(Bundle(captures=[]), tmp_path / "b")
    created = json.loads((tmp_path / "b" / "manifest.json").read_text())["created"]
    assert dt.datetime.fromisoformat(created).utcoffset() == dt.timedelta(0)


def test_show_completion_prints_the_script_of_the_shell_it_runs_in() -> None:
    """The shell is detected from the parent process (docs/commands.md), so the test runs linkcheck under bash
    rather than depending on whatever started pytest (a job with no shell above it detects none)."""
    # Started in the background and waited for: `bash -c CMD` would exec CMD in bash's place, leaving no shell.
    proc = subprocess.run(["bash", "-c", '"$0" -m linkcheck.cli --show-completion & wait $!', sys.executable],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "_LINKCHECK_COMPLETE" in proc.stdout
    assert "complete -o default -F _linkcheck_completion linkcheck" in proc.stdout  # bash's own form


def test_the_shell_s_completion_request_is_answered(cli: InProcessCli) -> None:
    commands = run_in_process(cli, COMP_WORDS="linkcheck dia", COMP_CWORD="1", _LINKCHECK_COMPLETE="complete_bash")
    assert commands.returncode == 0 and commands.stdout.split() == ["diagnose"], commands.stderr
    options = run_in_process(cli, COMP_WORDS="linkcheck diagnose --fo", COMP_CWORD="2",
                             _LINKCHECK_COMPLETE="complete_bash")
    assert options.stdout.split() == ["--format"]

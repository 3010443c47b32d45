"""CLI conventions: --version, --quiet, --debug after the command, NO_COLOR, UTC timestamps."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from linkcheck import __version__
from linkcheck.cli import _hoisted

ROOT = Path(__file__).resolve().parents[2]
HEALTHY = str(ROOT / "fixtures" / "healthy")
STALE = str(ROOT / "fixtures" / "gid-stale")


def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "TERM")}
    return subprocess.run([sys.executable, "-m", "linkcheck.cli", *args], capture_output=True, text=True,
                          timeout=60, env={**base, **env})


def test_version() -> None:
    proc = run("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"linkcheck {__version__}"


@pytest.mark.parametrize("where", ["before", "after"])
def test_quiet_prints_only_the_verdict_line(where: str) -> None:
    args = ["--quiet", "diagnose", STALE] if where == "before" else ["diagnose", STALE, "--quiet"]
    proc = run(*args)
    loud = run("diagnose", STALE)
    assert proc.returncode == loud.returncode == 2
    assert proc.stdout == "" and loud.stdout
    assert proc.stderr.strip().splitlines() == [loud.stdout.strip().splitlines()[-1]]


def test_quiet_report_and_verify() -> None:
    report = run("report", HEALTHY, "-f", "junit", "-q")
    assert report.returncode == 0 and report.stdout == "" and report.stderr.startswith("verdict: PASS")
    verify = run("verify", HEALTHY, "-q")
    assert verify.returncode == 0 and verify.stdout == "" and "intact" in verify.stderr


def test_debug_after_the_command_shows_the_traceback() -> None:
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


def test_no_color_is_honoured() -> None:
    forced = run("diagnose", STALE, FORCE_COLOR="1", TERM="xterm-256color")
    assert _colours(forced.stdout)  # the check can fail: colour is on when forced
    plain = run("diagnose", STALE, FORCE_COLOR="1", TERM="xterm-256color", NO_COLOR="1")
    assert not _colours(plain.stdout) and "GID_INDEX_STALE" in plain.stdout


def test_timestamps_are_utc_iso8601(tmp_path: Path) -> None:
    document = json.loads(run("report", HEALTHY, "-f", "json").stdout)
    assert dt.datetime.fromisoformat(document["created"]).utcoffset() == dt.timedelta(0)
    from linkcheck.collect.bundle import Bundle, write_bundle

    write_bundle(Bundle(captures=[]), tmp_path / "b")
    created = json.loads((tmp_path / "b" / "manifest.json").read_text())["created"]
    assert dt.datetime.fromisoformat(created).utcoffset() == dt.timedelta(0)


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_show_completion_prints_the_shell_s_script(shell: str) -> None:
    proc = run("--show-completion", shell)
    assert proc.returncode == 0, proc.stderr
    assert "_LINKCHECK_COMPLETE" in proc.stdout and "linkcheck" in proc.stdout


def test_the_shell_s_completion_request_is_answered() -> None:
    commands = run(COMP_WORDS="linkcheck dia", COMP_CWORD="1", _LINKCHECK_COMPLETE="complete_bash")
    assert commands.returncode == 0 and commands.stdout.split() == ["diagnose"], commands.stderr
    options = run(COMP_WORDS="linkcheck diagnose --fo", COMP_CWORD="2", _LINKCHECK_COMPLETE="complete_bash")
    assert options.stdout.split() == ["--format"]

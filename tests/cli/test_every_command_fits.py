"""At COLUMNS=80 every command a person reads in the terminal prints no line wider than 80 characters, over every
shipped fixture: the diagnosis, the repair plan, the advice, the playbooks, the profiles, the baselines, the history,
`parse` and every command's --help. Only what cannot be broken is let through: a line holding a URL, and a command
continued with ` \\` (a shell joins its lines into the one command)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer.main

from linkcheck.cli import app
from linkcheck.diagnose.playbook import load_playbooks
from tests.conftest import InProcessCli

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = sorted(p.parent for p in (ROOT / "fixtures").glob("*/manifest.json"))
LATENCY = [f for f in FIXTURES if "latency" in f.name]
COLUMNS = {"COLUMNS": "80", "NO_COLOR": "1", "LINES": None}


def wide(text: str, width: int = 80) -> list[str]:
    """The lines wider than `width`, but a line with a URL, a line a shell continues (` \\`) and a line that is one
    word (a source's path: nowhere to break it)."""
    return [line for line in text.splitlines()
            if len(line) > width and "://" not in line and not line.rstrip().endswith("\\")
            and len(line.split()) > 1]


def _commands(cmd: object, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    yield path
    for name, sub in sorted((getattr(cmd, "commands", None) or {}).items()):
        yield from _commands(sub, (*path, name))


def _fits(cli: InProcessCli, *args: str, quiet: bool = False) -> str:
    """The command's standard output (with `quiet`, its one line on standard error), none of it too wide. Its
    other lines on standard error (a one-line error, `bundle saved to PATH`) say one thing each and stay whole."""
    result = cli(*args, env=COLUMNS, cwd=ROOT)
    assert result.returncode in (0, 1, 2, 3), (args, result.stderr)
    said = result.stderr if quiet else result.stdout
    assert not wide(said), (args, wide(said))
    return said


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda p: p.name)
def test_a_bundles_commands_fit(cli: InProcessCli, fixture: Path, tmp_path: Path) -> None:
    config = fixture / "linkcheck.yaml"
    given = ["-c", _rel(config)] if config.is_file() else []
    assert _fits(cli, "diagnose", _rel(fixture), *given).strip()
    _fits(cli, "diagnose", _rel(fixture), "--all", *given)
    assert _fits(cli, "-q", "diagnose", _rel(fixture), *given, quiet=True).strip()
    _fits(cli, "verify", _rel(fixture))
    copy = tmp_path / fixture.name  # a copy, though fix never changes a bundle it is given
    shutil.copytree(fixture, copy)
    _fits(cli, "fix", str(copy), *given)


@pytest.mark.parametrize("fixture", LATENCY, ids=lambda p: p.name)
def test_the_advice_fits(cli: InProcessCli, fixture: Path) -> None:
    assert "ADVICE" in _fits(cli, "advise", _rel(fixture), "--model-gib", "70", "--concurrency", "4")
    _fits(cli, "advise", _rel(fixture), "--model-gib", "200", "--concurrency", "32", "--moe", "--active-gib", "12")


def test_what_linkcheck_keeps_fits(cli: InProcessCli) -> None:
    listed = _fits(cli, "playbooks", "list")
    assert str(ROOT) not in listed and listed.startswith(f"{len({r.id for r in load_playbooks(kind='all')})} rules")
    for rule in load_playbooks(kind="all"):
        assert str(ROOT) not in _fits(cli, "playbooks", "show", rule.id)
    assert str(ROOT) in cli("playbooks", "list", "--paths").stdout  # asked for
    assert _fits(cli, "profiles", "list").startswith("built-in acceptance profiles")
    for name in ("dgx-spark-pair", "dgx-spark-ring3", "dgx-spark-switch"):
        _fits(cli, "profiles", "show", name)
    assert cli("baseline", "save", "ref", "fixtures/healthy", cwd=ROOT).returncode == 0
    _fits(cli, "baseline", "list")
    _fits(cli, "history")


def test_parse_fits(cli: InProcessCli) -> None:
    bench = ROOT / "fixtures" / "healthy" / "a"
    for kind, name in (("ethtool", "ethtool.enp1s0f1np1.stdout"), ("ethtool_fec", "ethtool_fec.enp1s0f1np1.stdout")):
        if (bench / name).is_file():
            _fits(cli, "parse", kind, _rel(bench / name))


@pytest.mark.parametrize("command", list(_commands(typer.main.get_command(app))), ids=" ".join)
def test_every_help_fits(cli: InProcessCli, command: tuple[str, ...]) -> None:
    assert "Usage" in _fits(cli, *command, "--help")

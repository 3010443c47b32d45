"""Fix lines that name a path the user gave, or offer an option: the path is one shell word when the line is
pasted, and the option is one the command has."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest

from tests.adversarial.adversarial_helpers import copy_healthy, one_line_error, run

HOSTILE = "my bundle $(touch pwned)"


def _tampered(tmp_path: Path, name: str = "bundle") -> Path:
    bundle = copy_healthy(tmp_path, name)
    with (bundle / "a" / "ip_link.stdout").open("ab") as handle:
        handle.write(b"tampered\n")
    return bundle


def _fix(line: str) -> str:
    return line.split("(fix: ", 1)[1]


def test_refused_bundle_fix_quotes_its_path(tmp_path: Path) -> None:
    bundle = _tampered(tmp_path, HOSTILE)
    line = one_line_error(run("diagnose", str(bundle)), 4, "does not verify")
    assert f"`linkcheck verify {shlex.quote(str(bundle))}`" in _fix(line)


@pytest.mark.parametrize("command", [("anonymize", "{bundle}", "{out}"), ("baseline", "save", "x", "{bundle}")])
def test_refused_bundle_fix_offers_no_option_the_command_lacks(tmp_path: Path, command: tuple[str, ...]) -> None:
    bundle = _tampered(tmp_path)
    args = [a.format(bundle=bundle, out=tmp_path / "out") for a in command]
    line = one_line_error(run(*args, env={**os.environ, "XDG_DATA_HOME": str(tmp_path / "data")}), 4,
                          "does not verify")
    assert "--allow-unverified" not in line


def test_fifo_without_reader_fix_quotes_its_path(tmp_path: Path) -> None:
    fifo = tmp_path / "a fifo;$(id)"
    os.mkfifo(fifo)
    line = one_line_error(run("report", str(copy_healthy(tmp_path)), "-o", str(fifo)), 74, "FIFO")
    assert f"cat {shlex.quote(str(fifo))}" in _fix(line)


def test_ssh_copy_id_fix_quotes_key_and_target() -> None:
    import paramiko

    from linkcheck.transport.ssh_errors import connect_error
    from linkcheck.transport.target import ResolvedTarget

    target = ResolvedTarget("a", "198.18.251.1", 22, "u$(id)", ("/keys/my key",))
    error = connect_error("a", target, paramiko.AuthenticationException("denied"), "~/.ssh/known_hosts")
    assert "-i '/keys/my key.pub'" in str(error.fix)
    assert "'u$(id)@198.18.251.1'" in str(error.fix)

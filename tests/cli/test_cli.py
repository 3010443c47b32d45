"""Bad input never gives a traceback: one line naming the file (and line), and a documented exit code."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.conftest import CliResult, InProcessCli

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """The CLI as a program (`python -m linkcheck.cli`), for what only a real process shows."""
    return subprocess.run([sys.executable, "-m", "linkcheck.cli", *args], capture_output=True, text=True,
                          input=stdin, timeout=60)


def _one_line_error(proc: subprocess.CompletedProcess[str] | CliResult, code: int, *needles: str) -> None:
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    for needle in needles:
        assert needle in lines[0]


def test_missing_bundle(cli: InProcessCli, tmp_path: Path) -> None:
    _one_line_error(cli("diagnose", str(tmp_path / "nope")), 4, "nope", "no such bundle")


def test_malformed_manifest_names_line(cli: InProcessCli, tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text('{"format": "linkcheck-bundle",\n"captures": [,]}\n')
    _one_line_error(cli("diagnose", str(tmp_path)), 4, "manifest.json:2", "malformed JSON")


def test_malformed_user_playbook(cli: InProcessCli, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("playbook: x\nrules:\n  - id: X\n    title: t\n    severity: error\n    colour: red\n")
    _one_line_error(cli("playbooks", "validate", str(bad)), 4, "bad.yaml:6", "unknown key 'colour'")
    _one_line_error(cli("diagnose", str(ROOT / "fixtures" / "healthy"), "-p", str(bad)), 4, "bad.yaml:6")


def test_debug_shows_traceback(tmp_path: Path) -> None:
    """The traceback is the interpreter's, printed as the program ends: a real process."""
    proc = run("--debug", "diagnose", str(tmp_path / "nope"))
    assert proc.returncode != 0 and "Traceback" in proc.stderr


@pytest.mark.parametrize("content", [b"", b"\x00\x01\x02binary", b"hello world\nthis is not perftest\n"])
def test_parse_garbage(cli: InProcessCli, tmp_path: Path, content: bytes) -> None:
    f = tmp_path / "out.txt"
    f.write_bytes(content)
    _one_line_error(cli("parse", "ib_write_bw", str(f)), 4, str(f))


def test_parse_unknown_kind_and_missing_file(cli: InProcessCli, tmp_path: Path) -> None:
    _one_line_error(cli("parse", "nonsense", str(tmp_path)), 4, "unknown kind")
    _one_line_error(cli("parse", "ibstat", str(tmp_path / "missing.txt")), 4, "missing.txt")


def test_parse_help_lists_every_kind(cli: InProcessCli) -> None:
    from linkcheck.parsers import PARSERS

    out = cli("parse", "--help").stdout
    for kind in PARSERS:
        assert kind in out


def test_parse_reads_stdin_and_emits_json(cli: InProcessCli) -> None:
    text = ("mlx5_0 port 1 ==> ens1f0np0 (Up)\n"
            "mlx5_1 port 1 ==> ens1f1np1 (Down)\n")
    proc = cli("parse", "ibdev2netdev", "-", "-f", "json", stdin=text)
    assert proc.returncode == 0, proc.stderr
    record = json.loads(proc.stdout)["record"]
    assert [e["netdev"] for e in record] == ["ens1f0np0", "ens1f1np1"]
    assert [e["link_state"] for e in record] == ["Up", "Down"]


def test_parse_shows_a_records_fields_not_its_private_lookup(cli: InProcessCli) -> None:
    """A sysfs dump keeps a `_index` by path for its lookups; `parse` shows each entry once, as the text gave it."""
    text = "/sys/class/net/enp1s0f0np0/mtu\t9000\n/sys/class/net/enp1s0f0np0/operstate\tup\n"
    proc = cli("parse", "sysfs", "-", "-f", "json", stdin=text)
    assert proc.returncode == 0, proc.stderr
    record = json.loads(proc.stdout)["record"]
    assert list(record) == ["entries"]
    assert [e["value"] for e in record["entries"]] == ["9000", "up"]
    text_out = cli("parse", "sysfs", "-", stdin=text).stdout
    assert "_index" not in text_out and text_out.count("9000") == 1


def test_playbooks_show_unknown_id(cli: InProcessCli) -> None:
    _one_line_error(cli("playbooks", "show", "NOPE"), 4, "no rule 'NOPE'")


def test_playbooks_show_a_rule_in_both_layouts_and_by_its_former_id(cli: InProcessCli,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    """A rule that judges a pair and a cluster under one id shows both; a former id shows the rule that replaced it,
    saying so."""
    both = cli("playbooks", "show", "DRIFT_IDENTITY")
    assert both.returncode == 0, both.stderr
    assert "scope: pair" in both.stdout and "scope: cluster" in both.stdout
    with caplog.at_level(logging.WARNING):
        former = cli("playbooks", "show", "CLUSTER_DRIFT_CABLING")
    assert former.returncode == 0 and former.stdout == both.stdout
    assert "CLUSTER_DRIFT_CABLING is now DRIFT_IDENTITY" in caplog.text


@pytest.mark.parametrize(("raised", "status", "stderr"), [
    (SystemExit(None), 0, ""),
    (SystemExit(3), 3, ""),
    (SystemExit("linkcheck: stopped"), 1, "linkcheck: stopped\n"),
])
def test_program_exit_keeps_main_status(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                        raised: SystemExit, status: int, stderr: str) -> None:
    from linkcheck import cli

    def main() -> None:
        print("report")
        raise raised

    monkeypatch.setattr(cli, "main", main)
    with pytest.raises(SystemExit) as left:
        cli.run()
    assert left.value.code == status
    out = capsys.readouterr()
    assert (out.out, out.err) == ("report\n", stderr)


def test_program_flushes_what_is_buffered_before_leaving() -> None:
    """What `main` left in the buffer of a piped stdout is printed, and the status is main's."""
    code = ("import sys\nfrom linkcheck import cli\n"
            "cli.main = lambda: sys.stdout.write('verdict: PASS')  # no newline: stays in the buffer\n"
            "cli.run()\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert (proc.returncode, proc.stdout) == (0, "verdict: PASS"), proc.stderr


@pytest.mark.parametrize("fmt", ["console", "json"])
def test_a_reader_that_stops_early_keeps_the_verdicts_exit_code(fmt: str) -> None:
    """`linkcheck ... | head`: the output ends where the reader stopped; the exit code is still the verdict."""
    bundle = ROOT / "fixtures" / "hotplug-degraded"
    proc = subprocess.Popen([sys.executable, "-m", "linkcheck.cli", "diagnose", str(bundle), "-f", fmt],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    proc.stdout.close()  # the reader is gone before the report is written
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, err  # failures, as without the pipe
    assert b"Traceback" not in err and b"internal error" not in err


def test_what_is_buffered_for_a_reader_that_stopped_goes_nowhere() -> None:
    """The reader of stdout is gone before `run` flushes: the status stays main's, and stderr says nothing
    (the interpreter's own flush at exit would otherwise fail and exit 120)."""
    code = ("import sys\nfrom linkcheck import cli\n"
            "def main():\n    sys.stdout.write('verdict: FAIL')\n    sys.exit(2)\n"
            "cli.main = main\ncli.run()\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None
    proc.stdout.close()
    _, err = proc.communicate(timeout=60)
    assert (proc.returncode, err) == (2, b"")

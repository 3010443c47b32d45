"""Hostile strings from nodes, bundles and playbooks are shown as text: no markup, no terminal controls."""

from __future__ import annotations

from pathlib import Path

import pytest

from linkcheck.report.console import as_text
from linkcheck.report.safe_text import shown
from tests.adversarial.adversarial_helpers import (
    assert_no_raw_controls,
    copy_healthy,
    one_line_error,
    rewrite_capture,
    run,
)

HOSTILE = [
    "\x1b]2;owned\x07",  # OSC 2: window title
    "\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\",  # OSC 8 hyperlink
    "\x1b[2J\x1b[H",  # CSI: clear screen
    "\x9b31m",  # C1 CSI
    "\x9d0;title\x9c",  # C1 OSC
    "fake\rreal",
    "abc\x08\x08\x08xyz",
    "[blink]x[/blink]",
    "[link=http://evil.example]x[/link]",
    "[/]",
    "[bold red]unbalanced",
    "x[/]y[/]",
    "\u202eevil",  # bidi override
    ":thumbs_up: \x00nul",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_shown_leaves_no_control(text: str) -> None:
    out = shown(text)
    assert_no_raw_controls(out)
    assert "\n" not in out and "\u202e" not in out and "\x00" not in out


@pytest.mark.parametrize("text", HOSTILE)
def test_as_text_is_never_markup(text: str) -> None:
    from rich.console import Console

    console = Console(record=True, width=200, color_system=None)
    console.print(as_text(text))
    out = console.export_text()
    assert_no_raw_controls(out)
    if text.startswith("["):
        assert text in out  # brackets printed as they are


def test_multiline_keeps_newlines_only_when_asked() -> None:
    assert shown("a\nb", multiline=True) == "a\nb"
    assert shown("a\nb") == "a\\nb"
    assert shown("a\tb") == "a\tb"


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_hostname_in_report(tmp_path: Path, text: str) -> None:
    bundle = copy_healthy(tmp_path)
    rewrite_capture(bundle, "a", "hostname", (text + "\n").encode("utf-8"))
    proc = run("diagnose", str(bundle), "--all")
    assert proc.returncode in (0, 1, 2, 3), proc.stderr
    assert "Traceback" not in proc.stderr
    assert_no_raw_controls(proc.stdout + proc.stderr)


@pytest.mark.parametrize("text", HOSTILE[:8])
def test_hostile_name_in_error_line(tmp_path: Path, text: str) -> None:
    one_line_error(run("diagnose", str(tmp_path / f"no{text.replace('/', '_')}")), 4, "no such bundle")


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_netdev_in_parse_output(text: str) -> None:
    line = f"mlx5_0 port 1 ==> {text} (Up)\n".encode()
    proc = run("parse", "ibdev2netdev", "-", stdin=line)
    assert proc.returncode in (0, 4) and "Traceback" not in proc.stderr
    assert_no_raw_controls(proc.stdout + proc.stderr)


@pytest.mark.parametrize("text", HOSTILE[:10])
def test_hostile_rule_text_in_playbooks_show_and_list(tmp_path: Path, text: str) -> None:
    title = text.replace("\\", "\\\\").replace('"', '\\"').replace("\x00", "")
    escaped = title.encode("unicode_escape").decode("ascii").replace('"', '\\"')
    book = tmp_path / "site.yaml"
    book.write_text(f'playbook: site\nrules:\n  - id: HOSTILE_TITLE\n    title: "{escaped}"\n    severity: warning\n'
                    "    scope: function\n    when: {fact: mtu, lt: 9000}\n    message: \"m\"\n", encoding="utf-8")
    shown_proc = run("playbooks", "show", "HOSTILE_TITLE", "-p", str(book))
    listed = run("playbooks", "list", "-p", str(book))
    for proc in (shown_proc, listed):
        assert proc.returncode == 0, proc.stderr
        assert_no_raw_controls(proc.stdout + proc.stderr)


def test_emoji_codes_from_a_node_stay_text(tmp_path: Path) -> None:
    bundle = copy_healthy(tmp_path)
    rewrite_capture(bundle, "a", "hostname", b":thumbs_up:-node\n")
    proc = run("diagnose", str(bundle))
    assert ":thumbs_up:-node" in proc.stdout, proc.stdout
    assert "\N{THUMBS UP SIGN}" not in proc.stdout

"""Printable and copy-safe reports: every line of a Markdown or HTML fix block is a command a shell runs as written
or a `#` comment; a console fix command is never wrapped by rich (one wider than the terminal continues with
` \\`, which a shell reads as the same command); the HTML page has print rules."""

from __future__ import annotations

import html
import io
import re
import shlex
import subprocess
from pathlib import Path

import pytest
from rich.console import Console

from linkcheck.app.offline import diagnose_bundle
from linkcheck.config import load_config
from linkcheck.outcome import Outcome
from linkcheck.report.console import print_report
from linkcheck.report.fix_lines import continued, shell_lines, split_step
from linkcheck.report.html import render_html
from linkcheck.report.markdown import render_markdown
from tests.fixture_bundles import PAIR_BUNDLES

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = PAIR_BUNDLES
# The programs a fix may tell a person to run (stated here, apart from the renderer's own list).
PROGRAMS = {"sudo", "linkcheck", "ip", "ethtool", "cat", "ls", "ping", "export", "unset", "rdma", "lspci", "nmcli",
            "netplan", "systemctl", "sed", "dpkg", "apt", "fwupdmgr", "grep", "ibv_devinfo", "show_gids",
            "ibdev2netdev"}


def _outcome(fixture: Path) -> Outcome:
    config = fixture / "linkcheck.yaml"
    return diagnose_bundle(fixture, None, load_config(config) if config.is_file() else None)


def _not_runnable(lines: list[str]) -> list[str]:
    """The lines that are neither a `#` comment nor a command of PROGRAMS that bash parses (`bash -n`)."""
    bad = []
    for line in lines:
        if line.startswith("# "):
            continue
        try:
            first = shlex.split(line, comments=True)[0]
        except (ValueError, IndexError):
            bad.append(line)
            continue
        syntax = subprocess.run(["bash", "-n", "-c", line], capture_output=True, text=True, timeout=30)
        if first not in PROGRAMS or syntax.returncode != 0:
            bad.append(line)
    return bad


def _markdown_blocks(text: str) -> list[list[str]]:
    return [block.splitlines() for block in re.findall(r"^(`{3,})sh\n(.*?)\n\1$", text, re.S | re.M)
            for block in [block[1]]]


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda p: p.name)
def test_every_markdown_fix_line_is_a_command_or_a_comment(fixture: Path) -> None:
    outcome = _outcome(fixture)
    text = render_markdown(outcome)
    blocks = _markdown_blocks(text)
    with_fix = sum(1 for f in outcome.diagnosis.findings if f.fix and f.status.value in ("fail", "warn"))
    assert len(blocks) + text.count("Fix: as above.") == with_fix  # each distinct fix printed once
    lines = [line for block in blocks for line in block]
    assert _not_runnable(lines) == []


@pytest.mark.parametrize("fixture", [f for f in FIXTURES if f.name in ("hotplug-degraded", "nm-profile-runtime-only",
                                                                         "gid-stale", "fec-off", "mtu-mismatch")],
                         ids=lambda p: p.name)
def test_every_html_fix_line_is_a_command_or_a_comment(fixture: Path) -> None:
    page = render_html(_outcome(fixture))
    blocks = re.findall(r'<pre class="fix">(.*?)</pre>', page, re.S)
    assert blocks
    lines = [html.unescape(re.sub(r"</?span[^>]*>", "", line)) for block in blocks for line in block.splitlines()]
    assert _not_runnable(lines) == []
    assert any(not line.startswith("#") for line in lines)  # the commands are there, not only prose


def test_a_step_is_split_into_prose_and_command() -> None:
    step = split_step("with the cable attached, reboot both nodes: on spark-a and on spark-b: sudo systemctl reboot "
                      "--no-block")
    assert step.prose == "with the cable attached, reboot both nodes: on spark-a and on spark-b:"
    assert step.commands == ("sudo systemctl reboot --no-block",)
    noted = split_step("on both nodes: ethtool --show-fec enp1s0f1np1 (RS on both ends at 200G)")
    assert (noted.prose, noted.commands, noted.note) == ("on both nodes:", ("ethtool --show-fec enp1s0f1np1",),
                                                         "RS on both ends at 200G")
    inner = split_step("reboot both nodes with the cable attached (sudo systemctl reboot --no-block), then rerun")
    assert inner.commands == ("sudo systemctl reboot --no-block",)
    placeholder = split_step("verify: ping -M do -s $((9000 - 28)) -c 3 -I enp1s0f1np1 <peer IP>")
    assert placeholder.commands == ()  # not runnable as written: it stays prose
    assert shell_lines(["then rerun: linkcheck check --bench", "leave NCCL_IB_GID_INDEX unset"]) == [
        "# then rerun:", "linkcheck check --bench", "# leave NCCL_IB_GID_INDEX unset"]
    assert shell_lines(["unset NCCL_IB_GID_INDEX  # and remove it"]) == ["unset NCCL_IB_GID_INDEX  # and remove it"]


def _words(script: str) -> str:
    """What bash makes of a command's arguments (each on a line), the command's name replaced by printf."""
    return subprocess.run(["bash", "-c", "f() { printf '%s\\n' \"$@\"; }; f " + script], capture_output=True,
                          text=True, timeout=30).stdout


@pytest.mark.parametrize("command", [
    "cat /sys/class/infiniband/rocep1s0f1/ports/1/gid_attrs/types/3 /sys/class/infiniband/rocep1s0f1/ports/1/gids/3",
    "sudo nmcli connection modify 'it'\"'\"'s a long profile' connection.autoconnect yes",
    "sudo sed -i '/^NCCL_IB_GID_INDEX=/d' /etc/nccl.conf",
    "sudo netplan get ethernets.enp1s0f1np1; ip -br addr show enp1s0f1np1; ip link show enp1s0f1np1",
    "ls /" + "a" * 150,
])
def test_a_continued_command_is_the_same_command(command: str) -> None:
    for width in range(24, 140, 9):
        lines = continued(command, width)
        assert len(lines) == 1 or all(line.endswith("\\") for line in lines[:-1])
        assert _words("\n".join(lines).lstrip()) == _words(command), (width, lines)
        if all(len(word) < width - 10 for word in command.split()):
            assert max(map(len, lines)) <= width, lines


@pytest.mark.parametrize("width", [60, 80, 120])
def test_console_fix_commands_are_never_wrapped_by_rich(width: int) -> None:
    outcome = _outcome(ROOT / "fixtures" / "nm-profile-runtime-only")
    out = io.StringIO()
    print_report(outcome, Console(file=out, width=width, color_system=None), show_all=False)
    lines = [line.strip().strip("│").strip() for line in out.getvalue().splitlines()]
    commands = [c for f in outcome.diagnosis.findings if f.status.value in ("warn", "fail")
                for step in f.fix for c in split_step(step).commands]
    assert commands
    for command in commands:
        start = next(i for i, line in enumerate(lines)
                     if len(line.split()) > 1 and command.startswith(line.removesuffix("\\").strip()))
        end = start
        while lines[end].endswith("\\"):
            end += 1
        assert _words("\n".join(lines[start:end + 1])) == _words(command), lines[start:end + 1]


def test_the_html_page_prints() -> None:
    page = render_html(_outcome(ROOT / "fixtures" / "hotplug-degraded"))
    css = page[page.index("<style>"):page.index("</style>")]
    printed = css[css.index("@media print{"):]
    assert re.search(r"pre\{[^}]*white-space:pre-wrap", printed)  # no command clipped behind a scrollbar
    assert re.search(r"\.finding[^{]*\{[^}]*break-inside:avoid", printed)  # a finding never split across pages
    assert re.search(r"details\.passed>table\{display:none\}", printed)  # passed rules: one line per playbook
    passed = re.findall(r'<details class="passed"><summary><b>([^<]+)</b>: (\d+) passed', page)
    assert {stage for stage, _ in passed} >= {"link-state", "gid-index", "throughput"}
    outcome = _outcome(ROOT / "fixtures" / "hotplug-degraded")
    assert sum(int(n) for _, n in passed) == sum(1 for f in outcome.diagnosis.findings if f.status.value == "pass")

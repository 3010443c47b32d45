"""Hostile acceptance profiles and `accept` options: each refusal is one line naming the file (and line) or the
option, exit 4, before any node is contacted; `profiles show --yaml` prints a file that reads as the same profile,
whatever its line breaks; a profile's own texts are shown as text."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from linkcheck.accept.profile import BUILTIN_DIR
from tests.adversarial.adversarial_helpers import assert_no_raw_controls, copy_healthy, one_line_error
from tests.conftest import InProcessCli

STANDARD = (BUILTIN_DIR / "dgx-spark-pair.yaml").read_text(encoding="utf-8")
UNREACHABLE = ["-n", "a=nobody@198.18.255.1", "-n", "b=nobody@198.18.255.2"]  # never contacted: refused before


def _edit(old: str, new: str) -> str:
    assert old in STANDARD, old
    return STANDARD.replace(old, new, 1)


BAD = {
    "a key that is a list": (STANDARD + "? [a, b]\n: x\n", "a key that is a list"),
    "a key that is a set": (STANDARD + "? !!set {a, b}\n", "a key that is a mapping or set"),
    "a key that is a mapping": (_edit("test:\n", "test:\n  ? {x: 1}\n  : y\n"), "a key that is a mapping"),
    "billion laughs": ("a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n",
                       "anchors and aliases"),
    "a merge key": ("base: &b {x: 1}\nprofile: {<<: *b}\n", "anchors and aliases"),
    "deep flow nesting": ("profile: " + "[" * 5000 + "]" * 5000 + "\n", "invalid YAML"),
    "deep block nesting": ("x:\n" + "".join(" " * (i + 1) + "x:\n" for i in range(100)), "nested deeper than 64"),
    "a duplicate key": (STANDARD + "profile: again\n", "duplicate key 'profile'"),
    "a huge integer": (_edit("repetitions: 3", "repetitions: " + "9" * 400), "'repetitions' must be an integer"),
    "a float repetitions": (_edit("repetitions: 3", "repetitions: 2.5"), "'repetitions' must be an integer"),
    "a NaN repetitions": (_edit("repetitions: 3", "repetitions: .nan"), "'repetitions' must be an integer"),
    "a bool repetitions": (_edit("repetitions: 3", "repetitions: true"), "'repetitions' must be an integer"),
    "a negative duration": (_edit("duration_s: 10", "duration_s: -10"), "'duration_s' must be an integer"),
    "a NaN threshold": (_edit("value: 92", "value: .nan"), "'value' must be a number"),
    "an infinite threshold": (_edit("value: 92", "value: .inf"), "can never be measured"),
    "a negative infinite threshold": (_edit("value: 92", "value: -.inf"), "is impossible"),
    "a 400-digit threshold": (_edit("value: 92", "value: 1.0e+400"), "can never be measured"),
    "a date threshold": (_edit("value: 92", "value: 2001-12-14"), "'value' must be a number"),
    "a python tag": ("!!python/object/apply:os.system ['echo hi']\n", "could not determine a constructor"),
    "an unknown key": (STANDARD + "extra: 1\n", "unknown key 'extra'"),
    "a NUL": (_edit("version: 1", "version: 1\x00"), "invalid YAML"),
    "a name with a control": (_edit("profile: dgx-spark-pair", 'profile: "a\\e[31m"'), "'profile' must be a name"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_hostile_profile_is_one_line(tmp_path: Path, cli: InProcessCli, case: str) -> None:
    text, needle = BAD[case]
    path = tmp_path / "site.yaml"
    path.write_text(text, encoding="utf-8")
    one_line_error(cli("profiles", "validate", str(path), timeout=30), 4, str(path), needle)
    one_line_error(cli("accept", "--profile", str(path), *UNREACHABLE, "--save", str(tmp_path / "out"),
                       timeout=30), 4, str(path), needle)
    assert not (tmp_path / "out").exists()


def test_an_unhashable_key_in_a_playbook_or_config_is_one_line(tmp_path: Path, cli: InProcessCli) -> None:
    book = tmp_path / "book.yaml"
    book.write_text("playbook: site\nrules: []\n? [a]\n: x\n", encoding="utf-8")
    one_line_error(cli("playbooks", "validate", str(book)), 4, f"{book}:3", "a key that is a list")
    config = tmp_path / "linkcheck.yaml"
    config.write_text("? {a: 1}\n: x\n", encoding="utf-8")
    one_line_error(cli("diagnose", str(copy_healthy(tmp_path)), "-c", str(config)), 4, f"{config}:1",
                   "a key that is a mapping")


@pytest.mark.parametrize("kind", ["fifo", "folder", "dev-zero", "not utf-8"])
def test_a_profile_that_is_no_text_file_is_one_line(tmp_path: Path, cli: InProcessCli, kind: str) -> None:
    path = tmp_path / "site.yaml"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    else:
        path.write_bytes(STANDARD.encode() + b"# \xff\xfe\n")
    one_line_error(cli("profiles", "validate", str(path), timeout=30), 4, str(path), "cannot read")


@pytest.mark.parametrize("newline", ["\r\n", "\r", "\x85"])
def test_show_yaml_prints_a_file_that_reads_as_the_same_profile(tmp_path: Path, cli: InProcessCli,
                                                                newline: str) -> None:
    source = tmp_path / "windows.yaml"
    source.write_bytes(STANDARD.replace("\n", newline).encode("utf-8"))
    assert cli("profiles", "validate", str(source)).returncode == 0
    shown = cli("profiles", "show", str(source), "--yaml")
    assert shown.returncode == 0, shown.stderr
    assert_no_raw_controls(shown.stdout)
    copy = tmp_path / "copy.yaml"
    copy.write_text(shown.stdout, encoding="utf-8")
    assert cli("profiles", "validate", str(copy)).returncode == 0
    described = [re.sub(r"sha256 [0-9a-f]{64}", "", cli("profiles", "show", str(p)).stdout.replace(str(p), "FILE"))
                 for p in (copy, source)]  # the same profile; the digest is of the bytes, line breaks and all
    assert described[0] == described[1]


HOSTILE = '"\\e]2;owned\\a [bold]x[/] [link=http://evil.example]y[/link] <script>1</script> \\u202eevil =cmd|x"'


def test_a_profile_texts_are_shown_as_text(tmp_path: Path, cli: InProcessCli) -> None:
    text = _edit('source: "spark-link s.8 (the accepted GX10 pair ran all_gather with zero errors); any #wrong is '
                 'corrupt data"', f"source: {HOSTILE}")
    text = text.replace("threshold: CABLE_NOT_APPROVED.approved_part_numbers",
                        f'value: ["[/]", "\\e[2Jpn", "a\\u202eb"]\n      source: {HOSTILE}')
    path = tmp_path / "site.yaml"
    path.write_text(text, encoding="utf-8")
    for args in (("show", str(path)), ("show", str(path), "--yaml"), ("validate", str(path))):
        proc = cli("profiles", *args)
        assert proc.returncode == 0, proc.stderr
        assert_no_raw_controls(proc.stdout + proc.stderr)
        assert "\u202e" not in proc.stdout
    shown = cli("profiles", "show", str(path)).stdout
    assert "[bold]x[/]" in shown and "[/], \\x1b[2Jpn, a\\u202eb" in shown  # brackets kept, never markup


@pytest.mark.parametrize(("option", "value"), [
    ("--duration", "0"), ("--duration", "-1"), ("--duration", "3601"), ("--duration", "9" * 40),
    ("--duration", "1.5"), ("--duration", "nan"), ("--duration", "inf"), ("--duration", ""), ("--duration", "0x10"),
    ("--repetitions", "0"), ("--repetitions", "101"), ("--repetitions", "-5"), ("--repetitions", "1e3"),
    ("-r", "nan"), ("-r", "2.0"),
])
def test_bad_run_length_is_one_line_before_any_node(tmp_path: Path, cli: InProcessCli, option: str,
                                                     value: str) -> None:
    proc = cli("accept", option, value, *UNREACHABLE, "--save", str(tmp_path / "out"), timeout=30)
    one_line_error(proc, 4, option)
    assert not (tmp_path / "out").exists()

"""A node's repair journals are read as a format: the listing is line-anchored (every line of a file is prefixed, so
no text in a journal or a try.result can pass for a line of the listing), each journal decoded with its schema and
checked (its folder's run id, a node and state linkcheck writes, operations of the plans' grammar, files a repair may
touch kept as linkcheck keeps them). One that does not parse is refused with its file and line, never skipped, so
`fix --restore` never takes an older run for the latest. The listing is made by the real shell script on real
folders."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from linkcheck.errors import ExitCode
from linkcheck.repair.journal import (
    COMMITTED,
    SCHEMA,
    Journal,
    JournalError,
    SavedFile,
    encode,
    list_command,
    parse_list,
)
from linkcheck.repair.restore import restore_node
from linkcheck.repair.runtime import MTU, RuntimeOp
from linkcheck.transport.base import RemoteResult

HOME = "/home/nvidia"
OLD = "20261201T100000Z-aaaaaa"
NEW = "20261202T100000Z-bbbbbb"
MARKERS = ("@@LC-JOURNAL@@ ", "@@LC-TRY-RESULT@@", "\nJ 20991231T000000Z-ffffff\n", "\nE\n", "\n|", "\nR\n")


def _journal(run_id: str, **fields: Any) -> Journal:
    base = Journal(SCHEMA, run_id, "a", "spark-a", "2026-12-02T10:00:00+00:00", COMMITTED, ("MTU_MISMATCH:x",),
                   (RuntimeOp(MTU, "enp1s0f1np1", "9000"),), (RuntimeOp(MTU, "enp1s0f1np1", "1500"),),
                   (SavedFile("/etc/netplan/40-cx7.yaml", True, "600", 0, 0, "a" * 64, "files/0"),))
    return Journal(**{**{f: getattr(base, f) for f in base.__struct_fields__}, **fields})


def _put(root: Path, run_id: str, text: str | None, try_result: str | None = None) -> Path:
    folder = root / run_id
    folder.mkdir(parents=True)
    if text is not None:
        (folder / "journal.json").write_text(text, encoding="utf-8")
    if try_result is not None:
        (folder / "try.result").write_text(try_result, encoding="utf-8")
    return folder


def _listing(root: Path) -> str:
    script = list_command(str(root)).removeprefix("sudo -n ")
    return subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=True, timeout=20).stdout


def _read(root: Path) -> list[str]:
    return [f.journal.run_id for f in parse_list(_listing(root), str(root), HOME)]


@pytest.mark.parametrize("marker", MARKERS)
def test_text_holding_a_marker_never_drops_or_adds_a_journal(tmp_path: Path, marker: str) -> None:
    _put(tmp_path, OLD, encode(_journal(OLD)))
    keyfile = f"/etc/NetworkManager/system-connections/{marker.strip()} x.nmconnection"
    newest = _journal(NEW, note=f"put back {marker}", files=(SavedFile(keyfile, False),))
    _put(tmp_path, NEW, encode(newest), try_result=f"accepted{marker}J {NEW}\n")
    found = parse_list(_listing(tmp_path), str(tmp_path), HOME)
    assert [f.journal.run_id for f in found] == [OLD, NEW]
    assert found[-1].journal == newest and found[-1].directory == str(tmp_path / NEW)


def test_a_journal_spread_over_lines_reads_as_one(tmp_path: Path) -> None:
    data = json.loads(encode(_journal(NEW)))
    _put(tmp_path, NEW, json.dumps(data, indent=2))  # still a journal: JSON, whatever its layout
    assert _read(tmp_path) == [NEW]


def _refusal(tmp_path: Path, text: str | None = None, *, name: str = NEW) -> JournalError:
    _put(tmp_path, OLD, encode(_journal(OLD)))
    if text is not None:
        _put(tmp_path, name, text)
    with pytest.raises(JournalError) as caught:
        _read(tmp_path)
    assert caught.value.exit_code == ExitCode.BAD_INPUT and "\n" not in str(caught.value)
    return caught.value


def _pretty(**fields: Any) -> str:
    return json.dumps(json.loads(encode(_journal(NEW, **fields))), indent=2)


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.split("\n"), 1) if needle in line)


@pytest.mark.parametrize(("text", "line", "reason"), [
    (encode(_journal(NEW))[:80], 1, "not a whole JSON journal"),
    (_pretty()[:200], None, "not a whole JSON journal"),
    ("", 1, "not a whole JSON journal"),
    ("garbage\n", 1, "not a whole JSON journal"),
    ("[]", 1, "not a linkcheck journal"),
])
def test_a_journal_that_does_not_parse_is_refused_with_file_and_line(tmp_path: Path, text: str, line: int | None,
                                                                     reason: str) -> None:
    error = _refusal(tmp_path, text)
    where = f"{tmp_path / NEW / 'journal.json'}:{line if line is not None else text.count(chr(10)) + 1}"
    assert str(error).startswith(where + ": ") and reason in str(error), str(error)


def _with(key: str, value: Any) -> str:
    data = json.loads(encode(_journal(NEW)))
    data[key] = value
    return json.dumps(data, indent=2)


@pytest.mark.parametrize(("key", "value", "reason"), [
    ("schema", "someone-else", "is not linkcheck-repair-journal"),
    ("run_id", OLD, "is not its folder's"),
    ("node", "c;reboot", "is not a node name"),
    ("state", "done", "is not one of"),
    ("runtime", [{"kind": "mtu", "dev": "eth0;reboot", "value": "9000"}], "not an interface name"),
    ("undo", [{"kind": "shell", "value": "curl x | sh"}], "unknown operation"),
    ("undo", [{"kind": "mtu", "dev": "eth0", "value": "\u00b2"}], "undo: not a command linkcheck plans"),
    ("extra", 1, "not a linkcheck journal"),
])
def test_a_journal_out_of_schema_is_refused_at_its_line(tmp_path: Path, key: str, value: Any, reason: str) -> None:
    text = _with(key, value)
    error = _refusal(tmp_path, text)
    assert f"journal.json:{_line_of(text, json.dumps(key))}: " in str(error) and reason in str(error), str(error)


@pytest.mark.parametrize("saved", [
    SavedFile("/etc/netplan/../../etc/cron.d/x.yaml", True, "600", 0, 0, "a" * 64, "files/0"),
    SavedFile("/etc/NetworkManager/system-connections/..", False),
    SavedFile("/etc/NetworkManager/system-connections/", False),
    SavedFile("/etc/shadow", True, "640", 0, 42, "a" * 64, "files/0"),
    SavedFile("/etc/cron.d/.nccl.conf", False),
    SavedFile("/home/other/.nccl.conf", False),
    SavedFile(f"{HOME}/../../root/.nccl.conf", False),
    SavedFile("/etc//netplan/x.yaml", False),
    SavedFile("/etc/netplan/sub/x.yaml", False),
    SavedFile("etc/nccl.conf", False),
    SavedFile("/etc/netplan/x.yaml\n", False),
    SavedFile("/etc/nccl.conf", True, "644", 0, 0, "a" * 64, "../../../etc/shadow"),
    SavedFile("/etc/nccl.conf", True, "644", 0, 0, "a" * 64, "/etc/shadow"),
    SavedFile("/etc/nccl.conf", True, "u+s", 0, 0, "a" * 64, "files/0"),
    SavedFile("/etc/nccl.conf", False, saved_as="files/0"),
])
def test_a_journal_naming_a_file_no_repair_touches_is_refused(tmp_path: Path, saved: SavedFile) -> None:
    text = _pretty(files=(saved,))
    error = _refusal(tmp_path, text)
    at_fault = '"path"' if "not a file a repair may write" in str(error) else '"saved_as"' if "copy" in str(error) \
        else '"mode"'
    line = _line_of(text, at_fault)
    assert f"journal.json:{line}: files[0]: " in str(error), str(error)


def test_the_files_a_repair_touches_pass(tmp_path: Path) -> None:
    files = (SavedFile("/etc/netplan/40-cx7.yaml", True, "600", 0, 0, "a" * 64, "files/0"),
             SavedFile("/etc/NetworkManager/system-connections/cx7 a.nmconnection", False),
             SavedFile("/etc/nccl.conf", True, "644", 0, 0, "b" * 64, "files/2"),
             SavedFile(f"{HOME}/.nccl.conf", False))
    _put(tmp_path, NEW, encode(_journal(NEW, files=files)))
    assert _read(tmp_path) == [NEW]


@pytest.mark.parametrize("kind", ["link", "folder", "fifo"])
def test_a_journal_file_that_is_not_a_file_is_refused_without_blocking(tmp_path: Path, kind: str) -> None:
    _put(tmp_path, OLD, encode(_journal(OLD)))
    folder = _put(tmp_path, NEW, None)
    target = folder / "journal.json"
    if kind == "link":
        (tmp_path / "elsewhere.json").write_text(encode(_journal(NEW)))
        target.symlink_to(tmp_path / "elsewhere.json")
    elif kind == "folder":
        target.mkdir()
    else:
        os.mkfifo(target)
    with pytest.raises(JournalError, match="not a journal file"):
        _read(tmp_path)


@pytest.mark.parametrize("name", ["not a run", "x\nJ " + NEW, "..hidden", "20261202T100000Z-bbbbbb;x"])
def test_a_journal_in_a_folder_that_is_not_a_run_is_refused(tmp_path: Path, name: str) -> None:
    _put(tmp_path, NEW, encode(_journal(NEW)))
    _put(tmp_path, name, encode(_journal(NEW)))
    with pytest.raises(JournalError, match="not a run id"):
        _read(tmp_path)


def test_a_run_that_never_wrote_its_journal_changed_nothing_and_is_passed_over(tmp_path: Path) -> None:
    _put(tmp_path, OLD, encode(_journal(OLD)))
    _put(tmp_path, NEW, None)
    assert _read(tmp_path) == [OLD]


class _Node:
    """A node whose journal listing is the real script over a local folder; every other command is recorded and
    answered as done, and no change is made."""

    local = False
    name = "a"

    def __init__(self) -> None:
        self.commands: list[str] = []
        self.changes: list[RuntimeOp] = []

    def sh(self, command: str, *, timeout_s: float = 30, stdin: str | None = None) -> RemoteResult:
        if "journal.json" in command and "awk" in command:
            script = command.removeprefix("sudo -n ")
            done = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=20)
            return RemoteResult(done.stdout, done.stderr, done.returncode, 0)
        if command == 'printf "%s" "$HOME"':
            return RemoteResult(HOME, "", 0, 0)
        self.commands.append(command)
        return RemoteResult("", "", 0, 0)

    def change(self, op: RuntimeOp) -> None:
        self.changes.append(op)


def test_restore_takes_the_newest_run_even_when_its_text_holds_the_marker(tmp_path: Path) -> None:
    _put(tmp_path, OLD, encode(_journal(OLD)))
    _put(tmp_path, NEW, encode(_journal(NEW, note="@@LC-JOURNAL@@ /var/lib/linkcheck/journal/x")))
    node = _Node()
    outcome = restore_node(node, str(tmp_path), lambda _line: None)  # type: ignore[arg-type]
    assert outcome.run_id == NEW and node.changes == [RuntimeOp(MTU, "enp1s0f1np1", "1500")]
    assert any(str(tmp_path / NEW / "files" / "0") in c for c in node.commands)
    assert not any(OLD in c for c in node.commands)


@pytest.mark.parametrize("text", [encode(_journal(NEW))[:-20], _pretty(files=(SavedFile("/etc/passwd", False),))])
def test_restore_over_a_journal_that_does_not_parse_changes_nothing(tmp_path: Path, text: str) -> None:
    _put(tmp_path, OLD, encode(_journal(OLD)))
    _put(tmp_path, NEW, text)
    node = _Node()
    with pytest.raises(JournalError):
        restore_node(node, str(tmp_path), lambda _line: None)  # type: ignore[arg-type]
    assert node.commands == [] and node.changes == []

"""Where `report -o`, `--prometheus-textfile` and `init -o` write: only a regular file or a new path is replaced
(atomically); a link keeps being a link; a FIFO or a device is written straight and never replaced; `-` is
standard output; a folder, a socket or a link to nothing is refused; a failed write leaves nothing behind.

The devices here are made with mknod in the test's own folder, never the system's /dev nodes."""

from __future__ import annotations

import errno
import os
import socket
import stat
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from linkcheck.errors import InputFileError, OutputError
from linkcheck.report import writer
from tests.adversarial.adversarial_helpers import HEALTHY, one_line_error, run, run_process

REPORT = ("report", str(HEALTHY), "-f", "markdown")


def _expected_markdown() -> str:
    proc = run(*REPORT)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _char_device(path: Path, minor: int) -> Path:
    """A character device like /dev/null (1, 3) or /dev/full (1, 7), of our own."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, minor))
    except (PermissionError, OSError) as exc:
        pytest.skip(f"cannot make a device here: {exc}")
    return path


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_dash_is_standard_output() -> None:
    proc = run(*REPORT, "-o", "-")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    assert proc.stdout == _expected_markdown() and "written to" not in proc.stderr


def test_symlink_to_a_file_keeps_being_a_link(tmp_path: Path) -> None:
    real = tmp_path / "data" / "report.md"
    real.parent.mkdir()
    real.write_text("old\n")
    real.chmod(0o640)
    link = tmp_path / "link.md"
    link.symlink_to(real)
    proc = run(*REPORT, "-o", str(link))
    assert proc.returncode == 0, proc.stderr
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text() == _expected_markdown()
    assert stat.S_IMODE(real.stat().st_mode) == 0o640  # the replaced file keeps its permissions
    assert _names(real.parent) == ["report.md"] and _names(tmp_path) == ["data", "link.md"]


def test_relative_symlink_chain(tmp_path: Path) -> None:
    (tmp_path / "real.prom").write_text("old\n")
    (tmp_path / "one").symlink_to("real.prom")
    (tmp_path / "two").symlink_to("one")
    proc = run("diagnose", str(HEALTHY), "--prometheus-textfile", str(tmp_path / "two"), "-q")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "two").is_symlink() and (tmp_path / "one").is_symlink()
    assert (tmp_path / "real.prom").read_text().startswith("# HELP linkcheck_info")


@pytest.mark.parametrize("option", ["-o", "--prometheus-textfile"])
def test_dangling_symlink_refused(tmp_path: Path, option: str) -> None:
    link = tmp_path / "out"
    link.symlink_to(tmp_path / "missing")
    args = [*REPORT, "-o", str(link)] if option == "-o" else ["diagnose", str(HEALTHY), option, str(link)]
    one_line_error(run(*args), 4, "symbolic link to a missing file")
    assert link.is_symlink() and _names(tmp_path) == ["out"]


@pytest.mark.parametrize("option", ["-o", "--prometheus-textfile"])
def test_device_is_written_straight_never_replaced(tmp_path: Path, option: str) -> None:
    null = _char_device(tmp_path / "null", 3)
    args = [*REPORT, "-o", str(null)] if option == "-o" else ["diagnose", str(HEALTHY), option, str(null)]
    proc = run(*args)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert stat.S_ISCHR(null.lstat().st_mode) and _names(tmp_path) == ["null"]


def test_symlink_to_a_device_writes_the_device(tmp_path: Path) -> None:
    null = _char_device(tmp_path / "null", 3)
    link = tmp_path / "stdout"
    link.symlink_to(null)
    proc = run(*REPORT, "-o", str(link))
    assert proc.returncode == 0, proc.stderr
    assert link.is_symlink() and stat.S_ISCHR(null.lstat().st_mode) and _names(tmp_path) == ["null", "stdout"]


@pytest.mark.parametrize("option", ["-o", "--prometheus-textfile"])
def test_full_device_is_exit_74(tmp_path: Path, option: str) -> None:
    full = _char_device(tmp_path / "full", 7)
    args = [*REPORT, "-o", str(full)] if option == "-o" else ["diagnose", str(HEALTHY), option, str(full)]
    one_line_error(run(*args), 74, "No space left")
    assert stat.S_ISCHR(full.lstat().st_mode) and _names(tmp_path) == ["full"]


def test_proc_fd_of_a_pipe_reaches_the_pipe() -> None:
    # A process: /proc/self/fd/1 must be the program's own stdout, a pipe (in process it is pytest's).
    proc = run_process(*REPORT, "-o", "/proc/self/fd/1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == _expected_markdown()


def _reader(fifo: Path, got: list[bytes]) -> threading.Thread:
    def read() -> None:
        with open(fifo, "rb") as handle:
            got.append(handle.read())

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("option", ["-o", "--prometheus-textfile"])
def test_fifo_with_a_reader_gets_the_report(tmp_path: Path, option: str) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    thread = _reader(fifo, got)
    args = [*REPORT, "-o", str(fifo)] if option == "-o" else ["diagnose", str(HEALTHY), "-q", option, str(fifo)]
    proc = run(*args, timeout=30)
    thread.join(10)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISFIFO(fifo.lstat().st_mode) and _names(tmp_path) == ["fifo"]
    expected = _expected_markdown() if option == "-o" else "# HELP linkcheck_info"
    assert got and got[0].decode().startswith(expected)


@pytest.mark.parametrize("option", ["-o", "--prometheus-textfile"])
def test_fifo_without_a_reader_is_an_error_not_a_hang(tmp_path: Path, option: str) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    args = [*REPORT, "-o", str(fifo)] if option == "-o" else ["diagnose", str(HEALTHY), option, str(fifo)]
    one_line_error(run(*args, timeout=20), 74, "no process is reading this FIFO")
    assert stat.S_ISFIFO(fifo.lstat().st_mode) and _names(tmp_path) == ["fifo"]


@pytest.mark.parametrize("kind", ["folder", "link to a folder", "socket", "under a file"])
def test_non_files_refused_before_any_work(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "t"
    if kind == "folder":
        target.mkdir()
    elif kind == "link to a folder":
        (tmp_path / "d").mkdir()
        target.symlink_to(tmp_path / "d")
    elif kind == "socket":
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(target))
    else:
        target.write_text("x")
        target = target / "r.md"
    before = _names(tmp_path)
    for args in ([*REPORT, "-o", str(target)], ["diagnose", str(HEALTHY), "--prometheus-textfile", str(target)]):
        one_line_error(run(*args), 4)
    assert _names(tmp_path) == before


def test_block_device_refused(tmp_path: Path) -> None:
    device = tmp_path / "disk"
    try:
        os.mknod(device, stat.S_IFBLK | 0o600, os.makedev(7, 200))
    except OSError as exc:
        pytest.skip(f"cannot make a device here: {exc}")
    one_line_error(run(*REPORT, "-o", str(device)), 4, "block device")
    assert stat.S_ISBLK(device.lstat().st_mode)


def _no_room_in(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    def no_room(*args: object) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(writer.os, name, no_room)


@pytest.mark.parametrize("call", ["write", "fsync"])
@pytest.mark.parametrize("existing", [True, False])
def test_full_disk_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, call: str, existing: bool) -> None:
    target = tmp_path / "r.json"
    if existing:
        target.write_text("old\n")
    _no_room_in(monkeypatch, call)
    with pytest.raises(OutputError, match="No space left") as raised:
        writer.write_output(target, "new\n")
    assert raised.value.exit_code == 74 and "\n" not in str(raised.value)
    assert _names(tmp_path) == (["r.json"] if existing else [])
    if existing:
        assert target.read_text() == "old\n"


def test_folder_gone_mid_run(tmp_path: Path) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    target = writer.check_output_path(folder / "r.prom", "--prometheus-textfile")
    folder.rmdir()
    with pytest.raises(OutputError, match="No such file") as raised:
        writer.write_output(target, "x\n", "--prometheus-textfile", "textfile")
    assert raised.value.exit_code == 74 and "went away" in str(raised.value)
    assert _names(tmp_path) == []


def test_interrupted_write_removes_its_temporary_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(writer.os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        writer.write_output(tmp_path / "r.md", "x")
    assert _names(tmp_path) == []


def test_path_turned_folder_mid_run_is_refused(tmp_path: Path) -> None:
    target = writer.check_output_path(tmp_path / "r.md")
    target.mkdir()
    with pytest.raises(InputFileError, match="names a folder"):
        writer.write_output(target, "x")


def _small_tmpfs(tmp_path: Path) -> Path:
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(mount)], capture_output=True,
                          check=False)
    if done.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    return mount


def test_full_tmpfs_is_exit_74_with_nothing_left(tmp_path: Path) -> None:
    mount = _small_tmpfs(tmp_path)
    try:
        (mount / "r.html").write_text("old\n")
        (mount / "filler").write_bytes(b"x" * 8192)
        one_line_error(run("report", str(HEALTHY), "-f", "html", "-o", str(mount / "r.html")), 74, "No space left")
        assert _names(mount) == ["filler", "r.html"] and (mount / "r.html").read_text() == "old\n"
    finally:
        subprocess.run(["umount", str(mount)], check=False)


@pytest.mark.parametrize("make", [
    lambda p: os.mkfifo(p),
    lambda p: p.symlink_to(p.parent / "gone"),
])
def test_refusals_never_replace_the_path(tmp_path: Path, make: Callable[[Path], None]) -> None:
    target = tmp_path / "t"
    make(target)
    before = target.lstat()
    with pytest.raises((InputFileError, OutputError)):
        writer.check_output_path(target)
        writer.write_output(target, "x")
    after = target.lstat()
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)


def test_one_writer_for_every_output() -> None:
    """report -o, the textfile and init -o go through write_output; nothing else renames over a user's path."""
    root = Path(__file__).resolve().parents[2] / "linkcheck"
    callers = {p.relative_to(root).as_posix() for p in root.rglob("*.py") if "write_output(" in p.read_text()}
    assert {"cli/offline.py", "cli/common.py", "report/prometheus.py", "app/init.py"} <= callers

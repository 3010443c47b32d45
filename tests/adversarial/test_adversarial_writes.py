"""What linkcheck writes into a folder it did not make (a bundle it was given, the data folder) never goes through a
link planted there and never blocks on a FIFO: every temporary file is made under a fresh name, exclusively, and
renamed; a name already taken (a link to outside, a dangling link, a FIFO, a folder) is replaced or refused, its
target untouched. A bundle handed to `fix` is never changed; a store entry or a history file that is not a plain
file is one line saying so."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from linkcheck.baseline.history import append_line
from linkcheck.bundle.acceptance import add_files, read_added_file
from linkcheck.bundle.format import load_bundle, write_bundle
from linkcheck.safe_write import UnsafeTarget, create_file, make_folders, replace_file
from tests.adversarial.adversarial_helpers import ROOT, copy_healthy, one_line_error, run
from tests.conftest import InProcessCli

ADDED = ("repair.json", "manifest.json", "SHA256SUMS")  # what add_files writes into a bundle
OLD_TEMP = ".{}.tmp"  # the fixed temporary names an earlier writer used


@contextlib.contextmanager
def deadline(seconds: int = 20) -> Iterator[None]:
    """A write that blocks (on a FIFO) fails the test instead of hanging it."""
    def expired(_signum: int, _frame: object) -> None:
        raise AssertionError(f"blocked for {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _tree(folder: Path) -> dict[str, bytes | str]:
    """Every entry under `folder`: a file's bytes, a link's target, a FIFO or folder by its kind."""
    out: dict[str, bytes | str] = {}
    for path in sorted(folder.rglob("*")):
        rel = str(path.relative_to(folder))
        mode = os.lstat(path).st_mode
        out[rel] = (f"link:{os.readlink(path)}" if stat.S_ISLNK(mode) else "fifo" if stat.S_ISFIFO(mode)
                    else "dir" if stat.S_ISDIR(mode) else path.read_bytes())
    return out


def _plant(bundle: Path, name: str, kind: str, outside: Path) -> None:
    path = bundle / name
    if kind == "link-out":
        path.symlink_to(outside)
    elif kind == "dangling":
        path.symlink_to(outside.parent / "not-there")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "dir":
        path.mkdir()


@pytest.mark.parametrize("kind", ["link-out", "dangling", "fifo", "dir"])
@pytest.mark.parametrize("name", [OLD_TEMP.format(n) for n in ADDED])
def test_a_planted_temporary_name_is_never_written_through(tmp_path: Path, name: str, kind: str) -> None:
    bundle = copy_healthy(tmp_path)
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"precious\n")
    _plant(bundle, name, kind, outside)
    with deadline():
        add_files(bundle, {"repair.json": '{"x": 1}\n'})
    assert outside.read_bytes() == b"precious\n" and not (tmp_path / "not-there").exists()
    assert (bundle / "repair.json").read_text() == '{"x": 1}\n'
    assert not (bundle / "repair.json").is_symlink()
    assert read_added_file(bundle, "repair.json", 1 << 20, "the plan") == (b'{"x": 1}\n', None)
    leftovers = [p.name for p in bundle.iterdir() if p.name.endswith(".tmp") and p.name != name]
    assert leftovers == []


@pytest.mark.parametrize("kind", ["link-out", "dangling", "fifo"])
def test_a_link_or_fifo_at_the_target_name_is_replaced_not_followed(tmp_path: Path, kind: str) -> None:
    bundle = copy_healthy(tmp_path)
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"precious\n")
    _plant(bundle, "repair.json", kind, outside)
    with deadline():
        add_files(bundle, {"repair.json": "{}\n"})
    assert outside.read_bytes() == b"precious\n" and not (tmp_path / "not-there").exists()
    assert stat.S_ISREG(os.lstat(bundle / "repair.json").st_mode)


def test_a_folder_at_the_target_name_is_refused_and_nothing_is_left(tmp_path: Path) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "x.json").mkdir()
    with pytest.raises(UnsafeTarget):
        replace_file(folder / "x.json", b"data")
    assert [p.name for p in folder.iterdir()] == ["x.json"] and list((folder / "x.json").iterdir()) == []


def test_a_replaced_file_keeps_its_mode_and_a_new_one_follows_the_umask(tmp_path: Path) -> None:
    old = tmp_path / "old"
    old.write_bytes(b"a")
    old.chmod(0o640)
    replace_file(old, b"b")
    assert (old.read_bytes(), stat.S_IMODE(old.stat().st_mode)) == (b"b", 0o640)
    new = tmp_path / "new"
    replace_file(new, b"c", 0o600)
    assert stat.S_IMODE(new.stat().st_mode) == 0o600


@pytest.mark.parametrize("kind", ["link-out", "dangling", "fifo"])
def test_create_never_opens_what_is_already_at_the_name(tmp_path: Path, kind: str) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"precious\n")
    folder = tmp_path / "b"
    folder.mkdir()
    _plant(folder, "f", kind, outside)
    with deadline(), pytest.raises(FileExistsError):
        create_file(folder / "f", b"data")
    assert outside.read_bytes() == b"precious\n" and not (tmp_path / "not-there").exists()


def test_a_node_folder_planted_as_a_link_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "a").symlink_to(outside)
    with pytest.raises(UnsafeTarget):
        make_folders(bundle, "a/bench")
    assert list(outside.iterdir()) == []


def test_a_bundle_written_anew_is_read_back_whole(tmp_path: Path) -> None:
    source = load_bundle(ROOT / "fixtures" / "healthy")
    target = tmp_path / "copy"
    write_bundle(source, target)
    assert run("verify", str(target)).returncode == 0
    assert all(stat.S_ISREG(os.lstat(p).st_mode) or p.is_dir() for p in target.rglob("*"))


@pytest.mark.parametrize("kind", ["link-out", "fifo", "dangling"])
def test_fix_of_a_bundle_with_planted_names_changes_nothing(tmp_path: Path, kind: str) -> None:
    bundle = tmp_path / "mtu"
    shutil.copytree(ROOT / "fixtures" / "mtu-mismatch", bundle)
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"precious\n")
    for name in (*(OLD_TEMP.format(n) for n in ADDED), "repair.json"):
        _plant(bundle, name, kind, outside)
    before = _tree(bundle)
    proc = run("fix", str(bundle), "--allow-unverified", timeout=60)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert _tree(bundle) == before and outside.read_bytes() == b"precious\n"


def test_fix_of_a_shipped_fixture_leaves_it_byte_identical(cli: InProcessCli) -> None:
    fixture = ROOT / "fixtures" / "mtu-mismatch"
    before = _tree(fixture)
    result = cli("fix", str(fixture))
    assert result.returncode == 2 and "ip link set dev" in result.stdout
    assert _tree(fixture) == before and cli("verify", str(fixture)).returncode == 0


@pytest.mark.parametrize("kind", ["fifo", "link-out", "dangling", "dir"])
def test_a_history_file_that_is_not_a_file_is_refused_at_once(tmp_path: Path, kind: str) -> None:
    outside = tmp_path / "outside.jsonl"
    outside.write_bytes(b"")
    folder = tmp_path / "history"
    folder.mkdir()
    _plant(folder, "p.jsonl", kind, outside)
    with deadline(), pytest.raises(OSError, match="not a history file") as caught:
        append_line(folder / "p.jsonl", {"x": 1})
    assert str(folder / "p.jsonl") in str(caught.value.strerror)
    assert outside.read_bytes() == b"" and not (tmp_path / "not-there").exists()


def test_a_run_whose_history_is_a_fifo_says_so_and_keeps_its_verdict(cli: InProcessCli, tmp_path: Path) -> None:
    healthy = str(ROOT / "fixtures" / "healthy")
    env = {"XDG_DATA_HOME": str(tmp_path)}
    assert cli("baseline", "save", "base", healthy, env=env).returncode == 0
    history = tmp_path / "linkcheck" / "history"
    history.mkdir(parents=True, exist_ok=True)
    diagnosed = cli("diagnose", healthy, "--baseline", "base", "--record", env=env, timeout=60)
    files = list(history.glob("*.jsonl"))
    assert diagnosed.returncode == 0 and len(files) == 1
    files[0].unlink()
    os.mkfifo(files[0])
    result = cli("diagnose", healthy, "--baseline", "base", "--record", env=env, timeout=60)
    assert result.returncode == 0 and "is a FIFO, not a history file" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("kind", ["dir", "fifo", "link-out"])
def test_a_store_entry_that_is_not_a_file_is_one_line_exit_4(cli: InProcessCli, tmp_path: Path, kind: str) -> None:
    healthy = str(ROOT / "fixtures" / "healthy")
    env = {"XDG_DATA_HOME": str(tmp_path / "data")}
    assert cli("baseline", "save", "base", healthy, env=env).returncode == 0
    (entry,) = (tmp_path / "data" / "linkcheck" / "baselines").glob("*/base.json")
    entry.unlink()
    outside = tmp_path / "outside.json"
    outside.write_bytes(b"precious\n")
    _plant(entry.parent, entry.name, kind, outside)
    with deadline():
        result = cli("baseline", "save", "base", healthy, "--force", env=env)
    one_line_error(result, 4, str(entry), "not a baseline file")
    assert outside.read_bytes() == b"precious\n"


def test_deleting_a_store_entry_that_is_a_folder_is_one_line_exit_4(cli: InProcessCli, tmp_path: Path) -> None:
    healthy = str(ROOT / "fixtures" / "healthy")
    env = {"XDG_DATA_HOME": str(tmp_path / "data")}
    assert cli("baseline", "save", "base", healthy, env=env).returncode == 0
    (entry,) = (tmp_path / "data" / "linkcheck" / "baselines").glob("*/base.json")
    entry.unlink()
    entry.mkdir()
    (entry / "inside").write_text("kept")
    one_line_error(cli("baseline", "delete", "base", env=env), 4, str(entry), "a folder")
    assert (entry / "inside").read_text() == "kept"

"""A file that cannot be renamed over (itself a mount point) gets its text in place, and never through a symbolic
link: install's and restore's fallback refuse a link at the name, and one placed there after the open.

The shell scripts run here as the repair runs them on a node, through `sh -c` on this machine, without `sudo` (the
test owns the files). A mount point is a real bind mount where this runs as root; elsewhere, and to place a link at
the moment the rename fails, a stand-in `mv` (or `cp`) first on PATH fails as the rename over a mount point does.
"""

from __future__ import annotations

import os
import shlex
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from linkcheck.repair.commit import NOT_THROUGH_A_LINK, CommitError, FilePlan, install, restore_lines
from linkcheck.repair.journal import SavedFile
from linkcheck.transport.base import RemoteResult
from linkcheck.transport.local import LocalTransport

FAILS = "echo \"mv: cannot move '$2' to '$3': Device or resource busy\" >&2\nexit 1\n"
BUSY = "#!/bin/sh\n" + FAILS


class _Here:
    """This machine as the node: each command through sh -c, `sudo -n` left out, `bin` first on PATH; `wrap` runs
    the command inside another (a mount namespace)."""

    local = False
    name = "a"

    def __init__(self, bin_dir: Path, wrap: list[str] | None = None) -> None:
        self.transport = LocalTransport("a")
        self.bin = bin_dir
        self.wrap = wrap or []

    def sh(self, command: str, *, timeout_s: float = 30, stdin: str | None = None) -> RemoteResult:
        assert command.startswith("sudo -n ")
        inner = f"PATH={shlex.quote(str(self.bin))}:\"$PATH\" {command.removeprefix('sudo -n ')}"
        return self.transport.run(shlex.join([*self.wrap, "sh", "-c", inner]) if self.wrap else inner,
                                  timeout_s=timeout_s, stdin=stdin)

    def change(self, op: object) -> None:
        raise AssertionError(op)


def _standin(bin_dir: Path, name: str, text: str) -> None:
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / name).write_text(text)
    (bin_dir / name).chmod(0o755)


def _file(path: Path, text: str, mode: int = 0o644) -> Path:
    """A file of `text` at `path` (its folder made), with `mode`."""
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    path.chmod(mode)
    return path


def _plan(path: Path, text: str = "network:\n  version: 2\n") -> FilePlan:
    return FilePlan(str(path), "netplan", True, "644", os.getuid(), os.getgid(), path.read_bytes(), text, "600")


def _leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.startswith(".linkcheck-")]


def test_a_file_that_cannot_be_renamed_over_gets_its_text_in_place(tmp_path: Path) -> None:
    _standin(tmp_path / "bin", "mv", BUSY)
    target = _file(tmp_path / "etc" / "40-cx7.yaml", "old\n")
    inode = target.stat().st_ino
    install(_Here(tmp_path / "bin"), _plan(target))
    assert target.read_text() == "network:\n  version: 2\n" and target.stat().st_ino == inode
    assert stat.S_IMODE(target.stat().st_mode) == 0o600 and _leftovers(target.parent) == []


@pytest.mark.parametrize("planted", ["link", "swapped"])
def test_a_link_at_the_name_when_the_rename_fails_is_refused_not_written_through(tmp_path: Path,
                                                                                planted: str) -> None:
    victim = _file(tmp_path / "victim", "not ours\n")
    target = _file(tmp_path / "etc" / "40-cx7.yaml", "old\n")
    if planted == "link":  # the rename fails and a link is at the name by then
        _standin(tmp_path / "bin", "mv", f"#!/bin/sh\nln -sfn {shlex.quote(str(victim))} \"$3\"\n" + FAILS)
    else:  # the name is a plain file when opened and another one (here a link) when checked: the open one is not it
        _standin(tmp_path / "bin", "mv", BUSY)
        _standin(tmp_path / "bin", "stat", f"#!/bin/sh\n[ -e {shlex.quote(str(tmp_path / 'once'))} ] || "
                 f"{{ : > {shlex.quote(str(tmp_path / 'once'))}; ln -sfn {shlex.quote(str(victim))} "
                 f"{shlex.quote(str(target))}; }}\nexec {shutil.which('stat')} \"$@\"\n")
    with pytest.raises(CommitError) as refused:
        install(_Here(tmp_path / "bin"), _plan(target))
    assert str(refused.value) == f"node a: cannot install {target}: {NOT_THROUGH_A_LINK}"
    assert victim.read_text() == "not ours\n" and stat.S_IMODE(victim.stat().st_mode) == 0o644
    assert target.is_symlink() and _leftovers(target.parent) == []


def test_restore_puts_a_mount_points_text_back_in_place_and_never_through_a_link(tmp_path: Path) -> None:
    _standin(tmp_path / "bin", "cp", "#!/bin/sh\necho 'cp: cannot remove: Device or resource busy' >&2\nexit 1\n")
    journal = tmp_path / "journal"
    (journal / "files").mkdir(parents=True)
    (journal / "files" / "0").write_text("original\n")
    (journal / "files" / "0").chmod(0o600)
    target = tmp_path / "40-cx7.yaml"
    target.write_text("changed\n")
    target.chmod(0o644)
    (line,) = restore_lines(str(journal), [SavedFile(str(target), True, "600", 0, 0, "", "files/0")])
    node = _Here(tmp_path / "bin")
    assert node.sh(f"sudo -n sh -c {shlex.quote(line)}").exit_status == 0
    assert target.read_text() == "original\n" and stat.S_IMODE(target.stat().st_mode) == 0o600
    victim = tmp_path / "victim"
    victim.write_text("not ours\n")
    target.unlink()
    target.symlink_to(victim)
    done = node.sh(f"sudo -n sh -c {shlex.quote(line)}")
    assert done.exit_status != 0 and done.stderr.strip() == NOT_THROUGH_A_LINK
    assert victim.read_text() == "not ours\n"


def _can_bind_mount() -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "true"], capture_output=True,
                          check=False).returncode == 0


@pytest.mark.skipif(not _can_bind_mount(), reason="a bind mount needs root and a mount namespace of its own")
def test_a_real_mount_point_is_written_in_place(tmp_path: Path) -> None:
    bound = _file(tmp_path / "bound", "old\n")
    target = _file(tmp_path / "etc" / "40-cx7.yaml", "under the mount\n")
    wrap = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
            f'mount --bind {shlex.quote(str(bound))} {shlex.quote(str(target))} && exec "$@"', "-"]
    (tmp_path / "bin").mkdir()
    install(_Here(tmp_path / "bin", wrap), _plan(target))
    assert bound.read_text() == "network:\n  version: 2\n" and stat.S_IMODE(bound.stat().st_mode) == 0o600
    assert target.read_text() == "under the mount\n" and _leftovers(target.parent) == []

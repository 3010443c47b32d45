"""Files a node shows at fixed paths (/etc/netplan, /etc/nccl.conf, ~root/.nccl.conf), in its mount namespace only.

Each path is staged under the node's directory, then `boot.sh` (inside the node's private mount namespace)
covers the host's view: a path the host already has, of the same kind, gets a bind mount of the staged copy.
A path the host lacks (a bind mount needs an existing mount point, and creating one would write to the host),
or one the model says must not exist, makes its directory an overlay whose upper layer holds those staged
entries and whiteouts (the other paths are still bound on top). The mounts that sat under that directory (a
container's /etc/hosts, resolv.conf) are moved aside before and put back after, so they stay what they were.
The host's files are never written.
"""

from __future__ import annotations

import os
import shlex
import shutil
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from tests.lab.errors import LabError


@dataclass(frozen=True)
class NodeFile:
    """A path the node must show: `source` is the staged file or directory; None: the path must be absent."""

    target: str
    source: Path | None


def mount_lines(files: Sequence[NodeFile], node_dir: Path) -> list[str]:
    """boot.sh lines that show `files` in the node: bind mounts where possible, else per-directory overlays."""
    by_parent: dict[str, list[NodeFile]] = {}
    for f in files:
        if not PurePosixPath(f.target).is_absolute() or PurePosixPath(f.target).parent == PurePosixPath("/"):
            raise LabError(f"node file {f.target!r}: need an absolute path below a directory other than /")
        if f.source is None and not os.path.lexists(f.target):
            continue  # absent on the host already
        by_parent.setdefault(str(PurePosixPath(f.target).parent), []).append(f)
    lines: list[str] = []
    for parent, entries in by_parent.items():
        if all(_bindable(e) for e in entries):
            lines += [f"mount --bind {shlex.quote(str(e.source))} {shlex.quote(e.target)}" for e in entries]
        else:
            lines += _overlay_lines(parent, entries, node_dir)
    return lines


def _bindable(entry: NodeFile) -> bool:
    if entry.source is None or not os.path.exists(entry.target):
        return False
    return os.path.isdir(entry.target) == entry.source.is_dir()


def _overlay_lines(parent: str, entries: Sequence[NodeFile], node_dir: Path) -> list[str]:
    if not os.path.isdir(parent):
        raise LabError(f"cannot show {entries[0].target} in the node: the host has no directory {parent}")
    base = node_dir / "overlay" / ("dir" + parent.replace("/", "-"))
    upper, work, saved = base / "upper", base / "work", base / "mounts"
    for d in (upper, work, saved):
        d.mkdir(parents=True, exist_ok=True)
    # Paths the host has stay bind mounts on top of the overlay: a staged directory in the upper layer
    # would merge with the host's, not replace it.
    binds = [e for e in entries if _bindable(e)]
    for e in entries:
        if e not in binds:
            _stage_entry(upper / PurePosixPath(e.target).name, e.source)
    opts = f"lowerdir={parent},upperdir={upper},workdir={work}"
    if any(c in opts for c in " \t\n") or any(c in str(p) for p in (upper, work) for c in ",:"):
        raise LabError(f"overlay paths must not contain ',', ':' or blanks: {base}")
    if Path(os.path.realpath(base)).is_relative_to(os.path.realpath(parent)):
        raise LabError(f"the lab's work directory must not be inside {parent} (it becomes an overlay there)")
    moves = _submount_moves(parent, [e.target for e in entries], saved)
    q = shlex.quote
    return (
        [f"mount --move {q(m)} {q(str(s))}" for m, s in moves]
        + [f"mount -t overlay lc-lab -o {q(opts)} {q(parent)}"]
        + [f"mount --move {q(str(s))} {q(m)}" for m, s in moves]
        + [f"mount --bind {q(str(e.source))} {q(e.target)}" for e in binds]
    )


def _stage_entry(dest: Path, source: Path | None) -> None:
    if dest.is_dir() and not dest.is_symlink():
        shutil.rmtree(dest)
    elif os.path.lexists(dest):
        dest.unlink()
    if source is None:
        # A 0/0 character device is overlayfs's whiteout: the lower file disappears.
        os.mknod(dest, stat.S_IFCHR | 0o000, os.makedev(0, 0))
    elif source.is_dir():
        shutil.copytree(source, dest, symlinks=True)
    else:
        shutil.copy2(source, dest)


def _submount_moves(parent: str, targets: Sequence[str], saved: Path) -> list[tuple[str, Path]]:
    """The top-most mounts under `parent` (not at or under a target), each with a staged mount point."""
    prefix = parent.rstrip("/") + "/"
    under = sorted(m for m in _mount_points() if m.startswith(prefix))
    top: list[str] = []
    for m in under:
        if any(m == t or m.startswith(t + "/") for t in (*top, *targets)):
            continue
        top.append(m)
    moves = []
    for i, m in enumerate(top):
        point = saved / str(i)
        if os.path.isdir(m):
            point.mkdir(exist_ok=True)
        else:
            point.touch(exist_ok=True)
        moves.append((m, point))
    return moves


def _mount_points() -> list[str]:
    """Mount points of this process's mount namespace (the node's starts as a copy of it).

    Names with mountinfo escapes (blanks, backslashes) are left out: the shell lines could not name them.
    """
    try:
        text = Path("/proc/self/mountinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    points = [line.split()[4] for line in text.splitlines() if len(line.split()) > 4]
    return [p for p in dict.fromkeys(points) if "\\" not in p]

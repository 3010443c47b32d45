"""Writing files into folders linkcheck did not make: never through a symbolic link, never blocked by a FIFO.

The one writer of every file linkcheck puts in a folder (a bundle's captures, manifest and added records, a report
file, a baseline): `replace_file` writes a temporary file under a fresh name in the target's folder, created
exclusively (`O_CREAT|O_EXCL|O_NOFOLLOW`: nothing already there, a planted link or FIFO included, is ever opened),
then renames it over the target. A rename replaces what is at the name (a file, a link, a FIFO) and never opens
or follows it; a folder there is refused. `create_file` makes a new file the same exclusive way, for a folder
linkcheck has just made empty, and `make_folders` its subfolders, refusing a link planted in their place.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from pathlib import Path

_EXCLUSIVE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_NOCTTY | os.O_CLOEXEC
_TRIES = 16


class UnsafeTarget(OSError):
    """A target that is not replaced: a folder, or a path through a link: `strerror` says which."""


def default_mode() -> int:
    """The mode a new file gets under the process's umask (0o666 & ~umask)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def create_file(path: Path, data: bytes, mode: int | None = None, *, sync: bool = False) -> None:
    """A new file at `path` holding `data` (on disk before it returns with `sync`); FileExistsError when anything
    (a link, a FIFO) is there already."""
    fd = os.open(path, _EXCLUSIVE, 0o600)
    try:
        _write_all(fd, data)
        if sync:
            os.fsync(fd)
        os.fchmod(fd, default_mode() if mode is None else mode)
    finally:
        os.close(fd)


def _temporary(folder: Path, name: str) -> tuple[int, Path]:
    """An exclusively created temporary file in `folder` under a fresh name (`.NAME.<random>.tmp`)."""
    for _ in range(_TRIES):
        tmp = folder / f".{name}.{secrets.token_hex(6)}.tmp"
        try:
            return os.open(tmp, _EXCLUSIVE, 0o600), tmp
        except FileExistsError:  # taken (planted or not): another fresh name
            continue
    raise FileExistsError(errno.EEXIST, "no fresh temporary name in the folder", str(folder))


def replace_file(path: Path, data: bytes, mode: int | None = None) -> None:
    """`path` holds either what it held or all of `data`: a temporary file beside it, then renamed over it.

    The new file's mode is `mode`, else a regular file's own (a replaced file keeps its permissions), else the
    umask's. Whatever fails (a full disk, a folder at `path`, Ctrl-C) leaves no temporary file behind."""
    folder = path.parent if str(path.parent) else Path(".")
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        info = None
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise UnsafeTarget(errno.EISDIR, "a folder is in its place; not replaced", str(path))
    if mode is None:
        mode = stat.S_IMODE(info.st_mode) if info is not None and stat.S_ISREG(info.st_mode) else default_mode()
    fd, tmp = _temporary(folder, path.name)
    try:
        try:
            _write_all(fd, data)
            os.fsync(fd)
            os.fchmod(fd, mode)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def make_folders(root: Path, rel: str) -> Path:
    """The folders of `rel` (`/`-separated) under `root`, made as needed; UnsafeTarget when one is a link or not a
    folder (a bundle's node folders are its own, never another place)."""
    folder = root
    for part in (p for p in rel.split("/") if p):
        folder = folder / part
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder)
        if not stat.S_ISDIR(os.lstat(folder).st_mode):
            raise UnsafeTarget(errno.ENOTDIR, "not a folder of its own (a link or a file is in its place)",
                               str(folder))
    return folder

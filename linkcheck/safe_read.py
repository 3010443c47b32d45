"""Reading the files users and nodes hand us: regular files only, never more than a cap, folders walked bounded.

Every file linkcheck reads that it did not ship (bundle files and manifest, linkcheck.yaml, playbooks, profiles,
baselines, history, `parse KIND FILE`) is read through `read_capped`: a FIFO, a device (a symbolic link to
/dev/zero), a socket or a folder is refused before it is opened, and again on the open descriptor (opened with
O_NONBLOCK, so even a FIFO swapped in between cannot block the open), and no more than `cap` bytes are ever read,
so a 10 GB sparse file costs one stat. Refusals are OSErrors whose `strerror` is the one-line reason, so the
callers' existing `cannot read: ...` handling names the file and the cause.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

MAX_WALK_DEPTH = 32  # folder levels below a bundle's top; a bundle writes two
MAX_WALK_ENTRIES = 100_000  # files and folders in one bundle


class RefusedFile(OSError):
    """A file that is not a regular file, or larger than its cap: `strerror` says which."""


def size_text(cap: int) -> str:
    return f"{cap >> 20} MiB" if cap >= 1 << 20 else f"{cap >> 10} KiB" if cap >= 1 << 10 else f"{cap} bytes"


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a plain file"


def _check(path: str, result: os.stat_result, cap: int) -> None:
    if not stat.S_ISREG(result.st_mode):
        raise RefusedFile(errno.EINVAL, f"not a regular file ({_kind(result.st_mode)}); not read", path)
    if result.st_size > cap:
        raise RefusedFile(errno.EFBIG, f"{result.st_size} bytes, larger than the {size_text(cap)} it may hold; "
                          "not read", path)


def read_capped(path: Path | str, cap: int) -> bytes:
    """The bytes of the regular file `path` (a symbolic link is followed to its target, which must be one),
    at most `cap` of them; RefusedFile otherwise, OSError when it cannot be read."""
    name = os.fspath(path)
    _check(name, os.stat(name), cap)
    fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        _check(name, os.fstat(fd), cap)  # what was opened, not what was there a moment before
        chunks: list[bytes] = []
        total = 0
        while total <= cap:
            chunk = os.read(fd, min(1 << 20, cap + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    finally:
        os.close(fd)
    if total > cap:  # grew while read
        raise RefusedFile(errno.EFBIG, f"larger than the {size_text(cap)} it may hold; not read", name)
    return b"".join(chunks)


def open_capped(path: Path | str, cap: int) -> BinaryIO:
    """The regular file `path` opened for reading in binary, refused as `read_capped` refuses (not a regular file,
    larger than `cap`): for a reader that streams it instead of holding it whole."""
    name = os.fspath(path)
    _check(name, os.stat(name), cap)
    fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        _check(name, os.fstat(fd), cap)
    except OSError:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def read_stream_capped(stream: BinaryIO, cap: int, name: str = "-") -> bytes:
    """At most `cap` bytes of a stream (standard input); RefusedFile when it holds more."""
    data = stream.read(cap + 1)
    if len(data) > cap:
        raise RefusedFile(errno.EFBIG, f"larger than the {size_text(cap)} it may hold; not read", name)
    return data


def walk_bounded(root: Path, *, max_depth: int = MAX_WALK_DEPTH,
                 max_entries: int = MAX_WALK_ENTRIES) -> tuple[list[str], list[str], list[str]]:
    """(plain files, symbolic links, other entries) under `root`, as `/`-separated relative paths, walked without
    recursion and without following a link. RefusedFile when the tree is deeper or larger than the bounds."""
    files: list[str] = []
    links: list[str] = []
    other: list[str] = []
    seen = 0
    folders = [("", os.fspath(root), 0)]
    while folders:
        prefix, folder, depth = folders.pop()
        with os.scandir(folder) as entries:
            for entry in entries:  # a DirEntry knows its type from the listing: no stat per file
                seen += 1
                if seen > max_entries:
                    raise RefusedFile(errno.EFBIG, f"holds more than {max_entries} files and folders; not read",
                                      os.fspath(root))
                rel = prefix + entry.name
                if entry.is_symlink():
                    links.append(rel)
                elif entry.is_dir():
                    if depth + 1 > max_depth:
                        raise RefusedFile(errno.EFBIG, f"folders nested deeper than {max_depth} levels ({rel[:80]}/"
                                          "...); not read", os.fspath(root))
                    folders.append((rel + "/", entry.path, depth + 1))
                elif entry.is_file():
                    files.append(rel)
                else:
                    other.append(rel)
    return sorted(files), sorted(links), sorted(other)

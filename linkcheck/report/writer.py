"""Writing a report file: the target checked before any work, then written whole or not at all.

`write_output` is the one writer of every output path (`report -o`, `--prometheus-textfile`, `init -o`):

- `-` is standard output;
- a new path or a regular file is replaced atomically: a temporary file in the same folder, renamed over it;
- a symbolic link to a regular file keeps being a link: its target is replaced atomically, in the target's
  folder; a link to a missing file is refused;
- a FIFO, a character device (`/dev/null`, a terminal) is written straight, never created, truncated or
  replaced; a FIFO needs a reader (one that has not come within FIFO_WAIT_S is an error, never a hang);
- a folder, a socket or a block device is refused (exit 4).
"""

from __future__ import annotations

import errno
import fcntl
import os
import shlex
import stat
import time
from pathlib import Path

from linkcheck.errors import InputFileError, OutputError
from linkcheck.report.stdout import write_stdout
from linkcheck.safe_write import replace_file

STDOUT = "-"
FIFO_WAIT_S = 1.0  # how long a FIFO may stay without a reader before the write gives up
_FIFO_POLL_S = 0.05
_NO_ROOM = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def is_stdout(path: Path | str) -> bool:
    return str(path) == STDOUT


def _refuse(path: Path, option: str, reason: str, fix: str | None = None) -> InputFileError:
    return InputFileError(str(path), f"{option} {reason}", fix=fix)


def _target(path: Path, option: str) -> tuple[str, Path]:
    """What a write to `path` reaches: ("new", path), ("file", the regular file itself, links resolved) or
    ("stream", path) for a FIFO or a character device. Anything else is refused (InputFileError, exit 4)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            raise _refuse(path, option, f"is a symbolic link to a missing file ({os.readlink(path)})",
                          fix="point it at an existing file, or give the file's own path") from None
        return "new", path
    except NotADirectoryError:
        raise _refuse(path, option, "is inside something that is not a folder") from None
    except OSError as exc:
        raise _refuse(path, option, f"cannot be examined: {exc.strerror or exc}") from None
    mode = info.st_mode
    if stat.S_ISDIR(mode):
        raise _refuse(path, option, "names a folder, not a file", fix="give a file name")
    if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode):
        return "stream", path
    if not stat.S_ISREG(mode):
        kind = "a socket" if stat.S_ISSOCK(mode) else "a block device" if stat.S_ISBLK(mode) else "not a file"
        raise _refuse(path, option, f"is {kind}", fix="give a regular file, a FIFO, a character device or '-'")
    return "file", _linked_file(path, info, option) if os.path.islink(path) else path


def _linked_file(path: Path, info: os.stat_result, option: str) -> Path:
    """The regular file a symbolic link leads to, by a path that can be renamed over."""
    real = Path(os.path.realpath(path))
    try:
        same = os.path.samestat(os.stat(real), info)
    except OSError:
        same = False
    if not same:  # e.g. /proc/self/fd/N naming a deleted file: nothing to rename over
        raise _refuse(path, option, "is a link whose target cannot be named", fix="give the file's own path")
    return real


def check_output_path(path: Path, option: str = "-o") -> Path:
    """Refuse, before any work, an output that cannot be written: a folder, a socket, a link to nothing, a
    missing or unwritable folder (InputFileError, exit 4). `-` (standard output) is always accepted."""
    if is_stdout(path):
        return path
    kind, target = _target(path, option)
    if kind == "stream":
        if not os.access(target, os.W_OK):
            raise _refuse(path, option, "is not writable by this user")
        return path
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise _refuse(path, option, f"folder {folder} does not exist", fix="create it first")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise _refuse(path, option, f"folder {folder} is not writable by this user",
                      fix="choose a folder you can write")
    if kind == "file" and not os.access(target, os.W_OK):
        raise _refuse(path, option, "the file is not writable by this user")
    return path


def write_output(path: Path, text: str, option: str = "-o", what: str = "report") -> None:
    """Write `text` where `path` says (see the module's docstring); checked again, as it may have changed since
    `check_output_path`. A failed write is an OutputError (one line, exit 74) and leaves no temporary file."""
    if is_stdout(path):

        write_stdout(text)
        return
    kind, target = _target(path, option)
    data = text.encode("utf-8")
    if kind == "stream":
        _write_stream(path, data, what)
    else:
        _replace(target, data, path, what)


def write_atomically(path: Path, text: str) -> None:
    """`write_output` for callers that always name a file (kept for them)."""
    write_output(path, text)


def _failed(shown_path: Path, what: str, exc: OSError, folder: Path | None = None) -> OutputError:
    reason = exc.strerror or str(exc)
    if exc.errno in _NO_ROOM:
        fix = "free some space or choose another file"
    elif exc.errno == errno.ENOENT and folder is not None:
        fix = f"the folder {folder} went away while linkcheck ran; create it again or choose another file"
    elif exc.errno == errno.EPIPE:
        reason, fix = "its reader closed it before the end", "keep the reader open until linkcheck exits"
    else:
        fix = "choose another file"
    return OutputError(f"{shown_path}: cannot write the {what}: {reason}", fix=fix)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _replace(target: Path, data: bytes, shown_path: Path, what: str) -> None:
    """`replace_file`: a temporary file beside `target`, renamed over it; a reader sees the old file or the new
    one; a failure (or Ctrl-C) leaves the old one untouched and removes the temporary file."""
    folder = target.parent if str(target.parent) else Path(".")
    try:
        replace_file(target, data)
    except OSError as exc:
        raise _failed(shown_path, what, exc, folder) from None


def _open_stream(path: Path, what: str) -> int:
    """Open a FIFO or a character device for writing, never creating or truncating it; without blocking, so
    that a FIFO nobody reads is an error after FIFO_WAIT_S instead of a hang."""
    flags = os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    deadline = time.monotonic() + FIFO_WAIT_S
    while True:
        try:
            fd = os.open(path, flags)
        except OSError as exc:
            if exc.errno != errno.ENXIO:
                raise _failed(path, what, exc) from None
            if time.monotonic() >= deadline:
                raise OutputError(f"{path}: cannot write the {what}: no process is reading this FIFO",
                                  fix=f"start its reader first (e.g. cat {shlex.quote(str(path))})") from None
            time.sleep(_FIFO_POLL_S)
            continue
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        return fd


def _write_stream(path: Path, data: bytes, what: str) -> None:
    """Write straight into a FIFO or a character device (a terminal, /dev/null): no temporary file, no rename."""
    fd = _open_stream(path, what)
    try:
        _write_all(fd, data)
    except OSError as exc:
        raise _failed(path, what, exc) from None
    finally:
        os.close(fd)

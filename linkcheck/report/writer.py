"""Writing a report file: the target checked before any work, then written whole or not at all."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from linkcheck.errors import InputFileError, OutputError


def check_output_path(path: Path, option: str = "-o") -> Path:
    """Refuse, before any work, a report path whose folder is missing or that this user cannot write."""
    folder = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise InputFileError(str(path), f"{option} names a folder, not a file", fix="give a file name")
    if not folder.is_dir():
        raise InputFileError(str(path), f"{option}: folder {folder} does not exist", fix="create it first")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputFileError(str(path), f"{option}: folder {folder} is not writable by this user",
                             fix="choose a folder you can write")
    if path.exists() and not os.access(path, os.W_OK):
        raise InputFileError(str(path), f"{option}: the file is not writable by this user")
    return path


def write_atomically(path: Path, text: str) -> None:
    """Write `text` to a temporary file beside `path`, then rename it over `path`: a reader sees the old file
    or the new one, and a failed write leaves the old one untouched (OutputError, exit 74)."""
    folder = path.parent if str(path.parent) else Path(".")
    umask = os.umask(0)
    os.umask(umask)
    handle = tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=folder, prefix=f".{path.name}.",  # noqa: SIM115
                                         suffix=".tmp", delete=False)
    try:
        with handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(handle.name, 0o666 & ~umask)
        os.replace(handle.name, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(handle.name)
        raise OutputError(f"{path}: cannot write the report: {exc.strerror or exc}",
                          fix="free some space or choose another file") from None

"""The folder a live run saves its bundle in: the default name, and the refusal, before any work, of one that
cannot receive a bundle.

Apart from the bundle format (bundle.py): a `check` runs this before it contacts the nodes, and the format's
code (hashing, JSON) need not load before the connections start.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from linkcheck.errors import BundleError


def default_save_dir() -> Path:
    return Path(f"linkcheck-{dt.datetime.now().strftime('%Y%m%d-%H%M%S')}")


def check_save_dir(directory: Path, option: str = "--save") -> None:
    """Refuse, before any work, a bundle folder that `write_bundle` could not fill: a file, a folder that is
    not empty, or a place this user cannot write."""
    if directory.exists() or directory.is_symlink():
        if not directory.is_dir():
            raise BundleError(str(directory), f"{option} names a file, not a folder", fix="choose a new folder")
        if any(directory.iterdir()):
            raise BundleError(str(directory), f"{option} folder is not empty", fix="choose a new folder")
        writable = directory
    else:
        writable = next((p for p in directory.absolute().parents if p.exists()), Path("/"))
        if not writable.is_dir():
            raise BundleError(str(directory), f"{option}: {writable} is a file, not a folder")
    if not os.access(writable, os.W_OK | os.X_OK):
        raise BundleError(str(directory), f"{option}: {writable} is not writable by this user",
                          fix="choose a folder you can write")
    if writable != directory:
        _probe(directory, writable, option)


def _probe(directory: Path, existing: Path, option: str) -> None:
    """Create the missing folders and remove them again: a place root may write to on paper (/proc, /sys, a
    read-only mount) is refused here, before any work, instead of after the inspection."""
    missing = [directory.absolute()]
    while missing[-1].parent != existing and missing[-1].parent != missing[-1]:
        missing.append(missing[-1].parent)
    created: list[Path] = []
    try:
        for folder in reversed(missing):
            folder.mkdir()
            created.append(folder)
    except OSError as exc:
        raise BundleError(str(directory), f"{option}: cannot create it: {exc.strerror or exc}",
                          fix="choose a folder you can write") from None
    finally:
        for folder in reversed(created):
            folder.rmdir()

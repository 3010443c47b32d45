"""The systemd units linkcheck ships (units/) and `linkcheck service install`: each unit written under ROOT/etc/
systemd/system with this installation's linkcheck, configuration, baseline and textfile folder filled in, and
`--uninstall`, which removes exactly those files.

The shipped files are complete units (`systemd-analyze verify` accepts them as they are): their ExecStart names
`/usr/bin/env linkcheck`, which the install replaces with the absolute path of the linkcheck that runs it, since a
service's PATH does not hold a virtual environment's bin/ folder."""

from __future__ import annotations

import errno
import os
import shlex
import stat
from importlib import resources
from pathlib import Path

import msgspec

from linkcheck.errors import OutputError, UsageError

UNITS = ("linkcheck-boot.service", "linkcheck-check.service", "linkcheck-check.timer")
UNIT_DIR = Path("etc/systemd/system")
DEFAULT_CONFIG = Path("/etc/linkcheck/linkcheck.yaml")
DEFAULT_TEXTFILE_DIR = Path("/var/lib/prometheus/node-exporter")  # Debian's prometheus-node-exporter reads it
_SHIPPED_EXEC = "/usr/bin/env linkcheck"


class UnitSettings(msgspec.Struct, frozen=True):
    """What an installation fills into the shipped units."""

    linkcheck: str  # the absolute path of the linkcheck program
    config: Path = DEFAULT_CONFIG
    textfile_dir: Path = DEFAULT_TEXTFILE_DIR
    baseline: str | None = None


def shipped(name: str) -> str:
    """A unit's text as shipped in the package."""
    return resources.files("linkcheck.service").joinpath("units").joinpath(name).read_text(encoding="utf-8")


def _run_options(settings: UnitSettings) -> str:
    options = []
    if settings.config != DEFAULT_CONFIG:
        options += ["--config", str(settings.config)]
    if settings.textfile_dir != DEFAULT_TEXTFILE_DIR:
        options += ["--textfile-dir", str(settings.textfile_dir)]
    if settings.baseline is not None:
        options += ["--baseline", settings.baseline]
    return "".join(f" {shlex.quote(o)}" for o in options)


def rendered(name: str, settings: UnitSettings) -> str:
    """A unit as `install` writes it: this linkcheck's path, the configuration, textfile folder and baseline."""
    text = shipped(name).replace(_SHIPPED_EXEC, shlex.quote(settings.linkcheck))
    text = text.replace(f"ConditionPathExists={DEFAULT_CONFIG}", f"ConditionPathExists={settings.config}")
    text = text.replace(f"ReadWritePaths=-{DEFAULT_TEXTFILE_DIR}", f"ReadWritePaths=-{settings.textfile_dir}")
    lines = [line + _run_options(settings) if line.startswith("ExecStart=") else line for line in text.split("\n")]
    return "\n".join(lines)


def _checked(value: str, what: str) -> str:
    """A value that goes into a unit file: one line, no systemd specifier (%) or variable ($) it would expand."""
    if not value or any(c in value for c in "\n\r%$\\\"'") or any(ord(c) < 32 for c in value):
        raise UsageError(f"{what} {value!r} cannot go into a unit file (empty, a newline, a quote, % or $)")
    return value


def settings_for(linkcheck: str, config: Path, textfile_dir: Path, baseline: str | None) -> UnitSettings:
    """The settings, refused as bad input when a value cannot stand in a unit file or a path is relative."""
    for path, what in ((Path(linkcheck), "the linkcheck program"), (config, "--config"),
                       (textfile_dir, "--textfile-dir")):
        if not path.is_absolute():
            raise UsageError(f"{what} {str(path)!r} is not an absolute path", fix="give the full path")
        _checked(str(path), what)
    if baseline is not None:
        _checked(baseline, "--baseline")
    return UnitSettings(linkcheck=linkcheck, config=config, textfile_dir=textfile_dir, baseline=baseline)


def _target(root: Path, name: str) -> Path:
    return root / UNIT_DIR / name


def _write(path: Path, text: str) -> None:
    """Written whole or not at all (a temporary file renamed over it), never through a link at the unit's name."""
    if path.is_symlink():
        raise OutputError(f"{path} is a symbolic link; linkcheck writes no unit through a link it did not make",
                          fix="remove the link, then install again")
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.linkcheck.tmp")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, path)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise OutputError(f"{path}: cannot write the unit: {exc.strerror or exc}") from None


def install(root: Path, settings: UnitSettings) -> list[Path]:
    """Every unit written under ROOT/etc/systemd/system; the files written."""
    written = []
    for name in UNITS:
        path = _target(root, name)
        _write(path, rendered(name, settings))
        written.append(path)
    return written


def uninstall(root: Path) -> list[Path]:
    """The installed units removed (only regular files of linkcheck's names); the files removed."""
    removed = []
    for name in UNITS:
        path = _target(root, name)
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(mode):
            raise OutputError(f"{path} is not a regular file; left as it is", fix="remove it by hand if it is yours")
        try:
            path.unlink()
        except OSError as exc:
            raise OutputError(f"{path}: cannot remove: {exc.strerror or errno.errorcode.get(exc.errno or 0)}") \
                from None
        removed.append(path)
    return removed

"""Files that are not regular files, or far too large, wherever linkcheck reads: refused at once, never a hang.

Each case runs the CLI in a fresh interpreter under a timeout: a FIFO nobody writes would block a plain open()
for ever, /dev/zero would be read until memory runs out, a 10 GB sparse file would be read whole."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.adversarial.adversarial_helpers import HEALTHY, copy_healthy, manifest, one_line_error, run

SPARSE = 10 << 30


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def _sparse(path: Path) -> None:
    with path.open("wb") as handle:
        handle.truncate(SPARSE)


MAKERS: dict[str, tuple[Callable[[Path], None], str]] = {
    "fifo": (_fifo, "FIFO"),
    "dev-zero": (_zero, "character device"),
    "sparse-10g": (_sparse, "larger than"),
}


def _special(tmp_path: Path, kind: str, name: str) -> tuple[Path, str]:
    make, reason = MAKERS[kind]
    path = tmp_path / name
    if path.exists() or path.is_symlink():
        path.unlink()
    make(path)
    return path, reason


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_config_playbook_profile_refused(tmp_path: Path, kind: str) -> None:
    config, reason = _special(tmp_path, kind, "linkcheck.yaml")
    one_line_error(run("diagnose", str(HEALTHY), "-c", str(config), cwd=tmp_path, timeout=30), 4, str(config), reason)
    one_line_error(run("collect", "-c", str(config), cwd=tmp_path, timeout=30), 4, str(config), reason)
    playbook, _ = _special(tmp_path, kind, "site.yaml")
    one_line_error(run("diagnose", str(HEALTHY), "-p", str(playbook), timeout=30), 4, str(playbook), reason)
    one_line_error(run("playbooks", "validate", str(playbook), timeout=30), 4, str(playbook), reason)
    folder = tmp_path / "books"
    folder.mkdir()
    inside, _ = _special(folder, kind, "rules.yaml")
    one_line_error(run("diagnose", str(HEALTHY), "-p", str(folder), timeout=30), 4, str(inside), reason)
    profile, _ = _special(tmp_path, kind, "site-profile.yaml")
    one_line_error(run("profiles", "validate", str(profile), timeout=30), 4, str(profile), reason)


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_parse_file_refused_and_stdin_still_read(tmp_path: Path, kind: str) -> None:
    path, reason = _special(tmp_path, kind, "out.txt")
    one_line_error(run("parse", "os_release", str(path), timeout=30), 4, str(path), reason)
    ok = run("parse", "os_release", "-", stdin=b"ID=ubuntu\nVERSION_ID=\"24.04\"\n", timeout=30)
    assert ok.returncode == 0 and "24.04" in ok.stdout, ok.stderr


def test_parse_stdin_over_the_cap_refused() -> None:
    one_line_error(run("parse", "os_release", "-", stdin=b"x" * ((16 << 20) + 1), timeout=60), 4, "larger than")


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_baseline_and_history_files_refused(tmp_path: Path, kind: str) -> None:
    baseline, reason = _special(tmp_path, kind, "base.json")
    one_line_error(run("baseline", "show", str(baseline), timeout=30), 4, str(baseline), reason)
    one_line_error(run("diagnose", str(HEALTHY), "--baseline", str(baseline), timeout=30), 4, str(baseline), reason)
    data = tmp_path / "xdg"
    (data / "linkcheck" / "history").mkdir(parents=True)
    history, _ = _special(data / "linkcheck" / "history", kind, "pair.jsonl")
    proc = run("history", env={**os.environ, "XDG_DATA_HOME": str(data)}, timeout=30)
    one_line_error(proc, 4, str(history), reason)


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_manifest_refused(tmp_path: Path, kind: str) -> None:
    bundle = copy_healthy(tmp_path)
    _special(bundle, kind, "manifest.json")
    reason = "symbolic link" if kind == "dev-zero" else MAKERS[kind][1]
    for command in ("diagnose", "verify", "report"):
        one_line_error(run(command, str(bundle), timeout=30), 4, "manifest.json", reason)


@pytest.mark.parametrize("kind", sorted(MAKERS))
def test_sums_not_read_by_verify(tmp_path: Path, kind: str) -> None:
    bundle = copy_healthy(tmp_path)
    _special(bundle, kind, "SHA256SUMS")
    proc = run("verify", str(bundle), timeout=30)
    assert proc.returncode == 2, proc.stderr
    assert "SHA256SUMS" in proc.stdout and "Traceback" not in proc.stderr


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_capture_file_never_opened(tmp_path: Path, kind: str) -> None:
    bundle = copy_healthy(tmp_path)
    rel = next(c["stdout"] for c in manifest(bundle)["captures"] if c["spec"] == "hostname")  # type: ignore[index]
    _special(bundle, kind, rel)
    proc = run("verify", str(bundle), timeout=30)
    assert proc.returncode == 2 and rel in proc.stdout, proc.stdout
    proc = run("diagnose", str(bundle), "--allow-unverified", "-f", "json", timeout=30)
    assert proc.returncode == 3 and "Traceback" not in proc.stderr, proc.stderr


def _nest(top: Path, depth: int) -> None:
    """`depth` folders inside each other under `top`, made through folder descriptors (far past PATH_MAX)."""
    fd = os.open(top, os.O_RDONLY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        child = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = child
    os.close(fd)


def _unnest(top: Path) -> None:
    fds = [os.open(top, os.O_RDONLY)]
    while True:
        try:
            fds.append(os.open("d", os.O_RDONLY, dir_fd=fds[-1]))
        except FileNotFoundError:
            break
    os.close(fds.pop())
    while fds:
        fd = fds.pop()
        os.rmdir("d", dir_fd=fd)
        os.close(fd)


@pytest.mark.parametrize("depth", [40, 10_000])
def test_deep_folder_tree_bounded(tmp_path: Path, depth: int) -> None:
    bundle = copy_healthy(tmp_path)
    _nest(bundle, depth)
    try:
        for command in (("verify",), ("diagnose",), ("report",), ("anonymize",)):
            extra = (str(tmp_path / "anon"),) if command == ("anonymize",) else ()
            line = one_line_error(run(*command, str(bundle), *extra, timeout=60), 4, str(bundle))
            assert "nested deeper" in line and "RecursionError" not in line
    finally:
        _unnest(bundle)


@pytest.mark.parametrize("kind", ["fifo", "zero", "dangling", "folder"])
@pytest.mark.parametrize("command", [("diagnose", "{bundle}"),
                                     ("check", "-n", "a=u@198.18.251.1", "-n", "b=u@198.18.251.2")])
def test_default_config_not_a_regular_file_is_refused_not_skipped(tmp_path: Path, kind: str,
                                                                    command: tuple[str, ...]) -> None:
    """./linkcheck.yaml in place but not a regular file: refused like the same file given with -c (exit 4),
    not silently passed over so that the run goes without its thresholds and playbooks."""
    bundle = copy_healthy(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    target = work / "linkcheck.yaml"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "zero":
        target.symlink_to("/dev/zero")
    elif kind == "dangling":
        target.symlink_to("nowhere.yaml")
    else:
        target.mkdir()
    args = [a.format(bundle=bundle) for a in command]
    one_line_error(run(*args, cwd=work, timeout=30), 4, "linkcheck.yaml")

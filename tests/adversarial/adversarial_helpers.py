"""Shared helpers of the adversarial suites: run the CLI (in process, or as a program where the process is what is
tested), and check how it failed (a program's or an in-process run's result)."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from tests.conftest import CliResult, run_cli

ROOT = Path(__file__).resolve().parents[2]
HEALTHY = ROOT / "fixtures" / "healthy"
RAW_CONTROL = ("\x1b", "\x07", "\x9b", "\x9d", "\r", "\x08")


def run(*args: str, stdin: bytes | None = None, timeout: float = 60, cwd: Path | None = None,
        env: Mapping[str, str | None] | None = None) -> CliResult:
    """The CLI in process (tests/conftest.py run_cli): exit code, stdout and stderr apart, `env` over this
    environment; the timeout is the test's upper bound on time."""
    return run_cli(*args, stdin=stdin, cwd=cwd, env=env, timeout=timeout)


def run_process(*args: str, stdin: bytes | None = None, timeout: float = 60, cwd: Path | None = None,
                **kwargs: object) -> subprocess.CompletedProcess[str]:
    """The CLI in a fresh interpreter, for what only a process shows (its own file descriptors, signals); the
    timeout is the test's upper bound on time."""
    proc = subprocess.run([sys.executable, "-m", "linkcheck.cli", *args], capture_output=True, input=stdin,
                          timeout=timeout, cwd=cwd, **kwargs)  # type: ignore[call-overload]
    return subprocess.CompletedProcess(proc.args, proc.returncode,
                                       proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace"))


def one_line_error(proc: subprocess.CompletedProcess[str] | CliResult, code: int, *needles: str) -> str:
    """Exit `code`, no traceback, exactly one line on stderr holding every needle, no raw control character."""
    assert proc.returncode == code, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr[-2000:]
    for needle in needles:
        assert needle in lines[0], lines[0]
    assert_no_raw_controls(proc.stderr)
    return lines[0]


def assert_no_raw_controls(text: str) -> None:
    for char in RAW_CONTROL:
        assert char not in text, f"raw {char!r} reached the terminal: {text[:300]!r}"


def copy_healthy(tmp_path: Path, name: str = "bundle") -> Path:
    target = tmp_path / name
    shutil.copytree(HEALTHY, target)
    return target


def manifest(bundle: Path) -> dict[str, object]:
    data = json.loads((bundle / "manifest.json").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def save_manifest(bundle: Path, data: object) -> None:
    (bundle / "manifest.json").write_text(json.dumps(data), encoding="utf-8")


def rewrite_capture(bundle: Path, node: str, spec: str, content: bytes, *, rehash: bool = True) -> None:
    """Replace one capture's stdout; unless told otherwise, as if the node had answered so: its sha256, the
    manifest's files_sha256 and SHA256SUMS written again, so that the bundle verifies."""

    data = manifest(bundle)
    captures = data["captures"]
    assert isinstance(captures, list)
    entry = next(c for c in captures if c["node"] == node and c["spec"] == spec)
    (bundle / entry["stdout"]).write_bytes(content)
    if not rehash:
        save_manifest(bundle, data)
        return
    files = data["files"]
    assert isinstance(files, dict)
    files[entry["stdout"]] = hashlib.sha256(content).hexdigest()
    reseal(bundle, data)


def reseal(bundle: Path, data: dict[str, object]) -> None:
    """Save the manifest `data` whose file table was edited, with its files_sha256 and SHA256SUMS written again,
    as if linkcheck had saved the bundle so: it verifies."""
    from linkcheck.bundle.digests import DIGEST_KEY, SUMS, files_digest, sums_text

    files = data["files"]
    assert isinstance(files, dict)
    data[DIGEST_KEY] = files_digest(files)
    save_manifest(bundle, data)
    sums = {**files, "manifest.json": hashlib.sha256((bundle / "manifest.json").read_bytes()).hexdigest()}
    (bundle / SUMS).write_text(sums_text(sums), encoding="utf-8", errors="surrogateescape")

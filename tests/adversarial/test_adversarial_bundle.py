"""Broken, hostile or unverifiable bundles: exit 4 with the place named, or skipped captures, never a pass."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.adversarial.adversarial_helpers import copy_healthy, manifest, one_line_error, run, save_manifest


def _first_entry(data: dict[str, Any]) -> dict[str, Any]:
    return data["captures"][0]


FIELD_CASES = [
    ("duration_s", "abc", "duration_s"),
    ("duration_s", True, "duration_s"),
    ("duration_s", -1, "duration_s"),
    ("duration_s", [1], "duration_s"),
    ("stdout", 5, "stdout"),
    ("stdout", ["a"], "stdout"),
    ("stdout", "a/\u0000x", "stdout"),
    ("stdout", "/etc/passwd", "stdout"),
    ("stdout", "", "stdout"),
    ("stderr", {"x": 1}, "stderr"),
    ("exit_status", "0", "exit_status"),
    ("exit_status", True, "exit_status"),
    ("exit_status", 1.5, "exit_status"),
    ("arg", 7, "arg"),
    ("command", 7, "command"),
    ("skipped", 1, "skipped"),
    ("meta", [1, 2], "meta"),
    ("node", 1, "node"),
    ("spec", None, "spec"),
    ("node", "", "node"),
]


@pytest.mark.parametrize(("key", "value", "needle"), FIELD_CASES)
def test_wrong_field_type_is_bad_input(tmp_path: Path, key: str, value: Any, needle: str) -> None:
    bundle = copy_healthy(tmp_path)
    data = manifest(bundle)
    _first_entry(data)[key] = value
    save_manifest(bundle, data)
    one_line_error(run("diagnose", str(bundle), timeout=30), 4, "manifest.json", needle)


@pytest.mark.parametrize("version", [0, -1, True, False, 3, "1", 1.0, None, [1]])
def test_format_version_refused(tmp_path: Path, version: Any) -> None:
    bundle = copy_healthy(tmp_path)
    data = manifest(bundle)
    data["format_version"] = version
    save_manifest(bundle, data)
    one_line_error(run("diagnose", str(bundle), timeout=30), 4, "format_version")


@pytest.mark.parametrize(("key", "value"), [
    ("files", []), ("files", "x"), ("files", {"a/hostname.stdout": 5}), ("files", {"a/hostname.stdout": "zz"}),
    ("nodes", [1]), ("collection_errors", "down"), ("collection_errors", {"a": 5}), ("captures", {}),
    ("captures", [5]), ("format", "other"),
])
def test_wrong_table_type_is_bad_input(tmp_path: Path, key: str, value: Any) -> None:
    bundle = copy_healthy(tmp_path)
    data = manifest(bundle)
    data[key] = value
    save_manifest(bundle, data)
    one_line_error(run("diagnose", str(bundle), timeout=30), 4, "manifest.json")


@pytest.mark.parametrize("content", [
    "[" * 100_000 + "]" * 100_000,
    '{"format": "linkcheck-bundle", "x": ' + "[" * 50_000 + "]" * 50_000 + "}",
    "\xff\xfe garbage",
    "",
    "null",
    '{"format": "linkcheck-bundle", "format_version": 1, "captures": [], "files": {}} trailing',
], ids=["deep-list", "deep-value", "not-utf8", "empty", "null", "trailing"])
def test_malformed_manifest_text(tmp_path: Path, content: str) -> None:
    (tmp_path / "manifest.json").write_bytes(content.encode("latin-1") if "\xff" in content else content.encode())
    one_line_error(run("diagnose", str(tmp_path), timeout=30), 4, "manifest.json")


def test_huge_manifest_refused_unread(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_bytes(b'{"format": "linkcheck-bundle", "pad": "' + b"x" * (17 << 20) + b'"}')
    one_line_error(run("diagnose", str(tmp_path), timeout=30), 4, "larger than")


def _verdict(bundle: Path) -> tuple[int, dict[str, Any]]:
    """Refused as it is (it does not verify); read with --allow-unverified, each problem said on stderr."""
    one_line_error(run("diagnose", str(bundle), "-f", "json", timeout=30), 4, str(bundle), "does not verify")
    proc = run("diagnose", str(bundle), "-f", "json", "--allow-unverified", timeout=30)
    assert "Traceback" not in proc.stderr and "UNVERIFIED" in proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def test_capture_without_hash_is_unverified_not_passed(tmp_path: Path) -> None:
    bundle = copy_healthy(tmp_path)
    data = manifest(bundle)
    rel = next(c["stdout"] for c in data["captures"] if c["spec"] == "hostname")
    del data["files"][rel]
    save_manifest(bundle, data)
    code, report = _verdict(bundle)
    assert code == 3 and report["verdict"] == "inconclusive"
    assert any("not hashed" in note for note in report["notes"])


def test_empty_files_table_is_never_a_pass(tmp_path: Path) -> None:
    bundle = copy_healthy(tmp_path)
    data = manifest(bundle)
    data["files"] = {}
    save_manifest(bundle, data)
    code, report = _verdict(bundle)
    # Nothing verified is nothing read: could not measure, never a pass and never a measured failure.
    assert code == 3 and report["verdict"] == "inconclusive"
    assert sum("not hashed" in note for note in report["notes"]) == len(data["captures"])


def test_huge_capture_is_skipped_with_reason(tmp_path: Path) -> None:
    import hashlib

    bundle = copy_healthy(tmp_path)
    data = manifest(bundle)
    entry = next(c for c in data["captures"] if c["spec"] == "dmesg")
    payload = b"x" * ((16 << 20) + 1)
    (bundle / entry["stdout"]).write_bytes(payload)
    data["files"][entry["stdout"]] = hashlib.sha256(payload).hexdigest()
    save_manifest(bundle, data)
    code, report = _verdict(bundle)
    assert code == 3
    assert any("16 MiB" in note for note in report["notes"])


@pytest.mark.parametrize("rel", ["../outside.stdout", "a/../../outside.stdout"])
def test_path_leaving_bundle_is_skipped(tmp_path: Path, rel: str) -> None:
    bundle = copy_healthy(tmp_path)
    (tmp_path / "outside.stdout").write_text("spark-a\n")
    data = manifest(bundle)
    entry = next(c for c in data["captures"] if c["spec"] == "hostname")
    entry["stdout"] = rel
    save_manifest(bundle, data)
    code, report = _verdict(bundle)
    assert code == 3 and any("leaves the bundle" in n for n in report["notes"])


def test_oversized_answer_at_collection_is_skipped_with_reason() -> None:
    from linkcheck.bundle.format import MAX_CAPTURE_BYTES
    from linkcheck.collect.collector import bounded
    from linkcheck.model import Capture

    small = Capture("a", "uptime", "cat /proc/uptime", "1 2\n")
    huge = Capture("a", "dmesg", "dmesg", "x" * (MAX_CAPTURE_BYTES + 1))
    kept, cut = bounded([small, huge])
    assert kept == small
    assert cut.stdout == "" and cut.skipped is not None and "16 MiB" in cut.skipped

"""Bundle round trip, and every kind of broken bundle gives a clear, located error or a skipped capture."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from linkcheck.bundle.format import Bundle, load_bundle, write_bundle
from linkcheck.errors import BundleError
from linkcheck.model import Capture


def _bundle() -> Bundle:
    return Bundle(
        captures=[
            Capture("a", "uptime", "cat /proc/uptime", "12.5 20.1\n", duration_s=0.01),
            Capture("b", "ethtool_m", "sudo -n ethtool -m enp1s0f1np1", "", "sudo: a password is required\n",
                    exit_status=1, arg="enp1s0f1np1", skipped="sudo refused"),
            Capture("a", "ib_write_bw", "ib_write_bw ...", "row\n",
                    meta={"kind": "rdma", "role": "client", "mode": "alone"}),
        ],
        nodes={"a": {"target": "spark-a"}, "b": {"target": "spark-b"}},
    )


def test_round_trip_keeps_identity_and_bytes(tmp_path: Path) -> None:
    write_bundle(_bundle(), tmp_path / "b1")
    loaded = load_bundle(tmp_path / "b1")
    assert [c.key for c in loaded.captures] == [c.key for c in _bundle().captures]
    eth = loaded.capture("b", "ethtool_m", "enp1s0f1np1")
    assert eth is not None and eth.skipped == "sudo refused" and eth.exit_status == 1
    assert eth.stderr == "sudo: a password is required\n"
    assert loaded.captures[2].meta == {"kind": "rdma", "role": "client", "mode": "alone"}
    assert loaded.problems == []


def test_refuses_non_empty_directory(tmp_path: Path) -> None:
    (tmp_path / "x").write_text("")
    with pytest.raises(BundleError, match="not empty"):
        write_bundle(_bundle(), tmp_path)


def test_missing_and_altered_files_become_skipped_captures(tmp_path: Path) -> None:
    write_bundle(_bundle(), tmp_path)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    (tmp_path / manifest["captures"][0]["stdout"]).write_text("99 99\n")
    (tmp_path / manifest["captures"][2]["stdout"]).unlink()
    loaded = load_bundle(tmp_path)
    assert loaded.captures[0].skipped is not None and "sha256 mismatch" in loaded.captures[0].skipped
    assert loaded.captures[2].skipped is not None and "missing from bundle" in loaded.captures[2].skipped
    assert len(loaded.problems) == 2


@pytest.mark.parametrize(
    ("content", "message", "line"),
    [
        ('{"format": "linkcheck-bundle",\n "format_version": 1,\n "captures": [}\n', "malformed JSON", 3),
        ('{"format": "other"}', "not a linkcheck-bundle manifest", None),
        ('{"format": "linkcheck-bundle", "format_version": 99, "captures": []}', "not supported", None),
        ('{"format": "linkcheck-bundle", "format_version": 1}', "no 'captures' list", None),
        ('{"format": "linkcheck-bundle", "format_version": 1, "captures": [{"x": 1}]}', "has no 'node'", None),
    ],
)
def test_malformed_manifest(tmp_path: Path, content: str, message: str, line: int | None) -> None:
    (tmp_path / "manifest.json").write_text(content)
    with pytest.raises(BundleError, match=message) as info:
        load_bundle(tmp_path)
    assert info.value.line == line


def test_not_a_bundle(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match="no such bundle"):
        load_bundle(tmp_path / "nope")
    with pytest.raises(BundleError, match="not a linkcheck bundle"):
        load_bundle(tmp_path)


def test_path_escape_is_refused(tmp_path: Path) -> None:
    write_bundle(_bundle(), tmp_path / "b")
    manifest = json.loads((tmp_path / "b" / "manifest.json").read_text())
    manifest["captures"][0]["stdout"] = "../../etc/passwd"
    (tmp_path / "b" / "manifest.json").write_text(json.dumps(manifest))
    loaded = load_bundle(tmp_path / "b")
    assert loaded.captures[0].stdout == "" and "leaves the bundle" in (loaded.captures[0].skipped or "")

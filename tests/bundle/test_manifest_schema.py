"""manifest.json is read into its model: an unknown key or a field of the wrong type is named with its line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from linkcheck.bundle.format import load_bundle
from linkcheck.errors import BundleError

HEALTHY = Path(__file__).resolve().parents[2] / "fixtures" / "healthy"


@pytest.mark.parametrize(("old", "new", "needle"), [
    ('"tool_version"', '"extra": 1, "tool_version"', "unknown key 'extra'"),
    ('"exit_status": 0', '"exit_status": "0"', "'captures[0].exit_status' is a JSON str (expected: an integer"),
    ('"exit_status": 0', '"exit_status": 1e999', "'captures[0].exit_status'"),
])
def test_a_bad_field_is_named_with_its_line(tmp_path: Path, old: str, new: str, needle: str) -> None:
    bundle = tmp_path / "b"
    shutil.copytree(HEALTHY, bundle)
    text = (bundle / "manifest.json").read_text(encoding="utf-8")
    assert old in text
    (bundle / "manifest.json").write_text(text.replace(old, new, 1), encoding="utf-8")
    with pytest.raises(BundleError) as caught:
        load_bundle(bundle)
    assert needle in str(caught.value) and "\n" not in str(caught.value)
    assert caught.value.line == text[:text.index(old)].count("\n") + 1

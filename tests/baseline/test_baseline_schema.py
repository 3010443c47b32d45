"""A baseline file is read into its model: unknown keys and wrong types are refused with the key's line."""

from __future__ import annotations

from pathlib import Path

import pytest

from linkcheck.baseline.store import BaselineError, from_json, read_any, read_baseline
from linkcheck.facts.snapshot_model import Baseline

GOOD = Path(__file__).resolve().parents[2] / "fixtures" / "drift-cable-swap" / "baseline.json"


@pytest.mark.parametrize(("old", "new", "needle"), [
    ('"schema_version": 1,', '"schema_version": 1, "extra": 1,', "unknown key 'extra'"),
    ('"forced": false', '"forced": "no"', "'source.forced' is a JSON str (expected: bool)"),
    ('"nccl_busbw_gbs": 23.79', '"nccl_busbw_gbs": Infinity', "a rate must be a finite number"),
    ('"nccl_busbw_gbs": 23.79', '"nccl_busbw_gbs": 1e999', "a rate must be a finite number"),
])
def test_a_bad_field_is_named_with_its_line(tmp_path: Path, old: str, new: str, needle: str) -> None:
    text = GOOD.read_text(encoding="utf-8")
    assert old in text
    forged = tmp_path / "b.json"
    forged.write_text(text.replace(old, new, 1), encoding="utf-8")
    with pytest.raises(BaselineError) as caught:
        read_baseline(forged)
    assert needle in str(caught.value)
    assert caught.value.line == text[:text.index(old)].count("\n") + 1
    assert caught.value.exit_code == 4


def test_the_fixture_still_loads() -> None:
    assert read_baseline(GOOD).snapshot.performance.nccl_busbw_gbs == 23.79


def test_the_schema_picks_the_file_shape_and_a_pairs_reader_refuses_a_clusters(tmp_path: Path) -> None:
    text = GOOD.read_text(encoding="utf-8")
    assert isinstance(from_json(text, str(GOOD)), Baseline) and isinstance(read_any(GOOD), Baseline)
    forged = tmp_path / "c.json"
    forged.write_text(text.replace('"schema": "linkcheck-baseline"', '"schema": "linkcheck-cluster-baseline"', 1),
                      encoding="utf-8")
    with pytest.raises(BaselineError, match="'cluster' is missing"):  # read as a cluster's, which it is not
        read_any(forged)
    with pytest.raises(BaselineError, match="not a linkcheck baseline"):
        read_baseline(forged)


def test_a_history_field_of_the_wrong_type_is_named_with_its_line(tmp_path: Path) -> None:
    from linkcheck.baseline.history import HistoryError, read_records

    good = '{"schema":"linkcheck-history","schema_version":1,"time":"t","verdict":"pass","later_field":1}\n'
    path = tmp_path / "pair.jsonl"
    path.write_text(good + good.replace('"verdict"', '"exit_code":"0","verdict"'), encoding="utf-8")
    with pytest.raises(HistoryError) as caught:
        read_records(path)
    assert caught.value.line == 2 and "'exit_code' is a JSON str (expected: int)" in str(caught.value)
    path.write_text(good, encoding="utf-8")
    assert read_records(path)[0]["later_field"] == 1  # a key a later linkcheck adds is kept

"""Parser examples as data: every tests/parsers/cases/<kind>/<case>.txt through the parser of <kind> (the kinds of
`linkcheck parse`) gives exactly <case>.expected.json, the record as plain data (records.plain, properties
included, as `linkcheck parse KIND FILE --format json` prints it). Each folder's README.md says where each
input comes from. Errors and edge behaviour stay ordinary tests beside this one.

A new case: put the tool's output in <case>.txt, write <case>.expected.json by hand or from
`linkcheck parse KIND <case>.txt --format json` (its "record"), check it by eye, and name the source in README.md.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from linkcheck.parsers import PARSERS, get_parser
from linkcheck.records import plain

CASES = Path(__file__).resolve().parent / "cases"


def as_plain_data(record: object) -> Any:
    """The record as JSON-able plain data (dicts, lists, text, numbers, None), compared as JSON reads back."""
    return json.loads(json.dumps(plain(record, properties=True), default=str))


def _cases() -> list[Any]:
    return [pytest.param(path.parent.name, path, id=f"{path.parent.name}/{path.stem}")
            for path in sorted(CASES.glob("*/*.txt"))]


@pytest.mark.parametrize(("kind", "path"), _cases())
def test_case_gives_its_expected_record(kind: str, path: Path) -> None:
    expected = json.loads(path.with_suffix(".expected.json").read_text(encoding="utf-8"))
    record = get_parser(kind)(path.read_text(encoding="utf-8"))
    assert as_plain_data(record) == expected


def test_every_case_folder_is_a_kind_with_a_readme() -> None:
    folders = sorted(p for p in CASES.iterdir() if p.is_dir())
    assert folders
    for folder in folders:
        assert folder.name in PARSERS, f"{folder.name}: not a kind of `linkcheck parse`"
        assert (folder / "README.md").is_file(), f"{folder}: no README.md with the cases' sources"
        inputs = {p.stem for p in folder.glob("*.txt")}
        outputs = {p.name.removesuffix(".expected.json") for p in folder.glob("*.expected.json")}
        assert inputs == outputs, f"{folder.name}: inputs without expected records or the reverse"
        readme = (folder / "README.md").read_text(encoding="utf-8")
        assert all(f"`{name}.txt`" in readme for name in inputs), f"{folder.name}: a case without its source"

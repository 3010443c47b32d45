"""Parser examples as data: beside an input file INPUT, a case file INPUT.<kind>.expected.json holds exactly the
record the parser of <kind> (a kind of `linkcheck parse`) gives for INPUT, as plain data (records.plain,
properties included, as `linkcheck parse KIND INPUT --format json` prints it). One test reads every case file in
tests/samples (the tools' outputs, sources in each real/PROVENANCE.md) and in tests/parsers/cases/<kind>/
(examples written for one parser; each folder's README.md says where each input comes from). Errors and edge
behaviour stay ordinary tests.

A new case: put the tool's output in INPUT, write INPUT.<kind>.expected.json by hand or from
`linkcheck parse KIND INPUT --format json` (its "record"), check it by eye against the output, and name the
source (PROVENANCE.md or the folder's README.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from linkcheck.parsers import PARSERS, get_parser
from linkcheck.records import plain

HERE = Path(__file__).resolve().parent
CASES = HERE / "cases"
SAMPLES = HERE.parent / "samples"
SUFFIX = ".expected.json"


def as_plain_data(record: object) -> Any:
    """The record as JSON-able plain data (dicts, lists, text, numbers, None), compared as JSON reads back."""
    return json.loads(json.dumps(plain(record, properties=True), default=str))


def is_case_file(path: Path) -> bool:
    """A case file, not a tool's output: the folders' other readers (provenance, fuzz seeds) leave these out."""
    return path.name.endswith(SUFFIX)


def input_and_kind(case: Path) -> tuple[Path, str]:
    """INPUT.<kind>.expected.json -> (INPUT, kind)."""
    name, _, kind = case.name.removesuffix(SUFFIX).rpartition(".")
    return case.with_name(name), kind


def case_files() -> list[Path]:
    return sorted([*SAMPLES.rglob(f"*{SUFFIX}"), *CASES.rglob(f"*{SUFFIX}")])


def _cases() -> list[Any]:
    return [pytest.param(case, id=str(case.relative_to(HERE.parent)).removesuffix(SUFFIX)) for case in case_files()]


@pytest.mark.parametrize("case", _cases())
def test_case_gives_its_expected_record(case: Path) -> None:
    path, kind = input_and_kind(case)
    expected = json.loads(case.read_text(encoding="utf-8"))
    record = get_parser(kind)(path.read_text(encoding="utf-8"))
    assert as_plain_data(record) == expected


def test_every_case_names_an_input_beside_it_and_a_kind() -> None:
    cases = case_files()
    assert len(cases) >= 150
    for case in cases:
        path, kind = input_and_kind(case)
        assert kind in PARSERS, f"{case}: {kind} is not a kind of `linkcheck parse`"
        assert path.is_file() and not is_case_file(path), f"{case}: no input {path.name} beside it"


def test_every_case_folder_is_a_kind_with_a_readme() -> None:
    folders = sorted(p for p in CASES.iterdir() if p.is_dir())
    assert folders
    for folder in folders:
        assert folder.name in PARSERS, f"{folder.name}: not a kind of `linkcheck parse`"
        assert (folder / "README.md").is_file(), f"{folder}: no README.md with the cases' sources"
        inputs = {p.name for p in folder.glob("*.txt")}
        cased = {input_and_kind(p)[0].name for p in folder.glob(f"*{SUFFIX}")}
        assert {input_and_kind(p)[1] for p in folder.glob(f"*{SUFFIX}")} == {folder.name}, folder
        assert inputs == cased, f"{folder.name}: inputs without expected records or the reverse"
        readme = (folder / "README.md").read_text(encoding="utf-8")
        assert all(f"`{name}`" in readme for name in inputs), f"{folder.name}: a case without its source"

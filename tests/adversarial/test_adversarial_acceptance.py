"""A forged or damaged acceptance.json is read through its model (accept/record.py): named in one line (file, line,
what is wrong), never shown, and the report keeps the diagnosis's exit code, as docs/commands.md says of a bundle
file that is only left unread. One that is not a regular file fails `verify`, so the bundle is refused (exit 4)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from linkcheck.accept.record import AcceptanceRecord, load_acceptance
from linkcheck.bundle.acceptance import add_files
from linkcheck.bundle.verify import verify_bundle
from tests.adversarial.adversarial_helpers import copy_healthy, one_line_error
from tests.conftest import InProcessCli

BAND = {"band": "fail_below", "operator": ">=", "value": 92, "unit": "Gb/s", "source": "s", "on_miss": "FAIL"}
CHECK = {"id": "rdma_alone_gbps", "subject": "p a->b", "status": "PASS",
         "measured": {"unit": "Gb/s", "samples": 1, "min": 98.0, "median": 98.0, "max": 98.0, "values": [98.0]},
         "thresholds": [BAND], "margin": 6.0, "reason": None}
GOOD = {"schema": "linkcheck-acceptance", "schema_version": 1, "verdict": "PASS", "exit_code": 0, "checks": [CHECK]}


def _bundle(tmp_path: Path, text: str) -> Path:
    bundle = copy_healthy(tmp_path)
    add_files(bundle, {"acceptance.json": text})  # every digest written again: the bundle verifies
    assert verify_bundle(bundle).ok
    return bundle


def _forged(doc: dict[str, object]) -> str:
    return json.dumps(doc, indent=1)


BAD = {
    "malformed JSON": (_forged(GOOD)[:-40], "malformed JSON"),
    "not an object": ("[1, 2]\n", "not a linkcheck-acceptance object"),
    "wrong type": (_forged({**GOOD, "exit_code": "0"}), "'exit_code' is a JSON str (expected: an exit code"),
    "wrong type inside a check": (_forged({**GOOD, "checks": [{**CHECK, "margin": "wide"}]}),
                                  "'checks[0].margin' is a JSON str (expected: a finite number or null)"),
    "unknown key": (_forged({**GOOD, "colour": "red"}), "unknown key 'colour'"),
    "unknown key inside a band": (_forged({**GOOD, "checks": [{**CHECK, "thresholds": [{**BAND, "x": 1}]}]}),
                                  "unknown key 'x' under 'checks[0].thresholds[0]'"),
    "missing field": (_forged({k: v for k, v in GOOD.items() if k != "verdict"}), "'verdict' is missing"),
    "another schema": (_forged({**GOOD, "schema": "other"}), "'schema' is 'other' (expected: linkcheck-acceptance)"),
    "a status no check has": (_forged({**GOOD, "checks": [{**CHECK, "status": "OK"}]}), "'checks[0].status' is 'OK'"),
    "an infinite measurement": (_forged(GOOD).replace('"min": 98.0', '"min": 1e999'), "'checks[0].measured.min'"),
}


def _line(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_record_is_one_line_naming_file_and_line_and_not_shown(tmp_path: Path, case: str,
                                                                     cli: InProcessCli) -> None:
    text, reason = BAD[case]
    bundle = _bundle(tmp_path, text)
    doc, problem = load_acceptance(bundle)
    assert doc is None and problem is not None and "\n" not in problem
    assert problem.startswith(f"{bundle / 'acceptance.json'}:") and reason in problem, problem
    assert problem.endswith("(not shown)")
    proc = cli("report", str(bundle), "-f", "json")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr  # the diagnosis's exit code
    assert json.loads(proc.stdout)["acceptance"] == {"problem": problem}
    markdown = cli("report", str(bundle), "-f", "markdown")
    assert markdown.returncode == 0 and "## Acceptance" in markdown.stdout and "not shown" in markdown.stdout


def test_the_line_is_the_one_of_the_offending_key(tmp_path: Path) -> None:
    text = _forged({**GOOD, "checks": [{**CHECK, "margin": "wide"}]})
    _, problem = load_acceptance(_bundle(tmp_path, text))
    line = _line(text, '"margin"')
    assert problem is not None and problem.startswith(f"{tmp_path / 'bundle' / 'acceptance.json'}:{line}:")
    text = _forged({**GOOD, "colour": "red"})
    _, problem = load_acceptance(_bundle(tmp_path / "2", text))
    assert problem is not None and f":{_line(text, 'colour')}: unknown key 'colour'" in problem


def test_a_good_record_is_shown_as_written(tmp_path: Path) -> None:
    doc, problem = load_acceptance(_bundle(tmp_path, _forged(GOOD)))
    assert problem is None and doc == GOOD


@pytest.mark.parametrize("kind", ["fifo", "folder", "symlink"])
def test_a_record_that_is_not_a_regular_file_fails_verify(tmp_path: Path, kind: str, cli: InProcessCli) -> None:
    bundle = _bundle(tmp_path, _forged(GOOD))
    path = bundle / "acceptance.json"
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    else:
        path.symlink_to(tmp_path / "elsewhere.json")
        (tmp_path / "elsewhere.json").write_text(_forged(GOOD))
    one_line_error(cli("report", str(bundle), "-f", "json"), 4, str(bundle), "acceptance.json")
    anyway = cli("report", str(bundle), "-f", "json", "--allow-unverified")
    assert anyway.returncode == 0, anyway.stderr
    assert set(json.loads(anyway.stdout)["acceptance"]) == {"problem"}
    doc, problem = load_acceptance(bundle)
    assert doc is None and problem is not None and "acceptance.json" in problem and "(not shown)" in problem


def test_the_model_refuses_unknown_keys_at_every_level() -> None:
    import msgspec

    def walk(cls: type) -> set[type]:
        info = msgspec.inspect.type_info(cls)
        found = {cls}
        stack = [f.type for f in info.fields]  # type: ignore[attr-defined]
        while stack:
            t = stack.pop()
            if isinstance(t, msgspec.inspect.StructType) and t.cls not in found:
                found |= walk(t.cls)
            for name in ("types", "item_type", "value_type"):
                inner = getattr(t, name, None)
                stack += list(inner) if isinstance(inner, tuple) else [inner] if inner is not None else []
        return found

    models = walk(AcceptanceRecord)
    assert len(models) > 10 and all(m.__struct_config__.forbid_unknown_fields for m in models)

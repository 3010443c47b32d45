"""At COLUMNS=80 no line of the console report is wider than 80 characters: tables fit the width and long values
wrap inside their cells."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from linkcheck.app.offline import diagnose_bundle
from linkcheck.config import load_config
from linkcheck.report.console import acceptance_view, print_report
from tests.conftest import run_cli
from tests.fixture_bundles import PAIR_BUNDLES

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = PAIR_BUNDLES


def _wide(text: str, width: int = 80) -> list[str]:
    return [line for line in text.splitlines() if len(line) > width]


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda p: p.name)
def test_diagnose_fits_80_columns(fixture: Path) -> None:
    config = fixture / "linkcheck.yaml"
    args = ["diagnose", str(fixture), *(["-c", str(config)] if config.is_file() else [])]
    proc = run_cli(*args, cwd=ROOT, env={"NO_COLOR": None, "LINES": None, "COLUMNS": "80"}, timeout=120)
    assert proc.stdout.strip() and "Traceback" not in proc.stderr, proc.stderr
    assert not _wide(proc.stdout), _wide(proc.stdout)
    outcome = diagnose_bundle(fixture, None, load_config(config) if config.is_file() else None)
    every = io.StringIO()
    print_report(outcome, Console(file=every, width=80, color_system=None), show_all=True)  # --all: every panel
    assert not _wide(every.getvalue()), _wide(every.getvalue())


def test_the_acceptance_table_fits_80_columns(tmp_path: Path) -> None:
    from tests.accept.test_accept import _accept, _repeated

    _, doc = _accept(_repeated(tmp_path, {("alone.a->b.rocep1s0f1", 1): 80.0}))
    out = io.StringIO()
    Console(file=out, width=80, color_system=None).print(acceptance_view(json.loads(json.dumps(doc))))
    text = out.getvalue()
    assert not _wide(text), _wide(text)
    assert "rdma_alone_gbp" in text and re.search(r"\b80 +109\.29 +109\.\d+ +3 ", text) and "spark-link" not in text

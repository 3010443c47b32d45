"""A JSON diagnosis imports no rich (nor typer's rich helpers), and no parser the healthy bundle does not use."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROBE = """
import contextlib, io, sys
sys.argv = ["linkcheck", "diagnose", "-f", "json", {bundle!r}]
from linkcheck import cli
with contextlib.redirect_stdout(io.StringIO()):
    try:
        cli.main()
    except SystemExit:
        pass
sys.stderr.write("MODULES=" + ",".join(sorted(sys.modules)) + "\\n")
"""


def test_json_diagnosis_imports_only_what_it_uses() -> None:
    proc = subprocess.run([sys.executable, "-c", PROBE.format(bundle=str(ROOT / "fixtures" / "healthy"))],
                          capture_output=True, text=True, timeout=60)
    line = next(ln for ln in proc.stderr.splitlines() if ln.startswith("MODULES="))
    modules = set(line.removeprefix("MODULES=").split(","))
    assert "linkcheck.report.json_report" in modules
    assert not {m for m in modules if m == "rich" or m.startswith(("rich.", "typer.rich_utils"))}
    assert not {"linkcheck.report.console", "linkcheck.parsers.ibverbs", "linkcheck.parsers.netplan",
                "decimal"} & modules

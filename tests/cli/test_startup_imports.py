"""`--help` and offline diagnosis must not import the heavy libraries (pandas, paramiko, pyroute2, matplotlib)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("pandas", "paramiko", "pyroute2", "matplotlib")
PROBE = """
import sys
sys.argv = {argv!r}
from linkcheck import cli
try:
    cli.main()
except SystemExit:
    pass
heavy = [m for m in {heavy!r} if m in sys.modules]
sys.stderr.write("HEAVY=" + ",".join(heavy) + "\\n")
"""


@pytest.mark.parametrize(
    "argv",
    [
        ["linkcheck", "--help"],
        ["linkcheck", "diagnose", str(ROOT / "fixtures" / "healthy")],
        ["linkcheck", "diagnose", "-f", "json", str(ROOT / "fixtures" / "healthy")],
        ["linkcheck", "playbooks", "list"],
    ],
)
def test_no_heavy_imports(argv: list[str]) -> None:
    proc = subprocess.run([sys.executable, "-c", PROBE.format(argv=argv, heavy=HEAVY)],
                          capture_output=True, text=True, timeout=60)
    line = next(ln for ln in proc.stderr.splitlines() if ln.startswith("HEAVY="))
    assert line == "HEAVY=", proc.stderr

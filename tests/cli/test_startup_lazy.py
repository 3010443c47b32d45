"""A JSON diagnosis imports no rich (nor typer's rich helpers), and no parser the healthy bundle does not use."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
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
    # netplan is read by NETPLAN_NOT_APPLIED; ibv_devinfo only when sysfs lacks the GID table.
    assert not {"linkcheck.report.console", "linkcheck.parsers.ibverbs", "decimal"} & modules


PRELOAD_PROBE = """
import sys
from pathlib import Path
from linkcheck.collect.bundle import load_bundle
from linkcheck.collect.specs import SPECS
from linkcheck.facts.pair import build_link_facts
from linkcheck.facts.sources import preload_parsers
ids = {{s.id for s in SPECS}}
captures = [c for c in load_bundle(Path({bundle!r})).captures if c.spec in ids]  # the inspection's only
preload_parsers(ids)
before = {{m for m in sys.modules if m.startswith("linkcheck.parsers.")}}
build_link_facts(captures)
print(",".join(sorted(before)))
print(",".join(sorted({{m for m in sys.modules if m.startswith("linkcheck.parsers.")}} - before)))
"""


def test_preloading_imports_the_parsers_of_every_inspection_capture_and_no_other() -> None:
    """A live run imports these while the nodes answer; the diagnosis afterwards must find them loaded."""
    probe = PRELOAD_PROBE.format(bundle=str(ROOT / "fixtures" / "healthy"))
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    preloaded, imported_later = proc.stdout.splitlines()
    assert imported_later == ""  # the diagnosis of the inspection needed no parser that was not preloaded
    assert {"linkcheck.parsers.kernel", "linkcheck.parsers.sysfs", "linkcheck.parsers.nccl_conf",
            "linkcheck.parsers.ethtool", "linkcheck.parsers.iproute"} <= set(preloaded.split(","))
    assert "linkcheck.parsers.perftest" not in preloaded and "linkcheck.parsers.nccl_tests" not in preloaded

"""The real monitoring parts in tests: Debian's prometheus, prometheus-node-exporter and promtool (found on PATH;
scripts/test.sh puts the extracted binaries there), the textfiles linkcheck writes from a fixture, and promtool's
input series taken from them."""

from __future__ import annotations

import re
import shutil
import socket
from pathlib import Path

import pytest

from linkcheck.app.offline import diagnose_bundle
from linkcheck.report.prometheus import render_prometheus

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
RULES = ROOT / "linkcheck" / "service" / "monitoring" / "linkcheck.rules.yml"
DASHBOARD = ROOT / "linkcheck" / "service" / "monitoring" / "linkcheck-dashboard.json"
_SAMPLE = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)")


def binary(name: str) -> str:
    """The program's path, or the test skips saying which package brings it."""
    found = shutil.which(name)
    if found is None:
        package = "prometheus-node-exporter" if name == "prometheus-node-exporter" else "prometheus"
        pytest.skip(f"{name} is not installed (Debian package {package}; scripts/test.sh extracts it as root)")
    return found


def pair_textfile(scenario: str, tmp: Path) -> str:
    """What `linkcheck report -f prometheus` writes for the fixture (diagnosed from a copy, as a user would)."""
    bundle = tmp / f"{scenario}-bundle"
    if not bundle.exists():
        shutil.copytree(FIXTURES / scenario, bundle)
    return render_prometheus(diagnose_bundle(bundle))


def input_series(textfiles: dict[str, str], job: str = "node", repeat: int = 30) -> list[str]:
    """promtool's `input_series` lines: each sample of each textfile, labelled with its instance and job, held
    for `repeat` intervals (as a scrape every interval would see it)."""
    out = []
    for instance, text in textfiles.items():
        for line in text.splitlines():
            if not line or line.startswith("#"):
                continue
            match = _SAMPLE.fullmatch(line)
            assert match is not None, line
            name, labels, value = match.groups()
            inner = (labels + "," if labels else "") + f'instance="{instance}",job="{job}"'
            out += [f"      - series: '{name}{{{inner}}}'", f"        values: '{value}+0x{repeat}'"]
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])

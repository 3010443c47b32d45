"""The real monitoring parts in tests: Debian's prometheus, prometheus-node-exporter and promtool (found on PATH;
scripts/test.sh puts the extracted binaries there), the textfiles linkcheck writes from a fixture, and promtool's
input series taken from them."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from linkcheck.app.offline import cluster_bundle, diagnose_bundle
from linkcheck.bundle.run_record import is_cluster_bundle
from linkcheck.diagnose.playbook import load_playbooks
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


def fixture_textfile(scenario: str, tmp: Path) -> str:
    """What `linkcheck report -f prometheus` writes for the fixture, a pair's or a cluster's (diagnosed from a copy,
    as a user would)."""
    bundle = tmp / f"{scenario}-bundle"
    if not bundle.exists():
        shutil.copytree(FIXTURES / scenario, bundle)
    if is_cluster_bundle(bundle):
        return render_prometheus(cluster_bundle(bundle, load_playbooks(kind="all")))
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


class Stack:
    """One node_exporter per target folder (textfile and stat collectors only) and one Prometheus scraping them and
    evaluating `rules` every second, all on 127.0.0.1; started by `start`, stopped by their PIDs in `stop`."""

    def __init__(self, work: Path, targets: dict[str, Path], rules: Path = RULES) -> None:
        self.work, self.targets, self.rules = work, targets, rules
        self.processes: list[subprocess.Popen[bytes]] = []
        self.port = 0

    def _spawn(self, argv: list[str], log: str) -> None:
        with (self.work / log).open("wb") as out:
            self.processes.append(subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=self.work,
                                                   stdin=subprocess.DEVNULL))

    def start(self) -> Stack:
        exporter, prometheus = binary("prometheus-node-exporter"), binary("prometheus")
        lines = ["global: {scrape_interval: 1s, evaluation_interval: 1s}", f"rule_files: ['{self.rules}']",
                 "scrape_configs:", "  - job_name: node", "    static_configs:"]
        for host, folder in self.targets.items():
            port = free_port()
            self._spawn([exporter, "--collector.disable-defaults", "--collector.textfile", "--collector.stat",
                         "--collector.textfile.directory", str(folder), "--web.listen-address", f"127.0.0.1:{port}"],
                        f"node-exporter-{host}.log")
            lines.append(f"      - {{targets: ['127.0.0.1:{port}'], labels: {{host: {host}}}}}")
        (self.work / "prometheus.yml").write_text("\n".join(lines) + "\n")
        self.port = free_port()
        self._spawn([prometheus, "--config.file=prometheus.yml", f"--storage.tsdb.path={self.work / 'tsdb'}",
                     f"--web.listen-address=127.0.0.1:{self.port}"], "prometheus.log")
        return self

    def api(self, path: str) -> Any:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=5) as answer:
            return json.loads(answer.read())["data"]

    def alerts(self) -> list[dict[str, Any]]:
        try:
            found = self.api("/api/v1/alerts")["alerts"]
        except (OSError, ValueError):  # not up yet
            return []
        assert isinstance(found, list)
        return found

    def query(self, expr: str) -> list[dict[str, Any]]:
        found = self.api("/api/v1/query?query=" + urllib.parse.quote(expr))["result"]
        assert isinstance(found, list)
        return found

    def wait_for(self, what: Callable[[], bool], timeout_s: float = 40.0) -> None:
        """Prometheus 2.42 first scrapes ~5-6 s after it starts; then a rule fires within a second or two."""
        deadline = time.monotonic() + timeout_s
        while not what():
            if time.monotonic() > deadline or any(p.poll() is not None for p in self.processes):
                logs = {log.name: log.read_text()[-2000:] for log in self.work.glob("*.log")}
                raise AssertionError(f"timed out or a process ended; alerts {self.alerts()}; logs {logs}")
            time.sleep(0.2)

    def stop(self) -> None:
        for process in self.processes:  # by PID: our own children
            process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@contextlib.contextmanager
def monitoring(work: Path, targets: dict[str, Path]) -> Iterator[Stack]:
    stack = Stack(work, targets)
    try:
        yield stack.start()
    finally:
        stack.stop()


def firing(stack: Stack, alertname: str) -> dict[str, dict[str, Any]]:
    """The alert's firing instances by their target's `host` label."""
    return {a["labels"].get("host", ""): a for a in stack.alerts()
            if a["labels"].get("alertname") == alertname and a.get("state") == "firing"}

"""Fixtures of the live end-to-end tests: labs kept for a whole module, and linkcheck run as a user runs it.

The CLI runs as a subprocess (`python -m linkcheck.cli`) with its own HOME and without an ssh-agent, so
nothing in this machine's ~/.ssh can make a live test pass or fail. The lab's `lab_factory` fixture is
re-exported here so every live test module can use it; `cluster_factory` builds a lab with what aims linkcheck at
all its nodes (a linkcheck.yaml, the --node arguments, linkcheck's own transports).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from linkcheck.collect.collector import close_transports, open_transports
from linkcheck.transport.base import NodeTarget, Transport
from tests.lab import Lab
from tests.lab.pytest_plugin import LabFactory, lab_factory, lab_pool, lab_skip_reason  # noqa: F401 - fixture
from tests.lab.spec import LabNodeSpec

REPO = Path(__file__).resolve().parents[2]
SAVED_LINE = "bundle saved to "


@dataclass(frozen=True)
class CliRun:
    """One finished `linkcheck` process: what it printed and how it exited."""

    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    duration_s: float

    @property
    def report(self) -> dict[str, Any]:
        """The JSON report (`-f json`); the test fails here, showing the output, if stdout is not one."""
        try:
            data = json.loads(self.stdout)
        except ValueError:
            pytest.fail(f"no JSON report from {self.describe()}\nstdout:\n{self.stdout}")
        assert isinstance(data, dict)
        return data

    def findings(self, statuses: Sequence[str] = ("warn", "fail", "skip")) -> set[tuple[str, str, str]]:
        """(rule id, status, subject) of every finding whose status is one of `statuses`."""
        return {(f["id"], f["status"], f["subject"]) for f in self.report["findings"] if f["status"] in statuses}

    def error_lines(self) -> list[str]:
        """stderr without the closing `bundle saved to ...` line: what linkcheck said about problems."""
        return [ln for ln in self.stderr.splitlines() if ln.strip() and not ln.startswith(SAVED_LINE)]

    def saved_to(self) -> Path | None:
        """The bundle folder named on stderr, if any."""
        for line in self.stderr.splitlines():
            if line.startswith(SAVED_LINE):
                return Path(line.removeprefix(SAVED_LINE).strip())
        return None

    def describe(self) -> str:
        return f"`linkcheck {' '.join(self.args)}` -> exit {self.returncode}\nstderr:\n{self.stderr}"


def _own_pids(lab: Lab, name: str) -> set[int]:
    """The lab's own processes in a node: the namespace holder, the current sshd listener and the GID watcher."""
    node = lab.node(name)
    return {rec.pid for rec in (node.holder, node.sshd, node.gid_watch) if rec is not None}


def _describe_pid(pid: int) -> str:
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        cmd = "(gone)"
    return f"{pid} {cmd[:120]}"


class Live:
    """What a live test needs: linkcheck as a subprocess (private HOME, no ssh-agent), configs, process checks."""

    def __init__(self, home: Path) -> None:
        self.home = home

    # -- running linkcheck -----------------------------------------------------------------------------
    def env(self, home: Path | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("SSH_AUTH_SOCK", "SSH_AGENT_PID")}
        env["HOME"] = str(home or self.home)
        env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        return env

    @staticmethod
    def argv(args: Sequence[str]) -> list[str]:
        return [sys.executable, "-m", "linkcheck.cli", *args]

    def run(self, *args: str, cwd: Path = REPO, home: Path | None = None, timeout: float = 180) -> CliRun:
        start = time.monotonic()
        proc = subprocess.run(self.argv(args), capture_output=True, text=True, cwd=cwd, env=self.env(home),
                              timeout=timeout, stdin=subprocess.DEVNULL, check=False)
        return CliRun(tuple(args), proc.returncode, proc.stdout, proc.stderr, time.monotonic() - start)

    def start(self, *args: str) -> tuple[subprocess.Popen[str], float]:
        """Start linkcheck in the background (to break something while it runs); finish with `wait`."""
        proc = subprocess.Popen(self.argv(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                cwd=REPO, env=self.env(), stdin=subprocess.DEVNULL)
        return proc, time.monotonic()

    @staticmethod
    def wait(started: tuple[subprocess.Popen[str], float], args: Sequence[str], timeout: float = 180) -> CliRun:
        proc, start = started
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()  # our own child, by its handle
            out, err = proc.communicate()
        return CliRun(tuple(args), proc.returncode, out, err, time.monotonic() - start)

    # -- configuration -----------------------------------------------------------------------------------
    @staticmethod
    def write_config(path: Path, *, ssh_config: Path, known_hosts: Path, nodes: dict[str, Any] | None = None,
                     **ssh: object) -> Path:
        """A linkcheck.yaml pointing linkcheck at given SSH files (the CLI has no --ssh-config option)."""
        lines = ["version: 1"]
        if nodes:
            lines.append("nodes:")
            lines += [f"  {name}: {json.dumps(value)}" for name, value in nodes.items()]
        lines += ["ssh:", f"  config: {json.dumps(str(ssh_config))}", f"  known_hosts: {json.dumps(str(known_hosts))}"]
        lines += [f"  {key}: {json.dumps(value)}" for key, value in ssh.items()]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path

    def lab_config(self, lab: Lab, path: Path, **options: Any) -> Path:
        """write_config with the lab's own ssh_config and known_hosts unless others are given."""
        options.setdefault("ssh_config", lab.ssh_config)
        options.setdefault("known_hosts", lab.known_hosts)
        return self.write_config(path, **options)

    # -- processes on the nodes ------------------------------------------------------------------------
    @staticmethod
    def node_pids(lab: Lab) -> dict[str, list[int]]:
        """Every process in every node now (the baseline for `strays`)."""
        return {name: lab.pids(name) for name in lab.nodes}

    @staticmethod
    def strays(lab: Lab, baseline: dict[str, list[int]], *, wait_s: float = 5.0) -> dict[str, list[str]]:
        """Processes in a node that are neither the lab's own nor there before the run, after up to wait_s.

        An SSH session ends a moment after the client closes it, so this polls instead of looking once.
        """
        deadline = time.monotonic() + wait_s
        while True:
            found = {
                name: [_describe_pid(p) for p in sorted(set(lab.pids(name)) - _own_pids(lab, name) - set(before))]
                for name, before in baseline.items()
            }
            found = {name: pids for name, pids in found.items() if pids}
            if not found or time.monotonic() >= deadline:
                return found
            time.sleep(0.2)


@pytest.fixture(scope="session")
def live(tmp_path_factory: pytest.TempPathFactory) -> Live:
    """linkcheck as a subprocess with an empty HOME of its own, config writers and node process checks."""
    home = tmp_path_factory.mktemp("home")
    (home / ".ssh").mkdir(mode=0o700)
    return Live(home)


@pytest.fixture(scope="module")
def module_lab_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., Lab]]:
    """Like lab_factory, but the labs live until the module's last test (tear one down early with .down())."""
    reason = lab_skip_reason()
    if reason:
        pytest.skip(reason)
    yield from lab_pool(lambda: tmp_path_factory.mktemp("lab"))


@dataclass(frozen=True)
class ClusterLab:
    """A running lab as linkcheck is aimed at it: every node by its ssh_config name, and a linkcheck.yaml naming the
    lab's ssh_config and known_hosts (a pair is a cluster of one cable)."""

    lab: Lab
    config: Path

    @property
    def names(self) -> list[str]:
        return sorted(self.lab.nodes)

    @property
    def args(self) -> tuple[str, ...]:
        """linkcheck's arguments for the whole lab: each node by `--node`, then `-c` the config."""
        return (*(f"--node={n}" for n in self.names), "-c", str(self.config))

    @contextmanager
    def transports(self) -> Iterator[dict[str, Transport]]:
        """linkcheck's own transports to every node, through the lab's SSH files; closed at the end."""
        transports = open_transports([NodeTarget(name=n, host=n) for n in self.names], known_hosts=self.lab.known_hosts,
                                     ssh_config=self.lab.ssh_config, connect_timeout_s=10)
        try:
            yield transports
        finally:
            close_transports(transports)

    def assert_none_running(self, *tools: str) -> None:
        """No process running one of `tools` is left on any node."""
        left = {n: self.lab.running(n, *tools) for n in self.names}
        assert not any(left.values()), left


ClusterFactory = Callable[..., ClusterLab]


@pytest.fixture
def cluster_factory(lab_factory: LabFactory, live: Live) -> ClusterFactory:  # noqa: F811 - the imported fixture
    """make(nodes_or_scenario, **lab_options) -> ClusterLab: lab_factory's lab (torn down when the test ends) and its
    linkcheck.yaml, beside the lab's work directory."""

    def make(nodes: Sequence[LabNodeSpec] | str, **options: Any) -> ClusterLab:
        lab = lab_factory(nodes, **options)
        return ClusterLab(lab, live.lab_config(lab, lab.workdir.parent / "linkcheck.yaml"))

    return make

"""The lab's record of what it created (namespaces, host links, PIDs, files) and the teardown from it.

The record is written to `lab-state.json` in the work directory before and after each resource is
created, so a crash half-way through bring-up, another process (`python -m tests.lab.cli down`) or a
second call can still remove everything. Teardown only signals PIDs it recorded (checked against their
start time) and processes inside namespaces the lab created; it never looks processes up by name.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tests.lab import netns
from tests.lab.errors import LabError

STATE_NAME = "lab-state.json"
STATE_VERSION = 1


@dataclass
class ProcRecord:
    """One process the lab started: PID, start time (to tell a reused PID apart) and its role."""

    pid: int
    start: int | None
    role: str


@dataclass
class LabState:
    """Everything a lab instance created; serialised as JSON in the work directory."""

    lab_id: str
    workdir: str
    created_workdir: bool = False
    keep_files: bool = False
    netns: list[str] = field(default_factory=list)
    host_links: list[str] = field(default_factory=list)
    processes: list[ProcRecord] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Popen objects of this process's children (not serialised): closed and reaped at teardown.
        self.popens: dict[int, subprocess.Popen[Any]] = {}

    @property
    def path(self) -> Path:
        """Where the record lives."""
        return Path(self.workdir) / STATE_NAME

    def save(self) -> None:
        """Write the record atomically (rename), so a reader never sees half a file."""
        data = {"version": STATE_VERSION, **asdict(self)}
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, self.path)

    def add_process(self, proc: subprocess.Popen[Any], role: str) -> ProcRecord:
        """Record a started process (with its start time) and save."""
        rec = ProcRecord(proc.pid, netns.start_time(proc.pid), role)
        self.popens[proc.pid] = proc
        self.processes.append(rec)
        self.save()
        return rec

    @classmethod
    def load(cls, workdir: Path) -> LabState:
        """Read the record of a lab brought up earlier (possibly by another process)."""
        path = workdir / STATE_NAME
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise LabError(f"no readable lab state in {workdir}: {exc}") from exc
        if data.pop("version", None) != STATE_VERSION:
            raise LabError(f"{path}: unknown lab state version")
        procs = [ProcRecord(**p) for p in data.pop("processes", [])]
        return cls(processes=procs, **data)


def teardown(state: LabState) -> list[str]:
    """Remove everything in the record; idempotent; returns what could not be removed (empty: clean)."""
    problems: list[str] = []
    for rec in reversed(state.processes):
        try:
            netns.kill_pid(rec.pid, rec.start)
        except LabError as exc:
            problems.append(f"{rec.role}: {exc}")
        forget_popen(state, rec.pid)
    for name in state.netns:
        left = netns.kill_netns_processes(name)
        if left:
            problems.append(f"namespace {name}: processes {left} survived SIGKILL")
    for name in state.netns:
        try:
            netns.delete_netns(name)
        except LabError as exc:
            problems.append(str(exc))
    for link in state.host_links:
        try:
            netns.delete_link(link)
        except LabError as exc:
            problems.append(str(exc))
    state.processes.clear()
    if not problems:
        state.netns.clear()
        state.host_links.clear()
    _remove_files(state, problems)
    return problems


def forget_popen(state: LabState, pid: int) -> None:
    """Close our pipes to an ended child and collect its status (no zombie, no ResourceWarning)."""
    proc = state.popens.pop(pid, None)
    if proc is None:
        return
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=1.0)


def _remove_files(state: LabState, problems: list[str]) -> None:
    if state.keep_files or problems:
        with contextlib.suppress(OSError):
            state.save()
        return
    for item in state.files:
        path = Path(item)
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    state.files.clear()
    state.path.unlink(missing_ok=True)
    if state.created_workdir:
        with contextlib.suppress(OSError):
            Path(state.workdir).rmdir()

"""`linkcheck service run`, what the units start: wait (bounded) for the configured nodes' SSH ports to answer, run
the same `linkcheck check` a user types (with `--quick` after boot) against the saved baseline, writing the check's
textfile and history, then one journal line per finding, the service's own textfile, and the bundles pruned to the
newest few.

The check runs as a child process: whatever it does, a crash or a hang included, the service still writes what
happened (an inconclusive run with its reason), so a node that never answered is a run that says so, not a gap."""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec

from linkcheck.config import find_config
from linkcheck.errors import ConfigError, UsageError
from linkcheck.service.textfile import (
    SERVICE_TEXTFILE,
    ServiceRun,
    baseline_created,
    check_textfile,
    write_check,
    write_service,
)
from linkcheck.transport.base import NodeTarget

SSH_PORT = 22
BUNDLE_PREFIX = "linkcheck-"
KILL_GRACE_S = 30.0  # after SIGINT the check ends every remote process it started and saves its partial bundle


class RunSettings(msgspec.Struct, frozen=True):
    """What one service run does: after boot (traffic) or on the timer (inspection only), where it writes."""

    config: Path
    textfile_dir: Path
    bundles: Path
    baseline: str | None = None
    boot: bool = False
    keep: int = 100  # bundles kept, newest first
    wait_s: float = 300.0  # how long to wait for the nodes' SSH ports after boot
    timeout_s: float = 1800.0  # the check's own wall time at most


def nodes_of(config: Path) -> tuple[list[NodeTarget], Path | None]:
    """The nodes the configuration names (a pair's a and b, or a cluster's nodes) and its SSH config file, refused
    when it names none."""
    found = find_config(config)
    if found is None:
        raise ConfigError(str(config), "no configuration", fix="run `linkcheck init` and copy linkcheck.yaml there")
    nodes = list(found.cluster_nodes) or list(found.nodes.values())
    if not nodes:
        raise ConfigError(str(config), "names no node", fix="run `linkcheck init`")
    return nodes, found.ssh.config


def answers(node: NodeTarget, ssh_config: Path | None, timeout_s: float = 2.0) -> bool:
    """Whether the node's SSH port, found as the check will find it (its ssh_config's HostName and Port), accepts
    a TCP connection; a node on this machine without SSH always does."""
    if node.is_local:
        return True
    from linkcheck.transport.ssh import resolve_target  # paramiko: only when the service runs

    resolved = resolve_target(node, ssh_config)
    try:
        with socket.create_connection((resolved.host, resolved.port or SSH_PORT), timeout=timeout_s):
            return True
    except OSError:  # refused, unreachable, no such name yet (DNS may come up after the network)
        return False


def wait_for_nodes(nodes: list[NodeTarget], wait_s: float, answer: Callable[[NodeTarget], bool],
                   poll_s: float = 2.0) -> dict[str, bool]:
    """Per node, whether it answered within `wait_s` seconds (each node is asked until it answers once)."""
    deadline = time.monotonic() + wait_s
    answered = {n.name: False for n in nodes}
    while True:
        for node in nodes:
            if not answered[node.name]:
                answered[node.name] = answer(node)
        if all(answered.values()) or time.monotonic() >= deadline:
            return answered
        time.sleep(min(poll_s, max(0.0, deadline - time.monotonic())))


def check_command(settings: RunSettings, bundle: Path, textfile: Path) -> list[str]:
    """The check the service runs: the program a user types, as a child of this one."""
    command = [sys.executable, "-m", "linkcheck.cli", "check", *(["--quick"] if settings.boot else []),
               "--config", str(settings.config), "--save", str(bundle), "--format", "json",
               "--prometheus-textfile", str(textfile)]
    return command + (["--baseline", settings.baseline] if settings.baseline else [])


def run_check(command: list[str], timeout_s: float) -> tuple[int | None, str, str]:
    """(exit code or None when it had to be stopped, stdout, stderr): a check past its time gets SIGINT, as Ctrl-C
    (it ends its remote processes and saves what it has), then SIGKILL after a grace, both by its PID."""
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             stdin=subprocess.DEVNULL)
    try:
        stdout, stderr = child.communicate(timeout=timeout_s)
        return child.returncode, stdout, stderr
    except subprocess.TimeoutExpired:
        child.send_signal(signal.SIGINT)
        try:
            stdout, stderr = child.communicate(timeout=KILL_GRACE_S)
        except subprocess.TimeoutExpired:
            child.kill()
            stdout, stderr = child.communicate()
        return None, stdout, stderr


def _findings(node: Any) -> Iterator[dict[str, Any]]:
    """Every finding of a check's JSON document, a pair's (`findings`) or a cluster's (its tests' and nodes')."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "findings" and isinstance(value, list):
                yield from (f for f in value if isinstance(f, dict) and "id" in f)
            else:
                yield from _findings(value)
    elif isinstance(node, list):
        for item in node:
            yield from _findings(item)


def _one_line(text: object) -> str:
    """A node's text as one journal line's part: control characters (a newline, an escape) shown, not obeyed."""
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in str(text))


def finding_lines(stdout: str) -> list[str]:
    """One line per finding that warns or fails, as `RULE status subject: message`; none when the check wrote no
    document (it said why on stderr)."""
    try:
        document = json.loads(stdout)
    except ValueError:
        return []
    seen: set[tuple[str, str, str]] = set()
    lines = []
    for f in _findings(document):
        key = (str(f.get("id")), str(f.get("status")), str(f.get("subject")))
        if key[1] in ("warn", "fail") and key not in seen:
            seen.add(key)
            lines.append(_one_line(f"{key[0]} {key[1]} {key[2]}: {f.get('message', '')}"))
    return lines


def verdict_of(stdout: str) -> str | None:
    try:
        document = json.loads(stdout)
    except ValueError:
        return None
    verdict = document.get("verdict") if isinstance(document, dict) else None
    return verdict if isinstance(verdict, str) else None


def prune_bundles(folder: Path, keep: int) -> list[Path]:
    """The service's bundles beyond the newest `keep` removed (folders it named linkcheck-<time>, never a link);
    the folders removed."""
    if not folder.is_dir():
        return []
    ours = sorted((p for p in folder.iterdir() if p.name.startswith(BUNDLE_PREFIX) and not p.is_symlink()
                   and p.is_dir()), key=lambda p: p.name)
    removed = ours[:max(0, len(ours) - keep)]
    for path in removed:
        shutil.rmtree(path)
    return removed


def _reason(code: int | None, verdict: str | None, answered: dict[str, bool], stderr: str) -> str | None:
    """Why the run is inconclusive, as a short label value; None when the check gave a verdict of its own."""
    silent = [name for name, ok in answered.items() if not ok]
    if code is None:
        return "check timed out"
    if silent and verdict in (None, "inconclusive"):
        return "no answer from node " + ", ".join(silent)
    if verdict is None:
        last = next((line for line in reversed(stderr.splitlines()) if line.strip()), f"exit {code}")
        return _one_line(last)[:200]
    return None


@contextlib.contextmanager
def one_run_at_a_time(folder: Path) -> Iterator[bool]:
    """Whether this run holds the service's lock: the boot run and the timer's never run side by side."""
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder / ".service.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def service_run(settings: RunSettings, say: Callable[[str], None]) -> int:
    """One run: the nodes waited for, the check, its findings said one per line, the service's textfile, the old
    bundles removed; the check's exit code (3 when it gave none)."""
    if settings.keep < 1:
        raise UsageError("--keep must be 1 or more (the newest bundle is the run's evidence)")
    nodes, ssh_config = nodes_of(settings.config)
    with one_run_at_a_time(settings.bundles) as mine:
        if not mine:
            say("another linkcheck service run is in progress; this one is skipped")
            return 0
        answered = wait_for_nodes(nodes, settings.wait_s if settings.boot else 0.0,
                                  answer=lambda node: answers(node, ssh_config))
        for name, ok in answered.items():
            if not ok:
                say(f"node {name} did not answer on its SSH port"
                    + (f" within {settings.wait_s:g} s" if settings.boot else "") + "; the check says what it can")
        stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
        bundle = settings.bundles / f"{BUNDLE_PREFIX}{stamp}"
        kind = "boot" if settings.boot else "timer"
        written = settings.bundles / f".{check_textfile(kind)}"  # the check's own, labelled on the way out
        written.unlink(missing_ok=True)
        code, stdout, stderr = run_check(check_command(settings, bundle, written), settings.timeout_s)
        if written.is_file() and not written.is_symlink():  # none when no node answered: the service's says so
            write_check(settings.textfile_dir / check_textfile(kind), written.read_text(encoding="utf-8"), kind)
        for line in stderr.splitlines():
            if line.strip():
                say(_one_line(line))
        verdict = verdict_of(stdout)
        for line in finding_lines(stdout):
            say(line)
        reason = _reason(code, verdict, answered, stderr)
        write_service(settings.textfile_dir / SERVICE_TEXTFILE, ServiceRun(
            kind=kind, finished=time.time(), exit_code=3 if code is None else code,
            verdict=verdict or "inconclusive", reason=reason, answered=answered,
            baseline=settings.baseline, baseline_created=baseline_created(settings.baseline)))
        say(f"linkcheck service: {kind} run: {(verdict or 'inconclusive').upper()}"
            + (f" ({reason})" if reason else ""))
        prune_bundles(settings.bundles, settings.keep)
    return 3 if code is None else code

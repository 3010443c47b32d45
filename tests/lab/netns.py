"""Network namespaces, veth pairs and processes, driven through iproute2 and /proc, ended by PID only."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tests.lab.errors import LabError

IP = "ip"


def run(argv: Sequence[str], *, check: bool = True, timeout: float = 20.0) -> subprocess.CompletedProcess[str]:
    """Run a short administrative command; a failure raises LabError with the command and its stderr."""
    try:
        proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LabError(f"{' '.join(argv)}: {exc}") from exc
    if check and proc.returncode != 0:
        raise LabError(f"{' '.join(argv)}: exit {proc.returncode}: {proc.stderr.strip()}")
    return proc


def ip_json(*args: str, netns: str | None = None) -> list[dict[str, Any]]:
    """`ip -j ...` as Python objects (optionally inside a namespace)."""
    argv = [IP, *(["-n", netns] if netns else []), "-j", *args]
    out = run(argv).stdout.strip()
    data = json.loads(out) if out else []
    return data if isinstance(data, list) else []


def list_netns() -> set[str]:
    """Names of all named network namespaces (`ip netns list`)."""
    out = run([IP, "netns", "list"]).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def add_netns(name: str) -> None:
    """Create a named namespace with its loopback up."""
    run([IP, "netns", "add", name])
    run([IP, "-n", name, "link", "set", "lo", "up"])


def delete_netns(name: str) -> None:
    """Delete a namespace if it exists (its veth ends, and so their peers, go with it)."""
    if name in list_netns():
        run([IP, "netns", "delete", name])


def link_exists(name: str, netns: str | None = None) -> bool:
    """Whether an interface of that name exists (in the root namespace by default)."""
    argv = [IP, *(["-n", netns] if netns else []), "link", "show", "dev", name]
    return run(argv, check=False).returncode == 0


def delete_link(name: str) -> None:
    """Delete a root-namespace interface if it exists."""
    if link_exists(name):
        run([IP, "link", "delete", "dev", name], check=False)


@dataclass(frozen=True)
class VethEnd:
    """One end of a veth pair: where it lives (None: root namespace), its name, MAC and MTU."""

    netns: str | None
    ifname: str
    mac: str | None = None
    mtu: int | None = None


def _end_args(end: VethEnd) -> list[str]:
    args = ["name", end.ifname]
    if end.netns:
        args += ["netns", end.netns]
    if end.mac:
        args += ["address", end.mac]
    if end.mtu:
        args += ["mtu", str(end.mtu)]
    return args


def add_veth(a: VethEnd, b: VethEnd) -> None:
    """Create a veth pair with each end born in its namespace (no name clash in the root namespace)."""
    run([IP, "link", "add", *_end_args(a), "type", "veth", "peer", *_end_args(b)])


def configure(netns: str | None, ifname: str, addresses: Sequence[str], up: bool) -> None:
    """Assign IPv4 addresses and set the admin state."""
    pre = [IP, *(["-n", netns] if netns else [])]
    for cidr in addresses:
        run([*pre, "addr", "add", cidr, "dev", ifname])
    run([*pre, "link", "set", "dev", ifname, "up" if up else "down"])


def netns_pids(name: str) -> list[int]:
    """PIDs of every process whose network namespace is `name` (`ip netns pids`)."""
    proc = run([IP, "netns", "pids", name], check=False)
    if proc.returncode != 0:
        return []
    return sorted(int(p) for p in proc.stdout.split() if p.isdigit())


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks (field 22 of /proc/PID/stat); None if it is gone.

    Stored with each PID so that a PID reused by an unrelated process is never signalled.
    """
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            stat = fh.read()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    # fields[0] is field 3 (state); a zombie is already dead and must not count as alive
    if not fields or fields[0] == "Z" or len(fields) < 20:
        return None
    return int(fields[19])


def alive(pid: int, started: int | None) -> bool:
    """True while the process that had this PID and start time still runs."""
    now = start_time(pid)
    return now is not None and (started is None or now == started)


def kill_pid(pid: int, started: int | None, *, grace_s: float = 2.0) -> None:
    """SIGTERM, then SIGKILL after `grace_s`, one recorded process; a reused PID is left alone."""
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 2.0)):
        if not alive(pid, started):
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
            if sig == signal.SIGTERM:
                os.kill(pid, signal.SIGCONT)  # a frozen (SIGSTOP) process must see the SIGTERM now
        _reap(pid)
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and alive(pid, started):
            time.sleep(0.02)
            _reap(pid)
    if alive(pid, started):
        raise LabError(f"process {pid} survived SIGKILL")


def _reap(pid: int) -> None:
    """Collect our own child's exit status so it does not linger as a zombie."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def kill_netns_processes(name: str, *, deadline_s: float = 5.0) -> list[int]:
    """SIGKILL every process left in a lab namespace, by PID, until none is left; returns survivors."""
    deadline = time.monotonic() + deadline_s
    pids = netns_pids(name)
    while pids and time.monotonic() < deadline:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            _reap(pid)
        time.sleep(0.05)
        pids = netns_pids(name)
    return pids

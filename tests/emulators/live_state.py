"""What the traffic emulators share in the lab: fault files, the flow board, and the node's sysfs counters.

The lab's tool wrappers export LINKCHECK_LAB_SHARED (one directory per lab, seen by every node),
LINKCHECK_LAB_FAULTS (the node's fault files, one per tool, holding a fault name) and
LINKCHECK_LAB_SYSFS (/sys: the node's writable tmpfs copy). Without LINKCHECK_LAB_SHARED the emulators
run offline (one-shot output, nothing shared, no counters touched).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.emulators.node import GidSlot

SHARED_ENV = "LINKCHECK_LAB_SHARED"
FAULTS_ENV = "LINKCHECK_LAB_FAULTS"
SYSFS_ENV = "LINKCHECK_LAB_SYSFS"
NAME_ENV = "LINKCHECK_LAB_NAME"
FAULTS: dict[str, tuple[str, ...]] = {
    "ib_write_bw": ("never-ready", "crash-mid-run", "client-fail", "flap", "hang", "garbage"),
    "ib_write_lat": ("never-ready", "client-fail"),
    # real-time is not a fault: the sweep takes its full real time instead of RUN_S (benchmarks/tiers.py)
    "all_gather_perf": ("hang", "crash-mid-run", "wrong", "garbage", "real-time"),
    "all_reduce_perf": ("hang", "crash-mid-run", "wrong", "garbage", "real-time"),
}
HEARTBEAT_STALE_S = 0.5  # a flow whose record was not refreshed for this long is not running
RECORD_EXPIRY_S = 600.0
PMA_UNIT = 4  # port_xmit_data / port_rcv_data count 4-byte words


@dataclass(frozen=True)
class LabContext:
    """Where this emulator process finds the lab's shared state, its faults and its sysfs."""

    node_name: str
    shared: Path
    faults: Path | None
    sysfs: Path | None

    @classmethod
    def from_env(cls) -> LabContext | None:
        shared = os.environ.get(SHARED_ENV, "")
        if not shared:
            return None
        faults, sysfs = os.environ.get(FAULTS_ENV, ""), os.environ.get(SYSFS_ENV, "")
        return cls(os.environ.get(NAME_ENV, "node"), Path(shared), Path(faults) if faults else None,
                   Path(sysfs) if sysfs else None)

    def fault(self, tool: str) -> str | None:
        """The fault armed for `tool` on this node (lab.set_fault), or None."""
        if self.faults is None:
            return None
        try:
            text = (self.faults / tool).read_text(encoding="utf-8").strip()
        except OSError:
            return None
        return text if text in FAULTS.get(tool, ()) else None


# sysfs ------------------------------------------------------------------------------------------

@contextlib.contextmanager
def _locked(path: Path) -> Iterator[int]:
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield fd
    finally:
        os.close(fd)


def _rewrite(fd: int, text: str) -> None:
    os.lseek(fd, 0, os.SEEK_SET)
    os.ftruncate(fd, 0)
    os.write(fd, text.encode())


def bump(sysfs: Path | None, rel: str, delta: int) -> None:
    """Add `delta` to an integer sysfs file (under a lock); nothing when the file is not there."""
    if sysfs is None or delta == 0 or not (sysfs / rel).is_file():
        return
    with _locked(sysfs / rel) as fd:
        raw = os.read(fd, 64).decode(errors="replace").strip()
        value = int(raw) if raw.isdigit() else 0
        _rewrite(fd, f"{value + delta}\n")


def put(sysfs: Path | None, rel: str, value: str) -> None:
    """Replace a sysfs file's value; nothing when the file is not there."""
    if sysfs is not None and (sysfs / rel).is_file():
        with _locked(sysfs / rel) as fd:
            _rewrite(fd, value + "\n")


def live_gid_slot(sysfs: Path | None, dev: str, index: int) -> GidSlot | None:
    """A GID slot as the node's sysfs holds it now (in the lab it follows the node's addresses: tests/lab/gid_watch.py);
    None when there is no such tree (offline) or no such slot file. An empty slot's attributes are absent (they fail
    to read on a node)."""
    if sysfs is None:
        return None
    port = sysfs / "class" / "infiniband" / dev / "ports" / "1"
    try:
        gid = (port / "gids" / str(index)).read_text(encoding="ascii").strip()
    except OSError:
        return None
    attrs = []
    for name in ("types", "ndevs"):
        try:
            attrs.append((port / "gid_attrs" / name / str(index)).read_text(encoding="ascii").strip() or None)
        except OSError:
            attrs.append(None)
    return GidSlot(index, gid, attrs[0], attrs[1])


def ib_counter(dev: str, name: str) -> str:
    return f"class/infiniband/{dev}/ports/1/counters/{name}"


class ByteCounter:
    """Moves an RDMA port counter (4-byte units) by byte amounts, carrying the remainder."""

    def __init__(self, sysfs: Path | None, dev: str, name: str) -> None:
        self.sysfs, self.rel = sysfs, ib_counter(dev, name)
        self.bytes = 0.0
        self._units_written = 0

    def add(self, nbytes: float) -> None:
        self.bytes += max(0.0, nbytes)
        units = int(self.bytes // PMA_UNIT)
        bump(self.sysfs, self.rel, units - self._units_written)
        self._units_written = units


def link_state(sysfs: Path | None, dev: str, netdev: str, up: bool) -> None:
    """One carrier transition of a CX-7 function: netdev carrier/operstate, IB port state, counters."""
    port = f"class/infiniband/{dev}/ports/1"
    put(sysfs, f"class/net/{netdev}/carrier", "1" if up else "0")
    put(sysfs, f"class/net/{netdev}/operstate", "up" if up else "down")
    bump(sysfs, f"class/net/{netdev}/carrier_changes", 1)
    put(sysfs, f"{port}/state", "4: ACTIVE" if up else "1: DOWN")
    put(sysfs, f"{port}/phys_state", "5: LinkUp" if up else "3: Disabled")
    if not up:
        bump(sysfs, ib_counter(dev, "link_downed"), 1)


class Flap:
    """A cable flap during a run: 30% in, the function's link goes down for min(0.3 s, 20% of the run)."""

    def __init__(self, sysfs: Path | None, dev: str, netdev: str, run: tuple[float, float], on: bool) -> None:
        self.sysfs, self.dev, self.netdev, self.on = sysfs, dev, netdev, on
        start, seconds = run
        self.down_at = start + seconds * 0.3
        self.up_at = self.down_at + min(0.3, seconds * 0.2)
        self.state = "before"

    def step(self, now: float) -> bool:
        """Advance the flap to `now`; True while the link is down."""
        if self.on and self.state == "before" and now >= self.down_at:
            link_state(self.sysfs, self.dev, self.netdev, up=False)
            self.state = "down"
        if self.state == "down" and now >= self.up_at:
            link_state(self.sysfs, self.dev, self.netdev, up=True)
            self.state = "after"
        return self.state == "down"

    def finish(self) -> None:
        """Complete the flap: never leave the link down, and flap now if the run ended before its time."""
        if self.state == "before":
            self.step(self.down_at)
        if self.state == "down":
            self.step(self.up_at)


# The flow board: which ib_write_bw clients run between which nodes, and when ---------------------

class FlowBoard:
    """One JSON record per client flow in <shared>/perftest-flows, refreshed every tick."""

    def __init__(self, shared: Path, pair: str, node: str, dev: str) -> None:
        self.dir = shared / "perftest-flows"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.pair, self.node, self.dev = pair, node, dev
        self.path = self.dir / f"{pair}.{node}.{dev}.{os.getpid()}.{time.time_ns()}.json"
        self.start = time.time()
        self._write(self.start, done=False)
        self._expire()

    def _write(self, last: float, *, done: bool) -> None:
        record = {"pair": self.pair, "node": self.node, "dev": self.dev, "start": self.start, "last": last,
                  "done": done}
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(record), encoding="utf-8")
        tmp.replace(self.path)

    def _expire(self) -> None:
        for p in self.dir.glob("*.json"):
            with contextlib.suppress(OSError):
                if time.time() - p.stat().st_mtime > RECORD_EXPIRY_S:
                    p.unlink()

    def heartbeat(self) -> None:
        self._write(time.time(), done=False)

    def finish(self) -> None:
        self._write(time.time(), done=True)

    def _others(self) -> list[dict[str, float]]:
        out = []
        for p in self.dir.glob(f"{self.pair}.*.json"):
            if p == self.path:
                continue
            with contextlib.suppress(OSError, ValueError):
                rec = json.loads(p.read_text(encoding="utf-8"))
                out.append({"start": float(rec["start"]), "last": float(rec["last"]), "done": float(rec["done"])})
        return out

    def busy_now(self) -> bool:
        """Another flow between the same two nodes is running at this moment."""
        now = time.time()
        return any(not r["done"] and r["start"] <= now and now - r["last"] < HEARTBEAT_STALE_S
                   for r in self._others())

    def overlap_fraction(self, end: float) -> float:
        """The largest share of [start, end] during which one other flow of the pair was running."""
        span = max(end - self.start, 1e-9)
        best = 0.0
        for r in self._others():
            other_end = r["last"] if r["done"] else r["last"] + HEARTBEAT_STALE_S
            best = max(best, min(end, other_end) - max(self.start, r["start"]))
        return max(0.0, best) / span

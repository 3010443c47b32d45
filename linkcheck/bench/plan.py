"""What the RDMA traffic test will run: the paths, the rounds (alone, concurrent, both directions), ports."""

from __future__ import annotations

import ipaddress
import secrets

import msgspec

from linkcheck.collect.specs import validate_name
from linkcheck.errors import BenchError
from linkcheck.facts.model import Function, LinkFacts

MODES = ("alone", "concurrent")
DIRECTIONS = ("a->b", "b->a")


class PathEnd(msgspec.Struct, frozen=True):
    """One end of a data path, with everything ib_write_bw needs (names validated, GID resolved)."""

    node: str
    netdev: str
    rdma_dev: str
    gid_index: int
    ip: str


class BenchPath(msgspec.Struct, frozen=True):
    """A data path as the traffic tests use it; `subnet` (a validated IPv4 CIDR) steers mpirun's own TCP."""

    key: str
    a: PathEnd
    b: PathEnd
    subnet: str

    def ends(self, direction: str) -> tuple[PathEnd, PathEnd]:
        """(client, server) for a direction: the client writes into the server's memory."""
        return (self.a, self.b) if direction == "a->b" else (self.b, self.a)


class RdmaOptions(msgspec.Struct, frozen=True):
    """Defaults follow the published GB10 measurements: 1 MiB messages, one QP, a 10 s timed run (perftest
    leaves a quarter of -D out at each end, so 6 s are measured; 5 s would leave 3).

    `adaptive` (the quick tier) runs the concurrent rounds first and a path alone only where, with all paths
    at once, it carried less than `low_gbps` (LINK_BELOW_NOMINAL's nominal_min_gbps when the playbooks load)."""

    duration_s: int = 10
    size_bytes: int = 1048576
    qps: int = 1
    port_base: int | None = None
    ready_timeout_s: float = 10.0
    directions: tuple[str, ...] = DIRECTIONS
    modes: tuple[str, ...] = MODES
    adaptive: bool = False
    low_gbps: float = 80.0


# The quick tier (`check --quick`): rounds of -D 4. perftest leaves duration / 4 (integer) out at each end of
# a timed run (perftest_parameters.c: margin = duration / 4), so each run measures 2 s after a 1 s warm-up;
# -D 3 would leave no margin at all. Enough to tell the hot-plug state (13-15 Gb/s per path) and one shared
# PCIe x4 link (~95 instead of ~196 Gb/s in total) from a healthy pair: both are 2-7x off, not a few per cent
# (spark-link.md s.0, s.5), and both show with all paths at once, so those rounds run first (`adaptive`).
QUICK_DURATION_S = 4


def quick_options(*, size_bytes: int = 1048576, qps: int = 1, port_base: int | None = None) -> RdmaOptions:
    """The quick tier's ib_write_bw at -D QUICK_DURATION_S: all paths at once in each direction, then each path
    alone only where it was low."""
    return RdmaOptions(duration_s=QUICK_DURATION_S, size_bytes=size_bytes, qps=qps, port_base=port_base,
                       adaptive=True)


class Round(msgspec.Struct, frozen=True):
    """Paths that run at the same time, in one direction."""

    id: str
    mode: str
    direction: str
    paths: tuple[BenchPath, ...]
    ports: tuple[int, ...]


def _end(fn: Function) -> PathEnd:
    if fn.rdma_dev is None or fn.ip is None:
        raise BenchError(f"{fn.label} has no RDMA device or no IPv4 address; cannot run ib_write_bw on it")
    if fn.gid_index is None:
        raise BenchError(f"{fn.label}: no RoCE v2 GID for {fn.ip} on {fn.rdma_dev}; fix the GID table first "
                         "(linkcheck check shows why)")
    ipaddress.IPv4Address(fn.ip)
    return PathEnd(fn.node, validate_name(fn.netdev), validate_name(fn.rdma_dev), fn.gid_index, fn.ip)


def untested_paths(link: LinkFacts) -> dict[str, str]:
    """The paths the traffic tests leave out, each with why: an end without carrier (LINK_DOWN names it) would
    only fail the first round, and so stop the test for the paths that work."""
    out = {}
    for path in link.paths:
        down = [f.label for f in (path.a, path.b) if f.carrier is False]
        if down:
            out[path.key] = f"not run: {' and '.join(down)} has no carrier (see LINK_DOWN)"
    return out


def bench_paths(link: LinkFacts) -> tuple[BenchPath, ...]:
    """The data paths to test: every path between the nodes but those `untested_paths` leaves out."""
    if not link.paths:
        raise BenchError("no data path between the nodes (no twin on a shares a subnet with one on b)",
                         fix="address the twins (netplan), then run `linkcheck check`")
    left_out = untested_paths(link)
    if len(left_out) == len(link.paths):
        raise BenchError("no data path has carrier at both ends: " + "; ".join(left_out.values()),
                         fix="bring the twins up (`ip link set IFACE up`, or check the cable), then run "
                             "`linkcheck check`")
    return tuple(BenchPath(p.key, _end(p.a), _end(p.b), str(ipaddress.IPv4Network(p.subnet, strict=False)))
                 for p in link.paths if p.key not in left_out)


def plan_rounds(paths: tuple[BenchPath, ...], options: RdmaOptions) -> list[Round]:
    """Each path alone, then all paths at once, in each direction; every server gets its own port."""
    base = options.port_base or 20000 + secrets.randbelow(2000) * 10
    rounds: list[Round] = []
    next_port = base

    def add(mode: str, direction: str, group: tuple[BenchPath, ...]) -> None:
        nonlocal next_port
        ports = tuple(range(next_port, next_port + len(group)))
        next_port += len(group)
        rounds.append(Round(f"{mode}-{direction.replace('->', '2')}-{len(rounds)}", mode, direction, group, ports))

    for direction in options.directions:
        if "alone" in options.modes:
            for path in paths:
                add("alone", direction, (path,))
        if "concurrent" in options.modes and len(paths) > 1:
            add("concurrent", direction, paths)
    return rounds

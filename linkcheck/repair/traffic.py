"""The short `ib_write_bw` of a repair's runtime verification: one path, one direction, through the traffic tests'
own code (linkcheck.bench): the server started first and seen listening, then the client, every process ended by
its PID whatever happens. A ping proves the IP path; only RDMA traffic proves the GIDs, the RoCE MTU and the queue
pair set-up that NCCL will use."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable

import msgspec

from linkcheck.bench import remote
from linkcheck.bench.perftest import RoundContext, ToolInfo, refuse_busy_ports, round_failure, run_round
from linkcheck.bench.plan import BenchPath, PathEnd, RdmaOptions, plan_rounds
from linkcheck.bench.runner import detect_tools
from linkcheck.collect.specs import validate_name
from linkcheck.errors import BenchError, LinkcheckError, ParseError
from linkcheck.model import Capture
from linkcheck.parsers.perftest import parse_perftest
from linkcheck.transport.base import Transport

# perftest leaves duration // 4 out at each end of a timed run: -D 2 measures all of its 2 s. Enough to show that
# RDMA writes flow with these GIDs and MTUs; the rate itself is the re-check's to judge (check --quick).
VERIFY_DURATION_S = 2
READY_TIMEOUT_S = 10.0


class TrafficEnd(msgspec.Struct, frozen=True):
    """One end of the path as the verification found it live: its address and its RoCE v2 GID index."""

    node: str
    netdev: str
    rdma_dev: str
    ip: str
    gid_index: int


class TrafficResult(msgspec.Struct, frozen=True):
    """What the short run showed: the client's average in Gb/s, or why there is none (`problem`); `skipped` when
    ib_write_bw is missing on a node (the verification then rests on the ping and the GID table)."""

    gbps: float | None = None
    problem: str | None = None
    skipped: str | None = None


def _end(end: TrafficEnd) -> PathEnd:
    return PathEnd(end.node, validate_name(end.netdev), validate_name(end.rdma_dev), end.gid_index,
                   str(ipaddress.IPv4Address(end.ip)))


def short_write_bw(transports: dict[str, Transport], client: TrafficEnd, server: TrafficEnd, subnet: str,
                   on_start: Callable[[str], None] | None = None) -> TrafficResult:
    """ib_write_bw from `client` into `server` for VERIFY_DURATION_S."""
    try:
        tools, _ = detect_tools(transports)
    except LinkcheckError as exc:
        return TrafficResult(skipped=str(exc))
    # The text row is what is read here: no --out_json file to fetch.
    tools = {node: ToolInfo(info.version, False) for node, info in tools.items()}
    a, b = (client, server) if client.node == "a" else (server, client)
    path = BenchPath(f"{a.netdev}<->{b.netdev}", _end(a), _end(b),
                     str(ipaddress.IPv4Network(subnet, strict=False)))
    options = RdmaOptions(duration_s=VERIFY_DURATION_S, ready_timeout_s=READY_TIMEOUT_S,
                          directions=(f"{client.node}->{server.node}",), modes=("alone",))
    rnd = plan_rounds((path,), options)[0]
    registry = remote.ProcessRegistry(dict(transports))
    sink: list[Capture] = []
    try:
        refuse_busy_ports(transports, {server.node: set(rnd.ports)})
        registry.prepare(READY_TIMEOUT_S + 2 * VERIFY_DURATION_S + 120)
        if on_start is not None:
            on_start(f"ib_write_bw -D {VERIFY_DURATION_S} from {client.node}:{client.rdma_dev} (GID index "
                     f"{client.gid_index}) to {server.node}:{server.rdma_dev} (GID index {server.gid_index})")
        run_round(RoundContext(transports, registry, rnd, options, tools, sink))
    except BenchError as exc:
        return TrafficResult(problem=f"ib_write_bw: {exc}")
    finally:
        registry.end_all("the repair's traffic check ended")
    failed = round_failure(sink)
    if failed:
        return TrafficResult(problem=failed)
    return _rate(sink, client)


def _rate(sink: list[Capture], client: TrafficEnd) -> TrafficResult:
    mine = [c for c in sink if c.meta.get("role") == "client" and c.meta.get("format") == "text"]
    if not mine:
        return TrafficResult(problem=f"node {client.node}: ib_write_bw client left no output")
    try:
        gbps = parse_perftest(mine[0].stdout, report_gbits=True).bw_avg_gbps
    except ParseError as exc:
        return TrafficResult(problem=f"node {client.node}: ib_write_bw client output unreadable: {exc}")
    if gbps is None or gbps <= 0:
        return TrafficResult(problem=f"node {client.node}: ib_write_bw from {client.rdma_dev} moved no data "
                                     "(no bandwidth row)")
    return TrafficResult(gbps=gbps)

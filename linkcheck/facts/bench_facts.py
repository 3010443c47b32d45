"""Traffic results from the bundle's benchmark captures: per-path Gb/s, counter deltas, flaps, the NCCL run."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING

from msgspec.structs import replace

from linkcheck.errors import ParseError
from linkcheck.facts.latency_facts import build_latency_facts
from linkcheck.facts.model import BenchFacts, DataPath, Function, NcclRun, NotRun, RdmaCounters, RdmaRun
from linkcheck.integers import ascii_int
from linkcheck.model import Capture
from linkcheck.parsers.nccl_log import parse_nccl_log
from linkcheck.parsers.nccl_tests import parse_nccl_tests
from linkcheck.parsers.perftest import parse_perftest
from linkcheck.parsers.sysfs import parse_sysfs_dump

if TYPE_CHECKING:
    from linkcheck.parsers.nccl_tests import NcclTestRow

FLAP_REASON = "the link flapped or a GID changed during this run; its number is not trusted"


def _twins(cap: Capture) -> tuple[tuple[str | None, str | None], tuple[str | None, str | None]]:
    """A run's local and peer twin as its capture names them: (netdev, RDMA device) each."""
    meta = cap.meta
    return (meta.get("local_netdev"), meta.get("local_rdma_dev")), (meta.get("peer_netdev"), meta.get("peer_rdma_dev"))


def path_of(cap: Capture, paths: Sequence[DataPath]) -> DataPath | None:
    """The path a run's client or server ran on, by its node and its twins: its local one by netdev or RDMA device,
    and the peer's when the bundle names it; None when it ran on none of them."""
    local, peer = _twins(cap)
    for path in paths:
        if cap.node not in (path.a.node, path.b.node):
            continue
        mine, theirs = (path.a, path.b) if cap.node == path.a.node else (path.b, path.a)
        if _names(mine, local) and (peer == (None, None) or _names(theirs, peer)):
            return path
    return None


def _path_key(cap: Capture, paths: tuple[DataPath, ...]) -> str:
    """The path a client ran on (`path_of`), else its twins' names as the bundle gives them."""
    path = path_of(cap, paths)
    if path is not None:
        return path.key
    local, peer = _twins(cap)
    local_name, peer_name = local[0] or local[1] or "?", peer[0] or peer[1] or "?"
    first = paths[0].a.node if paths else "a"  # the pair's first node ("a"; a cable's first end in a cluster)
    a_side, b_side = (local_name, peer_name) if cap.node == first else (peer_name, local_name)
    return f"{a_side}<->{b_side}"


def _names(fn: Function, names: tuple[str | None, str | None]) -> bool:
    netdev, rdma_dev = names
    return (netdev is not None and netdev == fn.netdev) or (rdma_dev is not None and rdma_dev == fn.rdma_dev)


def _direction(cap: Capture) -> str:
    """a->b when the client ran on a; the bundle's own `direction` wins when it records one."""
    return cap.meta.get("direction") or ("a->b" if cap.node == "a" else "b->a")


def _rate(cap: Capture) -> tuple[float | None, str | None]:
    if cap.skipped:
        return None, cap.skipped
    gbits = cap.meta.get("report_gbits")
    try:
        result = parse_perftest(cap.stdout, report_gbits=None if gbits is None else gbits == "true")
    except ParseError as exc:
        return None, f"{_run_name(cap)}: {exc.reason}"
    gbps = result.bw_mean_gbps if len(result.rows) > 1 else result.bw_avg_gbps
    # perftest prints its errors on stderr; the first one says more than a missing result row.
    stderr = next((ln.strip() for ln in cap.stderr.splitlines() if ln.strip()), None)
    failed = cap.exit_status not in (0, None)
    if gbps is None or failed:
        default = "failed" if failed else "no result row (wrong GID index -x?)"
        why = result.errors[0] if result.errors else (stderr if failed and stderr else default)
        return None, f"exit {cap.exit_status}: {why}"
    if not math.isfinite(gbps) or gbps < 0:  # the parser refuses these; a sum or mean must not make one
        return None, f"{_run_name(cap)}: the rate {gbps} Gb/s is not a finite number"
    return gbps, None


def _run_name(cap: Capture) -> str:
    """Which ib_write_bw run an output is, in words: `ib_write_bw alone a->b (client a, rocep1s0f1)`."""
    meta = cap.meta
    where = ", ".join(x for x in (f"client {cap.node}", meta.get("local_rdma_dev") or meta.get("local_netdev"),
                                  meta.get("round")) if x)
    return f"ib_write_bw {meta.get('mode', 'alone')} {_direction(cap)} ({where})"


RunKey = tuple[str, str, str, str, str]  # (round, node, device, mode, direction)


def run_key(cap: Capture) -> RunKey:
    """What identifies one ib_write_bw run in a bundle: the documented meta fields, and the round when present.

    The text output and the JSON report of one client share a key; so do repetitions of one run that carry
    no round, which are told apart by their order (see `_rdma_runs`).
    """
    meta = cap.meta
    return (meta.get("round", ""), cap.node, meta.get("local_rdma_dev") or meta.get("local_netdev") or cap.arg or "",
            meta.get("mode", "alone"), _direction(cap))


def _outputs_per_run(caps: list[Capture]) -> list[list[Capture]]:
    """Split one key's client captures into runs: each text output is a run, its JSON report joins it."""
    texts = [c for c in caps if c.meta.get("format") != "json"]
    jsons = [c for c in caps if c.meta.get("format") == "json"]
    if not texts:
        return [[c] for c in jsons]
    runs = [[c] for c in texts]
    for i, cap in enumerate(jsons):
        runs[min(i, len(runs) - 1)].insert(0, cap)
    return runs


def _rdma_runs(captures: list[Capture], paths: tuple[DataPath, ...], flapped: set[str]) -> tuple[RdmaRun, ...]:
    """One run per client output; its JSON report (valid from perftest 6.20) wins over the text when it parses."""
    groups: dict[RunKey, list[Capture]] = defaultdict(list)
    for cap in captures:
        if cap.meta.get("kind") == "rdma" and cap.meta.get("role") == "client" and not _planned_out(cap):
            groups[run_key(cap)].append(cap)
    runs = []
    for (round_id, *_), caps in groups.items():
        per_run = _outputs_per_run(caps)
        for nth, outputs in enumerate(per_run, 1):
            gbps: float | None = None
            problem: str | None = "no ib_write_bw output"
            for cap in outputs:
                gbps, problem = _rate(cap)
                if gbps is not None:
                    break
            if round_id in flapped:
                gbps, problem = None, FLAP_REASON
            text = outputs[-1]
            meta = text.meta
            # Repetitions without a recorded round are numbered in bundle order, so totals pair them up.
            label = round_id or (f"#{nth}" if len(per_run) > 1 else "")
            runs.append(RdmaRun(_path_key(text, paths), meta.get("mode", "alone"), _direction(text),
                                gbps, text.node, meta.get("local_rdma_dev"), problem, label))
    return tuple(runs)


def _planned_out(cap: Capture) -> bool:
    """A run the plan left out on purpose (`plan: skipped`): listed as not run, never a rate or a problem."""
    return cap.meta.get("plan") == "skipped"


def _not_run(captures: list[Capture], paths: tuple[DataPath, ...]) -> tuple[NotRun, ...]:
    return tuple(NotRun(_path_key(c, paths), c.meta.get("mode", "alone"), _direction(c), c.skipped or "not run",
                        c.meta.get("round", "")) for c in captures
                 if c.meta.get("kind") == "rdma" and c.meta.get("role") == "client" and _planned_out(c))


def _snapshots(captures: list[Capture]) -> tuple[set[str], tuple[RdmaCounters, ...]]:
    """Rounds whose carrier, link_downed or GID entries changed, and per-HCA counter deltas."""
    pairs: dict[tuple[str, str], dict[str, dict[str, str | None]]] = defaultdict(dict)
    for cap in captures:
        if cap.meta.get("kind") == "snapshot" and cap.ok:
            try:
                dump = parse_sysfs_dump(cap.stdout)
            except ParseError:
                continue
            pairs[(cap.meta.get("round", ""), cap.node)][cap.meta.get("phase", "")] = {
                e.path: e.value for e in dump.entries}
    flapped: set[str] = set()
    counters: list[RdmaCounters] = []
    for (round_id, node), phases in pairs.items():
        before, after = phases.get("before"), phases.get("after")
        if before is None or after is None:
            continue
        watched = [p for p in before if not p.endswith(("port_xmit_data", "port_rcv_data"))]
        if any(before.get(p) != after.get(p) for p in watched):
            flapped.add(round_id)
        counters.extend(_deltas(node, round_id, before, after))
    return flapped, tuple(counters)


Values = dict[str, str | None]


def _deltas(node: str, round_id: str, before: Values, after: Values) -> list[RdmaCounters]:
    def delta(path: str) -> int:
        b, a = (ascii_int(v, 0, (1 << 64) - 1) if v else None for v in (before.get(path), after.get(path)))
        return (a - b) * 4 if a is not None and b is not None else 0

    devs = sorted({p.split("/")[4] for p in before if p.endswith("/counters/port_xmit_data")})
    base = "/sys/class/infiniband/{}/ports/1/counters/"
    return [RdmaCounters(node, d, delta(base.format(d) + "port_xmit_data"), delta(base.format(d) + "port_rcv_data"),
                         round_id) for d in devs]


LARGE_MESSAGE_BYTES = 1 << 30  # bus bandwidth is judged where messages are large enough to fill the link


def _large_message_busbw(rows: tuple[NcclTestRow, ...]) -> tuple[float | None, int | None]:
    """The best bus bandwidth over the rows of at least 1 GiB (all rows when none is that large), and the
    largest size: small sizes are latency-bound (a healthy pair gives ~16 GB/s at 32 MB, ~22 at 16 GB)."""
    if not rows:
        return None, None
    largest = max(r.size_bytes for r in rows)
    judged = [r for r in rows if r.size_bytes >= LARGE_MESSAGE_BYTES] or list(rows)
    values = [v for r in judged for v in (r.oop_busbw_gbs, r.ip_busbw_gbs) if v is not None and math.isfinite(v)]
    return (max(values) if values else None), largest


NVIDIA_MESSAGE_BYTES = 16 << 30  # spark_cluster_setup.py runs `all_gather_perf -b 16G -e 16G -f 2`


def nvidia_busbw(rows: tuple[NcclTestRow, ...]) -> tuple[float | None, int | None]:
    """NVIDIA's statistic and the size it was taken at. spark_cluster_setup.py (NVIDIA/dgx-spark-playbooks
    nvidia/multi-sparks-through-switch/assets/spark_cluster_setup/spark_cluster_setup.py:261, 283) reads nccl-tests'
    `# Avg bus bandwidth` of a run of 16 GiB only; nccl-tests adds every row's out-of-place and in-place busbw and
    divides by their count (NVIDIA/nccl-tests src/common.cu:895, 1831), so that is the mean of the two at 16 GiB.
    A sweep without a 16 GiB row gives the same mean at its largest size of at least 1 GiB (an assumption: NVIDIA
    measures only 16 GiB); None below 1 GiB."""
    by_size = {r.size_bytes: r for r in rows}
    size = NVIDIA_MESSAGE_BYTES if NVIDIA_MESSAGE_BYTES in by_size else max(
        (s for s in by_size if s >= LARGE_MESSAGE_BYTES), default=None)
    if size is None:
        return None, None
    row = by_size[size]
    values = [v for v in (row.oop_busbw_gbs, row.ip_busbw_gbs) if v is not None and math.isfinite(v)]
    return (sum(values) / len(values) if values else None), size


def nccl_run(test_cap: Capture | None, log_text: str | None) -> NcclRun:
    problem = None
    busbw = avg = nvidia = None
    largest: int | None = None
    nvidia_size: int | None = None
    wrong = 0
    if test_cap is not None:
        try:
            result = parse_nccl_tests(test_cap.stdout)
            busbw, largest = _large_message_busbw(result.rows)
            nvidia, nvidia_size = nvidia_busbw(result.rows)
            avg, wrong = result.avg_busbw_gbs, result.wrong_total
            avg = avg if avg is None or math.isfinite(avg) else None
            if not result.rows:
                problem = result.errors[0] if result.errors else "no result rows"
        except ParseError as exc:
            problem = test_cap.skipped or exc.reason
    network: str | None = None
    devices: tuple[str, ...] = ()
    channels: tuple[int, ...] = ()
    socket = False
    by_host: tuple[tuple[str, tuple[str, ...]], ...] = ()
    if log_text:
        try:
            log = parse_nccl_log(log_text)
            network, devices, channels, socket = log.network, log.ib_devices, log.channel_net_devs, log.uses_socket
            by_host = log.ib_devices_by_host
        except ParseError as exc:
            problem = problem or f"NCCL log: {exc.reason}"
    return NcclRun(busbw_gbs=busbw, avg_busbw_gbs=avg, nvidia_busbw_gbs=nvidia, nvidia_size_bytes=nvidia_size,
                   wrong=wrong, largest_bytes=largest, network=network,
                   ib_devices=tuple(devices), channel_net_devs=tuple(channels), uses_socket=socket, problem=problem,
                   ib_devices_by_host=by_host)


# The meta kind of the NCCL job's capture: "nccl" in a pair's bundles saved before its job was the one across every
# node, JOB_KIND since, whatever the node count (bench/nccl.py `plan_meta`, with the ranks' nodes in "nodes").
PAIR_JOB_KIND = "nccl"
JOB_KIND = "cluster_nccl"
JOB_KINDS = (PAIR_JOB_KIND, JOB_KIND)


def pair_job(cap: Capture) -> bool:
    """Whether a capture is the NCCL job of a pair: the pair's own, or the job across exactly two nodes. A cable's
    pair view in a cluster of three or more never takes the job across them all for its own."""
    kind = cap.meta.get("kind")
    return kind == PAIR_JOB_KIND or (kind == JOB_KIND and len(cap.meta.get("nodes", "").split(",")) == 2)


def build_bench_facts(captures: list[Capture], paths: tuple[DataPath, ...]) -> tuple[BenchFacts, frozenset[str]]:
    """BenchFacts plus which kinds of test ("rdma", "nccl") the bundle holds."""
    flapped, counters = _snapshots(captures)
    rdma = _rdma_runs(captures, paths, flapped)
    nccl_caps = [c for c in captures if pair_job(c)]
    test_cap = next((c for c in nccl_caps if c.spec != "nccl_log" and c.meta.get("format") != "json"), None)
    log_cap = next((c for c in nccl_caps if c.spec == "nccl_log"), None)
    # mpirun's stdout carries the NCCL_DEBUG=INFO lines when no separate log was kept.
    log_text = log_cap.stdout if log_cap else (test_cap.stdout if test_cap else None)
    nccl = nccl_run(test_cap, log_text) if nccl_caps else None
    if nccl is not None and test_cap is not None and test_cap.meta.get("purpose") == "transport":
        nccl = replace(nccl, transport_only=True)
    latency, allreduce = build_latency_facts(captures, paths)
    present = frozenset(k for k, v in (("rdma", rdma), ("nccl", nccl), ("latency", latency or allreduce)) if v)
    return BenchFacts(rdma=rdma, counters=counters, nccl=nccl, flapped=tuple(sorted(flapped)),
                      not_run=_not_run(captures, paths), latency=latency, allreduce=allreduce), present

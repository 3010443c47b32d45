"""Benchmark artifacts for a node pair: ib_write_bw client/server outputs per path and direction,
all_gather_perf output and the NCCL INFO log, each with the meta a bench capture carries.

The renderers live in bench_perftest, bench_nccl and bench_nccl_log; this module picks the devices,
GIDs, MTUs and versions from the two node models so every artifact agrees with the inspection outputs.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from tests.emulators.bench_nccl import NcclTestsRun, allreduce_latency_curve, busbw_curve, render_all_gather_perf
from tests.emulators.bench_nccl_log import NcclLogRun, RankNet, render_nccl_log
from tests.emulators.bench_perftest import (
    PerftestRun,
    command_line,
    render_ib_write_bw,
    render_ib_write_bw_json,
    render_ib_write_lat,
)
from tests.emulators.derive import auto_gid_index, gid_entry, inet_ntop6, nccl_gid_pin, roce_mtu
from tests.emulators.node import Function, Node

__all__ = [
    "BenchArtifact", "PerftestRun", "NcclTestsRun", "NcclLogRun", "RankNet", "render_ib_write_bw",
    "render_ib_write_bw_json", "render_all_gather_perf", "render_nccl_log", "rdma_artifacts", "nccl_artifacts",
]


@dataclass(frozen=True)
class BenchArtifact:
    """One benchmark output as a bench capture records it."""

    node: str  # "a" | "b"
    spec: str  # ib_write_bw | all_gather_perf | nccl_log
    command: str
    stdout: str
    stderr: str = ""
    exit_status: int = 0
    meta: dict[str, str] = field(default_factory=dict)

    @property
    def arg(self) -> str:
        """A unique, name-safe capture arg: mode.direction.device.role (a2b for a->b)."""
        m = self.meta
        if m.get("kind") == "latency":  # one run per path and size: the round names it
            return f"{m.get('round', 'allreduce')}.{m.get('role', 'client')}"
        direction = m.get("direction", "a->b").replace("->", "2")
        dev = m.get("local_rdma_dev", "").replace(",", "+") or "none"
        return f"{m.get('mode', 'alone')}.{direction}.{dev}.{m.get('role', 'client')}"


def gid_ipv6(fn: Function, index: int) -> str:
    return inet_ntop6(gid_entry(fn, index).gid)


def _ipv4(fn: Function) -> str:
    return fn.ipv4[0].split("/")[0] if fn.ipv4 else ""


def _meta(kind: str, mode: str, direction: str, role: str, local: Function, peer: Function,
          gid_index: int, gbits: bool, duration_s: int | None) -> dict[str, str]:
    return {
        "kind": kind, "mode": mode, "direction": direction, "role": role,
        "local_netdev": local.netdev, "local_rdma_dev": local.rdma_dev,
        "peer_netdev": peer.netdev, "peer_rdma_dev": peer.rdma_dev,
        "gid_index": str(gid_index), "report_gbits": "true" if gbits else "false",
        "duration_s": "" if duration_s is None else str(duration_s),
    }


def _side(node: Node, role: str, local: Function, peer: Function, peer_node: Node, gbps: float,
          duration_s: int | None, gbits: bool, seed: int) -> PerftestRun:
    index, peer_index = auto_gid_index(local), auto_gid_index(peer)
    return PerftestRun(
        role=role, device=local.rdma_dev, gid_index=index, local_gid=gid_ipv6(local, index),
        remote_gid=gid_ipv6(peer, peer_index), gbps=gbps, mtu_bytes=min(roce_mtu(local.mtu)[0], roce_mtu(peer.mtu)[0]),
        duration_s=duration_s, version=node.version("perftest"), report_gbits=gbits, seed=seed,
    )


def rdma_artifacts(a: Node, b: Node, pairs: list[tuple[str, str, float, float]], mode: str, *,
                   duration_s: int | None = 10, report_gbits: bool = True) -> list[BenchArtifact]:
    """For each (netdev on a, netdev on b, Gb/s a->b, Gb/s b->a): client and server output both ways."""
    out: list[BenchArtifact] = []
    nodes = {"a": a, "b": b}
    for seed, (dev_a, dev_b, ab, ba) in enumerate(pairs):
        fns = {"a": a.function(dev_a), "b": b.function(dev_b)}
        for client, server, gbps in (("a", "b", ab), ("b", "a", ba)):
            direction = f"{client}->{server}"
            for name, role in ((client, "client"), (server, "server")):
                other = server if role == "client" else client
                run = _side(nodes[name], role, fns[name], fns[other], nodes[other], gbps, duration_s,
                            report_gbits, seed * 2 + (name == "b"))
                stdout, stderr, rc = render_ib_write_bw(run)
                cmd = command_line(run, _ipv4(fns[server]) if role == "client" else None)
                meta = _meta("rdma", mode, direction, role, fns[name], fns[other], run.gid_index, report_gbits,
                             duration_s)
                out.append(BenchArtifact(name, "ib_write_bw", cmd, stdout, stderr, rc, meta))
    return out


def _rank(node: Node, hcas: list[Function], pid: int) -> RankNet:
    pin = nccl_gid_pin(node)
    indices = tuple(pin if pin is not None else auto_gid_index(f) for f in hcas)
    return RankNet(
        host=node.hostname, pid=pid, oob_if=node.mgmt.name,
        oob_ip=node.mgmt.ipv4.split("/")[0], hcas=tuple(f.rdma_dev for f in hcas), gid_indices=indices,
        gids=tuple(gid_ipv6(f, i) for f, i in zip(hcas, indices, strict=True)),
        ib_mtu_enum=min(roce_mtu(f.mtu)[1] for f in hcas) if hcas else 5,
    )


def _hcas(node: Node) -> list[Function]:
    wanted = node.nccl_env.get("NCCL_IB_HCA", "")
    names = [w.split(":")[0] for w in wanted.split(",") if w]
    return [node.function(n) for n in names] if names else [f for f in node.functions if f.link_up]


def nccl_artifacts(a: Node, b: Node, peak_busbw_gbs: float, *, transport: str = "IB", wrong: int = 0,
                   min_bytes: int = 1 << 30, max_bytes: int = 1 << 34) -> list[BenchArtifact]:
    """all_gather_perf text (node a, rank 0 prints) and the merged NCCL INFO log of both ranks."""
    curve = busbw_curve(peak_busbw_gbs, min_bytes, max_bytes)
    env = dict(a.nccl_env)
    tests = NcclTestsRun(hosts=(a.hostname, b.hostname), curve=curve, wrong=wrong,
                         version=a.version("nccl-tests"), nccl_version=a.version("nccl"), env=env)
    stdout, stderr, rc = render_all_gather_perf(tests)
    ranks = (_rank(a, _hcas(a) if transport == "IB" else [], tests.pids[0]),
             _rank(b, _hcas(b) if transport == "IB" else [], tests.pids[1]))
    log = NcclLogRun(ranks=ranks, transport=transport, nccl_version=a.version("nccl"), cuda=a.version("cuda"),
                     env=tuple(env.items()), gid_pinned=nccl_gid_pin(a))
    log_out, log_err, log_rc = render_nccl_log(log)
    hca_names = ",".join(ranks[0].hcas)
    meta = {
        "kind": "nccl", "mode": "concurrent", "direction": "a->b", "role": "client",
        "local_netdev": ",".join(a.function(h).netdev for h in ranks[0].hcas), "local_rdma_dev": hca_names,
        "peer_netdev": ",".join(b.function(h).netdev for h in ranks[1].hcas),
        "peer_rdma_dev": ",".join(ranks[1].hcas),
        "gid_index": ",".join(str(i) for i in ranks[0].gid_indices), "report_gbits": "false", "duration_s": "",
    }
    cmd = (f"mpirun -np 2 -H {a.hostname}:1,{b.hostname}:1 -x NCCL_DEBUG=INFO -x NCCL_DEBUG_SUBSYS=INIT,NET "
           f"./build/all_gather_perf -b {min_bytes} -e {max_bytes} -f 2 -g 1")
    return [BenchArtifact("a", "all_gather_perf", cmd, stdout, stderr, rc, meta),
            BenchArtifact("a", "nccl_log", cmd, log_out, log_err, log_rc, dict(meta))]


LATENCY_SIZES = (2, 49152)  # what `linkcheck bench latency` runs per path: perftest's default and a decode payload


def latency_artifacts(a: Node, b: Node, pairs: list[tuple[str, str, dict[int, float]]]) -> list[BenchArtifact]:
    """For each (netdev on a, netdev on b, {size: typical us}): ib_write_lat client on a and server on b per size,
    one at a time, as `linkcheck bench latency` runs them."""
    out: list[BenchArtifact] = []
    for seed, (dev_a, dev_b, typical) in enumerate(pairs):
        fa, fb = a.function(dev_a), b.function(dev_b)
        for size, typical_us in sorted(typical.items()):
            for name, node, role, local, peer in (("a", a, "client", fa, fb), ("b", b, "server", fb, fa)):
                run = replace(_side(node, role, local, peer, b if name == "a" else a, 0.0, None, False, seed),
                              size_bytes=size, iterations=1000)
                stdout, stderr, rc = render_ib_write_lat(run, typical_us)
                cmd = (f"ib_write_lat -d {local.rdma_dev} -i 1 -x {run.gid_index} -F -s {size} -n 1000"
                       + (f" {_ipv4(fb)}" if role == "client" else ""))
                meta = {"kind": "latency", "tool": "ib_write_lat", "round": f"lat-{seed}-{size}", "role": role,
                        "path": f"{dev_a}<->{dev_b}", "direction": "a->b", "local_netdev": local.netdev,
                        "local_rdma_dev": local.rdma_dev, "peer_netdev": peer.netdev,
                        "peer_rdma_dev": peer.rdma_dev, "gid_index": str(run.gid_index), "size_bytes": str(size),
                        "format": "text"}
                out.append(BenchArtifact(name, "ib_write_lat", cmd, stdout, stderr, rc, meta))
    return out


def allreduce_artifacts(a: Node, b: Node, *, slowdown: float = 1.0, min_bytes: int = 16384,
                        max_bytes: int = 65536) -> list[BenchArtifact]:
    """all_reduce_perf -b 16K -e 64K across the nodes (rank 0 prints, the NCCL INFO lines in the same output)."""
    tests = NcclTestsRun(hosts=(a.hostname, b.hostname), curve=allreduce_latency_curve(min_bytes, max_bytes, slowdown),
                         version=a.version("nccl-tests"), nccl_version=a.version("nccl"), env=dict(a.nccl_env),
                         collective="all_reduce", iters=200, warmup=20)
    stdout, stderr, rc = render_all_gather_perf(tests)
    ranks = (_rank(a, _hcas(a), tests.pids[0]), _rank(b, _hcas(b), tests.pids[1]))
    log, _, _ = render_nccl_log(NcclLogRun(ranks=ranks, transport="IB", nccl_version=a.version("nccl"),
                                           cuda=a.version("cuda"), env=tuple(tests.env.items()),
                                           gid_pinned=nccl_gid_pin(a)))
    meta = {"kind": "latency", "tool": "all_reduce_perf", "max_bytes": str(max_bytes), "format": "text",
            "local_rdma_dev": ",".join(ranks[0].hcas), "role": "client", "mode": "latency"}
    cmd = (f"mpirun -np 2 -H {a.hostname}:1,{b.hostname}:1 -x NCCL_DEBUG=INFO -x NCCL_DEBUG_SUBSYS=INIT,NET "
           f"./build/all_reduce_perf -b {min_bytes} -e {max_bytes} -f 2 -g 1 -n 200 -w 20")
    return [BenchArtifact("a", "all_reduce_perf", cmd, log + stdout, stderr, rc, meta)]

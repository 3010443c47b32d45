"""NCCL across every node of a cluster, as facts: the nccl-tests result and, per node, what its own rank's NCCL log
lines prove about the transport (NET/IB on every channel, no socket).

One mpirun runs one rank per node (linkcheck.bench.nccl); its merged stdout holds every rank's NCCL INFO
lines, each prefixed with its host (the hostname cut at the first `.`), so a node's proof is read from the lines of
its own host. A rank that fell back to sockets is named on its node: the job-wide log cannot say which.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec

from linkcheck.errors import ParseError
from linkcheck.facts.bench_facts import JOB_KIND, JOB_KINDS, nccl_run
from linkcheck.facts.model import NodeFacts
from linkcheck.model import Capture
from linkcheck.parsers.nccl_log import NcclRankLog, parse_nccl_log

KIND = JOB_KIND  # the capture's meta kind of linkcheck's own job across the nodes (bench/nccl.py)
# Per node, the meta key of the NCCL_IB_HCA its rank was given, and of the address mpirun reached it at.
HCA_KEY = "hca."
HOST_KEY = "host."
# What NVIDIA's ring run sets (NVIDIA/dgx-spark-playbooks nvidia/multi-sparks-through-switch/assets/
# spark_cluster_setup/spark_cluster_setup.py 250, 259): subnet-aware routing, no NIC fusion, NCCL's own IB transport
# rather than a plugin. linkcheck's own run on a ring sets them; NCCL_RING_SETTINGS_MISSING names a ring node without.
RING_ENV = (("NCCL_IB_SUBNET_AWARE_ROUTING", "1"), ("NCCL_IB_MERGE_NICS", "0"), ("NCCL_NET_PLUGIN", "none"))


def cabled_hcas(node: NodeFacts) -> tuple[str, ...]:
    """The RDMA devices of the node's cabled cages (carrier on a twin), in the node's function order (NCCL_IB_HCA
    only filters: the order of its names changes nothing)."""
    cabled = set(node.cabled_cages)
    return tuple(f.rdma_dev for f in node.functions if f.rdma_dev and f.cage in cabled)


def log_host(node: NodeFacts) -> str | None:
    """The host an NCCL log line names for this node: its hostname cut at the first `.` (NCCL's debug prefix)."""
    return node.hostname.split(".")[0] if node.hostname else None


class NcclRankProof(msgspec.Struct, frozen=True):
    """One node's rank in the cluster's NCCL run: the NCCL_IB_HCA it was given, its own cabled HCAs, and what its
    log lines show. `seen` False: no line of its host is in the log (it never started, or its hostname is not
    known)."""

    node: str
    host: str | None
    given_hca: str | None
    own_hcas: tuple[str, ...]
    seen: bool = False
    network: str | None = None
    ib_devices: tuple[str, ...] = ()
    no_ib_device: bool = False
    socket_devices: tuple[str, ...] = ()
    channel_transports: tuple[str, ...] = ()

    @property
    def fell_back(self) -> bool:
        """Its own NCCL chose sockets: "Using network Socket", "NET/IB : No device found", or socket devices and no
        IB device."""
        return (self.network == "Socket" or self.no_ib_device
                or (bool(self.socket_devices) and not self.ib_devices))

    @property
    def socket_channels(self) -> int:
        return sum(1 for t in self.channel_transports if not t.startswith("IB"))

    @property
    def ib_proven(self) -> bool:
        """NET/IB on every channel of this rank and no socket anywhere in its lines (IB plugins such as IBext count:
        NCCL names them IB...)."""
        return (self.seen and not self.fell_back and (self.network or "").startswith("IB")
                and bool(self.channel_transports) and self.socket_channels == 0)

    @property
    def foreign_devices(self) -> tuple[str, ...]:
        """Devices its NCCL used that are not on its cabled cages."""
        return tuple(d for d in self.ib_devices if d not in self.own_hcas)


class ClusterNccl(msgspec.Struct, frozen=True):
    """The cluster's all_gather_perf: bus bandwidth (largest messages), #wrong, the layout it ran on, why there is no
    result (`problem`), and one proof per node in rank order (the head first)."""

    ranks: tuple[NcclRankProof, ...]
    layout: str
    busbw_gbs: float | None = None
    avg_busbw_gbs: float | None = None
    wrong: int = 0
    largest_bytes: int | None = None
    nccl_version: str | None = None
    problem: str | None = None
    transport_only: bool = False
    nvidia_busbw_gbs: float | None = None  # NVIDIA's statistic (facts.bench_facts.nvidia_busbw), from the same run

    def rank(self, node: str) -> NcclRankProof | None:
        return next((r for r in self.ranks if r.node == node), None)

    @property
    def fell_back(self) -> tuple[str, ...]:
        """The nodes whose own rank chose sockets."""
        return tuple(r.node for r in self.ranks if r.fell_back)


def _by_host(ranks: Sequence[NcclRankLog]) -> dict[str, NcclRankLog]:
    return {r.host: r for r in ranks}


def cluster_nccl_facts(nodes: Mapping[str, NodeFacts], captures: Sequence[Capture], layout: str
                       ) -> ClusterNccl | None:
    """The cluster's NCCL run from its capture (None when none was run). Nodes are matched to log lines by hostname;
    two nodes with one hostname cannot be told apart, and neither is then proven."""
    jobs = [c for c in captures if c.meta.get("kind") in JOB_KINDS and c.meta.get("format") != "json"]
    cap = next((c for c in jobs if c.spec != "nccl_log"), None)
    if cap is None:
        return None
    # A pair's job saved before it was the job across every node keeps its NCCL log apart (`nccl_log`) and names
    # no nodes: its ranks are the pair's two.
    log_text = next((c.stdout for c in jobs if c.spec == "nccl_log"), cap.stdout)
    run = nccl_run(cap, log_text)
    named = cap.meta.get("nodes", "").split(",") if cap.meta.get("kind") == KIND else list(nodes)
    order = [n for n in named if n in nodes]
    hosts = {n: log_host(nodes[n]) for n in order}
    shared = {h for h in hosts.values() if h is not None and list(hosts.values()).count(h) > 1}
    try:
        log = parse_nccl_log(log_text)
        by_host, version = _by_host(log.ranks), log.nccl_version
    except ParseError:
        by_host, version = {}, None
    proofs = []
    for name in order:
        host = hosts[name]
        seen = by_host.get(host) if host is not None and host not in shared else None
        proof = NcclRankProof(name, host, cap.meta.get(HCA_KEY + name), cabled_hcas(nodes[name]))
        if seen is not None:
            proof = msgspec.structs.replace(
                proof, seen=True, network=seen.network, ib_devices=seen.ib_devices, no_ib_device=seen.no_ib_device,
                socket_devices=seen.socket_devices, channel_transports=seen.channel_transports)
        proofs.append(proof)
    problem = run.problem or (None if cap.exit_status == 0 and not cap.skipped
                              else cap.skipped or f"mpirun exited {cap.exit_status}")
    return ClusterNccl(tuple(proofs), layout, run.busbw_gbs, run.avg_busbw_gbs, run.wrong, run.largest_bytes,
                       version, problem, cap.meta.get("purpose") == "transport", run.nvidia_busbw_gbs)

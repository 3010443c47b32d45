"""nccl-tests all_gather_perf across the nodes with OpenMPI, one rank per node, sized to the nodes' free memory: one
job for N ranks, a pair's two or a cluster's every node, launched from the first rank's node by PID under the
traffic tests' guard.

GB10 memory is unified: a 16 GiB all_gather buffer (~32 GB per node) froze a node, so the largest
message is the biggest power of two whose buffers fit in a tenth of the smallest MemAvailable (of
every node that takes part).
Host keys stay strict: mpirun uses the user's own ssh setup, never StrictHostKeyChecking=no.

Every layout's job, a pair's included (`plan_cluster_nccl`, `cluster_mpirun_script`): the head node (the first
host) runs one mpirun, one rank per node, as NVIDIA's launcher runs it (`mpirun -H host1:1,host2:1,...`).

Each rank gets its own node's NCCL_IB_HCA: the HCAs of that node's cabled cages, read from its own inspection. One
value for all would be the head's, and a worker cabled on the other cage then gives NCCL devices without a cable
(spark-link s.10: the head's NCCL_IB_HCA copied to workers). Open MPI's `-x` belongs to the app context it is given
in, so the line is MPMD: one `-np 1` context per node, `:` between them, each with its own `-x NCCL_IB_HCA`; with one
slot per host (`-H h1:1,...`) and as many contexts as hosts, context i takes host i's only slot. The other settings
are the same in every context: NCCL_DEBUG=INFO (each rank's transport proof); on a ring what NVIDIA's ring run sets
(NVIDIA/dgx-spark-playbooks 0db7c14 nvidia/multi-sparks-through-switch/assets/spark_cluster_setup/
spark_cluster_setup.py 250-261: NCCL_IB_SUBNET_AWARE_ROUTING=1, each cable its own subnet; NCCL_IB_MERGE_NICS=0;
NCCL_NET_PLUGIN=none), and NCCL_ALGO=Ring on a ring of four or more (Tree and PAT connect nodes that share no cable).

Where linkcheck reaches every node at an IPv4 address, mpirun starts over those addresses, as NVIDIA's launcher does
(`-H <each node's address>:1`, Open MPI and NCCL's sockets kept on the management port): Open MPI's wire-up is kept
to those addresses (`/32` each), and NCCL's sockets off the CX-7 netdevs, so no IP has to cross a node of a ring.
Where a node is reached by a name (an ssh alias the head may not resolve), its data addresses stand in. Ranks go in
cable order round a ring: NCCL's inter-node ring runs node n to node n+1 (NVIDIA/nccl 5067397 src/graph/connect.cc
95-113, connectRings: `next[send[n]] = recv[(n + 1) % nNodes]`), one rank per node here, so each
hop is a cable.
"""

from __future__ import annotations

import ipaddress
import json
import shlex
import time
from collections.abc import Mapping, Sequence

import msgspec
from msgspec.structs import replace

from linkcheck.bench import remote
from linkcheck.bench.guard import Progress, TrafficResult, run_guarded
from linkcheck.cluster.facts import ClusterFacts, neighbours, ring_order
from linkcheck.collect.specs import validate_name
from linkcheck.errors import BenchError
from linkcheck.facts.model import LinkFacts, NodeFacts
from linkcheck.facts.nccl_ranks import HCA_KEY, HOST_KEY, KIND, RING_ENV, cabled_hcas
from linkcheck.model import Capture
from linkcheck.transport.base import Transport

JSON_FILE = "nccl-tests.json"
MIN_BYTES = 1 << 20
# all_gather with 2 ranks holds send (S/2), receive (S) and the check buffer (S): about 2.5 S per node; with
# N ranks the send buffer is S/N, so 2.5 S bounds every N >= 2.
BUFFER_FACTOR = 2.5
MEMORY_SHARE = 0.25


TRANSPORT_PROOF_BYTES = 256 << 20  # the quick tier's sweep: long enough for NCCL to set up and log its transport


class NcclOptions(msgspec.Struct, frozen=True):
    """`transport_only`: a short sweep run to prove NET/IB on both HCAs (`check --quick --nccl`); its bus
    bandwidth, latency-bound below 1 GiB, is recorded and not judged."""

    max_bytes: int = 1 << 30
    timeout_s: int = 300
    binary: str | None = None  # path of all_gather_perf on the nodes; found on PATH or ~/nccl-tests/build
    transport_only: bool = False


def size_max_bytes(link: LinkFacts, requested: int) -> int:
    """Largest power of two <= requested whose buffers fit the smaller node's free memory share."""
    return size_for_nodes((link.a, link.b), requested)


def size_for_nodes(nodes: Sequence[NodeFacts], requested: int) -> int:
    """Largest power of two <= requested whose buffers fit the free memory share of the node with the least: every
    rank holds the same buffers, so the smallest node decides."""
    avail = [n.mem_available_kib for n in nodes]
    if any(a is None for a in avail):
        lacking = ", ".join(n.name for n in nodes if n.mem_available_kib is None)
        raise BenchError(f"MemAvailable unknown on node {lacking}; refusing to size the NCCL buffer blind")
    budget = min(a for a in avail if a is not None) * 1024 * MEMORY_SHARE / BUFFER_FACTOR
    size = MIN_BYTES
    while size * 2 <= min(requested, budget):
        size *= 2
    if size > budget:
        raise BenchError(f"only {min(a for a in avail if a):,} KiB MemAvailable; not enough for a safe NCCL test")
    return size


def scrub_env(json_text: str) -> str:
    """Drop the `env` object nccl-tests writes into its JSON: it is rank 0's whole environment (secrets)."""
    try:
        data = json.loads(json_text)
    except ValueError:
        return json_text if '"env"' not in json_text else ""
    if isinstance(data, dict) and "env" in data:
        data["env"] = "(removed by linkcheck: the JSON held the whole environment)"
    return json.dumps(data)


def wire_up(subnets: str) -> str:
    """Open MPI's own wire-up (oob) and byte transfer (btl) kept to `subnets` (comma-separated): otherwise it first
    tries every other address of the nodes (management, docker, ...), seconds each when they do not route."""
    q = shlex.quote(subnets)
    return f"--mca oob_tcp_if_include {q} --mca btl_tcp_if_include {q}"


def launch_prelude(program: str, binary: str | None, json_report: bool) -> list[str]:
    """The shell lines before an mpirun line: `$root` (Open MPI refuses root without its flag), `$exe` (the test
    program) and `$json` (its -J flag where the build has one)."""
    # A bare name when it is on PATH: mpirun then resolves it on each node (an absolute path found on
    # the launching node may not exist on another); else the usual build folder.
    found = (f'"$(command -v {program} >/dev/null && echo {program} '
             f'|| echo "$HOME/nccl-tests/build/{program}")"')
    exe = shlex.quote(binary) if binary else found
    # -J exists from nccl-tests 2.17.3; older versions take it as an unknown option and do not run.
    json = f'json=; "$exe" -h 2>/dev/null | grep -q -- "-J" && json="-J $PWD/{JSON_FILE}"' if json_report else "json="
    return ['root=; [ "$(id -u)" = 0 ] && root=--allow-run-as-root', f"exe={exe}", json]


def nccl_failure(cap: Capture) -> str | None:
    """One line when mpirun did not finish cleanly (its own banner goes to stderr; NCCL errors to stdout)."""
    if cap.skipped is None and cap.exit_status == 0:
        return None
    why = cap.skipped or f"exited {cap.exit_status}"
    lines = [ln.strip() for ln in (cap.stdout + "\n" + cap.stderr).splitlines()]
    said = next((ln for ln in lines if "failure" in ln.lower() or "WARN" in ln or "error" in ln.lower()), "")
    return f"node {cap.node}: mpirun {cap.spec} {why}" + (f": {said[:160]}" if said else "")


def run_job(transport: Transport, registry: remote.ProcessRegistry, script: str, template: Capture,
            options: NcclOptions, progress: Progress, sink: list[Capture]) -> None:
    """One NCCL job, a pair's or a cluster's: its mpirun script on the template's node, shown as it runs; raises
    BenchError with mpirun's own line when it did not finish cleanly."""
    progress.nccl_started()
    first = len(sink)
    try:
        run_mpirun(transport, registry, script, template, options.timeout_s, sink, JSON_FILE)
    finally:
        progress.nccl_done(sink[first:])  # also on failure: the console's live line must stop
    failure = nccl_failure(sink[first]) if len(sink) > first else None
    if failure:
        raise BenchError(failure)


def run_mpirun(transport: Transport, registry: remote.ProcessRegistry, script: str, template: Capture,
               timeout_s: int, sink: list[Capture], json_file: str | None) -> None:
    """Run one mpirun script on the template's node (the head, a pair's first node), by PID, and append its capture
    (and the JSON report it wrote, if any)."""
    proc = remote.start(transport, ["sh", "-c", script], run_dir=registry.run_dir(template.node), deadline_s=timeout_s,
                        label=f"mpirun {template.spec}")
    started = time.monotonic()
    registry.add(proc, template)
    done = remote.wait_exit(transport, proc, timeout_s + 10)
    elapsed = time.monotonic() - started
    if not registry.claim(proc):
        return
    if not done:
        remote.kill(transport, proc)
    result = remote.collect_output(transport, proc, json_file)
    skipped = None if done else f"did not finish within {timeout_s} s; ended by PID {proc.pgid}"
    sink.append(replace(template, stdout=result.stdout, stderr=result.stderr, exit_status=result.exit_status,
                        duration_s=elapsed, skipped=skipped))
    if result.extra and result.extra.strip():
        sink.append(Capture(template.node, template.spec, f"cat {json_file}", scrub_env(result.extra), "",
                            result.exit_status, 0.0, arg=f"{template.arg}.json",
                            meta={**template.meta, "format": "json"}))


# Rings this large have nodes that share no cable; Tree and PAT connect some of them (spark-link s.10).
ALGO_RING_FROM = 4
# NCCL's own interfaces to keep its sockets off (its automatic choice skips docker, lo and virbr: src/misc/socket.cc
# 218-220); the CX-7 netdevs are added per cluster.
_NOT_SOCKETS = ("lo", "docker", "virbr")


class RankPlan(msgspec.Struct, frozen=True):
    """One rank: its node, the address mpirun reaches the node at, and the node's own cabled HCAs."""

    node: str
    host: str
    hcas: tuple[str, ...]

    @property
    def hca_setting(self) -> str:
        # `=`: exact names. A prefix (NCCL's default match) selects every device whose name starts with it.
        return "=" + ",".join(self.hcas)


class ClusterNcclPlan(msgspec.Struct, frozen=True):
    """The mpirun across the cluster: ranks in host order (the head first), the data subnets Open MPI may use, the
    NCCL settings every rank gets, and the largest message."""

    ranks: tuple[RankPlan, ...]
    subnets: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    max_bytes: int
    layout: str

    @property
    def head(self) -> str:
        return self.ranks[0].node


def job_env(layout: str, node_count: int) -> tuple[tuple[str, str], ...]:
    """The NCCL settings every rank gets, by layout.

    >>> dict(job_env("ring4", 4))["NCCL_ALGO"], "NCCL_ALGO" in dict(job_env("ring3", 3))
    ('Ring', False)
    >>> "NCCL_IB_SUBNET_AWARE_ROUTING" in dict(job_env("switch", 4))
    False
    >>> [dict(job_env("ring3", 3))[k] for k in ("NCCL_IB_MERGE_NICS", "NCCL_NET_PLUGIN")]
    ['0', 'none']
    """
    env = [("NCCL_DEBUG", "INFO"), ("NCCL_DEBUG_SUBSYS", "INIT,NET")]
    ring = layout.startswith("ring")
    if ring:
        # Each ring cable is its own subnet: NCCL must pick, per peer, the device on the subnet that peer shares.
        env += list(RING_ENV)
    if ring and node_count >= ALGO_RING_FROM:
        env.append(("NCCL_ALGO", "Ring"))
    return tuple(env)


def _addresses(facts: ClusterFacts, node: str) -> list[tuple[str, str]]:
    """(address, subnet) of each of the node's ends on a cable or a switch segment, in topology order."""
    topo = facts.topology
    ends = [e for c in topo.cables for p in c.paths for e in (p.a, p.b) if e.node == node]
    ends += [e for s in topo.segments for e in s.endpoints if e.node == node]
    out = []
    for end in ends:
        iface = ipaddress.IPv4Interface(end.address)  # from the topology's parsed addresses: never free text
        out.append((str(iface.ip), str(iface.network)))
    return out


def _host(facts: ClusterFacts, node: str, near: str) -> str:
    """Where mpirun reaches `node`: its address on a subnet `near` also has (one hop), else any of its data addresses
    (a non-neighbour, reached through a transit node's route). Data addresses: Open MPI's
    wire-up is kept on the data subnets (the management network may not route between the nodes)."""
    mine = _addresses(facts, node)
    if not mine:
        raise BenchError(f"node {node} has no address on a cable or the switch; NCCL cannot reach it")
    theirs = {subnet for _, subnet in _addresses(facts, near)}
    shared = [ip for ip, subnet in mine if subnet in theirs]
    return (shared or [ip for ip, _ in mine])[0]


def _reach_addresses(names: list[str], reach: Mapping[str, str] | None) -> dict[str, str] | None:
    """Each node's IPv4 address as linkcheck reaches it, when every node is reached at one the others can reach too
    (not a loopback address: linkcheck on one of the nodes reaches itself there); else None."""
    out = {}
    for name in names:
        try:
            address = ipaddress.ip_address((reach or {}).get(name, ""))
        except ValueError:
            return None
        if not isinstance(address, ipaddress.IPv4Address) or address.is_loopback or address.is_unspecified:
            return None  # a node reached on this machine (127.0.0.1): the others cannot reach it there
        out[name] = str(address)
    return out


def _sockets_off_fabric(facts: ClusterFacts, names: list[str]) -> str:
    """NCCL_SOCKET_IFNAME that leaves NCCL's sockets off the CX-7 netdevs (and what its own choice skips): `^` with
    matchIfList's prefixes (src/misc/socket.cc 196-220). The names are the nodes' text: refused unless plain."""
    fabric = sorted({f.netdev for n in names for f in facts.nodes[n].functions})
    for netdev in fabric:
        try:
            validate_name(netdev)
        except ValueError as exc:
            raise BenchError(f"netdev of the cluster: {exc}") from None
    return "^" + ",".join((*_NOT_SOCKETS, *fabric))


def plan_cluster_nccl(facts: ClusterFacts, options: NcclOptions,
                      reach: Mapping[str, str] | None = None) -> ClusterNcclPlan:
    """Every node a rank, the head first and round a ring in cable order, each with its own cabled HCAs; each reached
    at the address linkcheck reaches it by (`reach`, node -> host) where every one is an IPv4 address, else at its
    data addresses. Refused (BenchError, one line) when a node was not inspected, shows no cabled HCA, or has no data
    address."""
    names = ring_order(facts.topology) or list(facts.topology.nodes)
    lost = [n for n in names if n not in facts.nodes]
    if lost:
        raise BenchError(f"NCCL across the cluster needs every node; not inspected: {', '.join(lost)}")
    if len(names) < 2:
        raise BenchError("NCCL across a cluster needs two nodes at least")
    head = names[0]
    adjacent = neighbours(facts.topology)
    managed = _reach_addresses(names, reach)
    ranks = []
    for name in names:
        hcas = cabled_hcas(facts.nodes[name])
        if not hcas:
            raise BenchError(f"node {name} shows no cabled CX-7 HCA (no carrier on any twin); NCCL would fall back "
                             "to sockets there")
        try:
            for dev in hcas:
                validate_name(dev)
        except ValueError as exc:
            raise BenchError(f"node {name}: {exc}") from None
        if managed is not None:
            ranks.append(RankPlan(name, managed[name], hcas))
            continue
        # The head is reached at its address facing its first neighbour; every other node from the head's side.
        near = (sorted(adjacent[head], key=names.index) or names[1:2])[0] if name == head else head
        ranks.append(RankPlan(name, _host(facts, name, near), hcas))
    env = job_env(facts.topology.layout, len(names))
    if managed is not None:
        subnets = tuple(f"{managed[n]}/32" for n in names)
        env += (("NCCL_SOCKET_IFNAME", _sockets_off_fabric(facts, names)),)
    else:
        subnets = tuple(dict.fromkeys(subnet for name in names for _, subnet in _addresses(facts, name)))
    return ClusterNcclPlan(tuple(ranks), subnets, env,
                           size_for_nodes([facts.nodes[n] for n in names], options.max_bytes), facts.topology.layout)


def cluster_mpirun_script(plan: ClusterNcclPlan, binary: str | None, *, program: str = "all_gather_perf",
                          min_bytes: int = MIN_BYTES, iterations: str = "", json_report: bool = True) -> str:
    """The shell script the head runs: the prelude and wire-up, then one mpirun with an app context
    per rank; `program` from -b min_bytes to -e the plan's max_bytes (`iterations`: extra -n/-w flags), as the
    small all_reduce of the latency test uses."""
    q = shlex.quote
    hosts = ",".join(f"{r.host}:1" for r in plan.ranks)
    subnets = ",".join(plan.subnets)
    common = " ".join(f"-x {q(f'{k}={v}')}" for k, v in plan.env)
    args = f'"$exe" -b {int(min_bytes)} -e {int(plan.max_bytes)} -f 2 -g 1{iterations} $json'
    contexts = [f"-np 1 {common} -x {q('NCCL_IB_HCA=' + r.hca_setting)} {args}" for r in plan.ranks]
    return "\n".join([
        *launch_prelude(program, binary, json_report),
        f"exec mpirun $root -H {q(hosts)} {wire_up(subnets)} " + " : ".join(contexts),
    ])


def plan_meta(plan: ClusterNcclPlan, run_id: str, options: NcclOptions) -> dict[str, str]:
    """The capture's meta: what each rank was given, so the facts judge each node by its own setting."""
    meta = {"kind": KIND, "layout": plan.layout, "nodes": ",".join(r.node for r in plan.ranks),
            "max_bytes": str(plan.max_bytes), "format": "text", "run_id": run_id,
            "env": ",".join(f"{k}={v}" for k, v in plan.env)}
    meta.update({HCA_KEY + r.node: r.hca_setting for r in plan.ranks})
    meta.update({HOST_KEY + r.node: r.host for r in plan.ranks})
    if options.transport_only:
        meta["purpose"] = "transport"
    return meta


def run_cluster_nccl(transports: dict[str, Transport], facts: ClusterFacts, options: NcclOptions,
                     progress: Progress | None = None, reach: Mapping[str, str] | None = None) -> TrafficResult:
    """all_gather_perf across every node from the head (the first host); the capture of its merged output (every
    rank's NCCL INFO lines, the head's nccl-tests table) and of its JSON report. Refused before anything starts when
    a node cannot take part; every process it started is ended by PID, whatever happens."""
    shown = progress or Progress()

    def body(registry: remote.ProcessRegistry, out: TrafficResult, flaps: list[str]) -> None:
        plan = plan_cluster_nccl(facts, options, reach)
        missing = [r.node for r in plan.ranks if r.node not in transports]
        if missing:
            raise BenchError(f"no connection to node {', '.join(missing)}")
        registry.prepare(options.timeout_s + 60)
        script = cluster_mpirun_script(plan, options.binary)
        template = Capture(plan.head, "all_gather_perf", script.splitlines()[-1], "", exit_status=None,
                           arg="cluster-nccl", meta=plan_meta(plan, registry.run_id, options))
        run_job(transports[plan.head], registry, script, template, options, shown, out.captures)

    return run_guarded(transports, body)


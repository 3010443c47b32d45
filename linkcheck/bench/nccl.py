"""nccl-tests all_gather_perf across the two nodes with OpenMPI, sized to the nodes' free memory.

GB10 memory is unified: a 16 GiB all_gather buffer (~32 GB per node) froze a node, so the largest
message is the biggest power of two whose buffers fit in a tenth of the smallest MemAvailable (of
two nodes here, of every node of a cluster in bench/cluster_nccl.py).
Host keys stay strict: mpirun uses the user's own ssh setup, never StrictHostKeyChecking=no.
"""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Sequence

import msgspec
from msgspec.structs import replace

from linkcheck.bench import remote
from linkcheck.bench.plan import BenchPath
from linkcheck.collect.specs import validate_name
from linkcheck.errors import BenchError
from linkcheck.facts.model import LinkFacts, NodeFacts
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


def mpirun_script(paths: tuple[BenchPath, ...], max_bytes: int, binary: str | None, *,
                  program: str = "all_gather_perf", min_bytes: int = MIN_BYTES, iterations: str = "",
                  json_report: bool = True) -> str:
    """The mpirun line from node a: one rank per node, NCCL on the paths' HCAs with its INFO log (the transport
    proof), `program` from -b min_bytes to -e max_bytes by factors of 2 (`iterations`: extra -n/-w flags)."""
    hcas = ",".join(sorted({p.a.rdma_dev for p in paths} | {p.b.rdma_dev for p in paths}))
    first = paths[0]
    hosts = f"{first.a.ip}:1,{first.b.ip}:1"
    # Open MPI's own wire-up (oob) and byte transfer (btl) over the data subnets only: otherwise it first
    # tries every other address of the nodes (management, docker, ...), seconds each when they do not route.
    subnets = ",".join(dict.fromkeys(p.subnet for p in paths))
    return "\n".join([
        *launch_prelude(program, binary, json_report),
        f"exec mpirun $root -np 2 -H {hosts} --map-by ppr:1:node "
        f"--mca oob_tcp_if_include {subnets} --mca btl_tcp_if_include {subnets} -x NCCL_DEBUG=INFO "
        f"-x NCCL_DEBUG_SUBSYS=INIT,NET -x NCCL_IB_HCA={hcas} "
        f'"$exe" -b {int(min_bytes)} -e {int(max_bytes)} -f 2 -g 1{iterations} $json',
    ])


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


def run_nccl(transports: dict[str, Transport], registry: remote.ProcessRegistry, link: LinkFacts,
             paths: tuple[BenchPath, ...], options: NcclOptions, sink: list[Capture]) -> None:
    """Launch from node a; appends the all_gather_perf capture (its stdout holds the NCCL INFO log too)."""
    for p in paths:
        validate_name(p.a.rdma_dev), validate_name(p.b.rdma_dev)
    max_bytes = size_max_bytes(link, options.max_bytes)
    script = mpirun_script(paths, max_bytes, options.binary)
    meta = {"kind": "nccl", "max_bytes": str(max_bytes), "hcas": ",".join(sorted({p.a.rdma_dev for p in paths})),
            "format": "text", "run_id": registry.run_id}
    if options.transport_only:
        meta["purpose"] = "transport"
    template = Capture("a", "all_gather_perf", script.splitlines()[-1], "", exit_status=None, arg="nccl", meta=meta)
    run_mpirun(transports["a"], registry, script, template, options.timeout_s, sink, JSON_FILE)


def run_mpirun(transport: Transport, registry: remote.ProcessRegistry, script: str, template: Capture,
               timeout_s: int, sink: list[Capture], json_file: str | None) -> None:
    """Run one mpirun script on the template's node (the pair's a, a cluster's head), by PID, and append its capture
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

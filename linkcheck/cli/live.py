"""The commands that contact the nodes: `check` (and its tiers), `collect`, `bench rdma|nccl|latency`, `accept` and
`init`, over two to eight nodes: their source and rules are read once (app/live.py resolve_nodes), and each command
runs the one live check over them (app/live.py check_cluster)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import msgspec
import typer
from msgspec.structs import replace

from linkcheck.accept.profile import resolve_profile
from linkcheck.accept.text import closing_line
from linkcheck.app.accept import refuse_unfit, run_accept
from linkcheck.app.init import write_config
from linkcheck.app.live import (
    LiveNodes,
    TrafficRequest,
    check_cluster,
    resolve_nodes,
)
from linkcheck.app.runs import RunRecord
from linkcheck.baseline.store import ClusterBaseline, resolve_any
from linkcheck.bench.latency import ALLREDUCE, LatencyOptions
from linkcheck.bench.nccl import TRANSPORT_PROOF_BYTES, NcclOptions
from linkcheck.bench.plan import RdmaOptions, quick_options
from linkcheck.cli.common import (
    FLAGS,
    AcceptOpt,
    AllOpt,
    AnonOpt,
    BaselineOpt,
    ConfigOpt,
    ContainerOpt,
    FmtOpt,
    Format,
    GroupOpt,
    HostfileOpt,
    InventoryOpt,
    NodeOpt,
    PrometheusOpt,
    SaveOpt,
    checked_containers,
    checked_save,
    emit,
    finish,
    integer_in,
    out,
    quiet_libraries,
    say,
    say_node_errors,
    ssh_options,
    with_containers,
)
from linkcheck.cluster.hosts import ClusterHost
from linkcheck.errors import BaselineError, ExitCode, LinkcheckError, UsageError
from linkcheck.facts.snapshot_model import Baseline
from linkcheck.outcome import judged_view
from linkcheck.report.progress import ConsoleProgress
from linkcheck.report.prometheus import check_textfile_path
from linkcheck.report.writer import check_output_path

DEFAULT_DURATION_S = RdmaOptions().duration_s  # seconds per ib_write_bw run (-D) of --bench and `bench rdma`
QUICK_COMMAND = "check --quick"

_DURATION_HELP = ("Seconds per ib_write_bw run (-D); perftest leaves a quarter (rounded down) out at each "
                  "end (10 s: a 6 s window, as the published GB10 numbers).")
DurationOpt = Annotated[int, typer.Option("--duration", parser=integer_in(1, 3600), help=_DURATION_HELP)]
CheckDurationOpt = Annotated[Optional[int], typer.Option(  # noqa: UP045
    "--duration", parser=integer_in(1, 3600), help=_DURATION_HELP + " With --bench (default 10).")]
SizeOpt = Annotated[int, typer.Option("--size", parser=integer_in(1, 1 << 30),
                                      help="ib_write_bw message size in bytes (-s).")]
QpsOpt = Annotated[int, typer.Option("--qps", parser=integer_in(1, 1024), help="ib_write_bw queue pairs (-q).")]
PortOpt = Annotated[Optional[int], typer.Option("--port-base", parser=integer_in(1024, 65000),  # noqa: UP045
                                                help="First TCP port for perftest servers.")]
NcclMaxOpt = Annotated[int, typer.Option("--nccl-max-bytes", parser=integer_in(8, 1 << 40),
                                         help="Largest all_gather size (capped by free memory).")]
NcclBinOpt = Annotated[Optional[str], typer.Option("--nccl-binary", help="Path of all_gather_perf on the nodes.")]  # noqa: UP045
_LATENCY_HELP = ("the latency test: ib_write_lat per path at 2 B and 48 KiB, one run at a time, then all_reduce_perf "
                 "16-64 KiB across the nodes (~9 s on a healthy pair); judged by RDMA_LATENCY_HIGH and "
                 "NCCL_ALLREDUCE_LATENCY_HIGH, read by `linkcheck advise`")
LatencyOpt = Annotated[bool, typer.Option("--latency", help="Also run " + _LATENCY_HELP + ".")]


def _traffic(rdma: bool, nccl: bool, duration: int, size: int, qps: int, port_base: int | None,
             nccl_max_bytes: int, nccl_binary: str | None, latency: bool = False) -> TrafficRequest:
    return TrafficRequest(
        rdma=RdmaOptions(duration_s=duration, size_bytes=size, qps=qps, port_base=port_base) if rdma else None,
        nccl=NcclOptions(max_bytes=nccl_max_bytes, binary=nccl_binary) if nccl else None,
        latency=_latency_options(port_base, nccl_binary) if latency else None)


def _latency_options(port_base: int | None, nccl_binary: str | None) -> LatencyOptions:
    """The latency test's options; all_reduce_perf is looked for beside an all_gather_perf given by path."""
    sibling = str(Path(nccl_binary).with_name(ALLREDUCE)) if nccl_binary and "/" in nccl_binary else None
    return LatencyOptions(port_base=port_base, allreduce_binary=sibling)


def _quick_traffic(size: int, qps: int, port_base: int | None, nccl: bool, nccl_binary: str | None) -> TrafficRequest:
    proof = NcclOptions(max_bytes=TRANSPORT_PROOF_BYTES, binary=nccl_binary, transport_only=True) if nccl else None
    return TrafficRequest(rdma=quick_options(size_bytes=size, qps=qps, port_base=port_base), nccl=proof)


def check(
    node: NodeOpt = None, config: ConfigOpt = None, save: SaveOpt = None, anonymize: AnonOpt = False,
    accept_new_host_keys: AcceptOpt = False, fmt: FmtOpt = Format.console, show_all: AllOpt = False,
    bench: Annotated[bool, typer.Option("--bench", help="Also run ib_write_bw and all_gather_perf.")] = False,
    quick: Annotated[bool, typer.Option("--quick", help="The quick traffic tier: ib_write_bw -D 4 with both paths "
                                        "at once in each direction (8 s of traffic), each path alone only where "
                                        "one is low; catches the hot-plug state and a single PCIe path.")] = False,
    quick_nccl: Annotated[bool, typer.Option("--nccl", help="With --quick: also a short all_gather_perf sweep "
                                             "(up to 256 MiB) whose NCCL log proves NET/IB on both HCAs; its bus "
                                             "bandwidth is recorded, not judged.")] = False,
    duration: CheckDurationOpt = None,
    size: SizeOpt = 1048576, qps: QpsOpt = 1, port_base: PortOpt = None,
    nccl_max_bytes: NcclMaxOpt = 1 << 30, nccl_binary: NcclBinOpt = None, baseline: BaselineOpt = None,
    prometheus: PrometheusOpt = None, latency: LatencyOpt = False,
    hostfile: HostfileOpt = None, inventory: InventoryOpt = None, group: GroupOpt = None,
    report: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        "--report", help="Also write the Markdown report here (over a cluster: with the per-cable table, matrix).")
    ] = None,
    container: ContainerOpt = None,
) -> None:
    """Inspect both nodes over SSH (one round trip each, in parallel), save the bundle, diagnose it; --quick adds
    short ib_write_bw rounds (8 s of traffic on a healthy pair), --bench the full traffic tests, --latency the
    latency test (after any other test). Three or more --node, --hostfile or --inventory check a cluster: every
    node inspected, the cabling inferred, and with --quick or --bench every cable measured in rounds."""
    if quick and (bench or duration is not None):
        raise UsageError("--quick runs its own short ib_write_bw rounds (-D 4); for other durations use "
                         "--bench --duration S or `linkcheck bench rdma --duration S`")
    if quick_nccl and not quick:
        raise UsageError("--nccl goes with --quick (the transport proof); --bench already runs all_gather_perf")
    nodes = resolve_nodes(node or [], hostfile, inventory, group, config)
    traffic = _traffic(True, True, duration or DEFAULT_DURATION_S, size, qps, port_base, nccl_max_bytes,
                       nccl_binary) if bench else _quick_traffic(size, qps, port_base, quick_nccl, nccl_binary) \
        if quick else None
    if latency:
        options = _latency_options(port_base, nccl_binary)
        traffic = replace(traffic, latency=options) if traffic is not None else TrafficRequest(latency=options)
    _live(QUICK_COMMAND if quick else "check", nodes, traffic, _Run(
        save, anonymize, accept_new_host_keys, fmt, show_all, baseline, prometheus, report, container))


def bench_rdma(
    node: NodeOpt = None, config: ConfigOpt = None, save: SaveOpt = None, anonymize: AnonOpt = False,
    accept_new_host_keys: AcceptOpt = False, fmt: FmtOpt = Format.console, show_all: AllOpt = False,
    duration: DurationOpt = DEFAULT_DURATION_S, size: SizeOpt = 1048576, qps: QpsOpt = 1, port_base: PortOpt = None,
    baseline: BaselineOpt = None, prometheus: PrometheusOpt = None,
) -> None:
    """ib_write_bw on each path alone, then both at once, both directions; with counters before and after. Three or
    more --node (or linkcheck.yaml's `cluster:` nodes): every cable in rounds, as `check --bench` without NCCL."""
    _live("bench rdma", resolve_nodes(node or [], config=config),
          _traffic(True, False, duration, size, qps, port_base, 0, None),
          _Run(save, anonymize, accept_new_host_keys, fmt, show_all, baseline, prometheus))


def bench_nccl(
    node: NodeOpt = None, config: ConfigOpt = None, save: SaveOpt = None, anonymize: AnonOpt = False,
    accept_new_host_keys: AcceptOpt = False, fmt: FmtOpt = Format.console, show_all: AllOpt = False,
    nccl_max_bytes: NcclMaxOpt = 1 << 30, nccl_binary: NcclBinOpt = None, baseline: BaselineOpt = None,
    prometheus: PrometheusOpt = None,
) -> None:
    """nccl-tests all_gather_perf across both nodes with mpirun; transport proven from the NCCL log. Three or more
    --node: across every node, one rank each, each rank's transport proven."""
    _live("bench nccl", resolve_nodes(node or [], config=config),
          _traffic(False, True, DEFAULT_DURATION_S, 1048576, 1, None, nccl_max_bytes, nccl_binary),
          _Run(save, anonymize, accept_new_host_keys, fmt, show_all, baseline, prometheus))


def bench_latency(
    node: NodeOpt = None, config: ConfigOpt = None, save: SaveOpt = None, anonymize: AnonOpt = False,
    accept_new_host_keys: AcceptOpt = False, fmt: FmtOpt = Format.console, show_all: AllOpt = False,
    port_base: PortOpt = None, nccl_binary: NcclBinOpt = None, baseline: BaselineOpt = None,
    prometheus: PrometheusOpt = None,
) -> None:
    """The latency test: ib_write_lat per path at 2 B and 48 KiB, one run at a time, then all_reduce_perf 16-64 KiB
    across the nodes; what `linkcheck advise` reads. Same as `check --latency`. Three or more --node: every path of
    every cable, one run at a time, then the all_reduce across every node."""
    _live("bench latency", resolve_nodes(node or [], config=config),
          TrafficRequest(latency=_latency_options(port_base, nccl_binary)),
          _Run(save, anonymize, accept_new_host_keys, fmt, show_all, baseline, prometheus))


def _hosts(nodes: LiveNodes, containers: tuple[str, ...]) -> tuple[ClusterHost, ...]:
    """The nodes' hosts, --container's names added to what linkcheck.yaml gives each."""
    return tuple(replace(h, target=with_containers(h.target, containers)) for h in nodes.hosts())


class _Run(msgspec.Struct, frozen=True):
    """The options `check` and `bench` share, as given on the command line."""

    save: Path | None
    anonymize: bool
    accept: bool
    fmt: Format
    show_all: bool
    baseline: str | None
    prometheus: Path | None
    report: Path | None = None
    container: list[str] | None = None


def _live(command: str, nodes: LiveNodes, traffic: TrafficRequest | None, run: _Run) -> None:
    """The live run of `check` and `bench rdma|nccl|latency` over any nodes (a pair's a and b are the cluster of
    its one cable): every cable in the schedule's rounds, NCCL across every node, its traffic request built once."""
    against = resolve_any(run.baseline) if run.baseline else None  # read before any node is touched
    _check(nodes, run.accept, run.fmt, replace(traffic or TrafficRequest(), command=command), run.report,
           (run.save, run.anonymize), against, run.prometheus, run.show_all,
           containers=checked_containers(run.container))


def accept(
    profile: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--profile", "-P", help="A built-in profile's name (`linkcheck profiles list`) or a profile file "
        "(default: the built-in profile of the layout the nodes show, dgx-spark-pair for two nodes on one cable).")
    ] = None,
    repetitions: Annotated[Optional[int], typer.Option(  # noqa: UP045
        "--repetitions", "-r", parser=integer_in(1, 100), help="Run the RDMA rounds this many times (default: the "
        "profile's, 3); the lowest of each measurement is judged. Fewer than the built-in profile's 3 mark the "
        "run NON-STANDARD.")] = None,
    duration: Annotated[Optional[int], typer.Option(  # noqa: UP045
        "--duration", parser=integer_in(1, 3600),
        help="Seconds per ib_write_bw run (-D) instead of the profile's (10); "
        "shorter than the built-in profile's marks the run NON-STANDARD in the record and every report.")] = None,
    node: NodeOpt = None, config: ConfigOpt = None, save: SaveOpt = None, accept_new_host_keys: AcceptOpt = False,
    fmt: FmtOpt = Format.console, show_all: AllOpt = False,
    hostfile: HostfileOpt = None, inventory: InventoryOpt = None, group: GroupOpt = None,
) -> None:
    """Acceptance: inspection, ib_write_bw on each path alone and both at once, both directions, repeated, per cable
    in rounds (no node in two tests at once); NCCL all_gather across every node; judged against the profile of the
    layout the nodes show (dgx-spark-pair for two nodes on one cable, dgx-spark-ring3, dgx-spark-switch) or the one
    given. Exit 0 PASS, 1 DEGRADED, 2 FAIL, 3 INCONCLUSIVE."""
    nodes = resolve_nodes(node or [], hostfile, inventory, group, config)
    given = resolve_profile(profile) if profile else None  # a bad profile stops here, before any node is touched
    hosts = nodes.hosts()
    refuse_unfit(given, len(hosts))
    target = checked_save(save)
    quiet_libraries()
    found = nodes.config
    rules = list(nodes.rules)
    if not FLAGS.quiet and fmt is Format.console:
        say(f"accepting {len(hosts)} nodes: inspection, then the profile of the layout they show"
            + (f" ({given.name})" if given else "") + ": ib_write_bw per cable in rounds, repeated, then "
            "all_gather_perf across every node" + (_LATENCY_PLAN if given and given.test.latency else ""))
    progress = ConsoleProgress.on_stderr() if fmt is Format.console and not FLAGS.quiet else None
    run = run_accept(hosts, ssh_options(found, accept_new_host_keys), rules, given, repetitions, duration, target,
                     progress, found.expected_cluster if found else None, found.expected_link if found else None)
    if run.acceptance is None:
        say(f"bundle saved to {run.saved}")
        if run.check.interrupted:  # Ctrl-C during the inspection: what arrived is saved, nothing was judged
            raise typer.Exit(130)
        raise LinkcheckError(run.problem or "no profile was chosen")
    judged = judged_view(run.check)  # as `diagnose` of the saved bundle shows it, its acceptance with it
    say_node_errors(judged)
    finish(judged, RunRecord("accept", acceptance=run.acceptance.verdict.value))  # the history
    if FLAGS.quiet:  # the line `diagnose -q` prints of the saved bundle
        say(closing_line(run.record))
    else:
        emit(judged, fmt, show_all)
    say(f"bundle saved to {run.saved}")
    raise typer.Exit(130 if run.check.interrupted else int(run.acceptance.exit_code))


def collect(
    node: NodeOpt = None, config: ConfigOpt = None, save: SaveOpt = None, anonymize: AnonOpt = False,
    accept_new_host_keys: AcceptOpt = False, container: ContainerOpt = None,
    hostfile: HostfileOpt = None, inventory: InventoryOpt = None, group: GroupOpt = None,
) -> None:
    """Inspect the nodes and save the bundle without diagnosing (exit 3 if a node could not be read): the pair's
    nodes a and b, or three or more --node, --hostfile or --inventory (or linkcheck.yaml's `cluster:` nodes); the
    bundle as `check` saves it without traffic, for `diagnose` later."""
    nodes = resolve_nodes(node or [], hostfile, inventory, group, config)
    target = checked_save(save)
    quiet_libraries()
    hosts = _hosts(nodes, checked_containers(container))
    _, bundle, doc = check_cluster(hosts, ssh_options(nodes.config, accept_new_host_keys), [],
                                   TrafficRequest(command="collect"), save=target, anonymize=anonymize)
    errors = bundle.collection_errors
    for error in errors.values():
        say(f"linkcheck: {error}")
    say(f"bundle saved to {target}")
    raise typer.Exit(130 if doc.interrupted else int(ExitCode.INCONCLUSIVE) if errors else 0)


def init(
    node: NodeOpt = None, config: ConfigOpt = None,
    output: Annotated[Path, typer.Option("--output", "-o", help="Where to write.")] = Path("linkcheck.yaml"),
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
    accept_new_host_keys: AcceptOpt = False,
    hostfile: HostfileOpt = None, inventory: InventoryOpt = None, group: GroupOpt = None,
) -> None:
    """Inspect every node once and write a commented linkcheck.yaml of what was found, which topology and check then
    compare (LINK_CHANGED): two nodes named a and b on one cable as a pair (the cabled cage, each twin facing its
    twin); any other nodes (--node, --hostfile, --inventory) as a cluster (its nodes, cables and switch)."""
    nodes = resolve_nodes(node or [], hostfile, inventory, group, config)
    quiet_libraries()
    out(write_config(nodes.hosts(), ssh_options(nodes.config, accept_new_host_keys), output, force=force))


def _check(nodes: LiveNodes, accept: bool, fmt: Format, traffic: TrafficRequest, report: Path | None,
                   save: tuple[Path | None, bool], baseline: Baseline | ClusterBaseline | None = None,
                   prometheus: Path | None = None, show_all: bool = False,
                   containers: tuple[str, ...] = ()) -> None:
    """The live check of any nodes (a pair's a and b are the cluster of its one cable): inspection, topology, the
    rounds per cable and the latency test when asked, the findings (and the drift from `baseline`); text (with the
    passed findings when `show_all`) or JSON on stdout in the look `diagnose` gives its bundle (`judged_view`), what
    the run could not do on stderr, a Markdown report to `report`, the textfile to `prometheus`, the bundle saved
    (`save`: the folder, and whether anonymised), each test recorded in its pair's history as `traffic.command`, the
    verdict's exit code (130 when Ctrl-C stopped it)."""
    if report is not None:
        check_output_path(report, "--report")
    if prometheus is not None:
        check_textfile_path(prometheus)
    target = checked_save(save[0])
    rdma, nccl, latency, command = traffic.rdma, traffic.nccl, traffic.latency, traffic.command
    quiet_libraries()
    found = nodes.config
    hosts = _hosts(nodes, containers)
    rules = list(nodes.rules)
    sends = rdma is not None or nccl is not None or latency is not None
    if not FLAGS.quiet and fmt is Format.console and (sends or sys.stderr.isatty()):  # a plain check: ~2 s, no word
        say(f"checking {len(hosts)} nodes: " + (("inspection only" if latency is None else "inspection")
                                                if rdma is None else
            f"inspection, then ib_write_bw -D {rdma.duration_s} per cable in rounds (no node in two tests at once)")
            + ("" if nccl is None else ", then all_gather_perf across every node"
               + (" (the transport proof)" if nccl.transport_only else ""))
            + ("" if latency is None else _LATENCY_PLAN))
    # The live table of each round's paths and rates, as for a pair: tests of one round share a table.
    measures = rdma is not None or latency is not None
    progress = ConsoleProgress.on_stderr() if measures and fmt is Format.console and not FLAGS.quiet else None
    try:
        result, _, _ = check_cluster(hosts, ssh_options(found, accept), rules, traffic, progress,
                                     expected=found.expected_cluster if found else None,
                                     baseline=baseline, save=target, anonymize=save[1],
                                     expected_link=found.expected_link if found else None)
    except BaselineError:
        say(f"bundle saved to {target}")  # saved before it was judged: a baseline of another cluster stops here
        raise
    if baseline is not None:
        say(f"bundle saved to {target}")  # said first, as when the baseline is refused
    judged = judged_view(result)  # as `diagnose` of the saved bundle shows it: two nodes on one cable, the pair's
    say_node_errors(judged)
    finish(judged, RunRecord(command, baseline=baseline, prometheus=prometheus))
    emit(judged, fmt, show_all, report)
    if baseline is None:
        say(f"bundle saved to {target}")
    raise typer.Exit(130 if result.interrupted else int(judged.exit_code))


# What a run says of its latency test before the inspection, `check --latency`'s and `accept`'s alike.
_LATENCY_PLAN = (", then ib_write_lat per path of every cable, one run at a time, and all_reduce_perf 16-64 KiB "
                 "across every node")

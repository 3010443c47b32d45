"""The commands over three or more nodes: `topology`, and the cluster's side of `check`, `accept`, `init`,
`diagnose` and `report` (the nodes named by --node, --hostfile, --inventory, linkcheck.yaml or Slurm)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Optional

import typer
from msgspec.structs import replace

from linkcheck import strict_json
from linkcheck.accept.profile import Profile
from linkcheck.accept.text import closing_line, cluster_acceptance_text
from linkcheck.app.cluster_accept import run_cluster_accept
from linkcheck.app.cluster_baseline import cluster_bundle_against
from linkcheck.app.cluster_check import ClusterTraffic, check_cluster, cluster_bundle, save_cluster
from linkcheck.app.init import write_cluster_config
from linkcheck.app.offline import configured_rules
from linkcheck.app.runs import finish_cluster_run
from linkcheck.app.topology import discover, saved_view
from linkcheck.baseline.drift import compare
from linkcheck.baseline.store import ClusterBaseline
from linkcheck.bench.nccl import NcclOptions
from linkcheck.bench.plan import RdmaOptions
from linkcheck.cli.common import (
    FLAGS,
    AcceptOpt,
    ClusterNames,
    ConfigOpt,
    ContainerOpt,
    Format,
    GroupOpt,
    HostfileOpt,
    InventoryOpt,
    UnverifiedOpt,
    checked_containers,
    checked_save,
    offline_config,
    out,
    out_fitted,
    quiet_libraries,
    say,
    warn_unverified,
    with_containers,
)
from linkcheck.cluster.hosts import ClusterHost, cluster_hosts
from linkcheck.cluster_outcome import ClusterCheck
from linkcheck.config import Config, SshOptions, find_config
from linkcheck.diagnose.rule import Rule
from linkcheck.errors import LinkcheckError, UsageError
from linkcheck.report.acceptance import cluster_verdict
from linkcheck.report.cluster import check_json, check_markdown, check_text, view_json, view_text
from linkcheck.report.cluster_prometheus import write_cluster_textfile
from linkcheck.report.progress import ConsoleProgress
from linkcheck.report.prometheus import check_textfile_path
from linkcheck.report.writer import check_output_path, write_output


def is_cluster(node: list[str] | None, hostfile: Path | None, inventory: Path | None, group: str | None,
               config: Path | None) -> bool:
    """Whether the nodes make a cluster: a hostfile or inventory, three or more --node, or linkcheck.yaml's
    `cluster:` nodes when no --node is given."""
    return hostfile is not None or inventory is not None or group is not None or len(node or ()) > 2 or (
        not node and (recorded := offline_config(config)) is not None and bool(recorded.cluster_nodes))


def cluster_nodes(named: ClusterNames, found: Config | None) -> tuple[ClusterHost, ...]:
    """The cluster's nodes: --node, --hostfile or --inventory, else linkcheck.yaml's `cluster:` nodes, else Slurm's."""
    nodes, hostfile, inventory, group = named
    return cluster_hosts(nodes=nodes, hostfile=hostfile, inventory=inventory, group=group, environ=os.environ,
                         configured=found.cluster_nodes if found else ())


def _ssh(found: Config | None, accept: bool) -> SshOptions:
    """linkcheck.yaml's SSH options (the defaults without one), unknown host keys trusted when asked."""
    ssh = found.ssh if found else SshOptions()
    return replace(ssh, accept_new_host_keys=accept or ssh.accept_new_host_keys)


def _setup(named: ClusterNames, config: Path | None,
           accept: bool) -> tuple[Config | None, tuple[ClusterHost, ...], SshOptions, list[Rule]]:
    """What a cluster's live run needs: linkcheck.yaml (when there is one), the nodes, the SSH options (host-key
    policy as asked) and the rules (the config's playbooks and threshold overrides too)."""
    quiet_libraries()
    found = find_config(config)
    return found, cluster_nodes(named, found), _ssh(found, accept), configured_rules([], found, kind="all")


def check_over_cluster(named: ClusterNames, config: Path | None, accept: bool, fmt: Format,
                       traffic: tuple[RdmaOptions | None, NcclOptions | None], report: Path | None,
                       save: Path | None, baseline: ClusterBaseline | None = None, command: str = "check",
                       prometheus: Path | None = None, show_all: bool = False,
                       containers: tuple[str, ...] = ()) -> None:
    """A cluster's check: inspection, topology, the rounds per cable when asked, the cluster's and the cables'
    findings (and the drift from `baseline`); text (with the passed findings when `show_all`) or JSON on stdout, a
    Markdown report to `report`, the textfile to `prometheus`, the bundle saved, each test recorded in its pair's
    history as `command`, the verdict's exit code."""
    if report is not None:
        check_output_path(report, "--report")
    if prometheus is not None:
        check_textfile_path(prometheus)
    target = checked_save(save)
    rdma, nccl = traffic
    found, hosts, ssh, rules = _setup(named, config, accept)
    hosts = tuple(replace(h, target=with_containers(h.target, containers)) for h in hosts)
    if not FLAGS.quiet and fmt is Format.console:
        say(f"checking {len(hosts)} nodes: " + ("inspection only" if rdma is None else
            f"inspection, then ib_write_bw -D {rdma.duration_s} per cable in rounds (no node in two tests at once)")
            + ("" if nccl is None else ", then all_gather_perf across every node"
               + (" (the transport proof)" if nccl.transport_only else "")))
    # The live table of each round's paths and rates, as for a pair: tests of one round share a table.
    progress = ConsoleProgress.on_stderr() if rdma is not None and fmt is Format.console and not FLAGS.quiet else None
    result, bundle, doc = check_cluster(hosts, ssh, rules, ClusterTraffic(rdma, nccl), progress,
                                        expected=found.expected_cluster if found else None)
    save_cluster(bundle, doc, target)
    if baseline is not None:
        say(f"bundle saved to {target}")  # said first: a baseline of another cluster stops here (exit 4)
        result = compare(result, baseline, bundle.captures, rules)
    for line in finish_cluster_run(result, bundle, target, command, baseline.name if baseline else None):
        say(f"linkcheck: {line}")
    if prometheus is not None:
        write_cluster_textfile(prometheus, result)
    emit_cluster(result, fmt, report, show_all)
    if baseline is None:
        say(f"bundle saved to {target}")
    raise typer.Exit(int(result.exit_code))


def accept_over_cluster(named: ClusterNames, config: Path | None, accept: bool, fmt: Format, show_all: bool,
                        chosen: tuple[Profile | None, int | None, int | None], save: Path | None) -> None:
    """A cluster's acceptance: the run of `check --bench` with the profile's test, repeated, judged by the profile
    of the layout; the acceptance on stdout and in the saved bundle, its verdict's exit code."""
    target = checked_save(save)
    found, hosts, ssh, rules = _setup(named, config, accept)
    given, repetitions, duration = chosen
    if not FLAGS.quiet and fmt is Format.console:
        say(f"accepting {len(hosts)} nodes: inspection, then the profile of the layout they show"
            + (f" ({given.name})" if given else "") + ": ib_write_bw per cable in rounds, repeated, then "
            "all_gather_perf across every node")
    progress = ConsoleProgress.on_stderr() if fmt is Format.console and not FLAGS.quiet else None
    run = run_cluster_accept(hosts, ssh, rules, given, repetitions, duration, target, progress,
                             found.expected_cluster if found else None)
    if run.acceptance is None:
        say(f"bundle saved to {run.saved}")
        raise LinkcheckError(run.problem or "no profile was chosen")
    if FLAGS.quiet:  # the line `diagnose -q` prints of the saved bundle
        say(closing_line(run.record))
    else:
        out(strict_json.dumps(run.record, indent=2) if fmt is Format.json else
            cluster_acceptance_text(run.record, show_all))
    say(f"bundle saved to {run.saved}")
    raise typer.Exit(130 if run.check.interrupted else int(run.acceptance.exit_code))


def judge_cluster_bundle(bundle: Path, playbook: list[Path] | None, config: Path | None,
                         allow_unverified: bool, baseline: ClusterBaseline | None = None) -> ClusterCheck:
    """A saved cluster bundle judged offline as its check judged it (against `baseline` when one is given)."""
    found = offline_config(config)
    rules = configured_rules(list(playbook or []), found, kind="all")
    if baseline is not None:
        return cluster_bundle_against(bundle, rules, baseline, allow_unverified=allow_unverified,
                                      warn=warn_unverified, config=found)
    return cluster_bundle(bundle, rules, allow_unverified=allow_unverified, warn=warn_unverified,
                          expected=found.expected_cluster if found else None)


def emit_cluster(result: ClusterCheck, fmt: Format, report: Path | None, show_all: bool = False) -> None:
    """A cluster's check as text or JSON on stdout (only its one verdict line with --quiet; the text with the passed
    findings too when `show_all`: JSON holds every finding anyway), and its Markdown report to `report`."""
    if report is not None:
        write_output(report, check_markdown(result), "--report")
        say(f"report written to {report}")
    if FLAGS.quiet:
        say(cluster_verdict(result).line)  # -q: the bundle's one verdict line, as a pair's
    else:
        if fmt is Format.json:
            out(check_json(result))
        else:
            out_fitted(check_text(result, show_all))  # within the terminal, as a pair's console report


def init_cluster(named: ClusterNames, config: Path | None, output: Path, *, force: bool, accept: bool) -> None:
    """`init` over a cluster: every node inspected, the cabling found written to linkcheck.yaml."""
    quiet_libraries()
    found = find_config(config)
    hosts = cluster_nodes(named, found)
    facts = write_cluster_config(hosts, _ssh(found, accept), output, force=force)
    out(f"wrote {output}: {len(hosts)} nodes, layout {facts.topology.layout}, "
        f"{len(facts.topology.cables)} cable(s), "
        f"{len({n for s in facts.topology.segments for n in s.nodes})} node(s) on the switch")


ClusterNodeOpt = Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
    "--node", "-n", help="A node as name=[user@]host[:port] or [user@]host[:port] (repeat for each node).")]


def topology(
    bundle: Annotated[Optional[Path], typer.Argument(  # noqa: UP045
        help="A saved bundle (a cluster's or a pair's) to read instead of inspecting the nodes.")] = None,
    node: ClusterNodeOpt = None,
    hostfile: HostfileOpt = None, inventory: InventoryOpt = None, group: GroupOpt = None,
    config: ConfigOpt = None, accept_new_host_keys: AcceptOpt = False,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.console,
    allow_unverified: UnverifiedOpt = False,
    container: ContainerOpt = None,
) -> None:
    """Inspect every node of a cluster (from --node, --hostfile, --inventory or $SLURM_JOB_NODELIST), or read a saved
    bundle, and print its cables, its layout, the flags, the test rounds and the cluster rules' findings (exit 0; 1
    when flagged or a rule warns; 2 when a rule fails; 3 when a node could not be read; 4 when a bundle does not
    verify)."""
    if bundle is not None and (node or hostfile or inventory or group or accept_new_host_keys):
        raise UsageError("a bundle is read as saved; --node, --hostfile, --inventory, --group and "
                         "--accept-new-host-keys are for inspecting the nodes")
    if bundle is None and allow_unverified:
        raise UsageError("--allow-unverified goes with a bundle")
    if bundle is not None and container:
        raise UsageError("--container reads a live node; a bundle holds what was read")
    quiet_libraries()
    found = offline_config(config) if bundle is not None else find_config(config)
    names = checked_containers(container)
    rules = configured_rules([], found, kind="cluster")  # the config's playbooks and threshold overrides too
    expected = found.expected_cluster if found else None
    if bundle is not None:
        view = saved_view(bundle, rules, allow_unverified=allow_unverified, warn=warn_unverified, expected=expected)
    else:
        hosts = tuple(replace(h, target=with_containers(h.target, names))
                      for h in cluster_nodes((node or [], hostfile, inventory, group), found))
        view = discover(hosts, _ssh(found, accept_new_host_keys), rules, expected)
    if not FLAGS.quiet:
        out(view_json(view) if fmt is Format.json else view_text(view))
    raise typer.Exit(int(view.exit_code))

"""`linkcheck topology`: every node of a cluster inspected at once (from --node, --hostfile, --inventory,
linkcheck.yaml or Slurm), or a saved bundle read, and how it is cabled said."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Optional

import typer
from msgspec.structs import replace

from linkcheck.app.offline import configured_rules
from linkcheck.app.topology import discover, saved_view
from linkcheck.cli.common import (
    FLAGS,
    AcceptOpt,
    ConfigOpt,
    ContainerOpt,
    Format,
    GroupOpt,
    HostfileOpt,
    InventoryOpt,
    UnverifiedOpt,
    checked_containers,
    offline_config,
    out,
    quiet_libraries,
    ssh_options,
    warn_unverified,
    with_containers,
)
from linkcheck.cluster.hosts import cluster_hosts
from linkcheck.config import find_config
from linkcheck.errors import UsageError
from linkcheck.report.topology import view_json, view_text

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
    bundle, and print its cables, its layout, the flags, the test rounds and what the inspection's rules find: the
    cluster's, and the pair's traps on each cable (exit 0; 1 when flagged or a rule warns; 2 when a rule fails; 3
    when a node could not be read; 4 when a bundle does not verify)."""
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
    # Every rule (the pair's traps are judged on each cable), with the config's playbooks and threshold overrides.
    rules = configured_rules([], found, kind="all")
    expected = found.expected_cluster if found else None
    if bundle is not None:
        view = saved_view(bundle, rules, allow_unverified=allow_unverified, warn=warn_unverified, expected=expected)
    else:
        # Every node named is inspected as one of a cluster, two included (their layout: `pair`).
        named = cluster_hosts(nodes=node or [], hostfile=hostfile, inventory=inventory, group=group,
                              environ=os.environ, configured=found.cluster_nodes if found else ())
        hosts = tuple(replace(h, target=with_containers(h.target, names)) for h in named)
        view = discover(hosts, ssh_options(found, accept_new_host_keys), rules, expected)
    if not FLAGS.quiet:
        out(view_json(view) if fmt is Format.json else view_text(view))
    raise typer.Exit(int(view.exit_code))

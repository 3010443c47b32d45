"""`fix`: the repair plan of a bundle or of live nodes (a pair, or a cluster named as `check` names one); with
--apply its transaction per node, with --restore its undo."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from linkcheck.app.fix import (
    ApplyOptions,
    FixNodes,
    FixResult,
    apply_fix,
    cluster_nodes,
    fix_bundle,
    fix_live,
    planned_findings,
    restore_fix,
)
from linkcheck.app.live import LiveNodes, resolve_nodes
from linkcheck.app.topology import saved_node_names
from linkcheck.cli.common import (
    FLAGS,
    AcceptOpt,
    ConfigOpt,
    FmtOpt,
    Format,
    GroupOpt,
    HostfileOpt,
    InventoryOpt,
    NodeOpt,
    PlaybookOpt,
    SaveOpt,
    UnverifiedOpt,
    checked_save,
    integer_in,
    offline_config,
    out_fitted,
    quiet_libraries,
    say,
    say_node_errors,
    ssh_options,
    warn_unverified,
)
from linkcheck.errors import ExitCode, UsageError
from linkcheck.repair.record import REPAIR, repair_json, steps_json
from linkcheck.report.acceptance import judged_verdict
from linkcheck.report.repair import plan_text_lines
from linkcheck.report.stdout import write_stdout
from linkcheck.report.writer import check_output_path, write_output


def fix(
    bundle: Annotated[Optional[Path], typer.Argument(  # noqa: UP045
        help="A bundle folder to plan from; without it, the nodes are inspected live (as `check`: a pair, or three "
        "or more --node, --hostfile, --inventory or linkcheck.yaml's cluster nodes).")] = None,
    node: NodeOpt = None, config: ConfigOpt = None, save: SaveOpt = None, accept_new_host_keys: AcceptOpt = False,
    fmt: FmtOpt = Format.console, playbook: PlaybookOpt = None, allow_unverified: UnverifiedOpt = False,
    apply: Annotated[bool, typer.Option(
        "--apply", help="Apply the plan, one node at a time, as a transaction that puts a node back as it was when "
        "its change does not verify (or on Ctrl-C); a bundle's plan only to the nodes and state it was made for.")
    ] = False,
    restore: Annotated[bool, typer.Option(
        "--restore", help="Put back the files of each node's latest `fix --apply` from its journal and undo its "
        "runtime change.")] = False,
    allow_reboot: Annotated[bool, typer.Option(
        "--allow-reboot", help="With --apply: also run the plan's reboot steps, wait for the nodes, re-check.")
    ] = False,
    allow_nm_disconnect: Annotated[bool, typer.Option(
        "--allow-nm-disconnect", help="With --apply: change netplan files even where the management interface is "
        "netplan-defined for NetworkManager (netplan try disconnects it ~250 ms, twice); with --restore: run "
        "`netplan apply` there too.")] = False,
    try_timeout: Annotated[int, typer.Option(
        "--try-timeout", parser=integer_in(10, 3600),
        help="Seconds `netplan try` waits for linkcheck's confirmation before "
        "it reverts a node's netplan change.")] = 120,
    reboot_wait: Annotated[int, typer.Option(
        "--reboot-wait", parser=integer_in(1, 3600),
        help="Seconds to wait for a rebooted node to answer again.")] = 600,
    output: Annotated[Optional[Path], typer.Option(  # noqa: UP045
        "--output", "-o", help="Also save the whole plan (repair.json's record: steps, what was not planned, the "
        "hostnames and state digest) to this file; a BUNDLE is never changed.")] = None,
    hostfile: HostfileOpt = None, inventory: InventoryOpt = None, group: GroupOpt = None,
) -> None:
    """Plan the repairs of the findings that have one: per node, ordered steps, each with its runtime change, its
    persistent change as a file diff (netplan, NetworkManager or nccl.conf), how it is verified and what it touches.
    Read-only unless --apply: the plan is printed, nothing on the nodes changes; a live plan is also saved in the
    bundle it makes (repair.json), a BUNDLE's only where -o names. --apply applies it (journal per node, verified,
    rolled back on failure); --restore undoes the last.
    A cluster (its bundle, or three or more live nodes) is planned per cable and per node (each cable as a pair's,
    with forwarding, routes and DOCKER-USER accepts where its transit needs them) and applied node by node."""
    if output is not None and (restore or apply):
        raise UsageError("--output goes with a plan, not with --apply or --restore")
    if output is not None:
        check_output_path(output)
    hosts = (hostfile, inventory, group)
    if restore or apply:
        _fix_apply(bundle, node, config, save, accept_new_host_keys, fmt, playbook, restore, allow_reboot,
                   try_timeout, reboot_wait, allow_nm_disconnect, hosts)
        return
    if allow_reboot or allow_nm_disconnect:
        raise UsageError(f"{'--allow-reboot' if allow_reboot else '--allow-nm-disconnect'} goes with --apply")
    if bundle is not None:
        if node or save or any(h is not None for h in hosts):
            raise UsageError("--node and --save are for a live plan (--hostfile, --inventory and --group too); a "
                             "bundle is never changed: -o FILE saves its plan")
        result = fix_bundle(bundle, playbook, offline_config(config), allow_unverified=allow_unverified,
                            warn=warn_unverified)
    else:
        target = _fix_nodes(_resolved(config, node, hosts), accept_new_host_keys)
        live = fix_live(target, checked_save(save))
        say_node_errors(live.outcome)
        result = live
    if output is not None:
        write_output(output, repair_json(result.plan), "-o", "repair plan")
        say(f"repair plan saved to {output}")
    _show_plan(result, fmt)
    if FLAGS.quiet:
        say(result.verdict.line)
    raise typer.Exit(130 if result.interrupted else result.exit_code)


def _resolved(config: Path | None, node: list[str] | None,
              hosts: tuple[Path | None, Path | None, str | None]) -> LiveNodes:
    """The live nodes, from the sources `check` reads (app/live.py resolve_nodes): --node (the pair's own form a=/b=
    or any names), --hostfile, --inventory, linkcheck.yaml's `nodes:` or `cluster:` nodes."""
    hostfile, inventory, group = hosts
    return resolve_nodes(node or [], hostfile, inventory, group, config)


def _fix_nodes(nodes: LiveNodes, accept: bool) -> FixNodes:
    """The nodes' hosts (a pair's a and b, or a cluster's) with linkcheck.yaml's settings."""
    quiet_libraries()
    return cluster_nodes(nodes.config, nodes.hosts(), ssh_options(nodes.config, accept))


def _same_nodes(bundle: Path, target: FixNodes) -> None:
    """A bundle's plan goes to the nodes its check named (a pair's own bundle: a and b), or stops in one line (exit
    4) before any node is contacted."""
    named = saved_node_names(bundle)
    given = tuple(h.name for h in target.hosts)
    if sorted(named) != sorted(given):
        raise UsageError(f"fix --apply: this bundle holds the check of nodes {', '.join(named)} and the nodes named "
                         f"are {', '.join(given)}: name the nodes its check named (--node NAME=HOST for each, "
                         "--hostfile, --inventory or linkcheck.yaml's `cluster:`; a pair's own nodes a and b: --node "
                         "a=HOST --node b=HOST or linkcheck.yaml's `nodes:`)")


def _show_plan(result: FixResult, fmt: Format) -> None:
    if result.save_problem:
        say(f"linkcheck: {result.save_problem}")
    elif result.saved is not None:
        say(f"repair plan saved to {result.saved / REPAIR}")
    if not FLAGS.quiet:
        if fmt is Format.json:
            write_stdout(steps_json(result.plan))
        else:
            out_fitted("\n".join(plan_text_lines(result.plan)))


def _checked(verified: bool | None, differences: tuple[str, ...]) -> str:
    """What reading the node's live state back after a revert or restore found."""
    if verified is None:
        return ""
    return "; live state as before the run" if verified else "; NOT as before the run: " + "; ".join(differences)


def _fix_apply(bundle: Path | None, node: list[str] | None, config: Path | None, save: Path | None, accept: bool,
               fmt: Format, playbook: list[Path] | None, restore: bool, allow_reboot: bool, try_timeout: int,
               reboot_wait: int, allow_nm_disconnect: bool = False,
               hosts: tuple[Path | None, Path | None, str | None] = (None, None, None)) -> None:
    """fix --apply / --restore: the live nodes, the plan shown first, then each node's transaction."""
    if restore and (bundle is not None or allow_reboot):
        raise UsageError("--restore takes no bundle, --apply or --allow-reboot: it undoes each node's last apply")
    options = ApplyOptions(allow_reboot=allow_reboot, try_timeout_s=try_timeout,
                           allow_nm_disconnect=allow_nm_disconnect)
    target = _fix_nodes(_resolved(config, node, hosts), accept)
    if bundle is not None:
        _same_nodes(bundle, target)
    if restore:
        outcomes = restore_fix(target.config, options, lambda line: say(f"linkcheck: {line}"))
        for r in outcomes:
            say(f"node {r.node}: " + {"restored": f"run {r.run_id} restored", "nothing": "nothing to restore",
                                      "failed": f"run {r.run_id} not fully restored"}[r.state]
                + _checked(r.verified, r.differences) + "".join(f"; {p}" for p in r.problems))
        raise typer.Exit(2 if any(r.state == "failed" for r in outcomes) else 0)
    result = apply_fix(target, checked_save(save), bundle, options, lambda line: say(f"linkcheck: {line}"),
                       playbooks=playbook, reboot_wait_s=reboot_wait, shown=lambda r: _show_plan(r, fmt))
    if result.nothing_to_do:
        reboot = any(s.reboot for s in result.before.plan.steps)
        say("linkcheck: nothing to apply: the plan has no step" + (" but reboots (they need --allow-reboot)"
                                                                    if reboot and not allow_reboot else ""))
        raise typer.Exit(result.unapplied_exit_code)
    for o in result.outcomes:
        say(f"node {o.node}: {o.state}" + (f" (journal {o.journal})" if o.journal else "")
            + _checked(o.verified, o.differences)
            + "".join(f"; {p}" for p in o.problems))
    if any(o.state != "committed" for o in result.outcomes):
        raise typer.Exit(int(ExitCode.FAIL))
    if result.after is not None:
        for finding, state in planned_findings(result.before.plan, result.after):
            say(f"after the repair: {finding}: {state}")
        say(f"after the repair: {judged_verdict(result.after).line} (bundle {result.after_saved})")
        raise typer.Exit(int(result.after.exit_code))
    raise typer.Exit(0)

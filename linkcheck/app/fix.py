"""`linkcheck fix`: the repair plan for a saved bundle or a live check, saved in that bundle; `fix --apply` applies
it node by node as a transaction and inspects the nodes again; `fix --restore` undoes the last one.

One path for 2 to 8 nodes: a pair is a cluster of one cable. The nodes come from `FixNodes` (the hosts of the
sources `check` reads, a pair's a and b among them), inspected as `check` inspects them without traffic; the plan
is `plan_for`'s (the pair's planner per cable, and per node), and each node's transaction verifies its interfaces
over the cable they are on (the pair's one, each of a cluster's)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from pathlib import Path

import msgspec
from msgspec.structs import replace

from linkcheck import strict_json
from linkcheck.app.live import TrafficRequest, check_cluster
from linkcheck.app.offline import configured_rules, judge_bundle
from linkcheck.bundle.acceptance import add_files
from linkcheck.bundle.save_dir import default_save_dir
from linkcheck.cluster.hosts import ClusterHost
from linkcheck.collect.collector import close_transports, open_transports
from linkcheck.config import Config, SshOptions
from linkcheck.errors import BundleError, ExitCode, LinkcheckError
from linkcheck.facts.model import LinkFacts
from linkcheck.model import Status
from linkcheck.outcome import Judged, judged_view
from linkcheck.repair.apply import (
    ApplyFailed,
    ApplyOptions,
    ApplyRefused,
    NodeOutcome,
    apply_plan,
    reboot_nodes,
    sudo_works,
)
from linkcheck.repair.journal import COMMITTED, JournalError
from linkcheck.repair.model import RepairPlan
from linkcheck.repair.node import LocalNode, RepairNode, ShellNode
from linkcheck.repair.record import REPAIR, write_repair
from linkcheck.repair.restore import RestoreOutcome, report_unfinished, restore_node
from linkcheck.repair.saved import plan_for
from linkcheck.report.acceptance import judged_verdict
from linkcheck.report.verdict import BundleVerdict
from linkcheck.transport.base import Transport
from linkcheck.transport.local import LocalTransport

Say = Callable[[str], None]
__all__ = ["ApplyOptions", "FixNodes", "apply_fix", "cluster_nodes", "fix_bundle", "fix_live", "restore_fix"]


class FixNodes(msgspec.Struct, frozen=True):
    """The nodes `fix` reaches: `hosts` in their order (a pair's a and b, or a cluster's), and `config` with the
    same nodes by name, linkcheck.yaml's SSH options, playbooks, thresholds and recorded link or cabling."""

    config: Config
    hosts: tuple[ClusterHost, ...]


def cluster_nodes(found: Config | None, hosts: tuple[ClusterHost, ...], ssh: SshOptions) -> FixNodes:
    """The nodes (resolved as `check` resolves them) with linkcheck.yaml's settings, when there is one."""
    nodes = {h.name: h.target for h in hosts}
    config = replace(found, nodes=nodes, ssh=ssh) if found is not None else Config(nodes=nodes, ssh=ssh)
    return FixNodes(config, hosts)


class FixResult(msgspec.Struct, frozen=True):
    """The diagnosis (a pair's, or a cluster's check), the plan made from it, and where the plan was saved (or why
    it could not be)."""

    outcome: Judged
    plan: RepairPlan
    saved: Path | None
    save_problem: str | None = None
    interrupted: bool = False

    @property
    def verdict(self) -> BundleVerdict:
        """The bundle's one verdict (its line for -q), a pair's or a cluster's."""
        return judged_verdict(self.outcome)

    @property
    def exit_code(self) -> int:
        """The diagnosis's exit code (a pair's diagnosis, a cluster's check), as `diagnose` gives it."""
        return int(self.outcome.exit_code)

    @property
    def links(self) -> tuple[LinkFacts, ...]:
        """The cables the plan's changes are verified over: the pair's one, or each of the cluster's."""
        return self.outcome.links


def _save(directory: Path, plan: RepairPlan) -> str | None:
    """The plan written into the bundle (its manifest and SHA256SUMS updated); why not, when it cannot be."""
    try:
        write_repair(directory, plan)
    except (OSError, BundleError) as exc:
        return f"{directory / REPAIR}: not saved: {getattr(exc, 'strerror', None) or exc}"
    return None


def fix_bundle(path: Path, playbooks: list[Path] | None, config: Config | None, *, allow_unverified: bool = False,
               warn: Callable[[str], None] | None = None) -> FixResult:
    """Diagnose a saved bundle and plan its repairs: a pair's, or a cluster's per cable and per node (a pair is
    its one-cable case; repair/plan.py). The bundle is left as it was given (a filed bundle stays as filed): the
    plan is saved only where asked (`fix BUNDLE -o FILE`)."""
    judged = judge_bundle(path, playbooks, config, allow_unverified=allow_unverified, warn=warn)
    return FixResult(judged, plan_for(judged), None)


class _Inspected(msgspec.Struct, frozen=True):
    outcome: Judged
    saved: Path
    interrupted: bool = False


def _inspect(target: FixNodes, save_dir: Path | None) -> _Inspected:
    """Every node inspected (no traffic) and judged as `check` without --quick or --bench does, the bundle saved
    first (a judgement refused loses no inspection)."""
    config = target.config
    rules = configured_rules([], config, kind="all")
    saved = save_dir or default_save_dir()
    check, _, _ = check_cluster(target.hosts, config.ssh, rules, TrafficRequest(), expected=config.expected_cluster,
                                save=saved, expected_link=config.expected_link)
    return _Inspected(judged_view(check), saved, check.interrupted)


def fix_live(target: FixNodes, save_dir: Path | None) -> FixResult:
    """Inspect the nodes (no traffic), save the bundle, plan its repairs and add the plan to that bundle (one
    linkcheck made itself). Ctrl-C during the inspection stops it (KeyboardInterrupt): nothing is planned on a part
    of the nodes the user stopped reading."""
    inspected = _inspect(target, save_dir)
    plan = plan_for(inspected.outcome)
    return FixResult(inspected.outcome, plan, inspected.saved, _save(inspected.saved, plan), inspected.interrupted)


# --- fix --apply, fix --restore ----------------------------------------------------------------------------------
APPLY_RECORD = "apply.json"


# Exit codes from the best to the worst verdict (PASS, WARN, INCONCLUSIVE, FAIL); any other is worse still.
_SEVERITY = {int(ExitCode.PASS): 0, int(ExitCode.WARN): 1, int(ExitCode.INCONCLUSIVE): 2, int(ExitCode.FAIL): 3}


class ApplyResult(msgspec.Struct, frozen=True):
    """The plan and what became of it: each node's transaction, the re-check after every node (its bundle), the
    reboot asked for, and the lines said about journals an earlier run left."""

    before: FixResult
    outcomes: tuple[NodeOutcome, ...] = ()
    after: Judged | None = None
    after_saved: Path | None = None
    rebooted: tuple[str, ...] = ()
    journal_lines: tuple[str, ...] = ()
    nothing_to_do: bool = False
    boot_ids: tuple[tuple[str, str], ...] = ()  # (node, boot id before its reboot)
    bundle_exit_code: int | None = None  # the diagnosis' of the bundle the plan came from, when one was given

    @property
    def unapplied_exit_code(self) -> int:
        """With nothing applied: the worse of the fresh inspection's exit code and that of the bundle the plan came
        from. The state is the one the bundle judged (`_fresh_matches` checked its digest) and the inspection sends
        no traffic, so the bundle's failure on a measured rate (a link slow until the reboot left to
        --allow-reboot) stands: a link nothing repaired never exits as passing."""
        codes = [self.before.exit_code, *([self.bundle_exit_code] if self.bundle_exit_code is not None else [])]
        return max(codes, key=lambda code: _SEVERITY.get(code, len(_SEVERITY)))


def _repair_nodes(transports: dict[str, Transport]) -> dict[str, RepairNode]:
    return {name: LocalNode(t) if isinstance(t, LocalTransport) else ShellNode(t) for name, t in transports.items()}


def _open_nodes(config: Config) -> tuple[dict[str, Transport], dict[str, RepairNode]]:
    transports = open_transports(list(config.nodes.values()), known_hosts=config.ssh.known_hosts,
                                 accept_new_host_keys=config.ssh.accept_new_host_keys, ssh_config=config.ssh.config,
                                 connect_timeout_s=config.ssh.connect_timeout_s)
    return transports, _repair_nodes(transports)


def _fresh_matches(plan: RepairPlan, fresh: FixResult) -> None:
    """A bundle's plan is applied only to the nodes and the state it was made for (refused otherwise): a pair's
    plan names its two hostnames, and every plan carries its state's digest (a cluster's covers every node)."""
    if plan.hostnames != (None, None) and tuple(plan.hostnames) != tuple(fresh.plan.hostnames):
        raise ApplyRefused(f"the plan was made for {plan.hostnames[0]} and {plan.hostnames[1]}, these nodes are "
                           f"{fresh.plan.hostnames[0]} and {fresh.plan.hostnames[1]}: refused, nothing changed",
                           exit_code=ExitCode.BAD_INPUT,
                           fix="run `linkcheck fix --apply` against the pair the bundle came from")
    if fresh.plan.state_sha256 != plan.state_sha256:
        raise ApplyRefused("the live state changed since the plan was made (its state digest differs): refused, "
                           "nothing changed", exit_code=ExitCode.BAD_INPUT,
                           fix="run `linkcheck fix --apply` without a bundle, for a plan of the state now")


FIXED, STILL_FIRING, NOT_JUDGED = "fixed", "still firing", "not judged again"


def planned_findings(plan: RepairPlan, after: Judged) -> list[tuple[str, str]]:
    """Each finding the plan has a step for, as the inspection after the repair judges it: fixed (it passes now),
    still firing, or not judged again (the inspection sends no traffic: a throughput finding needs `check`)."""
    now = after.statuses()
    out = []
    for finding in dict.fromkeys(s.finding for s in plan.steps):
        status = now.get(finding)
        out.append((finding, FIXED if status is Status.PASS else STILL_FIRING
                    if status in (Status.WARN, Status.FAIL) else NOT_JUDGED))
    return out


def _record(result: ApplyResult, interrupted: str | None = None) -> None:
    """apply.json in the plan's bundle: each node's transaction and the findings before and after."""
    saved = result.before.saved
    if saved is None:
        return

    def firing(outcome: Judged | None) -> list[str] | None:
        if outcome is None:
            return None
        return sorted(i for i, status in outcome.statuses().items() if status in (Status.WARN, Status.FAIL))

    document = {
        "schema": "linkcheck-repair-apply", "schema_version": 1,
        "nodes": [msgspec.to_builtins(o) for o in result.outcomes],
        "rebooted": list(result.rebooted),
        "before": {"exit_code": int(result.before.exit_code), "findings": firing(result.before.outcome)},
        "after": None if result.after is None else {
            "exit_code": int(result.after.exit_code), "findings": firing(result.after),
            "planned": dict(planned_findings(result.before.plan, result.after)),
            "bundle": str(result.after_saved) if result.after_saved else None},
        "interrupted": interrupted,
    }
    with contextlib.suppress(OSError, BundleError):
        add_files(saved, {APPLY_RECORD: strict_json.dumps(document, indent=2) + "\n"})


def _wait_reboot(config: Config, boot_ids: dict[str, str], wait_s: float, say: Say) -> list[str]:
    """Each rebooted node answering again with a new boot id, within wait_s; the nodes that did not."""
    deadline = time.monotonic() + wait_s
    left = dict(boot_ids)
    while left and time.monotonic() < deadline:
        time.sleep(min(5.0, max(0.0, deadline - time.monotonic())))
        transports, nodes = _open_nodes(replace(config, nodes={n: config.nodes[n] for n in left}))
        try:
            for name in list(left):
                with contextlib.suppress(LinkcheckError):
                    now = nodes[name].sh(BOOT_ID, timeout_s=10).stdout.strip()
                    if now and now != left[name]:
                        say(f"node {name}: back after the reboot")
                        del left[name]
        finally:
            close_transports(transports)
    return sorted(left)


BOOT_ID = "cat /proc/sys/kernel/random/boot_id"


def _transactions(config: Config, result: ApplyResult, options: ApplyOptions, say: Say) -> ApplyResult:
    """What earlier runs left said, then each node's transaction and, when allowed, the reboot."""
    transports, nodes = _open_nodes(config)
    try:
        lines: list[str] = []
        for name in sorted(nodes):
            try:
                lines += report_unfinished(nodes[name], options.journal_root, say)
            except JournalError:
                raise  # a journal that is not one linkcheck writes: refused, nothing is applied over it
            except LinkcheckError:
                pass
        result = replace(result, journal_lines=tuple(lines))
        plan = result.before.plan
        if not [s for s in plan.steps if not s.reboot or options.allow_reboot]:
            return replace(result, nothing_to_do=True)
        try:
            outcomes = apply_plan(plan, nodes, result.before.links, options, say)
        except KeyboardInterrupt:
            _record(result, "interrupted (Ctrl-C): the node being changed was put back (its journal says whether "
                    "its live state read back as before)")
            raise
        result = replace(result, outcomes=tuple(outcomes))
        if options.allow_reboot and all(o.state == COMMITTED for o in outcomes):
            boot_ids = {n: nodes[n].sh(BOOT_ID).stdout.strip() for n in sorted(nodes)}
            asked = reboot_nodes(plan, nodes, say)
            result = replace(result, rebooted=tuple(asked), boot_ids=tuple((n, boot_ids[n]) for n in asked))
        return result
    finally:
        close_transports(transports)


def apply_fix(target: FixNodes, save_dir: Path | None, bundle: Path | None, options: ApplyOptions, say: Say, *,
              playbooks: list[Path] | None = None, reboot_wait_s: float = 600,
              after_dir: Path | None = None, shown: Callable[[FixResult], None] | None = None) -> ApplyResult:
    """`fix --apply`: the plan (a bundle's, checked against a fresh inspection, or a live one), each node's
    transaction in the plan's order (a node with no step untouched), the reboot when allowed, then every node
    inspected again (no traffic); apply.json records it in the bundle."""
    config = target.config
    live = fix_live(target, save_dir)
    before = live
    bundle_exit_code: int | None = None
    if bundle is not None:
        planned = fix_bundle(bundle, playbooks, config)
        _fresh_matches(planned.plan, live)
        before = replace(live, plan=planned.plan)
        bundle_exit_code = planned.exit_code
    if shown is not None:
        shown(before)
    result = _transactions(config, ApplyResult(before, bundle_exit_code=bundle_exit_code), options, say)
    if result.rebooted:
        late = _wait_reboot(config, dict(result.boot_ids), reboot_wait_s, say)
        if late:
            _record(result)
            raise ApplyFailed(f"node {', '.join(late)}: not back with a new boot within {reboot_wait_s:g} s after "
                              "the reboot", fix="check the node's console, then run `linkcheck check`")
    if result.nothing_to_do or any(o.state != COMMITTED for o in result.outcomes):
        _record(result)
        return result
    if after_dir is None and before.saved is not None:
        after_dir = before.saved.with_name(before.saved.name + "-after")
    again = _inspect(target, after_dir)
    result = replace(result, after=again.outcome, after_saved=again.saved)
    _record(result)
    return result


def restore_fix(config: Config, options: ApplyOptions, say: Say) -> list[RestoreOutcome]:
    """`fix --restore`: on each node, the latest run's original files back and its runtime change undone."""
    transports, nodes = _open_nodes(config)
    try:
        outcomes = []
        for name in sorted(nodes):
            if not sudo_works(nodes[name]):
                raise ApplyRefused(f"node {name}: sudo asks for a password (sudo -n refused): nothing restored",
                                   fix="allow passwordless sudo for the SSH user")
        for name in sorted(nodes):
            outcomes.append(restore_node(nodes[name], options.journal_root, say,
                                         allow_nm_disconnect=options.allow_nm_disconnect))
        return outcomes
    finally:
        close_transports(transports)

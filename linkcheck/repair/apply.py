"""`fix --apply`: a plan applied as a transaction, one node at a time, over the small node interface of
repair.node (SSH, the local node through netlink, or a test's stand-in).

Preflight on every node before anything changes: passwordless sudo, the current netplan files pass `netplan
generate`, the invariants recorded (the management interface and address from $SSH_CONNECTION, the default
route), every runtime command one linkcheck plans, no step touching the management or default-route interface.
Then per node: the journal first (originals, undo operations, state `planned`), the runtime change, verified
(carrier, MTU, addresses, the RoCE v2 GID entry of each new address, a ping each way at the path MTU, a short
ib_write_bw over the path), undone on failure;
then the files, validated and installed, a netplan change committed through `netplan try` that is confirmed only
after the invariants and the link are verified again. Any failure or Ctrl-C puts the node back as it was, and
the node's live state is then read back and compared with the one recorded before any change
(linkcheck.repair.restore.put_back_verified): neither `netplan try`'s revert nor a NetworkManager rollback is
taken on trust.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import secrets
import shlex
import signal
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager

import msgspec
from msgspec.structs import replace

from linkcheck.errors import ExitCode, LinkcheckError, NodeError
from linkcheck.facts.model import LinkFacts
from linkcheck.repair import commit, nm_checkpoint
from linkcheck.repair.checks import Invariants, invariant_problems, link_state, read_invariants, verify_link
from linkcheck.repair.journal import (
    COMMITTED,
    JOURNAL_ROOT,
    NOT_REVERTED,
    PERSISTENT_PENDING,
    PLANNED,
    REVERTED,
    RUNTIME_APPLIED,
    RUNTIME_VERIFIED,
    SCHEMA,
    Journal,
    encode,
    run_dir,
    write_command,
)
from linkcheck.repair.livestate import read_state
from linkcheck.repair.model import RepairPlan, Step
from linkcheck.repair.node import ChangeFailed, RepairNode, first_line
from linkcheck.repair.paths import plan_path_problem
from linkcheck.repair.restore import mgmt_disconnect_why, put_back_verified, restore_node
from linkcheck.repair.runtime import (
    ACCEPT_DELETE,
    ACCEPT_INSERT,
    ADDR_ADD,
    ADDR_DEL,
    FEC,
    FORWARD,
    MTU,
    NEIGH_DEL,
    NEIGH_SET,
    NM_RELOAD,
    REBOOT,
    ROUTE_DEL,
    ROUTE_REPLACE,
    OpError,
    RuntimeOp,
    parse_mac,
    parse_op,
)

q = shlex.quote
Say = Callable[[str], None]


class ApplyRefused(LinkcheckError):
    """The plan is not applied (preflight): nothing on any node changed. Exit 3, or 4 for a plan that does not
    belong to this pair or moment."""

    def __init__(self, message: str, *, fix: str | None = None, exit_code: ExitCode = ExitCode.INCONCLUSIVE):
        super().__init__(message, fix=fix)
        self.exit_code = exit_code


class ApplyFailed(LinkcheckError):
    """A node's change did not verify (or a step failed) and was rolled back."""


class ApplyOptions(msgspec.Struct, frozen=True):
    allow_reboot: bool = False
    try_timeout_s: int = 120  # netplan try's own default
    journal_root: str = JOURNAL_ROOT
    # netplan files changed even where netplan try disconnects the management interface (linkcheck.repair.renderer)
    allow_nm_disconnect: bool = False


class NodeOutcome(msgspec.Struct, frozen=True):
    """How one node's transaction ended: its journal, its final state, the steps applied, what went wrong."""

    node: str
    run_id: str
    journal: str
    state: str
    findings: tuple[str, ...] = ()
    runtime: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()
    # Put back: its live state read back as before the run (True), not (False, `differences`), or not checked.
    verified: bool | None = None
    differences: tuple[str, ...] = ()


# A node's outcome when its files could not be read as the plan needs them (a link, a file changed since): nothing on
# it changed and no journal was written.
NOT_APPLIED = "not applied"


class NodePrep(msgspec.Struct, frozen=True):
    """What preflight found on one node: its steps, their runtime operations, its invariants."""

    node: str
    steps: tuple[Step, ...]
    ops: tuple[RuntimeOp, ...]
    invariants: Invariants
    netplan: bool


def now_utc() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def new_run_id() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


# --- preflight ---------------------------------------------------------------------------------------------------
def plan_nodes(plan: RepairPlan) -> list[str]:
    """The nodes with a step, in the plan's order (a pair's a then b; a cluster's as its topology lists them):
    the order their transactions run in."""
    return list(dict.fromkeys(s.node for s in plan.steps))


def sudo_works(node: RepairNode) -> bool:
    return node.sh("sudo -n true").exit_status == 0


def _ops(step: Step) -> list[RuntimeOp]:
    try:
        return [parse_op(c) for c in step.runtime]
    except OpError as exc:
        raise ApplyRefused(f"node {step.node}: {step.finding}: {exc}; the plan is not applied",
                           exit_code=ExitCode.BAD_INPUT) from None


def preflight(plan: RepairPlan, nodes: Mapping[str, RepairNode], options: ApplyOptions, say: Say) -> list[NodePrep]:
    """Every node with steps checked before any change; ApplyRefused names the first reason to apply nothing."""
    for step in plan.steps:
        _ops(step)
        why = plan_path_problem(step.persistent) if step.persistent is not None else None
        if step.node not in nodes:
            why = f"node {step.node!r} is not one of the nodes reached ({', '.join(sorted(nodes))})"
        if why is not None:
            raise ApplyRefused(f"node {step.node}: {step.finding}: {why}; the plan is not applied",
                               exit_code=ExitCode.BAD_INPUT)
    preps = []
    for name in plan_nodes(plan):
        steps = tuple(s for s in plan.for_node(name) if not s.reboot or options.allow_reboot)
        if not steps:
            continue
        node = nodes[name]
        if not sudo_works(node):
            raise ApplyRefused(f"node {name}: sudo asks for a password (sudo -n refused): plan only, nothing changed",
                               fix="allow passwordless sudo for the SSH user on every node, then run fix --apply")
        invariants = read_invariants(node)
        ops = [op for s in steps for op in _ops(s)]
        touched = {op.dev for op in ops if op.dev} | {i for s in steps for i in s.interfaces}
        # A route through the management or default-route interface would be as much a change of it.
        for dev in sorted(touched & set(invariants.devices)):
            role = "management" if dev == invariants.mgmt_dev else "default-route"
            raise ApplyRefused(f"node {name}: the plan changes {dev}, the {role} interface: refused, nothing changed",
                               fix="change that interface by hand, from a console")
        netplan = any(s.persistent is not None and s.persistent.manager == "netplan" for s in steps)
        if netplan:
            why = commit.validate_netplan(node, [])
            if why is not None:
                raise ApplyRefused(f"node {name}: the current netplan files do not pass: {why}: nothing changed",
                                   fix="repair /etc/netplan first (sudo netplan generate says what is wrong)")
            _refuse_mgmt_disconnect(node, name, invariants, options)
        preps.append(NodePrep(name, steps, tuple(ops), invariants, netplan))
    return preps


def _refuse_mgmt_disconnect(node: RepairNode, name: str, invariants: Invariants, options: ApplyOptions) -> None:
    """A netplan change where `netplan try` would disconnect the management interface (netplan-defined for
    NetworkManager) is refused unless --allow-nm-disconnect; the files are read as root, never kept."""
    if options.allow_nm_disconnect:
        return
    why = mgmt_disconnect_why(node, invariants.mgmt_dev)
    if why is not None:
        raise ApplyRefused(why, fix="make the plan's netplan change from a console (its steps say what), or run "
                           "`fix --apply --allow-nm-disconnect` to accept the interruption")


# --- undo ----------------------------------------------------------------------------------------------------
def undo_of(node: RepairNode, op: RuntimeOp) -> RuntimeOp | None:
    """The operation that puts back what `op` changes, read from the live state now (None: nothing to put back)."""
    if op.kind == MTU:
        mtu = link_state(node, op.dev).get("mtu")
        return RuntimeOp(MTU, op.dev, str(mtu)) if mtu is not None else None
    if op.kind == ADDR_ADD:
        return RuntimeOp(ADDR_DEL, op.dev, op.value)
    if op.kind == ADDR_DEL:
        return RuntimeOp(ADDR_ADD, op.dev, op.value)
    if op.kind == NEIGH_DEL:
        out = node.sh(f"ip -j neigh show {q(op.value)} dev {q(op.dev)}").stdout
        entries = msgspec.json.decode(out.encode() or b"[]")
        entry = entries[0] if isinstance(entries, list) and entries and isinstance(entries[0], dict) else {}
        if not entry.get("lladdr"):
            return None
        state = entry.get("state") or ["reachable"]
        return RuntimeOp(NEIGH_SET, op.dev, op.value, parse_mac(str(entry["lladdr"])), str(state[0]).lower())
    if op.host:
        return _host_undo(node, op)
    if op.kind == FEC:
        out = node.sh(f"ethtool --show-fec {q(op.dev)}").stdout
        for line in out.splitlines():
            # ethtool >= 5.18 says "Supported/Configured FEC encodings:", older ones "Configured FEC encodings:".
            head, _, modes = line.strip().partition(":")
            if head in ("Configured FEC encodings", "Supported/Configured FEC encodings"):
                word = modes.split()[0].lower() if modes.split() else ""
                return RuntimeOp(FEC, op.dev, word) if word else None
        return None
    return None  # nmcli reload, reboot: nothing to put back


def _host_undo(node: RepairNode, op: RuntimeOp) -> RuntimeOp | None:
    """ip_forward set back to its value now; a route removed, or the route it replaces put back; the exact
    DOCKER-USER rule inserted deleted (never another)."""
    if op.kind == FORWARD:
        now = node.sh("cat /proc/sys/net/ipv4/ip_forward").stdout.strip()
        return RuntimeOp(FORWARD, value=now) if now in ("0", "1") and now != op.value else None
    if op.kind == ROUTE_REPLACE:
        routes = node.sh(f"ip -j route show {q(op.value)}").stdout
        found = msgspec.json.decode(routes.encode() or b"[]")
        old = next((r for r in found if isinstance(r, dict)), None) if isinstance(found, list) else None
        if old is not None and old.get("gateway") and old.get("dev"):  # replaced: put that route back
            return RuntimeOp(ROUTE_REPLACE, str(old["dev"]), op.value, via=str(old["gateway"]))
        return RuntimeOp(ROUTE_DEL, op.dev, op.value, via=op.via)
    if op.kind == ACCEPT_INSERT:
        return RuntimeOp(ACCEPT_DELETE, value=op.value, via=op.via)
    return None


# --- the journal on the node ---------------------------------------------------------------------------------
class _Tx:
    """One node's transaction: its journal kept current on the node at every state."""

    def __init__(self, node: RepairNode, prep: NodePrep, options: ApplyOptions, hostname: str | None) -> None:
        self.node = node
        self.prep = prep
        self.options = options
        self.run_id = new_run_id()
        self.dir = run_dir(options.journal_root, self.run_id)
        self.journal = Journal(SCHEMA, self.run_id, prep.node, hostname, now_utc(), PLANNED,
                               tuple(dict.fromkeys(s.finding for s in prep.steps)), (), (), ())
        self.applied: list[RuntimeOp] = []
        self.undo: list[RuntimeOp | None] = []  # per runtime operation, in its order
        self.files: list[commit.FilePlan] = []
        self.installed = False
        self.try_started = False
        self.checkpoint_started = False

    @property
    def nm_files(self) -> list[commit.FilePlan]:
        return [f for f in self.files if f.manager == "NetworkManager"]

    def mark(self, state: str, note: str = "") -> None:
        self.journal = replace(self.journal, state=state, history=(*self.journal.history, (state, now_utc())),
                               note=note or self.journal.note)
        out = self.node.sh(write_command(self.dir), stdin=encode(self.journal))
        if out.exit_status != 0:
            raise ApplyFailed(f"node {self.prep.node}: cannot write the journal {self.dir}: {first_line(out)}")

    def undo_applied(self) -> list[RuntimeOp]:
        """What undoes the operations applied so far, last first."""
        return [u for u in reversed(self.undo[: len(self.applied)]) if u is not None]

    def open(self, runtime: list[RuntimeOp], undo: list[RuntimeOp]) -> None:
        """The journal folder (root-only) with the originals and the live state of the interfaces the run
        touches, before any change."""
        root, d = q(self.options.journal_root), q(self.dir)
        script = f"umask 077; mkdir -p {d}/files && chmod 700 {root} {d} {d}/files"
        out = self.node.sh(f"sudo -n sh -c {q(script)}")
        if out.exit_status != 0:
            raise ApplyFailed(f"node {self.prep.node}: cannot create the journal {self.dir}: {first_line(out)}")
        saved = commit.save_originals(self.node, self.dir, self.files)
        before = read_state(self.node, self.touched(), any(op.host for op in runtime))
        self.journal = replace(self.journal, runtime=tuple(runtime), undo=tuple(undo), files=tuple(saved),
                               before=before)
        self.mark(PLANNED)

    def touched(self) -> list[str]:
        """The interfaces the run may change: its operations', its steps', its NetworkManager profiles'."""
        devs = {op.dev for op in self.prep.ops if op.dev} | {i for s in self.prep.steps for i in s.interfaces}
        with contextlib.suppress(commit.CommitError):  # a keyfile without a device is refused at its commit
            devs |= {dev for _, dev in nm_checkpoint.profiles(self.nm_files)}
        return sorted(devs)


@contextmanager
def _sigint_held() -> Iterator[list[int]]:
    """Ctrl-C held while a node is put back: a second one must not leave it half restored."""
    caught: list[int] = []
    try:
        previous = signal.signal(signal.SIGINT, lambda signum, _frame: caught.append(signum))
    except ValueError:  # not the main thread: nothing to hold
        yield caught
        return
    try:
        yield caught
    finally:
        signal.signal(signal.SIGINT, previous)


def _rollback(tx: _Tx, why: str, say: Say) -> list[str]:
    """Put the node back: through netplan try's revert when it runs (its script restores and undoes), else the
    files and the runtime change here; then its live state read back and compared with the journal's `before`
    (and what differs put back once more). The journal ends `reverted` only when it read back as before, else
    `not-reverted`. Returns what could not be put back."""
    problems: list[str] = []
    with _sigint_held():
        if tx.checkpoint_started:
            nm_checkpoint.request(tx.node, tx.dir, "rollback")
            result = nm_checkpoint.wait(tx.node, tx.dir, "result", tx.options.try_timeout_s + 15)
            if result != "reverted":
                problems.append(f"node {tx.prep.node}: the NetworkManager checkpoint did not report a rollback "
                                f"({result or 'no answer'})")
        elif tx.try_started:
            commit.signal_try(tx.node, tx.dir, "INT")
            result = commit.wait_try(tx.node, tx.dir, "result", tx.options.try_timeout_s + 15)
            if result != "reverted":
                problems.append(f"node {tx.prep.node}: netplan try did not report a revert ({result or 'no answer'})")
        else:
            if tx.installed:
                problems += commit.restore(tx.node, tx.dir, list(tx.journal.files))
            for op in tx.undo_applied():
                try:
                    tx.node.change(op)
                except ChangeFailed as exc:
                    problems.append(str(exc))
        verified, diff, more = put_back_verified(tx.node, tx.dir, tx.journal, say)
        problems += more
        tx.journal = replace(tx.journal, verified=verified, differences=tuple(diff))
        tx.mark(NOT_REVERTED if verified is False else REVERTED, why)
    return problems


def _runtime(tx: _Tx, nodes: Mapping[str, RepairNode], links: Sequence[LinkFacts], pending: set[tuple[str, str]],
             say: Say) -> None:
    # A profile's reload runs inside the NetworkManager checkpoint, once the keyfiles it reads are installed.
    ops = [op for op in tx.prep.ops if op.kind != REBOOT and not (op.kind == NM_RELOAD and tx.nm_files)]
    for op in ops:
        say(f"node {tx.prep.node}: {op.describe}")
        tx.node.change(op)
        tx.applied.append(op)
    if ops:
        tx.mark(RUNTIME_APPLIED)
    for op in ops:
        pending.discard((tx.prep.node, op.dev))
    # The traffic check runs here only: once the files are committed the runtime state is the same one, and a
    # netplan try waiting for its confirmation should not wait through another run.
    problems = verify_link(nodes, links, tx.prep.node, ops, pending, traffic=True, say=say) if ops else []
    if problems:
        raise ApplyFailed("; ".join(problems))
    tx.mark(RUNTIME_VERIFIED)


def _persistent(tx: _Tx, nodes: Mapping[str, RepairNode], links: Sequence[LinkFacts],  # noqa: C901 (one story)
                pending: set[tuple[str, str]], say: Say) -> None:
    if not tx.files:
        return
    netplan = [f for f in tx.files if f.manager == "netplan"]
    if netplan:
        why = commit.validate_netplan(tx.node, netplan)
        if why is not None:
            raise ApplyFailed(f"node {tx.prep.node}: the new netplan files do not pass: {why}")
    nm = tx.nm_files
    profiles = _nm_profiles(tx)
    tx.mark(PERSISTENT_PENDING)
    if nm:
        # The checkpoint first: it must hold NetworkManager's state from before the keyfiles change.
        _start_checkpoint(tx, [dev for _, dev in profiles], say)
    for f in tx.files:
        say(f"node {tx.prep.node}: {f.path} written (mode {f.new_mode})")
        tx.installed = True
        commit.install(tx.node, f)
    if netplan:
        _start_try(tx, say)
    problems = nm_checkpoint.activate(tx.node, [c for c, _ in profiles]) if nm else []
    problems += invariant_problems(tx.node, tx.prep.invariants)
    problems += verify_link(nodes, links, tx.prep.node, tx.applied, pending)
    if profiles and not problems:
        # The profiles' interfaces, as NetworkManager left them: carrier, GID, a jumbo ping each way, traffic.
        profile_ops = [RuntimeOp(NM_RELOAD, dev) for _, dev in profiles]
        problems += verify_link(nodes, links, tx.prep.node, profile_ops, pending, traffic=True, say=say)
    problems += _file_checks(tx)
    if problems:
        raise ApplyFailed("; ".join(problems))
    if netplan:
        _confirm_try(tx)
    if nm:
        _commit_checkpoint(tx)


def _nm_profiles(tx: _Tx) -> list[tuple[str, str]]:
    """(connection id, interface) of each keyfile the node's steps install; one for the management or a
    default-route interface is refused (preflight saw only the step's file, not the interface its text names)."""
    profiles = nm_checkpoint.profiles(tx.nm_files)
    for _, dev in profiles:
        if dev in tx.prep.invariants.devices:
            raise ApplyFailed(f"node {tx.prep.node}: the profile is for {dev}, the management or default-route "
                              "interface: refused")
    return profiles


def _start_checkpoint(tx: _Tx, devices: list[str], say: Say) -> None:
    script = nm_checkpoint.checkpoint_script(tx.dir, tx.options.try_timeout_s, list(dict.fromkeys(devices)),
                                             list(tx.journal.files), tx.undo_applied())
    nm_checkpoint.start(tx.node, tx.dir, script)
    tx.checkpoint_started = True
    ready = nm_checkpoint.wait(tx.node, tx.dir, "ready", 60)
    if ready != "ready":
        tx.checkpoint_started = False  # nothing was installed yet: the files and runtime are put back here
        raise ApplyFailed(f"node {tx.prep.node}: no NetworkManager checkpoint "
                          f"({nm_checkpoint.log_tail(tx.node, tx.dir) or ready or 'no answer'})")
    say(f"node {tx.prep.node}: NetworkManager checkpoint with a rollback timeout of {tx.options.try_timeout_s} s; "
        "applying the profiles")


def _commit_checkpoint(tx: _Tx) -> None:
    """CheckpointDestroy, once everything verified: NetworkManager keeps the change."""
    if not nm_checkpoint.request(tx.node, tx.dir, "commit"):
        raise ApplyFailed(f"node {tx.prep.node}: cannot ask to keep the NetworkManager checkpoint's change")
    result = nm_checkpoint.wait(tx.node, tx.dir, "result", 30)
    tx.checkpoint_started = False
    if result == "accepted":
        return
    if result != "reverted":
        tx.checkpoint_started = True  # still running: the rollback path asks it to roll back
    raise ApplyFailed(f"node {tx.prep.node}: the NetworkManager checkpoint did not keep the change "
                      f"({result or 'no answer'})")


def _start_try(tx: _Tx, say: Say) -> None:
    script = commit.try_script(tx.dir, tx.options.try_timeout_s, list(tx.journal.files), tx.undo_applied())
    commit.start_try(tx.node, tx.dir, script)
    tx.try_started = True
    ready = commit.wait_try(tx.node, tx.dir, "ready", 60)
    if ready != "ready":
        raise ApplyFailed(f"node {tx.prep.node}: netplan try did not wait for a confirmation "
                          f"({ready or 'no answer'})")
    say(f"node {tx.prep.node}: netplan try --timeout {tx.options.try_timeout_s} applied the files; verifying again")


def _confirm_try(tx: _Tx) -> None:
    """SIGUSR1, once everything verified: netplan try keeps the change."""
    if not commit.signal_try(tx.node, tx.dir, "USR1"):
        raise ApplyFailed(f"node {tx.prep.node}: cannot confirm netplan try (SIGUSR1)")
    result = commit.wait_try(tx.node, tx.dir, "result", 30)
    if result == "reverted":
        tx.try_started = False  # its script has put the node back already
    if result != "accepted":
        raise ApplyFailed(f"node {tx.prep.node}: netplan try did not accept the change ({result or 'no answer'})")
    tx.try_started = False


def _file_checks(tx: _Tx) -> list[str]:
    """Each installed file reads back as written."""
    problems = []
    for f in tx.files:
        existed, _, _, _, raw = commit.read_file(tx.node, f.path)
        if not existed or raw.decode("utf-8", errors="surrogateescape") != f.after:
            problems.append(f"node {tx.prep.node}: {f.path} does not read back as written")
    return problems


def apply_node(prep: NodePrep, nodes: Mapping[str, RepairNode], links: Sequence[LinkFacts], options: ApplyOptions,
               pending: set[tuple[str, str]], say: Say) -> NodeOutcome:
    """One node's transaction; its outcome (committed or reverted). KeyboardInterrupt and a lost connection
    propagate after the node is put back (or, the connection lost, left to netplan try's timeout)."""
    node = nodes[prep.node]
    holder = next((link for link in links if prep.node in (link.a.name, link.b.name)), None)
    tx = _Tx(node, prep, options, holder.node(prep.node).hostname if holder is not None else None)
    changes = [s.persistent for s in prep.steps if s.persistent is not None]
    try:
        tx.files = commit.plan_files(node, changes)
    except commit.CommitError as exc:
        # The files are read before anything changes: this node is left as it was, with no journal, and the nodes
        # committed before it are put back (apply_plan).
        return NodeOutcome(prep.node, tx.run_id, "", NOT_APPLIED, tx.journal.findings,
                           problems=(f"{exc}; nothing changed on node {prep.node}",))
    runtime = [op for op in prep.ops if op.kind != REBOOT]
    tx.undo = [undo_of(node, op) for op in runtime]
    tx.open(runtime, [u for u in reversed(tx.undo) if u is not None])
    try:
        _runtime(tx, nodes, links, pending, say)
        _persistent(tx, nodes, links, pending, say)
        tx.mark(COMMITTED)
    except (ApplyFailed, ChangeFailed, commit.CommitError) as exc:
        problems = _rollback(tx, str(exc), say)
        return _outcome(tx, tx.journal.state, (str(exc), *problems))
    except KeyboardInterrupt:
        _rollback(tx, "interrupted (Ctrl-C)", say)
        raise
    except NodeError as exc:
        # The node cannot be reached to put it back: netplan try's timeout (when it runs) reverts it there.
        raise ApplyFailed(f"node {prep.node}: lost at {tx.journal.state} ({exc.reason}): "
                          + ("netplan try reverts the change by its timeout" if tx.try_started else
                             "the NetworkManager checkpoint rolls the change back by its timeout"
                             if tx.checkpoint_started else
                             f"the journal {tx.dir} says what changed; run `linkcheck fix --restore`"),
                          fix="reconnect, then run `linkcheck fix` to see what the journal says") from exc
    return _outcome(tx, COMMITTED, ())


def _outcome(tx: _Tx, state: str, problems: tuple[str, ...]) -> NodeOutcome:
    return NodeOutcome(tx.prep.node, tx.run_id, tx.dir, state, tx.journal.findings,
                       tuple(op.describe for op in tx.applied), tuple(f.path for f in tx.files), problems,
                       tx.journal.verified, tx.journal.differences)


def apply_plan(plan: RepairPlan, nodes: Mapping[str, RepairNode], links: Sequence[LinkFacts],
               options: ApplyOptions, say: Say) -> list[NodeOutcome]:
    """Preflight on every node, then each node's transaction in turn (`links`: the pair's one, or each cable of a
    cluster, which the changed interfaces are verified over); a node that is rolled back stops the run (the next
    node is not touched) and puts back the nodes committed before it. A node with no step is never touched."""
    preps = preflight(plan, nodes, options, say)
    pending = {(p.node, op.dev) for p in preps for op in p.ops if op.dev}
    outcomes: list[NodeOutcome] = []
    for prep in preps:
        non_reboot = replace(prep, ops=tuple(op for op in prep.ops if op.kind != REBOOT))
        if not non_reboot.ops and not any(s.persistent for s in prep.steps):
            continue
        outcome = apply_node(non_reboot, nodes, links, options, pending, say)
        outcomes.append(outcome)
        if outcome.state != COMMITTED:
            # The nodes as a whole go back: a node left repaired alone may face a peer that is not (a new
            # subnet on one end only cuts the path).
            for done in outcomes[:-1]:
                say(f"node {done.node}: putting back its committed change, as node {prep.node}'s was "
                    + ("not applied" if outcome.state == NOT_APPLIED else "reverted"))
                back = restore_node(nodes[done.node], options.journal_root, say,
                                    allow_nm_disconnect=options.allow_nm_disconnect)
                outcomes[outcomes.index(done)] = replace(
                    done, state=NOT_REVERTED if back.verified is False else REVERTED, problems=back.problems,
                    verified=back.verified, differences=back.differences)
            break
    return outcomes


def reboot_nodes(plan: RepairPlan, nodes: Mapping[str, RepairNode], say: Say) -> list[str]:
    """The plan's reboot steps (only with --allow-reboot): `systemctl reboot --no-block` on each node; the
    nodes that were asked."""
    asked = []
    for name in plan_nodes(plan):
        if any(s.reboot for s in plan.for_node(name)):
            op = RuntimeOp(REBOOT)
            say(f"node {name}: {op.describe}")
            try:
                nodes[name].change(op)
            except (ChangeFailed, NodeError) as exc:
                raise ApplyFailed(f"node {name}: reboot not started: {exc}") from None
            asked.append(name)
    return asked

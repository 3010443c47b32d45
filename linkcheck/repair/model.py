"""The repair plan's records: a step per change on one node, each with its runtime commands, its persistent file
change (a unified diff, and the edit that produces it from the file as it is on the node), how it is verified and
what it touches."""

from __future__ import annotations

import msgspec

# What a step touches, as `kind:name` words: the apply preflight refuses a plan that touches the management or the
# default-route interface, and a reboot is never applied unless asked for.
TOUCH_INTERFACE = "interface:"
TOUCH_FILE = "file:"
TOUCH_NEIGHBOUR = "neighbour:"
TOUCH_REBOOT = "reboot"


class FileEdit(msgspec.Struct, frozen=True):
    """How the persistent change is made from the file's text, so that it can be made again on the node's own
    copy (the inspection saw netplan files with secret values replaced and NetworkManager keyfiles reduced to the
    keys it reads: their diff is for reading, the edit is what runs).

    kind: `netplan_set_mtu` (netdef, value), `netplan_replace_address` (old, new), `netplan_add_address` (netdef,
    new), `netplan_remove_address` (old), `netplan_new` (netdef, addresses, value = MTU or 0), `conf_drop_key`
    (key), `conf_set_key` (key, new), `copy_from` (old = the file copied), `netplan_add_route` (netdef, new = the
    route's destination, old = its gateway)."""

    kind: str
    netdef: str = ""
    old: str = ""
    new: str = ""
    key: str = ""
    value: int = 0
    addresses: tuple[str, ...] = ()


class FileChange(msgspec.Struct, frozen=True):
    """One file written on one node: its path, who reads it, the diff against the captured text, its mode."""

    path: str
    manager: str  # netplan | NetworkManager | nccl
    diff: str
    mode: str  # octal text, e.g. "600"
    edit: FileEdit
    before_sha256: str | None = None  # of the captured text as the plan saw it; None: a new file


class Step(msgspec.Struct, frozen=True):
    """One repair on one node, for one finding: the runtime change (shell commands, node text quoted), the
    persistent change, the commands that verify it, what it touches."""

    node: str
    finding: str  # the finding id, RULE_ID:subject
    runtime: tuple[str, ...]
    persistent: FileChange | None
    verify: tuple[str, ...]
    touches: tuple[str, ...]

    @property
    def reboot(self) -> bool:
        return TOUCH_REBOOT in self.touches

    @property
    def interfaces(self) -> tuple[str, ...]:
        return tuple(t[len(TOUCH_INTERFACE):] for t in self.touches if t.startswith(TOUCH_INTERFACE))


class NotPlanned(msgspec.Struct, frozen=True):
    """A finding with a fix text but no repair linkcheck can make, and why."""

    finding: str
    reason: str


class RepairPlan(msgspec.Struct, frozen=True):
    """The ordered steps (node a's, then node b's), the findings left to a person, and what the plan was made
    from: the two nodes' hostnames and a digest of the live state it depends on (a plan made from other nodes or
    from a state that changed since is refused by `fix --apply`)."""

    steps: tuple[Step, ...] = ()
    not_planned: tuple[NotPlanned, ...] = ()
    hostnames: tuple[str | None, str | None] = (None, None)
    state_sha256: str = ""
    # What the nodes' netplan and renderers mean for the plan's netplan changes (linkcheck.repair.renderer).
    notes: tuple[str, ...] = ()

    def for_node(self, node: str) -> tuple[Step, ...]:
        return tuple(s for s in self.steps if s.node == node)

"""A plan found in a bundle is data, not authority: it is shown as the repair plan only when it is the plan
linkcheck derives from that bundle's own findings; otherwise it is "the plan in the bundle, not linkcheck's", shown
by its differences from linkcheck's plan (each runtime command the grammar of `fix --apply` refuses and each file
outside the ones a repair may write named as such), never as the plan.

A `repair.json` whose digests were recomputed passes `verify`: the digests say the file was not changed since the
manifest was written, not who wrote it. Re-deriving says that.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from difflib import SequenceMatcher

import msgspec

from linkcheck.errors import BundleError
from linkcheck.outcome import ClusterCheck, Judged
from linkcheck.repair.cables import cluster_plan, pair_plan
from linkcheck.repair.model import RepairPlan, Step
from linkcheck.repair.paths import plan_path_problem
from linkcheck.repair.runtime import OpError, parse_op

NOT_OURS = "plan in the bundle, not linkcheck's"
MAX_SHOWN = 8  # differences said in one line; the JSON report lists up to MAX_LISTED
MAX_LISTED = 100
_WIDTH = 160  # characters of one value shown


def plan_for(judged: Judged) -> RepairPlan:
    """The plan for a judged run, from its findings, its facts and the files its bundle captured: a pair's for its
    one cable; a cluster's per cable (the pair's planner) and per node (repair/cables.py cluster_plan)."""
    if isinstance(judged, ClusterCheck):
        if judged.bundle is None:  # a check made from captures alone has no files to plan edits on
            raise BundleError("cluster", "no bundle to plan from: judge the saved bundle (linkcheck fix BUNDLE)")
        return cluster_plan(judged, judged.bundle)
    return pair_plan(judged.bundle, judged.link, judged.diagnosis.findings)


class SavedPlan(msgspec.Struct, frozen=True):
    """A bundle's plan judged: `plan` when it is linkcheck's own for the bundle's findings; otherwise None, with
    `differences` (each line of one plan that the other lacks, in order) and `refused` (what `fix --apply` would
    refuse in it)."""

    plan: RepairPlan | None
    differences: tuple[str, ...] = ()
    refused: tuple[str, ...] = ()

    @property
    def summary(self) -> str:
        """One line: what the bundle holds and how it differs (the first MAX_SHOWN differences)."""
        items = [*self.refused, *self.differences]
        more = f"; and {len(items) - MAX_SHOWN} more" if len(items) > MAX_SHOWN else ""
        return (f"{NOT_OURS}: it differs from the plan linkcheck makes from the bundle's findings "
                f"(not shown as the plan; `linkcheck fix BUNDLE` prints linkcheck's): "
                + "; ".join(items[:MAX_SHOWN]) + more)


def _value(text: str) -> str:
    """A value from the file as one printable line: repr-quoted (controls and newlines escaped), cut."""
    quoted = ascii(text) if not text.isprintable() else repr(text)
    return quoted if len(quoted) <= _WIDTH else quoted[:_WIDTH] + "..."


def _step_lines(index: int, step: Step) -> Iterator[str]:
    head = f"step {index} (node {_value(step.node)}, {_value(step.finding)})"
    yield f"{head}: touches {_value(', '.join(step.touches))}"
    for cmd in step.runtime:
        yield f"{head}: runtime {_value(cmd)}"
    if step.persistent is not None:
        change = step.persistent
        yield f"{head}: writes {_value(change.path)} ({_value(change.manager)}, mode {_value(change.mode)})"
        yield f"{head}: edit {_value(str(msgspec.to_builtins(change.edit)))}"
        yield f"{head}: before_sha256 {_value(str(change.before_sha256))}"
        for line in change.diff.split("\n"):
            yield f"{head}: diff {_value(line)}"
    for cmd in step.verify:
        yield f"{head}: verify {_value(cmd)}"


def _lines(plan: RepairPlan) -> list[str]:
    lines = [f"hostnames {_value(str(plan.hostnames))}", f"state_sha256 {_value(plan.state_sha256)}"]
    for i, step in enumerate(plan.steps, 1):
        lines += _step_lines(i, step)
    lines += [f"not planned {_value(n.finding)}: {_value(n.reason)}" for n in plan.not_planned]
    return lines


def _differences(saved: RepairPlan, ours: RepairPlan) -> list[str]:
    theirs, mine = _lines(saved), _lines(ours)
    out: list[str] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, theirs, mine, autojunk=False).get_opcodes():
        if tag != "equal":
            out += [f"only in the bundle's: {line}" for line in theirs[i1:i2]]
            out += [f"only in linkcheck's: {line}" for line in mine[j1:j2]]
    return out


def refusals(plan: RepairPlan, nodes: Sequence[str]) -> list[str]:
    """What `fix --apply` refuses in a plan: a runtime command outside its grammar, a node that is not one of the
    bundle's `nodes`, a file a repair may not write."""
    out = []
    for i, step in enumerate(plan.steps, 1):
        if step.node not in nodes:
            out.append(f"step {i}: node {_value(step.node)} is not one of the bundle's nodes "
                       f"({', '.join(map(_value, nodes))})")
        for cmd in step.runtime:
            try:
                parse_op(cmd)
            except OpError:
                out.append(f"step {i}: runtime {_value(cmd)} is not a command linkcheck plans "
                           "(`fix --apply` refuses it)")
        if step.persistent is not None:
            why = plan_path_problem(step.persistent)
            if why is not None:
                out.append(f"step {i}: {why} (`fix --apply` refuses it)")
    return out


def judge_saved(saved: RepairPlan, outcome: Judged) -> SavedPlan:
    """The bundle's plan against linkcheck's plan for the same diagnosis."""
    ours = plan_for(outcome)
    if saved == ours:
        return SavedPlan(ours)
    nodes = list(dict.fromkeys(n for link in outcome.links for n in (link.a.name, link.b.name)))
    return SavedPlan(None, tuple(_differences(saved, ours)[:MAX_LISTED]), tuple(refusals(saved, nodes)[:MAX_LISTED]))

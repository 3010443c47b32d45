"""The bundle's repair plan (`linkcheck fix`) for every report format: the plan when the manifest vouches for it,
and its steps as plain lines (commands, diff, verification) that each format shows in its own way."""

from __future__ import annotations

import os
from typing import Any

import msgspec

from linkcheck.outcome import Judged
from linkcheck.repair.model import RepairPlan, Step
from linkcheck.repair.record import REPAIR, load_repair, steps_document
from linkcheck.repair.saved import SavedPlan, judge_saved
from linkcheck.report.safe_text import shown


def saved_plan(outcome: Judged) -> tuple[SavedPlan | None, str | None]:
    """The bundle's plan judged against linkcheck's for the same findings, or (None, why it is not read);
    (None, None) when the bundle holds none (or the run was judged from captures alone)."""
    path = outcome.bundle.path if outcome.bundle is not None else None
    if outcome.bundle is None or path is None or not os.path.lexists(path / REPAIR):
        return None, None
    if {REPAIR, "manifest.json"} & outcome.bundle.unverified:
        return None, f"{REPAIR} is unverified (`linkcheck verify` names why; not shown)"
    plan, problem = load_repair(path)
    if plan is None:
        return None, problem
    return judge_saved(plan, outcome), None


def repair_plan(outcome: Judged) -> tuple[RepairPlan | None, str | None]:
    """(the plan, None) when the bundle's plan is linkcheck's own for its findings; (None, why it is not shown:
    unverified, damaged, or the plan in the bundle, not linkcheck's, with its differences); (None, None) when the
    bundle holds none."""
    judged, problem = saved_plan(outcome)
    if judged is None:
        return None, problem
    if judged.plan is None:
        return None, _not_ours(outcome, judged)
    return judged.plan, None


def _not_ours(outcome: Judged, judged: SavedPlan) -> str:
    path = outcome.bundle.path if outcome.bundle is not None else None
    return f"{path / REPAIR if path else REPAIR}: {judged.summary}"


def repair_document(outcome: Judged) -> dict[str, Any] | None:
    """For the JSON report: the steps as `fix -f json` prints them and what was not planned; {"problem": ...}
    when the plan there is not shown (with `not_linkchecks`: what `fix --apply` would refuse in it and its
    differences from linkcheck's plan); None when the bundle has no plan."""
    judged, problem = saved_plan(outcome)
    if judged is None:
        return {"problem": problem} if problem else None
    if judged.plan is None:
        return {"problem": _not_ours(outcome, judged), "not_linkchecks": {"refused": list(judged.refused),
                                                     "differences": list(judged.differences)}}
    plan = judged.plan
    return {**steps_document(plan), "not_planned": [msgspec.to_builtins(n) for n in plan.not_planned]}


def step_title(index: int, step: Step) -> str:
    kind = "reboot (only with --allow-reboot)" if step.reboot else ", ".join(step.touches) or "nothing"
    return shown(f"{index}. node {step.node}: {step.finding} (touches {kind})")


def step_lines(step: Step) -> list[str]:
    """The step's commands, its file change and its checks, one line each (the diff's lines as they are). Each
    is one line whatever a node put in it: a newline in a command is shown as `\\n`, never a second line that
    reads as a command of its own."""
    lines = [f"runtime: {cmd}" for cmd in step.runtime] or ["runtime: none"]
    if step.persistent is not None:
        change = step.persistent
        lines.append(f"persistent: {change.path} ({change.manager}, mode {change.mode})")
        lines += change.diff.rstrip("\n").split("\n")
    else:
        lines.append("persistent: none")
    lines += [f"verify: {cmd}" for cmd in step.verify]
    return [shown(line) for line in lines]


def plan_text_lines(plan: RepairPlan) -> list[str]:
    """The whole plan as text: each step under its title, then what was not planned."""
    if not plan.steps:
        lines = ["Nothing to repair."]
    else:
        lines = []
        for i, step in enumerate(plan.steps, 1):
            lines += [step_title(i, step), *(f"   {line}" for line in step_lines(step))]
    lines += [shown(f"not planned: {n.finding}: {n.reason}") for n in plan.not_planned]
    lines += [shown(f"note: {note}") for note in plan.notes]
    return lines

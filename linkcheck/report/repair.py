"""The bundle's repair plan (`linkcheck fix`) for every report format: the plan when the manifest vouches for it,
and its steps as plain lines (commands, diff, verification) that each format shows in its own way."""

from __future__ import annotations

import os
from typing import Any

import msgspec

from linkcheck.outcome import Outcome
from linkcheck.repair.model import RepairPlan, Step
from linkcheck.repair.record import REPAIR, load_repair, steps_document
from linkcheck.report.safe_text import shown


def repair_plan(outcome: Outcome) -> tuple[RepairPlan | None, str | None]:
    """(the plan, None), (None, why it is not shown), or (None, None) when the bundle holds none."""
    path = outcome.bundle.path
    if path is None or not os.path.lexists(path / REPAIR):
        return None, None
    if {REPAIR, "manifest.json"} & outcome.bundle.unverified:
        return None, f"{REPAIR} is unverified (`linkcheck verify` names why; not shown)"
    return load_repair(path)


def repair_document(outcome: Outcome) -> dict[str, Any] | None:
    """For the JSON report: the steps as `fix -f json` prints them and what was not planned; {"problem": ...}
    when the plan there is not shown; None when the bundle has no plan."""
    plan, problem = repair_plan(outcome)
    if plan is None:
        return {"problem": problem} if problem else None
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
    return lines

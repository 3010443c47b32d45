"""`linkcheck fix`: the repair plan for a saved bundle or a live check, saved in that bundle."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import msgspec

from linkcheck.app.live import run_live
from linkcheck.app.offline import diagnose_bundle
from linkcheck.config import Config
from linkcheck.errors import BundleError
from linkcheck.outcome import Outcome
from linkcheck.repair.files import node_files
from linkcheck.repair.model import RepairPlan
from linkcheck.repair.plan import plan_repairs
from linkcheck.repair.record import REPAIR, write_repair


class FixResult(msgspec.Struct, frozen=True):
    """The diagnosis, the plan made from it, and where the plan was saved (or why it could not be)."""

    outcome: Outcome
    plan: RepairPlan
    saved: Path | None
    save_problem: str | None = None
    interrupted: bool = False


def plan_for(outcome: Outcome) -> RepairPlan:
    """The plan for a diagnosis: its findings, its facts and the files its bundle captured."""
    files = {node: node_files(outcome.bundle, node) for node in ("a", "b")}
    return plan_repairs(outcome.link, outcome.diagnosis.findings, files)


def _save(directory: Path, plan: RepairPlan) -> str | None:
    """The plan written into the bundle (its manifest and SHA256SUMS updated); why not, when it cannot be."""
    try:
        write_repair(directory, plan)
    except (OSError, BundleError) as exc:
        return f"{directory / REPAIR}: not saved: {getattr(exc, 'strerror', None) or exc}"
    return None


def fix_bundle(path: Path, playbooks: list[Path] | None, config: Config | None, *, allow_unverified: bool = False,
               warn: Callable[[str], None] | None = None) -> FixResult:
    """Diagnose a saved bundle and plan its repairs; the plan is added to the bundle."""
    outcome = diagnose_bundle(path, playbooks, config, allow_unverified=allow_unverified, warn=warn)
    plan = plan_for(outcome)
    return FixResult(outcome, plan, path, _save(path, plan))


def fix_live(config: Config, save_dir: Path | None) -> FixResult | None:
    """Inspect both nodes (no traffic), save the bundle, plan its repairs and add the plan to it; None when Ctrl-C
    came before any node answered."""
    result = run_live(config, save_dir, anonymize=False, diagnose=True)
    if result.outcome is None:
        return None
    plan = plan_for(result.outcome)
    return FixResult(result.outcome, plan, result.saved, _save(result.saved, plan), result.interrupted)

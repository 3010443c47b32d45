"""The plan in the bundle: `repair.json`, added to the manifest's file table (with its digest) and to SHA256SUMS,
so `linkcheck verify` covers it; read back through its model, and only when the manifest vouches for it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from linkcheck import strict_json
from linkcheck.bundle.acceptance import add_files, read_added_file
from linkcheck.repair.model import RepairPlan, Step

REPAIR = "repair.json"
SCHEMA = "linkcheck-repair"
SCHEMA_VERSION = 1
MAX_REPAIR_BYTES = 4 << 20


class RepairDocument(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """repair.json as written: the schema, then the plan's fields."""

    schema: str
    schema_version: int
    plan: RepairPlan


def step_document(step: Step) -> dict[str, Any]:
    """One step as `fix -f json` prints it: node, finding, runtime, persistent, verify, touches."""
    data: dict[str, Any] = msgspec.to_builtins(step)
    return {key: data[key] for key in ("node", "finding", "runtime", "persistent", "verify", "touches")}


def steps_document(plan: RepairPlan) -> dict[str, Any]:
    return {"steps": [step_document(s) for s in plan.steps]}


def steps_json(plan: RepairPlan) -> str:
    """`fix -f json`: {"steps": [...]}, each step's node text as it is (JSON escapes it)."""
    return strict_json.dumps(steps_document(plan), indent=2) + "\n"


def repair_json(plan: RepairPlan) -> str:
    return strict_json.dumps(msgspec.to_builtins(RepairDocument(SCHEMA, SCHEMA_VERSION, plan)), indent=2) + "\n"


def write_repair(directory: Path, plan: RepairPlan) -> None:
    add_files(directory, {REPAIR: repair_json(plan)})


def load_repair(directory: Path) -> tuple[RepairPlan | None, str | None]:
    """The bundle's repair plan, or (None, why it is not shown); (None, None) when it has none."""
    raw, problem = read_added_file(directory, REPAIR, MAX_REPAIR_BYTES, "the plan")
    if raw is None:
        return None, problem
    path = directory / REPAIR
    try:
        doc = msgspec.json.decode(raw, type=RepairDocument)
    except msgspec.ValidationError as exc:
        return None, f"{path}: {exc} (not shown)"
    except msgspec.DecodeError:
        return None, f"{path}: not JSON (not shown)"
    if doc.schema != SCHEMA or doc.schema_version != SCHEMA_VERSION:
        return None, f"{path}: schema {doc.schema} {doc.schema_version}, not {SCHEMA} {SCHEMA_VERSION} (not shown)"
    return doc.plan, None

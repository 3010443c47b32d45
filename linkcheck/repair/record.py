"""The plan in the bundle: `repair.json`, added to the manifest's file table (with its digest) and to SHA256SUMS,
so `linkcheck verify` covers it; read back through its model, and only when the manifest vouches for it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import msgspec

from linkcheck import strict_json
from linkcheck.bundle.acceptance import add_files
from linkcheck.bundle.digests import sha256_hex
from linkcheck.bundle.format import MANIFEST, read_manifest
from linkcheck.repair.model import RepairPlan, Step
from linkcheck.safe_read import read_capped

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
    path = directory / REPAIR
    if not os.path.lexists(path):
        return None, None
    if path.is_symlink():
        return None, f"{path}: a symbolic link, not a plain file of the bundle (not shown)"
    files = read_manifest(directory).get("files", {})
    try:
        raw = read_capped(path, MAX_REPAIR_BYTES)
    except OSError as exc:
        return None, f"{path}: cannot read: {exc.strerror or exc} (not shown)"
    if REPAIR not in files:
        return None, f"{path}: not in {MANIFEST} (unverified, not shown)"
    if sha256_hex(raw) != files[REPAIR]:
        return None, f"{path}: does not match its SHA-256 in {MANIFEST} (changed since the plan; not shown)"
    try:
        doc = msgspec.json.decode(raw, type=RepairDocument)
    except msgspec.ValidationError as exc:
        return None, f"{path}: {exc} (not shown)"
    except msgspec.DecodeError:
        return None, f"{path}: not JSON (not shown)"
    if doc.schema != SCHEMA or doc.schema_version != SCHEMA_VERSION:
        return None, f"{path}: schema {doc.schema} {doc.schema_version}, not {SCHEMA} {SCHEMA_VERSION} (not shown)"
    return doc.plan, None

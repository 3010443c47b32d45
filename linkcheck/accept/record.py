"""acceptance.json read back from a bundle: decoded into `AcceptanceRecord`, a msgspec model that refuses unknown
keys, so a forged or damaged record is named in one line (file:line, what is wrong, what is allowed) and not shown,
never half-read by a report. `evidence.nodes` holds each node's identity fields as the run wrote them (texts and
numbers, and the `cx7` list), the one mapping whose keys are not fixed here."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec

from linkcheck import schema
from linkcheck.bundle.acceptance import ACCEPTANCE, MAX_ACCEPTANCE_BYTES, read_added_file

MAX_NUMBER = 1e15  # no measurement, threshold or count of an acceptance comes near
Number = Annotated[float, msgspec.Meta(ge=-MAX_NUMBER, le=MAX_NUMBER)]  # finite, of a measurable size
Count = Annotated[int, msgspec.Meta(ge=0, le=int(MAX_NUMBER))]
Verdict = Literal["PASS", "DEGRADED", "FAIL", "INCONCLUSIVE"]
# Every part of the record refuses a key it does not know (forbid_unknown_fields).


class ProfileRef(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    name: str
    sha256: str = ""
    source: str = ""
    description: str = ""


class RdmaParameters(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    duration_s: Count
    size_bytes: Count
    qps: Count


class NcclParameters(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    max_bytes: Count  # what the profile asks for
    largest_bytes: Count | None = None  # what the sweep reached (the free memory may cap it); absent: not run


class TestParameters(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    repetitions: Count
    rdma: RdmaParameters | None = None
    nccl: NcclParameters | None = None
    latency: bool | None = None


class FindingRef(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    id: str
    status: Literal["pass", "warn", "fail", "skip"]
    subject: str


class DiagnosisRef(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    verdict: str
    findings: list[FindingRef] = []


class Band(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    operator: str
    unit: str
    source: str
    on_miss: str
    value: Number | str | list[str] | bool | None = None
    band: str = ""
    rule: str | None = None
    rule_value: Number | str | list[str] | bool | None = None


class Measured(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    unit: str = ""
    samples: Count = 0
    min: Number | None = None
    median: Number | None = None
    max: Number | None = None
    values: list[Number | str] = []
    missing: list[str] = []


class CheckRecord(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    id: str
    subject: str
    status: Verdict
    what: str = ""
    measured: Measured | None = None
    threshold: Band | None = None
    thresholds: list[Band] | None = None
    margin: Number | None = None
    reason: str | None = None


class Cx7(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    netdev: str | None = None
    rdma_dev: str | None = None
    bdf: str | None = None
    cage: str | None = None
    mac: str | None = None
    firmware: str | None = None
    psid: str | None = None
    driver: str | None = None


class CableEnd(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    test: str | None = None  # a cluster's: the test (cable) this end belongs to
    node: str | None = None
    netdev: str | None = None
    problem: str | None = None
    cage: str | None = None
    identifier: str | None = None
    vendor: str | None = None
    vendor_oui: str | None = None
    part_number: str | None = None
    revision: str | None = None
    serial: str | None = None
    date_code: str | None = None
    length_m: Number | None = None
    memory_map: str | None = None


class Run(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    command: str | None = None
    node: str | None = None
    tool: str | None = None
    role: str | None = None
    mode: str | None = None
    direction: str | None = None
    round: str | None = None
    device: str | None = None
    exit_status: int | None = None


class TrafficVersions(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    perftest: dict[str, str | None] = {}
    nccl_tests: str | None = None
    nccl_library: str | None = None
    nccl_log: str | None = None


class BundleRef(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    created: str | None = None
    tool_version: str | None = None


class Evidence(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    # A node's identity fields, as the record's writer took them from the node (NodeIdentity, os, kernel, ...).
    nodes: dict[str, dict[str, str | Number | bool | None | list[Cx7]]] = {}
    traffic_versions: TrafficVersions | None = None
    cable: list[CableEnd] = []
    runs: list[Run] = []
    bundle: BundleRef | None = None


class Standard(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """How the run compares with the built-in profile (accept/standard.py): weaker is NON-STANDARD."""

    profile: str
    non_standard: bool
    differences: list[str] = []
    sha256: str | None = None


class ClusterTestRef(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    test: str
    verdict: Verdict
    round: Count = 0
    a: str = ""
    b: str = ""
    checks: Count = 0
    problem: str | None = None
    switched: bool = False
    # the second pass (`2`): a slow test's node measured again with a node that passed
    pass_: Annotated[int, msgspec.Meta(ge=1, le=2)] = msgspec.field(default=1, name="pass")


class ClusterRef(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A cluster's acceptance (accept/judge.py): the layout, the nodes and every test's own verdict."""

    layout: str
    nodes: list[str] = []
    tests: list[ClusterTestRef] = []


class AcceptanceRecord(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """acceptance.json (`"schema": "linkcheck-acceptance"`, `"schema_version": 1`), as `linkcheck accept` writes it."""

    schema: Literal["linkcheck-acceptance"]
    verdict: Verdict
    exit_code: Annotated[int, msgspec.Meta(ge=0, le=255)]
    checks: list[CheckRecord]
    schema_version: Literal[1] = 1
    created: str | None = None
    profile: ProfileRef | None = None
    test: TestParameters | None = None
    diagnosis: DiagnosisRef | None = None
    notes: list[str] | None = None
    evidence: Evidence | None = None
    standard: Standard | None = None
    cluster: ClusterRef | None = None


_ALLOWED = {
    "schema": "linkcheck-acceptance", "schema_version": "1", "verdict": "PASS, DEGRADED, FAIL or INCONCLUSIVE",
    "exit_code": "an exit code, 0 to 255", "checks": "a list of check objects", "checks[]": "a check object",
    "checks[].status": "PASS, DEGRADED, FAIL or INCONCLUSIVE", "checks[].margin": "a finite number or null",
    "checks[].measured": "an object or null", "checks[].thresholds": "a list of threshold objects or null",
    "checks[].thresholds[].value": "a number, true, a text or a list of texts",
    "checks[].measured.min": "a finite number or null", "checks[].measured.median": "a finite number or null",
    "checks[].measured.max": "a finite number or null", "profile": "an object or null", "test": "an object or null",
    "diagnosis": "an object or null", "diagnosis.findings": "a list of finding objects", "notes": "a list of texts",
    "evidence": "an object or null", "evidence.nodes": "an object of node objects",
    "evidence.cable": "a list of cable-end objects", "evidence.runs": "a list of run objects",
    "standard": "an object or null", "standard.differences": "a list of texts",
    "cluster": "an object or null", "cluster.tests": "a list of test objects",
    "cluster.tests[].verdict": "PASS, DEGRADED, FAIL or INCONCLUSIVE",
}


def _refusal(path: Path, text: str, exc: msgspec.ValidationError) -> str:
    problem = schema.locate(exc)
    steps = problem.steps
    where = re.sub(r"\[\d+\]", "[]", schema.dotted(steps))

    def allowed(field: str) -> str | None:
        if field.endswith("*"):
            return ", ".join(schema.field_names(AcceptanceRecord, steps) or []) or None
        return _ALLOWED.get(re.sub(r"\[\d+\]", "[]", field))

    reason = schema.describe(problem, allowed=allowed) if where or problem.unknown or problem.missing else \
        f"not a linkcheck-acceptance object ({problem.what})"
    line = schema.long_number_line(text, exc) or schema.json_line(
        text, steps + ((problem.unknown,) if problem.unknown is not None else ()))
    return f"{path}:{line}: {reason}" if line else f"{path}: {reason}"


def decode_record(path: Path, raw: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """(the record as JSON data, None) when `raw` is an acceptance record the model accepts; else (None, one line
    naming the file, the line and what is wrong)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None, f"{path}: not UTF-8 text"
    try:
        msgspec.json.decode(raw, type=AcceptanceRecord)
    except msgspec.ValidationError as exc:
        return None, _refusal(path, text, exc)
    except msgspec.DecodeError as exc:
        line = schema.decode_line(text, exc)
        what = str(exc).removeprefix("JSON is malformed: ")
        return None, f"{path}:{line}: malformed JSON: {what}" if line else f"{path}: malformed JSON: {what}"
    except RecursionError:
        return None, f"{path}: malformed JSON: nested too deeply"
    data: dict[str, Any] = msgspec.json.decode(raw)  # the model accepted it: plain JSON data for the reports
    return data, None


def load_acceptance(directory: Path) -> tuple[dict[str, Any] | None, str | None]:
    """The bundle's acceptance record, or (None, why it is not shown); (None, None) when it has none.

    Read only when the manifest lists it with the same SHA-256: an edited acceptance is never shown as the run's.
    """
    raw, problem = read_added_file(directory, ACCEPTANCE, MAX_ACCEPTANCE_BYTES, "the run")
    if raw is None:
        return None, problem
    path = directory / ACCEPTANCE
    doc, problem = decode_record(path, raw)
    return (doc, None) if doc is not None else (None, f"{problem} (not shown)")


def bundle_acceptance(directory: Path | None, unverified: frozenset[str] = frozenset()) -> dict[str, Any] | None:
    """A bundle's acceptance for its reports: the record when the manifest vouches for it; {"problem": ...} saying
    why the one there is not shown (unverified, edited, damaged); None when the bundle has none."""
    if directory is None or not os.path.lexists(directory / ACCEPTANCE):
        return None
    if {ACCEPTANCE, "manifest.json"} & unverified:
        return {"problem": f"{ACCEPTANCE} is unverified (`linkcheck verify` names why; not shown)"}
    doc, problem = load_acceptance(directory)
    return doc if doc is not None else {"problem": problem}

"""The acceptance in the bundle: `acceptance.json` and a copy of the profile, added to the manifest's file table
(with its digest) and to SHA256SUMS, so `linkcheck verify` covers them like every capture."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from linkcheck import strict_json
from linkcheck.bundle.digests import DIGEST_KEY, SUMS, files_digest, sha256_hex, sums_text
from linkcheck.bundle.format import MANIFEST, read_manifest
from linkcheck.safe_read import read_capped

ACCEPTANCE = "acceptance.json"
PROFILE_COPY = "acceptance-profile.yaml"
MAX_ACCEPTANCE_BYTES = 4 << 20


def _replace(path: Path, data: bytes) -> None:
    """`path` holds either its old bytes or all of `data`: written beside it, then renamed over it."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def add_files(directory: Path, texts: dict[str, str]) -> None:
    """Add top-level files to a written bundle: the files, then the manifest's table and digest, then SHA256SUMS."""
    data = read_manifest(directory)
    table: dict[str, str] = dict(data.get("files", {}))
    for rel, text in texts.items():
        raw = text.encode("utf-8")
        _replace(directory / rel, raw)
        table[rel] = sha256_hex(raw)
    data["files"], data[DIGEST_KEY] = table, files_digest(table)
    manifest = json.dumps(data, indent=1, sort_keys=False) + "\n"
    _replace(directory / MANIFEST, manifest.encode("utf-8"))
    sums = {**table, MANIFEST: sha256_hex(manifest.encode("utf-8"))}
    _replace(directory / SUMS, sums_text(sums).encode("utf-8", errors="surrogateescape"))


def write_acceptance(directory: Path, document: dict[str, Any], profile_text: str) -> None:
    add_files(directory, {ACCEPTANCE: strict_json.dumps(document, indent=2) + "\n", PROFILE_COPY: profile_text})


def load_acceptance(directory: Path) -> tuple[dict[str, Any] | None, str | None]:
    """The bundle's acceptance document, or (None, why it cannot be used); (None, None) when it has none.

    Read only when the manifest lists it with the same SHA-256: an edited acceptance is never shown as the run's.
    """
    path = directory / ACCEPTANCE
    if not os.path.lexists(path):
        return None, None
    if path.is_symlink():
        return None, f"{ACCEPTANCE} is a symbolic link, not a plain file of the bundle (not shown)"
    files = read_manifest(directory).get("files", {})
    try:
        raw = read_capped(path, MAX_ACCEPTANCE_BYTES)
    except OSError as exc:
        return None, f"{ACCEPTANCE}: cannot read: {exc.strerror or exc}"
    if ACCEPTANCE not in files:
        return None, f"{ACCEPTANCE} is not in {MANIFEST} (unverified, not shown)"
    if sha256_hex(raw) != files[ACCEPTANCE]:
        return None, f"{ACCEPTANCE} does not match its SHA-256 in {MANIFEST} (changed since the run; not shown)"
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):  # ValueError: also an integer of 4,300+ digits
        return None, f"{ACCEPTANCE} is not JSON"
    if not isinstance(doc, dict) or doc.get("schema") != "linkcheck-acceptance" or not isinstance(doc.get("checks"),
                                                                                                  list):
        return None, f"{ACCEPTANCE} is not a linkcheck-acceptance document"
    problem = document_problem(doc)
    if problem:
        return None, f"{ACCEPTANCE}: {problem} (not shown)"
    return doc, None


_NUMBER = (int, float)
MAX_NUMBER = 1e15  # no measurement, threshold or count of an acceptance comes near


def _number_problem(value: Any, where: str) -> str | None:
    """Every number finite and of a size a measurement can have (1e999 reads as inf, 10**5000 is no rate)."""
    stack = [(value, where)]
    while stack:
        item, at = stack.pop()
        if isinstance(item, dict):
            stack.extend((v, f"{at}.{k}") for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((v, f"{at}[{i}]") for i, v in enumerate(item))
        elif isinstance(item, _NUMBER) and not isinstance(item, bool) and not -MAX_NUMBER <= item <= MAX_NUMBER:
            return f"{at} is not a finite number of a measurable size"
    return None


def _typed(data: Any, key: str, types: tuple[type, ...], where: str) -> str | None:
    value = data.get(key) if isinstance(data, dict) else None
    if isinstance(value, bool) and bool not in types:
        value = object()
    return None if isinstance(value, types) else f"{where}.{key} must be {'/'.join(t.__name__ for t in types)}"


def document_problem(doc: dict[str, Any]) -> str | None:
    """What makes `doc` not an acceptance document the reports can show, typed field by field; None when it is."""
    none = type(None)
    problems = [_number_problem(doc, "acceptance"),
                _typed(doc, "verdict", (str,), "acceptance"), _typed(doc, "exit_code", (int,), "acceptance"),
                *(_typed(doc, key, (dict, none), "acceptance") for key in ("profile", "test", "diagnosis",
                                                                           "evidence", "bundle", "standard")),
                _typed(doc, "notes", (list, none), "acceptance")]
    for i, check in enumerate(doc.get("checks", [])):
        at = f"checks[{i}]"
        if not isinstance(check, dict):
            return f"{at} must be an object"
        problems += [_typed(check, key, (str,), at) for key in ("id", "subject", "status")]
        problems += [_typed(check, "reason", (str, none), at), _typed(check, "margin", (*_NUMBER, none), at),
                     _typed(check, "measured", (dict, none), at), _typed(check, "thresholds", (list, none), at)]
        measured = check.get("measured") or {}
        problems += [_typed(measured, key, (*_NUMBER, none), f"{at}.measured") for key in ("min", "median", "max")
                     if isinstance(measured, dict)]
        for j, band in enumerate(check.get("thresholds") or [] if isinstance(check.get("thresholds"), list) else []):
            where = f"{at}.thresholds[{j}]"
            if not isinstance(band, dict):
                return f"{where} must be an object"
            problems += [_typed(band, key, (str,), where) for key in ("operator", "unit", "on_miss", "source")]
            value = band.get("value")
            if not (isinstance(value, (*_NUMBER, str, none)) or (isinstance(value, list) and
                                                                  all(isinstance(v, str) for v in value))):
                problems.append(f"{where}.value must be a number, true, text or a list of text")
    evidence = doc.get("evidence") or {}
    nodes = evidence.get("nodes") or {} if isinstance(evidence, dict) else {}
    if not isinstance(nodes, dict) or not all(
            isinstance(n, dict) and isinstance(n.get("cx7", []), list) and all(isinstance(f, dict) for f in n["cx7"])
            if isinstance(n, dict) and "cx7" in n else isinstance(n, dict) for n in nodes.values()):
        problems.append("evidence.nodes must map node names to objects")
    cable = evidence.get("cable") or [] if isinstance(evidence, dict) else []
    if not isinstance(cable, list) or not all(isinstance(end, dict) for end in cable):
        problems.append("evidence.cable must be a list of objects")
    standard = doc.get("standard") or {}
    if isinstance(standard, dict) and not (isinstance(standard.get("differences", []), list) and all(
            isinstance(d, str) for d in standard.get("differences", []))):
        problems.append("standard.differences must be a list of text")
    diagnosis = doc.get("diagnosis") or {}
    if isinstance(diagnosis, dict) and not isinstance(diagnosis.get("findings", []), list):
        problems.append("diagnosis.findings must be a list")
    return next((p for p in problems if p), None)

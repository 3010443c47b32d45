"""A saved bundle's anonymised copy, a pair's or a cluster's: the anonymiser (anonymize.py) over every node's
captures, the acceptance record and, for a cluster, its record (cluster.json) with the same fakes.

A cluster's nodes are named after their hosts (`--node spark-1`), and the names are in the captures' folders, the
manifest, the record's hosts and every test's label (`spark-1:p0<->spark-2:p1`). Each node is renamed `n1`, `n2`,
... in the record's order first, so no name is left to fake; hostnames, users, addresses, MACs, GUIDs and serials
then get one fake each across every node, as on a pair (one address seen by two nodes keeps one fake, so the
cabling inferred from the copy is the original's).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path

from msgspec.structs import replace

from linkcheck.bundle.acceptance import ACCEPTANCE, MAX_ACCEPTANCE_BYTES, PROFILE_COPY, add_files
from linkcheck.bundle.anonymize import Anonymizer, learn_and_anonymize
from linkcheck.bundle.format import Bundle, read_manifest, write_bundle
from linkcheck.bundle.run_record import CLUSTER, is_cluster_bundle, load_cluster, write_cluster
from linkcheck.bundle.verify import load_trusted
from linkcheck.errors import BundleError
from linkcheck.model import Capture
from linkcheck.safe_read import read_capped


def anonymize_any_saved(source: Path, target: Path, warn: Callable[[str], None] | None = None) -> Path:
    """Anonymise the bundle saved in `source` into `target` (absent or empty); returns the new manifest. A cluster's
    (it holds cluster.json) has its nodes renamed and its record written with the same fakes.

    A bundle that `verify` rejects is refused: its captures would be written as skipped ones (the evidence of
    what changed lost), or a changed file written into a copy that verifies as intact; so is a cluster's whose
    cluster.json is not the run's (BundleError). The acceptance record (acceptance.json and its profile) is
    anonymised with the same fakes and kept; any other file of the table that is not a capture is named through
    `warn`, not copied."""
    if not is_cluster_bundle(source):
        return _copy(source, target, warn)[0]
    doc = load_cluster(source)  # before anything is written: a record that is not the run's is refused
    names = {h.name: f"n{i}" for i, h in enumerate(doc.hosts, 1)}
    manifest, anon = _copy(source, target, warn, renamed=lambda b: _renamed(b, names), own=frozenset({CLUSTER}))

    def text(value: str | None) -> str | None:
        if value is None:
            return None
        for old, new in names.items():  # a node's name in a sentence ("node spark-1 was not inspected")
            value = value.replace(f"node {old}", f"node {new}")
        return anon.text(value)

    write_cluster(target, replace(
        doc, hosts=tuple(replace(h, name=names[h.name], target=anon.map_target(h.target)) for h in doc.hosts),
        tests=tuple(replace(t, label=_label(t.label, names), a=names.get(t.a, t.a), b=names.get(t.b, t.b))
                    for t in doc.tests),
        traffic_error=text(doc.traffic_error), nccl_error=text(doc.nccl_error),
        latency_error=text(doc.latency_error)))
    return manifest


def _copy(source: Path, target: Path, warn: Callable[[str], None] | None = None, *,
          renamed: Callable[[Bundle], Bundle] | None = None, own: frozenset[str] = frozenset()
          ) -> tuple[Path, Anonymizer]:
    """The anonymised copy, the bundle first given to `renamed` (a cluster's nodes are named after their hosts: they
    are renamed before anything is faked), the files in `own` left to the caller (neither copied nor named); with
    the Anonymizer that learned the bundle, for the caller's own files to get the same fakes."""
    bundle = load_trusted(source, overridable=False)  # `anonymize` has no --allow-unverified
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise BundleError(str(target), "exists and is not an empty folder", fix="choose a new output folder")
    base = bundle.path or source
    listed = set(read_manifest(base).get("files", {}))
    captured = {rel for rel in listed if "/" in rel}  # captures live in the nodes' folders
    extras: dict[str, str] = {}
    for rel in sorted(listed - captured - own):
        if rel in (ACCEPTANCE, PROFILE_COPY):
            extras[rel] = read_capped(base / rel, MAX_ACCEPTANCE_BYTES).decode("utf-8", errors="replace")
        elif warn is not None:
            warn(f"{rel}: not a capture or the acceptance record; not copied into the anonymised bundle")
    if renamed is not None:
        bundle = renamed(bundle)
    anonymized, anon = learn_and_anonymize(bundle, tuple(extras.values()))
    manifest = write_bundle(anonymized, target)
    if extras:
        add_files(target, {rel: _acceptance_text(anon, text) if rel == ACCEPTANCE else anon.text(text)
                           for rel, text in extras.items()})
    return manifest, anon


def _acceptance_text(anon: Anonymizer, text: str) -> str:
    """acceptance.json anonymised as text in one pass (its labels, `"serial": "..."`, find the values), and kept
    only when it is still the same JSON shape; else each string value is anonymised on its own."""
    new = anon.text(text)
    try:
        json.loads(new)
    except ValueError:
        return json.dumps(anon.value(json.loads(text)), indent=2) + "\n"
    return new


def _label(label: str, names: Mapping[str, str]) -> str:
    """A test's label with its nodes renamed: `spark-1:p0<->spark-2:p1` -> `n1:p0<->n2:p1` (`?`, a far end not
    known, stays)."""
    ends = []
    for end in label.split("<->"):
        node, sep, cage = end.partition(":")
        ends.append(f"{names.get(node, node)}{sep}{cage}")
    return "<->".join(ends)


def _renamed(bundle: Bundle, names: Mapping[str, str]) -> Bundle:
    """The bundle with each node renamed: its captures and their path keys (`a:enp1s0f0np0<->b:enp1s0f1np1`, the
    traffic runs' keys by node), its manifest entry, its errors."""
    def capture(cap: Capture) -> Capture:
        meta = {**cap.meta, "path": _label(cap.meta["path"], names)} if "path" in cap.meta else cap.meta
        return replace(cap, node=names.get(cap.node, cap.node), meta=meta)
    return replace(bundle, captures=[capture(c) for c in bundle.captures],
                   nodes={names.get(n, n): info for n, info in bundle.nodes.items()},
                   collection_errors={names.get(n, n): e for n, e in bundle.collection_errors.items()})

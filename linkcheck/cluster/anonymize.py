"""A cluster's bundle anonymised offline: the pair's anonymiser (bundle/anonymize.py) over every node's captures,
and the cluster's record (cluster.json) with the same fakes.

A cluster's nodes are named after their hosts (`--node spark-1`), and the names are in the captures' folders, the
manifest, the record's hosts and every test's label (`spark-1:p0<->spark-2:p1`). Each node is renamed `n1`, `n2`,
... in the record's order first, so no name is left to fake; hostnames, users, addresses, MACs, GUIDs and serials
then get one fake each across every node, as on a pair (one address seen by two nodes keeps one fake, so the
cabling inferred from the copy is the original's).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from msgspec.structs import replace

from linkcheck.bundle.anonymize import anonymize_saved, anonymize_saved_with
from linkcheck.bundle.format import Bundle
from linkcheck.cluster.record import CLUSTER, is_cluster_bundle, load_cluster, write_cluster
from linkcheck.model import Capture


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


def anonymize_cluster_saved(source: Path, target: Path, warn: Callable[[str], None] | None = None) -> Path:
    """Anonymise the cluster's bundle in `source` into `target` (absent or empty); returns the new manifest. Refused
    as a pair's is when `verify` rejects the bundle, and when its cluster.json is not the run's (BundleError)."""
    doc = load_cluster(source)  # before anything is written: a record that is not the run's is refused
    names = {h.name: f"n{i}" for i, h in enumerate(doc.hosts, 1)}
    manifest, anon = anonymize_saved_with(source, target, warn, renamed=lambda b: _renamed(b, names),
                                          own=frozenset({CLUSTER}))

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


def anonymize_any_saved(source: Path, target: Path, warn: Callable[[str], None] | None = None) -> Path:
    """A saved bundle's anonymised copy, as the bundle says what it is: a cluster's (it holds cluster.json) with
    its record renamed too, a pair's as the bundle's own anonymiser writes it."""
    if is_cluster_bundle(source):
        return anonymize_cluster_saved(source, target, warn=warn)
    return anonymize_saved(source, target, warn=warn)

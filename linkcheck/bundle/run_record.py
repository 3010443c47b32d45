"""`cluster.json` in a bundle: what makes a bundle a cluster's, and what its captures alone cannot say.

The captures hold every node's inspection and every ib_write_bw run; cluster.json adds the hosts as they were named
(order and origin), the tests that were planned (label, round, nodes, pass; the second pass is chosen from the
first pass's results, so it cannot be derived again) and how the traffic test ended. `linkcheck diagnose` and
`report` judge a cluster bundle from these, through the same code as the live check, so a filed bundle gives the
verdict that was shown. The file is added to the manifest and SHA256SUMS (`verify` covers it) and read back through
its model, only when the manifest vouches for it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import msgspec

from linkcheck import strict_json
from linkcheck.bundle.acceptance import add_files, read_added_file
from linkcheck.bundle.format import MANIFEST
from linkcheck.errors import BundleError
from linkcheck.model import MAX_NODES

CLUSTER = "cluster.json"
SCHEMA = "linkcheck-cluster"
# 2 added the latency test (`latency`, `latency_error`); a version 1 record, written before, reads as one that asked
# for no latency test (its two fields absent). An older linkcheck refuses a version 2 record by its version, in one
# line, rather than by a field it does not know.
SCHEMA_VERSION = 2
READ_VERSIONS = (1, 2)
MAX_CLUSTER_BYTES = 1 << 20

Name = Annotated[str, msgspec.Meta(min_length=1, max_length=253)]


class HostEntry(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One node as it was named: its name, its target (`[user@]host[:port]`) and where it was named."""

    name: Name
    target: Name
    origin: str = ""


class CableEntry(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One planned test: its label, round, nodes, pass (1, or 2: the second pass) and whether it ran through the
    switch."""

    label: Name
    round: Annotated[int, msgspec.Meta(ge=0, le=10_000)]
    a: Name
    b: Name
    pass_no: Annotated[int, msgspec.Meta(ge=1, le=2)] = 1
    switched: bool = False


class ClusterDocument(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """cluster.json: the hosts, the tests, and how the traffic test ended (its error; Ctrl-C)."""

    schema: str
    schema_version: int
    hosts: tuple[HostEntry, ...]
    tests: tuple[CableEntry, ...] = ()
    traffic: bool = False  # whether traffic was asked for (--quick or --bench)
    traffic_error: str | None = None
    interrupted: bool = False
    nccl: bool = False  # whether NCCL across every node was asked for (--bench, or --quick --nccl)
    # Why NCCL across the nodes did not run or finish: kept apart from `traffic_error` (the RDMA rounds'), so that it
    # never leaves a cable's own measurement inconclusive.
    nccl_error: str | None = None
    # Whether the latency test was asked for (--latency, `bench latency`): ib_write_lat per path of every cable, then
    # the small all_reduce across every node; and why it did not run or finish (kept apart as NCCL's is).
    latency: bool = False
    latency_error: str | None = None


def cluster_json(doc: ClusterDocument) -> str:
    return strict_json.dumps(msgspec.to_builtins(doc), indent=2) + "\n"


def write_cluster(directory: Path, doc: ClusterDocument) -> None:
    add_files(directory, {CLUSTER: cluster_json(doc)})


def is_cluster_bundle(directory: Path) -> bool:
    """Whether the folder holds a cluster.json (vouched for or not: `load_cluster` says which)."""
    return (directory / CLUSTER).exists() or (directory / CLUSTER).is_symlink()


def saved_record(directory: Path) -> ClusterDocument | None:
    """The bundle's cluster record when it is a cluster's (it holds cluster.json), None for a pair's."""
    return load_cluster(directory) if is_cluster_bundle(directory) else None


def _check(path: Path, doc: ClusterDocument) -> None:
    """What the schema cannot say: the schema's name and version, 2-8 distinct hosts, tests between them."""
    if doc.schema != SCHEMA or doc.schema_version not in READ_VERSIONS:
        raise BundleError(str(path), f"schema {doc.schema!r} version {doc.schema_version} is not "
                          f"{SCHEMA} {' or '.join(map(str, READ_VERSIONS))}",
                          fix="a newer linkcheck wrote it, or it was edited")
    if doc.schema_version == 1 and (doc.latency or doc.latency_error is not None):
        raise BundleError(str(path), "a version 1 record holds the latency test, which version 2 added",
                          fix="a newer linkcheck wrote it, or it was edited")
    names = [h.name for h in doc.hosts]
    if not 2 <= len(names) <= MAX_NODES or len(set(names)) != len(names):
        raise BundleError(str(path), f"hosts: {len(names)} names, {len(set(names))} distinct (2 to {MAX_NODES} "
                          "distinct names expected)")
    for i, test in enumerate(doc.tests):
        unknown = [n for n in (test.a, test.b) if n not in names]
        if unknown or test.a == test.b:
            raise BundleError(str(path), f"tests[{i}] ({test.label!r}) joins {test.a!r} and {test.b!r}: "
                              + (f"{unknown[0]!r} is not among the hosts" if unknown else "a node with itself"))


def load_cluster(directory: Path) -> ClusterDocument:
    """The bundle's cluster.json through its model; BundleError (one line, exit 4) when it is missing from the
    manifest, altered, not a regular file, too large or malformed."""
    raw, problem = read_added_file(directory, CLUSTER, MAX_CLUSTER_BYTES, "the cluster's record")
    path = directory / CLUSTER
    if raw is None:
        reason = (problem or "missing").removeprefix(f"{path}: ")
        # `verify` speaks of digests: it says more only when the manifest does not vouch for the file.
        digest = MANIFEST in reason
        raise BundleError(str(path), reason, fix=f"`linkcheck verify {directory}` says more" if digest else None)
    try:
        doc = msgspec.json.decode(raw, type=ClusterDocument)
    except msgspec.ValidationError as exc:
        raise BundleError(str(path), f"not a cluster record: {exc}") from None
    except msgspec.DecodeError as exc:
        raise BundleError(str(path), f"not valid JSON: {exc}") from None
    _check(path, doc)
    return doc

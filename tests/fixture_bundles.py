"""The bundles under fixtures/, a pair's apart from a cluster's (a cluster.json beside the captures): the pair's
tests read the former, tests/scenarios/test_cluster_fixtures.py the latter."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from msgspec.structs import replace

from linkcheck.app.live import save_cluster
from linkcheck.bundle.format import load_bundle
from linkcheck.bundle.run_record import SCHEMA, SCHEMA_VERSION, ClusterDocument, HostEntry, is_cluster_bundle

FIXTURE_DIR = Path(__file__).resolve().parents[1] / "fixtures"
_ALL = sorted(p.parent for p in FIXTURE_DIR.glob("*/manifest.json"))
PAIR_BUNDLES = [p for p in _ALL if not is_cluster_bundle(p)]
CLUSTER_BUNDLES = [p for p in _ALL if is_cluster_bundle(p)]


def cluster_fired(report: dict[str, Any]) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Of every warning or failure in a cluster's JSON report (`diagnose -f json`): rule id -> "fail" (when it failed
    anywhere) or "warn", and rule id -> its sorted subjects: the cluster's own findings by subject, each test's by
    the test's label. The form of expected.yaml's `findings` and `subjects`."""
    found = [(f, f["subject"]) for f in report["findings"]]
    found += [(f, test["label"]) for test in report.get("tests", []) for f in test["findings"]]
    status: dict[str, str] = {}
    subjects: dict[str, set[str]] = {}
    for f, where in found:
        if f["status"] in ("warn", "fail"):
            status[f["id"]] = "fail" if "fail" in (f["status"], status.get(f["id"])) else "warn"
            subjects.setdefault(f["id"], set()).add(where)
    return status, {k: sorted(v) for k, v in subjects.items()}


OTHER_NAMES = {"a": "spark-1", "b": "spark-2"}  # two nodes named as `--node spark-1=...` or a hostfile names them


def renamed_pair(fixture: Path, target: Path, names: dict[str, str] = OTHER_NAMES) -> Path:
    """A pair fixture's inspection (its traffic runs left out) saved as the live check saves two nodes named by
    `names` (spark-1 and spark-2 by default): the pair of their one cable under other names."""
    bundle = load_bundle(fixture)
    captures = [replace(c, node=names[c.node]) for c in bundle.captures if not c.meta]
    renamed = replace(bundle, captures=captures, nodes={names[n]: v for n, v in bundle.nodes.items()},
                      collection_errors={}, path=None)
    hosts = tuple(HostEntry(name, name, "--node") for name in names.values())
    save_cluster(renamed, ClusterDocument(SCHEMA, SCHEMA_VERSION, hosts, ()), target)
    return target

"""The bundles under fixtures/, a pair's apart from a cluster's (a cluster.json beside the captures): the pair's
tests read the former, tests/scenarios/test_cluster_fixtures.py the latter."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from linkcheck.bundle.run_record import is_cluster_bundle

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

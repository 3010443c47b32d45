"""Every format of a pair named otherwise than a and b (two nodes named `--node spark-1=...` or by a hostfile, the
pair of their one cable): every pair fixture under other names renders in every format, names its nodes as the pair
names them (the JSON report's nodes and matrix, the textfile's `node` and cable labels), and gives the verdict the
fixture's nodes named a and b give. The pair writers once keyed both nodes `a` and `b` and failed on any other name."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from linkcheck.app.offline import judge_bundle
from linkcheck.report.formats import renderer
from tests.conftest import run_cli
from tests.fixture_bundles import FIXTURE_DIR, OTHER_NAMES, PAIR_BUNDLES, renamed_pair

FORMATS = ("json", "markdown", "html", "junit", "prometheus")


@pytest.mark.parametrize("fixture", PAIR_BUNDLES, ids=[p.name for p in PAIR_BUNDLES])
def test_a_pair_named_otherwise_renders_in_every_format_under_its_names(fixture: Path, tmp_path: Path) -> None:
    saved = renamed_pair(fixture, tmp_path / "b")
    judged = judge_bundle(saved)
    as_a_b = judge_bundle(renamed_pair(fixture, tmp_path / "a-b", {"a": "a", "b": "b"}))
    assert judged.verdict is as_a_b.verdict  # the pair it is, whatever its names
    assert len(judged.statuses()) == len(as_a_b.statuses())
    out = {fmt: renderer(fmt)(judged) for fmt in FORMATS}
    names = set(OTHER_NAMES.values())
    doc = json.loads(out["json"])
    assert set(doc["nodes"]) == names and set(doc["matrix"]) == names
    labels = {(s.name, k, v) for family in text_string_to_metric_families(out["prometheus"]) for s in family.samples
              for k, v in s.labels.items() if k in ("node", "a", "b")}
    assert labels and {v for _, _, v in labels} <= names, labels
    console = run_cli("diagnose", str(saved))
    assert console.returncode == int(judged.exit_code) and "Traceback" not in console.stderr, console.stderr
    assert all(name in console.stdout and name in out["markdown"] for name in names)


@pytest.mark.parametrize("fixture", ["drift-after-reboot", "drift-cable-swap", "healthy"])
def test_a_pairs_baseline_reads_across_the_names_it_was_given(fixture: str, tmp_path: Path) -> None:
    """A baseline saved of the pair as nodes a and b judges the same pair checked under other names, and the
    reverse, as it judges the pair under the names it was saved with: the same findings, its nodes named as the run
    names them (its fields were compared key by key: every field of the other names read as gone, DRIFT_IDENTITY)."""
    from linkcheck.app.offline import cluster_bundle, configured_rules
    from linkcheck.baseline.drift import baseline_of
    from linkcheck.outcome import judged_view

    rules = configured_rules([], None, kind="all")
    a_b = {"a": "a", "b": "b"}
    saved = {n: judge_bundle(renamed_pair(FIXTURE_DIR / "healthy", tmp_path / f"base-{i}", names))
             for i, (n, names) in enumerate((("a-b", a_b), ("other", OTHER_NAMES)))}
    runs = {"a-b": renamed_pair(FIXTURE_DIR / fixture, tmp_path / "run-a-b", a_b),
            "other": renamed_pair(FIXTURE_DIR / fixture, tmp_path / "run-other")}
    judged = {(b, r): judged_view(cluster_bundle(runs[r], rules, baseline=baseline_of("base", saved[b], runs[r])))
              for b in saved for r in runs}
    back = {v: k for k, v in OTHER_NAMES.items()}

    def as_a_b(statuses: dict[str, object]) -> dict[str, object]:
        return {re.sub(r"spark-[12]", lambda m: back[m.group(0)], k): v for k, v in statuses.items()}

    same = as_a_b(judged[("a-b", "a-b")].statuses())
    assert any(k.startswith("DRIFT_") for k in same)
    for (b, r), one in judged.items():
        assert as_a_b(one.statuses()) == same, (b, r)

"""Regenerate fixtures/<scenario>/ bundles from the GB10 emulator's scenarios.

Each fixture is a bundle exactly as `linkcheck collect` writes it, plus expected.yaml (origin: synthetic):
the exact rule ids that must warn or fail with their subjects, the rules that must skip, the verdict and,
where stated, the measured figures. Real-output fixtures come from scripts/make_real_fixtures.py.
Run from the repository root:
    python scripts/make_fixtures.py [SCENARIO ...]
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from linkcheck.bundle.format import Bundle, write_bundle  # noqa: E402
from tests.emulators.scenarios import SCENARIOS, scenario_bench_captures, scenario_captures  # noqa: E402

# Verdicts stated independently of the findings: degraded collection must never pass.
VERDICTS = {"degraded-collection": "inconclusive"}
CREATED = "2026-11-29T12:00:00+00:00"  # fixed so regenerating gives identical manifests


def expected_verdict(name: str, findings: dict[str, str]) -> str:
    if name in VERDICTS:
        return VERDICTS[name]
    statuses = set(findings.values())
    return "fail" if "fail" in statuses else "warn" if "warn" in statuses else "pass"


def write_fixture(name: str) -> Path:
    scenario = SCENARIOS[name]
    target = ROOT / "fixtures" / name
    if target.exists():
        shutil.rmtree(target)
    captures = scenario_captures(scenario) + scenario_bench_captures(scenario)
    nodes = {"a": {"target": scenario.node_a.hostname, "hostname": scenario.node_a.hostname},
             "b": {"target": scenario.node_b.hostname, "hostname": scenario.node_b.hostname}}
    write_bundle(Bundle(captures=captures, nodes=nodes, created=CREATED), target)
    expected = {
        "scenario": name,
        "origin": "synthetic",
        "description": scenario.description,
        "verdict": expected_verdict(name, scenario.expected_findings),
        "findings": dict(sorted(scenario.expected_findings.items())),
        "subjects": {k: sorted(v) for k, v in sorted(scenario.subjects.items())},
        "skips": sorted(scenario.skips),
    }
    if scenario.figures:
        expected["figures"] = scenario.figures
    (target / "expected.yaml").write_text(yaml.safe_dump(expected, sort_keys=False, width=100))
    return target


def main(names: list[str]) -> None:
    for name in names or sorted(SCENARIOS):
        print(f"wrote {write_fixture(name).relative_to(ROOT)}")


if __name__ == "__main__":
    main(sys.argv[1:])

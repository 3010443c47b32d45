"""Every placeholder a rule's message or fix uses gets a value whenever the rule fires (no silent '?')."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from linkcheck.app.offline import diagnose_bundle
from linkcheck.baseline.store import read_baseline
from linkcheck.config import load_config
from linkcheck.diagnose import engine
from linkcheck.diagnose.playbook import PLACEHOLDER_RE, load_playbooks
from linkcheck.model import Severity

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
SCENARIOS = sorted(p.name for p in FIXTURES.iterdir() if (p / "expected.yaml").is_file())


def _unfilled_while_diagnosing(name: str, monkeypatch: pytest.MonkeyPatch) -> set[str]:
    unfilled: set[str] = set()
    real_render = engine.render

    def render(template: str, values: dict[str, Any]) -> str:
        unfilled.update(n for n in PLACEHOLDER_RE.findall(template) if values.get(n) is None)
        return real_render(template, values)

    monkeypatch.setattr(engine, "render", render)
    expected = yaml.safe_load((FIXTURES / name / "expected.yaml").read_text())
    config, baseline = expected.get("config"), expected.get("baseline")
    diagnose_bundle(FIXTURES / name, config=load_config(FIXTURES / name / config) if config else None,
                    baseline=read_baseline(FIXTURES / name / baseline) if baseline else None)
    return unfilled


@pytest.mark.parametrize("name", SCENARIOS)
def test_fired_rules_fill_every_placeholder(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _unfilled_while_diagnosing(name, monkeypatch) == set()


def test_the_fixtures_exercise_every_rule_s_text() -> None:
    # The conformance above means something only if every rule fires somewhere (its message is rendered).
    fired = {rule for name in SCENARIOS
             for rule in yaml.safe_load((FIXTURES / name / "expected.yaml").read_text())["findings"]}
    assert {r.id for r in load_playbooks() if r.severity is not Severity.INFO} <= fired


def test_a_missing_value_is_still_visible() -> None:
    assert re.fullmatch(r"x \? y", engine.render("x {nope} y", {}))

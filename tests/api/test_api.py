"""The library face: what a script that imports linkcheck uses, without the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from linkcheck import api

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def test_a_bundle_is_diagnosed_through_the_face() -> None:
    outcome = api.diagnose_bundle(FIXTURES / "healthy")
    assert isinstance(outcome, api.Outcome)
    assert outcome.diagnosis.verdict is api.Verdict.PASS
    assert outcome.diagnosis.exit_code is api.ExitCode.PASS
    assert all(isinstance(f, api.Finding) for f in outcome.diagnosis.findings)


def test_a_trap_fails_through_the_face() -> None:
    outcome = api.diagnose_bundle(FIXTURES / "hotplug-degraded")
    failed = {f.rule_id for f in outcome.diagnosis.findings if f.status is api.Status.FAIL}
    assert outcome.diagnosis.verdict is api.Verdict.FAIL and "LINK_HOTPLUG_DEGRADED" in failed


def test_bad_input_is_the_one_error_root() -> None:
    with pytest.raises(api.LinkcheckError):
        api.diagnose_bundle(FIXTURES / "no-such-bundle")


def test_names_the_face_promises_exist() -> None:
    assert all(hasattr(api, name) for name in api.__all__)

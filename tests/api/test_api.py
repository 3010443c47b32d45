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


def test_a_cluster_bundle_is_diagnosed_through_the_same_function() -> None:
    check = api.diagnose_bundle(FIXTURES / "cluster-ring3-hotplug")
    assert isinstance(check, api.ClusterCheck)
    assert check.verdict is api.Verdict.FAIL and check.exit_code is api.ExitCode.FAIL
    slow = {r.test.label for r in check.cables if r.state == "slow"}
    assert slow == {"a:p0<->b:p1"}
    healthy = api.diagnose_bundle(FIXTURES / "cluster-ring3-healthy")
    assert isinstance(healthy, api.ClusterCheck) and healthy.verdict is api.Verdict.PASS


def test_fix_and_advise_take_a_cluster_bundle() -> None:
    plan = api.fix_bundle(FIXTURES / "cluster-ring3-hotplug", None, None).plan
    assert [s.node for s in plan.steps] == ["a", "b"]
    _, advice = api.advise_bundle(FIXTURES / "cluster-ring3-healthy",
                                  api.Workload(model_gib=180, concurrency=1, heads=48))
    assert (advice.choice, advice.nodes) == ("tensor-parallel", 3)
    _, pair = api.advise_bundle(FIXTURES / "healthy", api.Workload(model_gib=180, concurrency=1))
    assert pair.nodes == 2


@pytest.mark.parametrize("nodes", [["a=root@198.18.0.1"],
                                   [f"n{i}=root@198.18.0.{i}" for i in range(9)],
                                   ["a=root@198.18.0.1", "a=root@198.18.0.2", "c=root@198.18.0.3"]],
                         ids=["one", "nine", "a name twice"])
def test_a_live_cluster_check_refuses_bad_nodes_before_contacting_any(nodes: list[str]) -> None:
    with pytest.raises(api.LinkcheckError) as caught:
        api.check_cluster(nodes)
    assert caught.value.exit_code == 4


def test_a_live_check_of_two_nodes_is_the_pair_and_run_live_runs_it(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Two nodes are the cluster of one cable: `check_cluster` judges them, `judged_view` gives the pair's Outcome,
    and `run_live` (a pair's Config, as earlier releases took it) runs the same check into the same look. The
    nodes' answers are a saved pair's inspection (tests/app/stand_in.py)."""
    from tests.app.stand_in import answer_with, inspection

    answer_with(monkeypatch, inspection(FIXTURES / "hotplug-degraded"))
    check, saved = api.check_cluster(["a=root@198.18.0.1", "b=root@198.18.0.2"], save_dir=tmp_path / "one")
    pair = api.judged_view(check)
    assert saved == tmp_path / "one" and isinstance(pair, api.Outcome)
    assert check.verdict is pair.verdict is api.Verdict.WARN and pair.exit_code is api.ExitCode.WARN  # inspection only
    config = api.resolve_config(None, ["a=root@198.18.0.1", "b=root@198.18.0.2"])
    result = api.run_live(config, tmp_path / "two", anonymize=False, diagnose=True)
    assert isinstance(result.outcome, api.Outcome) and result.saved == tmp_path / "two"
    assert result.outcome.statuses() == pair.statuses()
    assert api.diagnose_bundle(tmp_path / "two").statuses() == pair.statuses()  # as `diagnose` judges the bundle

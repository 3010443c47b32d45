"""Where the layout is decided, once: a saved bundle's by the loader that judges it (`judge_bundle`: a pair's
Outcome, or a cluster's ClusterCheck when the bundle holds cluster.json), a live run's by `resolve_nodes` (a pair,
or a cluster's hosts from --node, a hostfile, linkcheck.yaml's `cluster:` nodes or Slurm)."""

from __future__ import annotations

from pathlib import Path

import pytest

from linkcheck.app.baseline import save_baseline
from linkcheck.app.live import resolve_nodes
from linkcheck.app.offline import judge_bundle
from linkcheck.errors import BaselineError, ConfigError, ExitCode
from linkcheck.model import Verdict
from linkcheck.outcome import ClusterCheck, Outcome

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def test_a_pairs_bundle_is_judged_as_a_pair_and_a_clusters_as_a_cluster() -> None:
    pair = judge_bundle(FIXTURES / "healthy")
    assert isinstance(pair, Outcome)
    assert (pair.verdict, pair.exit_code) == (Verdict.PASS, ExitCode.PASS)
    cluster = judge_bundle(FIXTURES / "cluster-ring3-hotplug")
    assert isinstance(cluster, ClusterCheck)
    assert (cluster.verdict, cluster.exit_code) == (Verdict.FAIL, ExitCode.FAIL)
    assert [h.name for h in cluster.view.hosts] == ["a", "b", "c"]


def test_a_baseline_of_either_layout_is_read_for_either_layout() -> None:
    # A pair being the cluster of its one cable: a pair's baseline is read for a cluster of its nodes, a cluster's for
    # a pair of its nodes; this pair (dgx-spark-1 + dgx-spark-2) is not in the ring, so its baseline is refused.
    save_baseline("pair-good", FIXTURES / "healthy", force=False)
    with pytest.raises(BaselineError, match="is a pair's .* not in this cluster"):
        judge_bundle(FIXTURES / "cluster-ring3-healthy", baseline="pair-good")
    assert isinstance(judge_bundle(FIXTURES / "healthy", baseline="pair-good"), Outcome)
    save_baseline("ring-good", FIXTURES / "cluster-ring3-healthy", force=False)
    pair = judge_bundle(FIXTURES / "real-hotplug-13g", baseline="ring-good")  # spark-a + spark-b, two of the ring's
    assert isinstance(pair, Outcome) and pair.link.baseline is not None
    assert pair.link.baseline.baseline.name == "ring-good"


def _config(tmp_path: Path) -> Path:
    path = tmp_path / "linkcheck.yaml"
    path.write_text('cluster:\n  nodes:\n    a: "root@198.18.9.1"\n    b: "root@198.18.9.2"\n'
                    '    c: "root@198.18.9.3"\n')
    return path


def test_a_live_runs_layout_comes_from_whichever_source_names_the_nodes(tmp_path: Path) -> None:
    assert resolve_nodes(["a=198.18.9.1", "b=198.18.9.2"]).pair_form
    three = resolve_nodes(["a=198.18.9.1", "b=198.18.9.2", "c=198.18.9.3"])
    assert not three.pair_form and [h.name for h in three.hosts()] == ["a", "b", "c"]
    hostfile = tmp_path / "hosts"
    hostfile.write_text("198.18.9.1 slots=1\n198.18.9.2 slots=1\n")
    assert not resolve_nodes([], hostfile=hostfile).pair_form  # a hostfile names a cluster, two nodes too
    config = _config(tmp_path)
    configured = resolve_nodes([], config=config)
    assert not configured.pair_form and [str(h.target) for h in configured.hosts()] == [
        "root@198.18.9.1", "root@198.18.9.2", "root@198.18.9.3"]
    # --node names the pair itself: the config's cluster is then not the run's.
    assert resolve_nodes(["a=198.18.9.1", "b=198.18.9.2"], config=config).pair_form


@pytest.mark.parametrize("given", [["spark-1", "spark-2"], ["x=198.18.9.1", "y=198.18.9.2"],
                                   ["198.18.9.1", "b"]])
def test_two_nodes_named_otherwise_than_a_and_b_are_the_cluster_of_their_cable(given: list[str]) -> None:
    """Only `a=`/`b=` name the pair's own nodes; two nodes named as a cluster's are checked as one, keeping their
    names, where the pair's own check would have refused them."""
    nodes = resolve_nodes(given)
    assert not nodes.pair_form
    assert [h.name for h in nodes.hosts()] == [v.partition("=")[0] if "=" in v else v for v in given]


@pytest.mark.parametrize("given", [["a=198.18.9.1", "spark-2"], ["c=198.18.9.3", "b=198.18.9.2"], ["a=198.18.9.1"]])
def test_a_value_in_the_pairs_form_keeps_the_pair(given: list[str]) -> None:
    """Beside `a=` or `b=`, a value in a cluster's form is the pair's mistake (refused by the pair's own parsing),
    never a cluster of two taken by surprise."""
    assert resolve_nodes(given).pair_form


def test_one_node_in_a_clusters_form_is_refused_as_too_few() -> None:
    nodes = resolve_nodes(["spark-1"])
    with pytest.raises(ConfigError, match="1 node given; a cluster needs 2 to 8"):
        nodes.hosts()


def test_a_slurm_allocation_names_the_nodes_only_when_nothing_else_does(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Inside `salloc -N 4`, a bare `linkcheck check` checks the allocation's nodes; --node or a linkcheck.yaml that
    names nodes (the pair's `nodes:` or a `cluster:`) is the user's own choice and wins over it."""
    monkeypatch.chdir(tmp_path)  # no ./linkcheck.yaml
    slurm = {"SLURM_JOB_NODELIST": "spark[01-04]"}
    nodes = resolve_nodes([], environ=slurm)
    assert not nodes.pair_form
    assert [h.name for h in nodes.hosts(slurm)] == ["spark01", "spark02", "spark03", "spark04"]
    assert {h.origin for h in nodes.hosts(slurm)} == {"$SLURM_JOB_NODELIST"}
    assert resolve_nodes([], environ={"SLURM_JOB_NODELIST": "  "}).pair_form  # set but empty: not an allocation
    assert resolve_nodes(["a=198.18.9.1", "b=198.18.9.2"], environ=slurm).pair_form
    pair_config = tmp_path / "pair.yaml"
    pair_config.write_text('nodes:\n  a: "root@198.18.9.1"\n  b: "root@198.18.9.2"\n')
    assert resolve_nodes([], config=pair_config, environ=slurm).pair_form
    configured = resolve_nodes([], config=_config(tmp_path), environ=slurm)
    assert [str(h.target) for h in configured.hosts(slurm)] == ["root@198.18.9.1", "root@198.18.9.2",
                                                                "root@198.18.9.3"]


def test_a_clusters_hosts_are_read_when_the_run_starts_not_when_its_layout_is_decided() -> None:
    """The command's own refusals (a profile of the other layout, a --report path) come first: the layout is told
    from which options are given, the hostfile read only when the run starts."""
    nodes = resolve_nodes([], hostfile=Path("/nonexistent/hosts"))
    assert not nodes.pair_form
    with pytest.raises(ConfigError, match="/nonexistent/hosts"):
        nodes.hosts()

"""A pair is the cluster of its one cable: two nodes named by a hostfile (or an inventory, a Slurm allocation, or two
--node in a cluster's form) run the cluster's check, and it judges their cable as the pair's own check judges it,
reporting it as the pair's.

On the lab's pair: the healthy one passes as a layout `pair` with one cable, in one round; with node a's cable
hot-plugged (13-15 Gb/s per path), the cluster's check and the pair's own `check --quick` fail on the same rules
(LINK_HOTPLUG_DEGRADED), and the saved bundle is read offline (`diagnose`, `fix`, `advise`) as the cluster of one
cable.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from tests.conftest import InProcessCli
    from tests.live.conftest import ClusterFactory

pytestmark = [pytest.mark.lab,  # builds the two-node lab
              pytest.mark.xdist_group("pair-as-one-cable")]


def _hostfile(path: Path) -> Path:
    path.write_text("a slots=1\nb slots=1\n", encoding="utf-8")  # the lab's ssh_config reaches each by its name
    return path


def _raised(findings: list[dict[str, Any]]) -> set[str]:
    return {f["id"] for f in findings if f["status"] in ("fail", "warn")}


def test_a_healthy_pair_named_by_a_hostfile_passes_as_one_cable(cluster_factory: ClusterFactory, cli: InProcessCli,
                                                                 tmp_path: Path) -> None:
    lab = cluster_factory("healthy")
    run = cli("check", "--hostfile", str(_hostfile(tmp_path / "hosts")), "-c", str(lab.config), "--quick", "-f",
              "json", "--save", str(tmp_path / "saved"), timeout=300)
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    # The pair's report, as `diagnose` of its bundle gives it: its paths, and its one cable's one test.
    assert data["layout"] == "pair" and list(data["nodes"]) == ["a", "b"] and len(data["paths"]) == 2
    (test,) = data["tests"]
    assert (test["a"], test["b"], test["round"]) == ("a", "b", 1)
    assert test["state"] == "pass" and test["lowest_gbps"] > 80 and not _raised(test["findings"])
    # Two --node in a cluster's form (the lab's ssh_config names the nodes a and b: bare names, not a=...) are the
    # same cluster of one cable, inspected only.
    named = cli("check", "--node", "a", "--node", "b", "-c", str(lab.config), "-f", "json", "--save",
                str(tmp_path / "named"), timeout=300)
    assert named.returncode == 0, named.stderr
    again = json.loads(named.stdout)
    assert again["layout"] == "pair" and list(again["nodes"]) == ["a", "b"] and len(again["paths"]) == 2
    # Offline, the saved bundle is the cluster of one cable: the same verdict, nothing to repair, the pair's advice
    # on its measured cable.
    again = cli("diagnose", str(tmp_path / "saved"), "-f", "json")
    assert again.returncode == 0 and json.loads(again.stdout)["verdict"] == data["verdict"]
    fix = cli("fix", str(tmp_path / "saved"))
    assert fix.returncode == 0 and "Nothing to repair." in fix.stdout, fix.stdout + fix.stderr
    advice = cli("advise", str(tmp_path / "saved"), "--model-gib", "60", "--concurrency", "4")
    said = " ".join(advice.stdout.split())  # the console wraps its lines
    assert advice.returncode == 0 and said.startswith("ADVICE: one model across both, tensor parallel"), said
    assert "link: healthy" in said and "the link measured: both paths at once" in said, said


def test_a_hot_plugged_pair_fails_on_the_same_rules_as_one_cable_and_as_a_pair(cluster_factory: ClusterFactory,
                                                                               cli: InProcessCli,
                                                                               tmp_path: Path) -> None:
    config = cluster_factory("hotplug-degraded").config
    cable = cli("check", "--hostfile", str(_hostfile(tmp_path / "hosts")), "-c", str(config), "--quick", "-f", "json",
                "--save", str(tmp_path / "cable"), timeout=300)
    assert cable.returncode == 2, cable.stderr
    (test,) = json.loads(cable.stdout)["tests"]
    pair = cli("check", "--node", "a=a", "--node", "b=b", "-c", str(config), "--quick", "-f", "json",
               "--save", str(tmp_path / "pair"), timeout=300)
    assert pair.returncode == 2, pair.stderr
    assert test["state"] == "slow" and test["lowest_gbps"] < 20
    assert _raised(test["findings"]) == _raised(json.loads(pair.stdout)["findings"]) == {"LINK_HOTPLUG_DEGRADED"}
    # Its repair is planned on the cable as the pair's is: node a's reboot, only with --allow-reboot.
    fix = cli("fix", str(tmp_path / "cable"))
    assert fix.returncode == 2 and "LINK_HOTPLUG_DEGRADED" in fix.stdout and "node a" in fix.stdout, fix.stdout
    # Applied to the same two nodes named by --node, as the pair's are: the cable's plan reaches them (a fresh
    # inspection of both, no traffic), and its reboots wait for --allow-reboot. Nothing was repaired: the bundle's
    # failure on the measured rate stands, and the exit says so, never the traffic-less inspection's pass.
    apply = cli("fix", "--apply", str(tmp_path / "cable"), "--node", "a=a", "--node", "b=b", "-c", str(config),
                "--save", str(tmp_path / "fresh"), timeout=300)
    assert apply.returncode == 2 and (tmp_path / "fresh" / "cluster.json").is_file(), apply.stdout + apply.stderr
    assert "nothing to apply: the plan has no step but reboots (they need --allow-reboot)" in apply.stderr, \
        apply.stdout + apply.stderr


def test_two_nodes_named_by_a_hostfile_are_accepted_by_the_pairs_profile(cluster_factory: ClusterFactory,
                                                                          cli: InProcessCli, tmp_path: Path) -> None:
    """The layout the nodes show chooses the profile: `pair`, dgx-spark-pair, given or not; judged on its one cable."""
    lab = cluster_factory("healthy")
    for name, given in (("chosen", ()), ("given", ("--profile", "dgx-spark-pair"))):
        run = cli("accept", "--hostfile", str(_hostfile(tmp_path / "hosts")), "-c", str(lab.config), *given,
                  "--duration", "1", "--repetitions", "1", "-f", "json", "--save", str(tmp_path / name), timeout=300)
        assert run.returncode == 0, run.stdout + run.stderr
        report = json.loads(run.stdout)  # the pair's report, as `diagnose` of the saved bundle gives it
        record = report["acceptance"]
        assert record["verdict"] == "PASS" and record["profile"]["name"] == "dgx-spark-pair", record["profile"]
        # The pair's acceptance of its one cable: both its paths at once, each way.
        assert sorted(c["subject"] for c in record["checks"] if c["id"] == "rdma_concurrent_total_gbps") == [
            "both paths a->b", "both paths b->a"], record["checks"]
        assert record == json.loads((tmp_path / name / "acceptance.json").read_text(encoding="utf-8"))

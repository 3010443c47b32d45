"""`linkcheck check --quick` over a cluster in the lab: three and four nodes over real SSH, the emulated ib_write_bw
running between their namespaces in the schedule's rounds. A healthy ring of three and switch of four pass with every
cable measured; a hot-plugged ring cable is named on that cable alone; on a switch, a node slow with every partner is
measured again with a good node and named; an unreachable node leaves its cables inconclusive while the rest are
measured; no process of ours is left on any node."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from tests.conftest import InProcessCli
    from tests.live.conftest import ClusterFactory

pytestmark = pytest.mark.lab

HEALTHY_TOTAL_GBPS = 180  # both twins at once: ~196 Gb/s on a healthy cable (the lab's model: 2 x 98)


def _check(cli: InProcessCli, tmp_path: Path, *args: str) -> tuple[int, dict[str, Any]]:
    """`check --quick` of the nodes `args` name, its bundle saved as tmp_path's next bundle-N."""
    save = tmp_path / f"bundle-{len(list(tmp_path.glob('bundle-*')))}"
    run = cli("check", *args, "--quick", "-f", "json", "--save", str(save), timeout=300)
    assert run.stdout, run.stderr
    return run.returncode, json.loads(run.stdout)


def _fired(data: dict[str, Any]) -> set[tuple[str, str]]:
    """(rule, where) of every warning or failure: the cluster rules' by subject, each test's by its label."""
    out = {(f["id"], f["subject"]) for f in data["findings"] if f["status"] in ("warn", "fail")}
    return out | {(f["id"], t["label"]) for t in data["tests"] for f in t["findings"]
                  if f["status"] in ("warn", "fail")}



def _judged(report: dict[str, Any]) -> dict[str, Any]:
    """A report but for when it was written (`created`): what a bundle judged again must say exactly."""
    return {k: v for k, v in report.items() if k != "created"}

def test_a_healthy_ring_of_three_passes_and_an_unreachable_node_leaves_only_its_cables_inconclusive(
        cluster_factory: ClusterFactory, cli: InProcessCli, tmp_path: Path) -> None:
    ring = cluster_factory("ring3")
    code, data = _check(cli, tmp_path, *ring.args)
    assert code == 0, _fired(data)
    assert data["verdict"] == "pass" and data["layout"] == "ring3"
    assert sorted(t["label"] for t in data["tests"]) == ["a:p0<->b:p1", "a:p1<->c:p0", "b:p0<->c:p1"]
    assert sorted(t["round"] for t in data["tests"]) == [1, 2, 3]
    for test in data["tests"]:
        assert test["state"] == "pass"
        assert all(v is not None and v > HEALTHY_TOTAL_GBPS for v in test["totals_gbps"].values()), test
        # Both twins at once each way: every run named by node, directions by the test's own nodes.
        assert {(r["mode"], r["direction"]) for r in test["runs"]} == {
            ("concurrent", f"{test['a']}->{test['b']}"), ("concurrent", f"{test['b']}->{test['a']}")}
    assert all(data["matrix"][x][y] > HEALTHY_TOTAL_GBPS for x in "abc" for y in "abc" if x != y)
    ring.assert_none_running("ib_write_bw")

    ring.lab.stop_sshd("c")
    code, data = _check(cli, tmp_path, *ring.args)
    assert code == 3
    states = {t["label"]: t["state"] for t in data["tests"]}
    # The cables to c are not known without c: each cage of a and b whose subnets nobody else holds is one.
    assert states == {"a:p0<->b:p1": "pass", "a:p1<->?": "inconclusive", "b:p0<->?": "inconclusive"}
    assert all("node c was not inspected" in (t["problem"] or "") for t in data["tests"] if t["state"] != "pass")
    assert data["nodes"]["c"]["error"]


def test_a_healthy_switch_of_four_from_a_hostfile_passes_every_pair(cluster_factory: ClusterFactory,
                                                                      cli: InProcessCli, tmp_path: Path) -> None:
    switch = cluster_factory("switch4")
    hostfile = tmp_path / "hosts"
    hostfile.write_text("# the lab's nodes by their ssh_config names\na slots=1\nb slots=1\nc\nd\n", encoding="utf-8")
    code, data = _check(cli, tmp_path, "--hostfile", str(hostfile), "-c", str(switch.config))
    assert code == 0, _fired(data)
    assert data["layout"] == "switch"
    assert sorted(tuple(sorted((t["a"], t["b"]))) for t in data["tests"]) == [
        ("a", "b"), ("a", "c"), ("a", "d"), ("b", "c"), ("b", "d"), ("c", "d")]
    assert sorted({t["round"] for t in data["tests"]}) == [1, 2, 3]  # the circle method: n-1 rounds
    for rnd in (1, 2, 3):
        nodes = [n for t in data["tests"] if t["round"] == rnd for n in (t["a"], t["b"])]
        assert len(nodes) == len(set(nodes)) == 4
    assert all(t["state"] == "pass" and t["pass"] == 1 for t in data["tests"])
    switch.assert_none_running("ib_write_bw")


def test_a_hot_plugged_ring_cable_is_named_on_that_cable_alone(cluster_factory: ClusterFactory,
                                                               cli: InProcessCli, tmp_path: Path) -> None:
    ring = cluster_factory("ring3-hotplug")
    code, data = _check(cli, tmp_path, *ring.args)
    assert code == 2, (data["traffic_error"], [(t["label"], t["state"], t["problem"]) for t in data["tests"]])
    fired = _fired(data)
    assert {r for r, where in fired} == {"LINK_HOTPLUG_DEGRADED"}
    assert {where for _, where in fired} == {"a:p0<->b:p1"}
    slow = next(t for t in data["tests"] if t["label"] == "a:p0<->b:p1")
    assert slow["state"] == "slow" and slow["lowest_gbps"] < 20
    # The quick tier ran each slow path alone too (one alone round per low path tells the trap).
    assert any(r["mode"] == "alone" for r in slow["runs"])
    assert all(t["state"] == "pass" for t in data["tests"] if t["label"] != "a:p0<->b:p1")
    ring.assert_none_running("ib_write_bw")
    # The saved bundle, judged again offline, says exactly what the check said.
    bundle = tmp_path / "bundle-0"
    assert cli("verify", str(bundle)).returncode == 0
    again = cli("diagnose", str(bundle), "-f", "json")
    assert again.returncode == 2 and _judged(json.loads(again.stdout)) == _judged(data)


def test_the_second_pass_names_the_node_slow_with_every_partner(cluster_factory: ClusterFactory,
                                                                cli: InProcessCli, tmp_path: Path) -> None:
    switch = cluster_factory("switch4-slow-node")
    code, data = _check(cli, tmp_path, *switch.args)
    assert code == 2
    fired = {(f["id"], f["subject"]) for f in data["findings"] if f["status"] == "fail"}
    assert fired == {("NODE_SLOW_WITH_EVERY_PARTNER", "node c")}
    first = [t for t in data["tests"] if t["pass"] == 1]
    assert {t["state"] for t in first if "c" in (t["a"], t["b"])} == {"slow"}
    assert {t["state"] for t in first if "c" not in (t["a"], t["b"])} == {"pass"}
    again = [t for t in data["tests"] if t["pass"] == 2]
    assert len(again) == 1 and "c" in (again[0]["a"], again[0]["b"]) and again[0]["state"] == "slow"
    assert again[0]["round"] > max(t["round"] for t in first)
    switch.assert_none_running("ib_write_bw")


def test_bench_rdma_over_a_ring_measures_every_cable_as_the_clusters_check(cluster_factory: ClusterFactory,
                                                                           cli: InProcessCli, tmp_path: Path) -> None:
    """`bench rdma` with three --node: the cluster's rounds per cable (no NCCL), the hot-plugged cable named alone
    (`bench latency` over a cluster: tests/live/test_cluster_latency_lab.py)."""
    ring = cluster_factory("ring3-hotplug")
    run = cli("bench", "rdma", *ring.args, "--duration", "2",
              "-f", "json", "--save", str(tmp_path / "bench"), timeout=300)
    data = json.loads(run.stdout)
    assert run.returncode == 2, run.stderr
    assert {t["label"] for t in data["tests"]} == {"a:p0<->b:p1", "b:p0<->c:p1", "a:p1<->c:p0"}
    assert {(r, where) for r, where in _fired(data)} == {("LINK_HOTPLUG_DEGRADED", "a:p0<->b:p1")}
    assert data["nccl"] is None  # bench rdma: no NCCL run
    ring.assert_none_running("ib_write_bw")

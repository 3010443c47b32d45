"""The NCCL inside real containers (Debian's podman in the lab's nodes, images staged here with libnccl stubs linked
by cc with their own build IDs), read by linkcheck's one round trip per node over real SSH, and judged."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from linkcheck.collect.collector import collect
from linkcheck.facts.build import build_node_facts
from tests.lab import containers
from tests.lab.containers import (
    SYSTEM_BUILD_ID,
    SYSTEM_NCCL,
    WHEEL_BUILD_ID,
    WHEEL_NCCL,
    ContainerSpec,
    StubLib,
    gpu_standin,
    serving_containers,
)
from tests.lab.scenario import specs_for_scenario

if TYPE_CHECKING:
    from tests.conftest import InProcessCli
    from tests.live.conftest import ClusterFactory, ClusterLab, Live

pytestmark = pytest.mark.lab


@pytest.fixture
def serving_pair(cluster_factory: ClusterFactory, tmp_path: Path) -> ClusterLab:
    reason = containers.skip_reason()
    if reason:
        pytest.skip(reason)
    gpus = {"a": gpu_standin(96, 22.05), "b": gpu_standin(0, 4.87)}
    specs = [dataclasses.replace(s, containers=serving_containers(s.name),
                                 extra_tools={**s.extra_tools, "nvidia-smi": gpus[s.name]})
             for s in specs_for_scenario("healthy", tmp_path / "models")]
    return cluster_factory(specs)


def test_containers_of_a_pair_are_read_in_the_one_round_trip(serving_pair: ClusterLab) -> None:
    lab = serving_pair.lab
    names = serving_pair.names
    with serving_pair.transports() as transports:
        result = collect(transports, timeout_s=90, containers={n: ("vllm", "old", "nope") for n in names})
    assert result.errors == {}
    facts = {n: build_node_facts(n, [c for c in result.captures if c.node == n]) for n in names}
    views = {n: {v.container: v for v in facts[n].containers} for n in names}
    a, b = views["a"]["vllm"], views["b"]["vllm"]
    assert (a.engine, a.state, b.state) == ("podman", "read", "read")
    assert a.library is not None and (a.library.real_path, a.library.build_id) == (SYSTEM_NCCL, SYSTEM_BUILD_ID)
    assert b.library is not None and (b.library.path, b.library.build_id, b.library.origin) == (
        WHEEL_NCCL, WHEEL_BUILD_ID, "pip wheel")
    assert b.settings["NCCL_IB_HCA"] == "mlx5_0" and b.setting_sources["NCCL_IB_HCA"] == "/etc/nccl.conf"
    assert a.settings["NCCL_IB_HCA"] == "rocep1s0f1,roceP2p1s0f1"
    assert views["a"]["old"].state == "not running" and views["a"]["nope"].state == "not found"
    assert facts["a"].gpus is not None and facts["a"].gpus[0].power_w == 22.05
    # Nothing of the probe stays behind: no exec session, only the running container.
    for n in names:
        assert lab.exec(n, ["podman", "ps", "-q"]).stdout.count("\n") == 1
        assert not lab.running(n, "podman exec")


def test_check_names_the_builds_the_stale_conf_the_known_bad_version_and_the_waiting_rank(
        serving_pair: ClusterLab, live: Live, cli: InProcessCli, tmp_path: Path) -> None:
    config = live.lab_config(serving_pair.lab, tmp_path / "linkcheck.yaml",
                             nodes={"a": "a", "b": {"target": "b", "containers": ["old"]}})
    run = cli("check", "-c", str(config), "--container", "vllm", "--save", str(tmp_path / "bundle"), "-f", "json",
              timeout=120)
    assert run.returncode == 1, run.stderr
    findings = json.loads(run.stdout)["findings"]
    firing = {(f["id"], f["subject"]): f for f in findings if f["status"] in ("warn", "fail")}
    build = firing[("NCCL_BUILD_DIFFERS", "NCCL in container vllm")]["message"]
    assert SYSTEM_NCCL in build and SYSTEM_BUILD_ID in build and WHEEL_NCCL in build and WHEEL_BUILD_ID in build
    assert "mlx5_0" in firing[("CONTAINER_NCCL_SETTINGS_CONTRADICT_HOST", "container vllm on b")]["message"]
    known = [f for (rule, _), f in firing.items() if rule == "NCCL_KNOWN_BAD"]
    assert known and all("NVIDIA/nccl#2167" in f["message"] for f in known)
    assert ("GPU_WAITING_IN_COLLECTIVE", "node a GPU") in firing
    assert not [k for k in firing if k[0] == "GPU_WAITING_IN_COLLECTIVE" and k[1] != "node a GPU"]
    notes = {f["subject"] for f in findings if f["id"] == "CONTAINER_NOT_READ" and f["status"] == "pass"
             and "not running" in f["message"]}
    # "old" is named for b alone (linkcheck.yaml), "vllm" for both (--container)
    assert notes == {"container old on b"}
    # The link itself is healthy: nothing but these container and GPU findings warns.
    assert {k[0] for k in firing} == {"NCCL_BUILD_DIFFERS", "CONTAINER_NCCL_SETTINGS_CONTRADICT_HOST",
                                      "NCCL_KNOWN_BAD", "GPU_WAITING_IN_COLLECTIVE"}


def test_a_ring_names_the_container_without_subnet_routing_and_a_node_without_an_engine_keeps_its_verdict(
        cluster_factory: ClusterFactory, cli: InProcessCli, tmp_path: Path) -> None:
    """A ring of three: a's container loads NCCL 2.30.4 (no NCCL_IB_SUBNET_AWARE_ROUTING), b's a wheel's 2.30.7 told
    to use it, c has no container engine at all. topology --container vllm names a's container and only it, notes c,
    and leaves every finding about the cables as the same run without --container has them."""
    reason = containers.skip_reason()
    if reason:
        pytest.skip(reason)
    on = {"a": (ContainerSpec("vllm", libs=(StubLib(SYSTEM_NCCL, SYSTEM_BUILD_ID, "2.30.4"),),
                              run_env={"NCCL_IB_SUBNET_AWARE_ROUTING": "1"}),),
          "b": (ContainerSpec("vllm", libs=(StubLib(WHEEL_NCCL.replace("2.30.4", "2.30.7"), WHEEL_BUILD_ID, "2.30.7",
                                                    wheel=True),),
                              run_env={"NCCL_IB_SUBNET_AWARE_ROUTING": "1"}),)}
    specs = [dataclasses.replace(s, containers=on.get(s.name, ()),
                                 missing_tools=s.missing_tools | ({"podman", "docker"} if s.name == "c" else set()))
             for s in specs_for_scenario("ring3", tmp_path / "models")]
    cluster = cluster_factory(specs)
    plain = cli("topology", *cluster.args, "-f", "json", timeout=120)
    inside = cli("topology", *cluster.args, "--container", "vllm", "-f", "json", timeout=120)
    before, after = json.loads(plain.stdout)["findings"], json.loads(inside.stdout)["findings"]
    ours = ("CONTAINER", "NCCL_BUILD", "NCCL_KNOWN", "GPU_WAITING")
    link = {(f["id"], f["subject"], f["status"]) for f in after if not f["id"].startswith(ours)}
    assert link == {(f["id"], f["subject"], f["status"]) for f in before}
    firing = {(f["id"], f["subject"]): f for f in after if f["status"] in ("warn", "fail")}
    routing = [k for k in firing if k[0] == "CONTAINER_NCCL_NO_SUBNET_ROUTING"]
    assert routing == [("CONTAINER_NCCL_NO_SUBNET_ROUTING", "container vllm on a")]
    assert firing[routing[0]]["status"] == "fail" and "2.30.4 predates" in firing[routing[0]]["message"]
    build = firing[("NCCL_BUILD_DIFFERS", "NCCL in container vllm")]["message"]
    assert SYSTEM_BUILD_ID in build and WHEEL_BUILD_ID in build and " c: " not in build
    notes = [f for f in after if f["id"] == "CONTAINER_NOT_READ" and f["status"] == "pass"
             and f["subject"] == "container vllm on c"]
    assert notes and "no container engine" in notes[0]["message"]
    assert inside.returncode == 2 and plain.returncode in (0, 1), (plain.stderr, inside.stderr)

"""The NCCL inside real containers (Debian's podman in the lab's nodes, images staged here with libnccl stubs linked
by cc with their own build IDs), read by linkcheck's one round trip per node over real SSH, and judged."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from linkcheck.collect.collector import close_transports, collect, open_transports
from linkcheck.facts.build import build_node_facts
from linkcheck.transport.base import NodeTarget
from tests.lab import containers
from tests.lab.containers import ContainerSpec, StubLib
from tests.lab.pytest_plugin import LabFactory
from tests.lab.scenario import specs_for_scenario

pytestmark = pytest.mark.lab

SYSTEM_ID = "5e1f2d3c4b5a69788796a5b4c3d2e1f0a1b2c3d4"
WHEEL_ID = "a7f420a1" + "9" * 32
WHEEL = "/usr/local/lib/python3.12/dist-packages/nvidia/nccl/lib/libnccl.so.2"
SYSTEM = "/usr/lib/x86_64-linux-gnu/libnccl.so.2.30.4"


def _skip() -> None:
    reason = containers.skip_reason()
    if reason:
        pytest.skip(reason)


def test_containers_of_a_pair_are_read_in_the_one_round_trip(lab_factory: LabFactory, tmp_path: Path) -> None:
    _skip()
    specs = specs_for_scenario("healthy", tmp_path / "models")
    on = {"a": ContainerSpec("vllm", libs=(StubLib(SYSTEM, SYSTEM_ID, "2.30.4"),),
                             run_env={"NCCL_IB_HCA": "rocep1s0f1,roceP2p1s0f1"}),
          "b": ContainerSpec("vllm", libs=(StubLib(SYSTEM, SYSTEM_ID, "2.30.4"), StubLib(WHEEL, WHEEL_ID, "2.30.4",
                                                                                    wheel=True)),
                             files={"/etc/nccl.conf": "NCCL_IB_HCA=mlx5_0\nNCCL_IB_GID_INDEX=7\n"})}
    specs = [dataclasses.replace(s, containers=(on[s.name], ContainerSpec("old", running=False))) for s in specs]
    lab = lab_factory(specs)
    names = sorted(lab.nodes)
    transports = open_transports([NodeTarget(name=n, host=n) for n in names], known_hosts=lab.known_hosts,
                                 ssh_config=lab.ssh_config, connect_timeout_s=10)
    try:
        result = collect(transports, timeout_s=90, containers={n: ("vllm", "old", "nope") for n in names})
    finally:
        close_transports(transports)
    assert result.errors == {}
    facts = {n: build_node_facts(n, [c for c in result.captures if c.node == n]) for n in names}
    views = {n: {v.container: v for v in facts[n].containers} for n in names}
    a, b = views["a"]["vllm"], views["b"]["vllm"]
    assert (a.engine, a.state, b.state) == ("podman", "read", "read")
    assert a.library is not None and (a.library.real_path, a.library.build_id) == (SYSTEM, SYSTEM_ID)
    assert b.library is not None and (b.library.path, b.library.build_id, b.library.origin) == (
        WHEEL, WHEEL_ID, "pip wheel")
    assert b.settings["NCCL_IB_HCA"] == "mlx5_0" and b.setting_sources["NCCL_IB_HCA"] == "/etc/nccl.conf"
    assert a.settings["NCCL_IB_HCA"] == "rocep1s0f1,roceP2p1s0f1"
    assert views["a"]["old"].state == "not running" and views["a"]["nope"].state == "not found"
    # Nothing of the probe stays behind: no exec session, and only the containers' own conmons in the node.
    for n in names:
        assert lab.exec(n, ["podman", "ps", "-q"]).stdout.count("\n") == 1
        assert not lab.running(n, "nccl_probe", "podman exec")

"""Two nodes on one cable get the pair's advice however they were named: the same hot-plugged pair saved as the
pair's own bundle (fixtures/hotplug-degraded) and as the cluster of its one cable (fixtures/cluster-pair-hotplug,
named by a hostfile) is advised alike, for every workload; a ring of three keeps the advice for N nodes."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from tests.fixture_bundles import FIXTURE_DIR

if TYPE_CHECKING:
    from tests.conftest import InProcessCli

WORKLOADS = [("--model-gib", "60", "--concurrency", "4"), ("--model-gib", "60", "--concurrency", "64"),
             ("--model-gib", "150", "--concurrency", "1"), ("--model-gib", "300", "--concurrency", "2"),
             ("--model-gib", "60", "--concurrency", "1", "--heads", "3")]


@pytest.mark.parametrize("workload", WORKLOADS, ids=" ".join)
def test_the_cluster_of_one_cable_is_advised_as_the_pair(cli: InProcessCli, workload: tuple[str, ...]) -> None:
    pair = cli("advise", str(FIXTURE_DIR / "hotplug-degraded"), *workload, "-f", "json")
    cable = cli("advise", str(FIXTURE_DIR / "cluster-pair-hotplug"), *workload, "-f", "json")
    # The link first (exit 2), or a model that does not fit even split in two (exit 0), alike.
    assert pair.returncode == cable.returncode and pair.returncode in (0, 2), pair.stderr + cable.stderr
    assert json.loads(cable.stdout) == json.loads(pair.stdout)


def test_a_ring_of_three_keeps_the_advice_for_its_nodes(cli: InProcessCli) -> None:
    run = cli("advise", str(FIXTURE_DIR / "cluster-ring3-healthy"), "--model-gib", "60", "--concurrency", "4")
    said = " ".join(run.stdout.split())
    assert run.returncode == 0 and "tensor parallel across 3" in said and "the cables measured:" in said, said

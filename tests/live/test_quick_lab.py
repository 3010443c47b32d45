"""`linkcheck check --quick` end to end against the two-node lab (emulated ib_write_bw, real-time -D 4 runs).

Three labs at once, one quick run each: the healthy pair passes (exit 0); the hot-plug state (13-15 Gb/s per
path) and both flows on one PCIe x4 link (~95 Gb/s in total) fail with their findings (exit 2), named by the
same playbooks as the full traffic test. The quick tier's budget (24 s of traffic) is said before it starts.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.lab import Lab
from tests.lab.scenario import specs_for_scenario

pytestmark = pytest.mark.lab  # builds the two-node lab

if TYPE_CHECKING:
    from tests.live.conftest import CliRun, Live

SCENARIOS = {"healthy": "console", "hotplug-degraded": "json", "single-pcie-path": "json"}


class QuickRuns:
    def __init__(self, make_lab: Callable[..., Lab], live: Live, tmp: pytest.TempPathFactory) -> None:
        self.saved: dict[str, Path] = {}
        labs, args, started = {}, {}, {}
        for name, fmt in SCENARIOS.items():
            work = tmp.mktemp(name)
            labs[name] = make_lab(specs_for_scenario(name, work / "models"))
            config = live.lab_config(labs[name], work / "linkcheck.yaml",
                                     nodes={"a": {"target": "a"}, "b": {"target": "b"}})
            self.saved[name] = work / "saved"
            args[name] = ("check", "--quick", "-c", str(config), "--save", str(self.saved[name]), "-f", fmt)
        for name, argv in args.items():
            started[name] = live.start(*argv)
        self.results: dict[str, CliRun] = {}
        for name, handle in started.items():
            self.results[name] = live.wait(handle, args[name], timeout=240)
            labs[name].down()

    def manifest(self, name: str) -> dict[str, Any]:
        data = json.loads((self.saved[name] / "manifest.json").read_text(encoding="utf-8"))
        assert isinstance(data, dict)
        return data


@pytest.fixture(scope="module")
def runs(module_lab_factory: Callable[..., Lab], live: Live,
         tmp_path_factory: pytest.TempPathFactory) -> Iterator[QuickRuns]:
    yield QuickRuns(module_lab_factory, live, tmp_path_factory)


def _rdma_clients(runs: QuickRuns, name: str) -> list[dict[str, Any]]:
    return [c for c in runs.manifest(name)["captures"]
            if c["meta"].get("kind") == "rdma" and c["meta"].get("role") == "client"
            and c["command"].startswith("ib_write_bw ")]


def test_quick_tier_passes_a_healthy_pair(runs: QuickRuns) -> None:
    run = runs.results["healthy"]
    assert run.returncode == 0, run.describe()
    first = run.stderr.splitlines()[0]
    assert first.startswith("linkcheck check --quick: planned wall time ~"), run.stderr
    assert "6 ib_write_bw rounds of 4 s (24 s of traffic, 2 s measured per run)" in first
    assert "all_gather_perf" not in first
    clients = _rdma_clients(runs, "healthy")
    # each path alone and both at once, both directions: 2 + 2 + 4 client runs, every one -D 4
    assert len(clients) == 8 and all(" -D 4 " in c["command"] for c in clients), [c["command"] for c in clients]
    assert {(c["meta"]["mode"], c["meta"]["direction"]) for c in clients} == {
        (m, d) for m in ("alone", "concurrent") for d in ("a->b", "b->a")}
    assert not [c for c in runs.manifest("healthy")["captures"] if c["meta"].get("kind") == "nccl"]
    assert run.duration_s < 90, run.duration_s  # 24 s of traffic; the lab's own overhead is the rest


def _failing(run: CliRun) -> set[str]:
    return {rule for rule, status, _ in run.findings(("fail",))}


def test_quick_tier_fails_the_hotplug_state(runs: QuickRuns) -> None:
    run = runs.results["hotplug-degraded"]
    assert run.returncode == 2, run.describe()
    assert _failing(run) == {"LINK_HOTPLUG_DEGRADED"}, run.findings()
    rates = [r["gbps"] for r in run.report["bench"]["rdma"]]
    assert len(rates) == 8 and max(rates) < 15, rates


def test_quick_tier_fails_a_single_pcie_path(runs: QuickRuns) -> None:
    run = runs.results["single-pcie-path"]
    assert run.returncode == 2, run.describe()
    assert "SINGLE_PCIE_PATH" in _failing(run), run.findings()
    totals = run.report["bench"]["rdma_concurrent_total_gbps"]
    assert all(80 < total < 110 for total in totals.values()), totals

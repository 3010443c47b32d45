"""`linkcheck check --quick` end to end against the two-node lab (emulated ib_write_bw, real-time -D 4 runs).

Three labs at once, one quick run each: the healthy pair passes (exit 0) on its two concurrent rounds, the
alone rounds listed as not run; the hot-plug state (13-15 Gb/s per path) and both flows on one PCIe x4 link
(~95 Gb/s in total) fail with their findings (exit 2), named by the same playbooks as the full traffic test,
after one alone round per low path. The quick tier's plan is said before it starts.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from linkcheck.facts.bench_facts import JOB_KINDS
from tests.lab import Lab
from tests.lab.scenario import specs_for_scenario

pytestmark = [pytest.mark.lab,  # builds the two-node lab
              pytest.mark.xdist_group("quick-lab")]  # one worker makes the labs its tests share (`--dist loadgroup`)

if TYPE_CHECKING:
    from tests.live.conftest import CliRun, Live

# run name -> (lab scenario, report format, extra options)
RUNS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "healthy": ("healthy", "console", ()),
    "hotplug-degraded": ("hotplug-degraded", "json", ()),
    "single-pcie-path": ("single-pcie-path", "json", ()),
    "healthy --nccl": ("healthy", "json", ("--nccl",)),
    "socket-fallback --nccl": ("nccl-socket-fallback", "json", ("--nccl",)),
}


class QuickRuns:
    def __init__(self, make_lab: Callable[..., Lab], live: Live, tmp: pytest.TempPathFactory) -> None:
        self.saved: dict[str, Path] = {}
        labs, args, started = {}, {}, {}
        for name, (scenario, fmt, extra) in RUNS.items():
            work = tmp.mktemp(scenario)
            labs[name] = make_lab(specs_for_scenario(scenario, work / "models"))
            config = live.lab_config(labs[name], work / "linkcheck.yaml",
                                     nodes={"a": {"target": "a"}, "b": {"target": "b"}})
            self.saved[name] = work / "saved"
            args[name] = ("check", "--quick", *extra, "-c", str(config), "--save", str(self.saved[name]), "-f", fmt)
            if name == "healthy":  # the Markdown report written beside the console's, as over a cluster
                self.report = work / "report.md"
                args[name] += ("--report", str(self.report))
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


def _not_run(runs: QuickRuns, name: str) -> list[dict[str, Any]]:
    return [c for c in runs.manifest(name)["captures"]
            if c["meta"].get("kind") == "rdma" and c["meta"].get("plan") == "skipped"]


def test_quick_tier_passes_a_healthy_pair_on_its_concurrent_rounds(runs: QuickRuns) -> None:
    run = runs.results["healthy"]
    assert run.returncode == 0, run.describe()
    # What it runs, then its plan once the inspection has shown the schedule, as over a cluster (the pair is the
    # cluster of its one cable).
    first, plan = run.stderr.splitlines()[:2]
    assert first.startswith("checking 2 nodes: inspection, then ib_write_bw -D 4 per cable"), run.stderr
    assert plan.startswith("linkcheck check --quick: planned wall time ~"), run.stderr
    assert "1 test in 2 ib_write_bw rounds of 4 s (all paths at once" in " ".join(run.stderr.split())
    assert "all_gather_perf" not in first + plan
    clients = _rdma_clients(runs, "healthy")
    # both paths at once in each direction, every run -D 4; no path was low, so none ran alone
    assert len(clients) == 4 and all(" -D 4 " in c["command"] for c in clients), [c["command"] for c in clients]
    assert {(c["meta"]["mode"], c["meta"]["direction"]) for c in clients} == {
        ("concurrent", "a->b"), ("concurrent", "b->a")}
    skipped = _not_run(runs, "healthy")
    assert sorted((c["meta"]["mode"], c["meta"]["direction"]) for c in skipped) == [
        ("alone", "a->b"), ("alone", "a->b"), ("alone", "b->a"), ("alone", "b->a")]
    assert all(c["skipped"].startswith("not run: ") and c["exit_status"] is None for c in skipped)
    assert run.stdout.count("not run: alone") == 4, run.stdout  # the console says what it skipped
    assert not [c for c in runs.manifest("healthy")["captures"] if c["meta"].get("kind") in JOB_KINDS]
    assert run.duration_s < 60, run.duration_s  # three labs share two CPUs here; benchmarks/tiers.py times one


def test_quick_tier_writes_the_pairs_markdown_report_when_asked(runs: QuickRuns, live: Live) -> None:
    """`check --report FILE` over a pair writes the Markdown report `linkcheck report BUNDLE -f markdown` gives of
    the bundle it saved, as it does over a cluster."""
    run = runs.results["healthy"]
    assert run.returncode == 0 and f"report written to {runs.report}" in run.stderr, run.describe()
    offline = live.run("report", str(runs.saved["healthy"]), "-f", "markdown")
    assert offline.returncode == 0, offline.describe()
    assert runs.report.read_text(encoding="utf-8") == offline.stdout


def _failing(run: CliRun) -> set[str]:
    return {rule for rule, status, _ in run.findings(("fail",))}


def test_quick_tier_fails_the_hotplug_state(runs: QuickRuns) -> None:
    run = runs.results["hotplug-degraded"]
    assert run.returncode == 2, run.describe()
    assert _failing(run) == {"LINK_HOTPLUG_DEGRADED"}, run.findings()
    rdma = run.report["bench"]["rdma"]
    assert max(r["gbps"] for r in rdma) < 15, rdma
    # each low path ran alone once, in the direction where it was lowest
    assert sorted(r["mode"] for r in rdma) == ["alone"] * 2 + ["concurrent"] * 4, rdma
    assert len({r["path_key"] for r in rdma if r["mode"] == "alone"}) == 2
    assert len(run.report["bench"]["not_run"]) == 2


def test_quick_tier_fails_a_single_pcie_path(runs: QuickRuns) -> None:
    run = runs.results["single-pcie-path"]
    assert run.returncode == 2, run.describe()
    assert "SINGLE_PCIE_PATH" in _failing(run), run.findings()
    assert "LINK_BELOW_NOMINAL" not in _failing(run)  # alone, each path got its ~98 Gb/s back
    totals = run.report["bench"]["rdma_concurrent_total_gbps"]
    assert all(80 < total < 110 for total in totals.values()), totals
    alone = [r["gbps"] for r in run.report["bench"]["rdma"] if r["mode"] == "alone"]
    assert len(alone) == 2 and min(alone) > 90, alone


def test_quick_nccl_proves_net_ib_on_both_hcas_and_leaves_the_short_sweeps_bandwidth_unjudged(runs: QuickRuns) -> None:
    run = runs.results["healthy --nccl"]
    assert run.returncode == 0, run.describe()
    nccl = run.report["bench"]["nccl"]
    assert nccl["network"] == "IB" and len(nccl["ib_devices"]) == 2 and nccl["transport_only"], nccl
    assert nccl["largest_bytes"] == 256 << 20
    statuses = {(f["id"], f["status"]) for f in run.report["findings"] if f["id"].startswith("NCCL_")}
    assert ("NCCL_SOCKET_FALLBACK", "pass") in statuses and ("NCCL_BUSBW_LOW", "skip") in statuses, statuses
    commands = [c["command"] for c in runs.manifest("healthy --nccl")["captures"] if c["meta"].get("kind") in JOB_KINDS]
    assert any(f"-e {256 << 20}" in c for c in commands), commands


def test_quick_nccl_names_the_socket_fallback(runs: QuickRuns) -> None:
    run = runs.results["socket-fallback --nccl"]
    assert run.returncode == 2, run.describe()
    assert "NCCL_SOCKET_FALLBACK" in _failing(run), run.findings()

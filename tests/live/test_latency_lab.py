"""`linkcheck check --latency` end to end against the two-node lab, then `linkcheck advise` on what it saved.

Two labs at once, one run each: the healthy pair (ib_write_lat 1.47 us at 2 B and 8.80 us at 48 KiB per path, the
small all_reduce 39.5-68 us) passes the latency rules and is advised two residents for a 60 GiB model and 64
users, its figures labelled measured; the hot-plug state (48 KiB in ~31 us per path, the all_reduce 1.9 times
slower) fails RDMA_LATENCY_HIGH and is told to fix the link first. Each ib_write_lat run is alone on the link:
the next one starts only after both sides of the one before have exited.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.lab import Lab
from tests.lab.scenario import specs_for_scenario

pytestmark = [pytest.mark.lab,  # builds the two-node lab
              pytest.mark.xdist_group("latency-lab"),  # one worker makes the runs every test reads (`--dist loadgroup`)
              pytest.mark.skipif(shutil.which("mpirun") is None, reason="mpirun not installed (openmpi-bin)")]

if TYPE_CHECKING:
    from tests.live.conftest import CliRun, Live

SCENARIOS = ("healthy", "hotplug-degraded")
SIZES = {"2", "49152"}


class LatencyRuns:
    def __init__(self, make_lab: Callable[..., Lab], live: Live, tmp: pytest.TempPathFactory) -> None:
        self.saved: dict[str, Path] = {}
        self.results: dict[str, CliRun] = {}
        self.strays: dict[str, dict[str, list[str]]] = {}
        labs, args, started, before = {}, {}, {}, {}
        for name in SCENARIOS:
            work = tmp.mktemp(name)
            labs[name] = make_lab(specs_for_scenario(name, work / "models"))
            config = live.lab_config(labs[name], work / "linkcheck.yaml",
                                     nodes={"a": {"target": "a"}, "b": {"target": "b"}})
            self.saved[name] = work / "saved"
            args[name] = ("check", "--latency", "-c", str(config), "--save", str(self.saved[name]), "-f", "json")
            before[name] = live.node_pids(labs[name])
        for name, argv in args.items():
            started[name] = live.start(*argv)
        for name, handle in started.items():
            self.results[name] = live.wait(handle, args[name], timeout=180)
            self.strays[name] = live.strays(labs[name], before[name])
            labs[name].down()
        self.live = live

    def captures(self, name: str) -> list[dict[str, Any]]:
        data = json.loads((self.saved[name] / "manifest.json").read_text(encoding="utf-8"))
        return [c for c in data["captures"] if c["meta"].get("kind") == "latency"]

    def advise(self, name: str) -> CliRun:
        return self.live.run("advise", str(self.saved[name]), "--model-gib", "60", "--concurrency", "64", "-f", "json")


@pytest.fixture(scope="module")
def runs(module_lab_factory: Callable[..., Lab], live: Live,
         tmp_path_factory: pytest.TempPathFactory) -> Iterator[LatencyRuns]:
    yield LatencyRuns(module_lab_factory, live, tmp_path_factory)


def _latency_findings(run: CliRun) -> dict[str, set[tuple[str, str]]]:
    out: dict[str, set[tuple[str, str]]] = {}
    for f in run.report["findings"]:
        if f["id"] in ("RDMA_LATENCY_HIGH", "NCCL_ALLREDUCE_LATENCY_HIGH"):
            out.setdefault(f["id"], set()).add((f["status"], f["subject"]))
    return out


def test_the_healthy_lab_measures_every_path_at_both_sizes_alone_and_passes(runs: LatencyRuns) -> None:
    run = runs.results["healthy"]
    assert run.returncode == 0, run.describe()
    caps = runs.captures("healthy")
    lat = [c for c in caps if c["spec"] == "ib_write_lat"]
    clients = [c for c in lat if c["meta"]["role"] == "client"]
    assert len(clients) == 4 and len(lat) == 8, [c["command"] for c in lat]
    assert {(c["meta"]["path"], c["meta"]["size_bytes"]) for c in clients} == {
        (p, s) for p in {c["meta"]["path"] for c in clients} for s in SIZES}
    assert all(c["exit_status"] == 0 and c["node"] == "a" and c["stdout"] for c in clients), clients
    assert all(c["node"] == "b" and c["exit_status"] == 0 for c in lat if c["meta"]["role"] == "server")
    # one run at a time: a run's client starts only after the run before has ended on both nodes
    spans = sorted((float(c["meta"]["exited_at"]) - float(c["meta"]["elapsed_s"]), float(c["meta"]["exited_at"]),
                    c["meta"]["round"]) for c in lat)
    by_round: dict[str, tuple[float, float]] = {}
    for start, end, rnd in spans:
        low, high = by_round.get(rnd, (start, end))
        by_round[rnd] = (min(low, start), max(high, end))
    ordered = sorted(by_round.values())
    assert all(a[1] <= b[0] + 0.05 for a, b in zip(ordered, ordered[1:], strict=False)), ordered
    reduce = [c for c in caps if c["spec"] == "all_reduce_perf"]
    assert len(reduce) == 1 and reduce[0]["exit_status"] == 0, reduce
    assert "-b 16384 -e 65536 -f 2" in reduce[0]["command"] and "NCCL_IB_HCA=" in reduce[0]["command"]
    found = _latency_findings(run)
    assert {s for s, _ in found["RDMA_LATENCY_HIGH"]} == {"pass"} and len(found["RDMA_LATENCY_HIGH"]) == 4, found
    assert found["NCCL_ALLREDUCE_LATENCY_HIGH"] == {("pass", "all_reduce small messages")}, found
    assert not runs.strays["healthy"], runs.strays


def test_the_healthy_lab_is_advised_two_residents_on_its_measured_figures(runs: LatencyRuns) -> None:
    advice = runs.advise("healthy")
    assert advice.returncode == 0, advice.describe()
    data = advice.report
    assert data["headline"] == "two residents" and data["latency_measured"], data["headline"]
    measured = {f["name"]: f["value"] for f in data["figures"] if f["kind"] == "measured"}
    lat = {name: value for name, value in measured.items() if name.startswith("ib_write_lat ")}
    assert len(lat) == 4 and all(1.4 < v < 1.6 or 8.7 < v < 8.9 for v in lat.values()), lat
    assert measured.get("all_reduce 64 KiB") == pytest.approx(68.0, abs=0.5), measured
    assert all(f["source"].startswith("this bundle") for f in data["figures"] if f["kind"] == "measured")


def test_the_hotplug_lab_fails_the_latency_and_is_told_to_fix_the_link_first(runs: LatencyRuns) -> None:
    run = runs.results["hotplug-degraded"]
    assert run.returncode == 2, run.describe()
    found = _latency_findings(run)
    failing = {subject for status, subject in found["RDMA_LATENCY_HIGH"] if status == "fail"}
    assert len(failing) == 2 and all(s.endswith("ib_write_lat 48 KiB") for s in failing), found
    assert ("warn", "all_reduce small messages") in found["NCCL_ALLREDUCE_LATENCY_HIGH"], found
    advice = runs.advise("hotplug-degraded")
    assert advice.returncode == 2, advice.describe()
    assert advice.report["headline"] == "fix the link first", advice.report["headline"]
    assert any("RDMA_LATENCY_HIGH" in str(item) for item in advice.report["fix_first"]), advice.report["fix_first"]
    assert not runs.strays["hotplug-degraded"], runs.strays

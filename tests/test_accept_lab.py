"""`linkcheck accept` end to end against the two-node lab (emulated ib_write_bw and all_gather_perf).

Three labs at once, each with one `accept --repetitions 2` and a copy of dgx-spark-pair with 2 s rounds:
the healthy pair passes (exit 0); the hot-plug state fails with its finding (exit 2); a pair without
all_gather_perf has no NCCL measurement and is inconclusive (exit 3), never a pass.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from linkcheck.accept.profile import BUILTIN_DIR
from tests.lab import Lab
from tests.lab.scenario import specs_for_scenario

if TYPE_CHECKING:
    from tests.conftest import CliRun, Live

pytestmark = pytest.mark.skipif(shutil.which("mpirun") is None, reason="mpirun not installed (openmpi-bin)")

REPETITIONS = 2
RUNS = {  # name -> (lab scenario, tools missing on both nodes, output format)
    "healthy": ("healthy", frozenset(), "console"),
    "hotplug-degraded": ("hotplug-degraded", frozenset(), "json"),
    "no-nccl": ("healthy", frozenset({"all_gather_perf"}), "json"),
}


def _profile(work: Path) -> Path:
    text = (BUILTIN_DIR / "dgx-spark-pair.yaml").read_text(encoding="utf-8")
    short = text.replace("rdma: {duration_s: 10,", "rdma: {duration_s: 2,")
    assert short != text
    path = work / "lab-profile.yaml"
    path.write_text(short, encoding="utf-8")
    return path


class AcceptRuns:
    def __init__(self, make_lab: Callable[..., Lab], live: Live, tmp: pytest.TempPathFactory) -> None:
        self.live, self.labs, self.saved, self.args = live, {}, {}, {}
        started = {}
        for name, (scenario, missing, fmt) in RUNS.items():
            work = tmp.mktemp(name)
            specs = [replace(s, missing_tools=missing) for s in specs_for_scenario(scenario, work / "models")]
            lab = self.labs[name] = make_lab(specs)
            config = live.lab_config(lab, work / "linkcheck.yaml", nodes={"a": {"target": "a"}, "b": {"target": "b"}})
            self.saved[name] = work / "saved"
            self.args[name] = ("accept", "--profile", str(_profile(work)), "--repetitions", str(REPETITIONS),
                               "-c", str(config), "--save", str(self.saved[name]), "-f", fmt)
        for name, args in self.args.items():
            started[name] = live.start(*args)
        self.results: dict[str, CliRun] = {}
        for name, handle in started.items():
            self.results[name] = live.wait(handle, self.args[name], timeout=400)
            self.labs[name].down()

    def acceptance(self, name: str) -> dict[str, Any]:
        data = json.loads((self.saved[name] / "acceptance.json").read_text(encoding="utf-8"))
        assert isinstance(data, dict)
        return data


@pytest.fixture(scope="module")
def runs(module_lab_factory: Callable[..., Lab], live: Live,
         tmp_path_factory: pytest.TempPathFactory) -> Iterator[AcceptRuns]:
    yield AcceptRuns(module_lab_factory, live, tmp_path_factory)


def _statuses(doc: dict[str, Any]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for check in doc["checks"]:
        out.setdefault(check["id"], set()).add(check["status"])
    return out


def test_healthy_pair_passes(runs: AcceptRuns, live: Live) -> None:
    run = runs.results["healthy"]
    assert run.returncode == 0, run.describe()
    assert run.stderr.splitlines()[0].startswith("linkcheck accept: planned wall time ~"), run.stderr
    assert "6 ib_write_bw rounds of 2 s x 2 repetitions" in run.stderr
    assert "acceptance: PASS exit 0 (profile dgx-spark-pair" in run.stdout
    doc = runs.acceptance("healthy")
    assert doc["verdict"] == "PASS" and doc["test"]["repetitions"] == REPETITIONS
    assert set().union(*_statuses(doc).values()) == {"PASS"}
    rdma = [c for c in doc["checks"] if c["id"].startswith("rdma_")]
    assert len(rdma) == 4 + 4 + 2 and all(c["measured"]["samples"] == REPETITIONS for c in rdma)
    assert all(c["measured"]["min"] > 90 for c in rdma if c["id"] != "rdma_concurrent_total_gbps")
    verify = live.run("verify", str(runs.saved["healthy"]))
    assert verify.returncode == 0, verify.stdout
    report = live.run("report", str(runs.saved["healthy"]), "--format", "json").report
    rounds = {r["round_id"] for r in report["bench"]["rdma"]}
    assert len(report["bench"]["rdma"]) == 8 * REPETITIONS and len(rounds) == 6 * REPETITIONS, rounds
    assert report["acceptance"]["checks"] == doc["checks"]


def test_hotplug_state_fails_with_its_finding(runs: AcceptRuns) -> None:
    run = runs.results["hotplug-degraded"]
    assert run.returncode == 2, run.describe()
    doc = runs.acceptance("hotplug-degraded")
    assert doc["verdict"] == "FAIL"
    statuses = _statuses(doc)
    assert statuses["rdma_alone_gbps"] == statuses["rdma_concurrent_total_gbps"] == {"FAIL"}
    assert {(f["id"], f["status"]) for f in doc["diagnosis"]["findings"]} >= {("LINK_HOTPLUG_DEGRADED", "fail")}
    assert run.report["acceptance"]["verdict"] == "FAIL"


def test_missing_nccl_measurement_is_inconclusive(runs: AcceptRuns) -> None:
    run = runs.results["no-nccl"]
    assert run.returncode == 3, run.describe()
    doc = runs.acceptance("no-nccl")
    assert doc["verdict"] == "INCONCLUSIVE"
    statuses = _statuses(doc)
    assert statuses["nccl_busbw_gbs"] == statuses["nccl_wrong"] == {"INCONCLUSIVE"}
    assert statuses["rdma_concurrent_total_gbps"] == {"PASS"}  # what was measured still passed
    assert "bench" in json.loads((runs.saved["no-nccl"] / "manifest.json").read_text())["collection_errors"]

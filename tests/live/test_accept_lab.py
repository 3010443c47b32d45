"""`linkcheck accept` end to end against the two-node lab (emulated ib_write_bw and all_gather_perf).

Each run has its own lab and a copy of dgx-spark-pair with 2 s rounds; PARALLEL runs go at once (they
mostly wait on -D seconds and perftest's handshake). The healthy pair, `accept --repetitions 2`, passes (exit 0)
with two samples in every check. With `--repetitions 1` (a verdict that one repetition decides needs no second):
the hot-plug state fails with its finding (exit 2); a pair without all_gather_perf has no NCCL measurement and is
inconclusive (exit 3), never a pass; every other trap scenario (tests/emulators/scenarios.py) fails (2) or degrades
(1) and names its finding in acceptance.json and in the report on stdout.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from linkcheck.accept.profile import BUILTIN_DIR
from tests.lab import Lab
from tests.lab.mgmt import batch_lock
from tests.lab.scenario import specs_for_scenario

if TYPE_CHECKING:
    from tests.live.conftest import CliRun, Live

pytestmark = [pytest.mark.lab,  # builds the two-node lab
              # One worker makes the runs every test reads (`--dist loadgroup`); the same one as test_bench_lab's, whose
              # batch also holds the batch lock for its whole module: on two workers one would wait out the other.
              pytest.mark.xdist_group("lab-batches"),
              pytest.mark.skipif(shutil.which("mpirun") is None, reason="mpirun not installed (openmpi-bin)")]

REPETITIONS = 2
PARALLEL = 4  # six at once on 2 CPUs once lost an SSH session to load (CI); four leave the nodes room
RUNS = {  # name -> (lab scenario, tools missing on both nodes, output format, repetitions)
    "healthy": ("healthy", frozenset(), "console", REPETITIONS),
    "hotplug-degraded": ("hotplug-degraded", frozenset(), "json", 1),
    "no-nccl": ("healthy", frozenset({"all_gather_perf"}), "json", 1),
}
# Each trap scenario: the exit code of its acceptance (2 FAIL, 1 DEGRADED) and the finding it must name with
# that finding's status. A warning-only trap still fails the acceptance where a profile check judges the same
# fact (an unapproved cable, firmware that differs).
TRAPS = {
    "single-pcie-path": (2, "SINGLE_PCIE_PATH", "fail"),
    "gid-stale": (2, "GID_INDEX_STALE", "fail"),
    "mtu-mismatch": (2, "MTU_MISMATCH", "fail"),
    "twins-same-subnet": (1, "TWINS_SAME_SUBNET", "warn"),
    "nccl-socket-fallback": (2, "NCCL_SOCKET_FALLBACK", "fail"),
    "link-below-nominal": (2, "LINK_BELOW_NOMINAL", "fail"),
    "unapproved-cable": (2, "CABLE_NOT_APPROVED", "warn"),
    "link-down": (2, "LINK_DOWN", "fail"),
    "nccl-hca-pairing": (2, "NCCL_HCA_PAIRING", "fail"),
    "nccl-hca-uncabled": (1, "NCCL_HCA_UNCABLED", "warn"),
    "nodes-differ": (2, "NODES_DIFFER", "warn"),
    "netplan-not-applied": (1, "NETPLAN_NOT_APPLIED", "warn"),
    "fec-off": (1, "FEC_NOT_RS", "warn"),
}
RUNS.update({name: (name, frozenset(), "json", 1) for name in TRAPS})


def _profile(work: Path) -> Path:
    text = (BUILTIN_DIR / "dgx-spark-pair.yaml").read_text(encoding="utf-8")
    short = text.replace("rdma: {duration_s: 10,", "rdma: {duration_s: 2,")
    assert short != text
    path = work / "lab-profile.yaml"
    path.write_text(short, encoding="utf-8")
    return path


class AcceptRuns:
    """Every run of RUNS, at most PARALLEL at once, each lab built just before its run and torn down after it."""

    def __init__(self, make_lab: Callable[..., Lab], live: Live, tmp: pytest.TempPathFactory) -> None:
        self.live, self.make_lab, self.tmp = live, make_lab, tmp
        self.labs: dict[str, Lab] = {}
        self.saved: dict[str, Path] = {}
        self.args: dict[str, tuple[str, ...]] = {}
        self.results: dict[str, CliRun] = {}
        waiting = list(RUNS)  # the longest run (two repetitions) first
        with ThreadPoolExecutor(PARALLEL) as pool:
            running: dict[Future[CliRun], str] = {}
            while waiting or running:
                while waiting and len(running) < PARALLEL:
                    name = waiting.pop(0)
                    handle = live.start(*self._prepare(name))
                    running[pool.submit(live.wait, handle, self.args[name], 400)] = name
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    name = running.pop(future)
                    self.results[name] = future.result()
                    self.labs[name].down()

    def _prepare(self, name: str) -> tuple[str, ...]:
        scenario, missing, fmt, repetitions = RUNS[name]
        work = self.tmp.mktemp(name)
        specs = [replace(s, missing_tools=missing) for s in specs_for_scenario(scenario, work / "models")]
        lab = self.labs[name] = self.make_lab(specs)
        config = self.live.lab_config(lab, work / "linkcheck.yaml",
                                      nodes={"a": {"target": "a"}, "b": {"target": "b"}})
        self.saved[name] = work / "saved"
        self.args[name] = ("accept", "--profile", str(_profile(work)), "--repetitions", str(repetitions),
                           "-c", str(config), "--save", str(self.saved[name]), "-f", fmt)
        return self.args[name]

    def acceptance(self, name: str) -> dict[str, Any]:
        data = json.loads((self.saved[name] / "acceptance.json").read_text(encoding="utf-8"))
        assert isinstance(data, dict)
        return data


@pytest.fixture(scope="module")
def runs(module_lab_factory: Callable[..., Lab], live: Live,
         tmp_path_factory: pytest.TempPathFactory) -> Iterator[AcceptRuns]:
    with batch_lock():  # PARALLEL labs at once: never beside another module's batch (tests/lab/mgmt.py)
        yield AcceptRuns(module_lab_factory, live, tmp_path_factory)


def _statuses(doc: dict[str, Any]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for check in doc["checks"]:
        out.setdefault(check["id"], set()).add(check["status"])
    return out


def test_healthy_pair_passes(runs: AcceptRuns, live: Live) -> None:
    run = runs.results["healthy"]
    assert run.returncode == 0, run.describe()
    # The run said before the inspection, then its plan once the inspection showed the pair's one cable.
    lines = run.stderr.splitlines()
    assert lines[0].startswith("accepting 2 nodes: inspection, then the profile of the layout they show"), lines
    said = " ".join(run.stderr.split())  # the console wraps long lines
    assert said.count("linkcheck accept: planned wall time ~") == 1, run.stderr
    assert "(1 test in 6 ib_write_bw rounds of 2 s x 2 repetitions, all_gather_perf across every node" in said
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


@pytest.mark.parametrize("name", sorted(TRAPS))
def test_each_trap_fails_or_degrades_with_its_finding(runs: AcceptRuns, name: str) -> None:
    code, rule, status = TRAPS[name]
    run = runs.results[name]
    assert run.returncode == code, run.describe()
    doc = runs.acceptance(name)
    assert doc["verdict"] == {2: "FAIL", 1: "DEGRADED"}[code] and doc["exit_code"] == code
    assert (rule, status) in {(f["id"], f["status"]) for f in doc["diagnosis"]["findings"]}, doc["diagnosis"]
    assert {(rule, status)} <= {(f["id"], f["status"]) for f in run.report["findings"]}
    assert run.report["acceptance"]["verdict"] == doc["verdict"]


def test_a_down_twin_leaves_its_path_untested_and_the_other_measured(runs: AcceptRuns) -> None:
    doc = runs.acceptance("link-down")
    alone = [c for c in doc["checks"] if c["id"] == "rdma_alone_gbps"]
    measured = [c for c in alone if c["status"] == "PASS"]
    untested = [c for c in alone if c["status"] == "INCONCLUSIVE"]
    assert len(measured) == 2 and all(c["measured"]["min"] > 90 for c in measured), alone  # both directions
    assert len(untested) == 2 and all("no carrier" in c["reason"] for c in untested), untested
    manifest = json.loads((runs.saved["link-down"] / "manifest.json").read_text())
    assert "bench" not in manifest["collection_errors"], manifest["collection_errors"]

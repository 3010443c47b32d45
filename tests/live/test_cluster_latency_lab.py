"""The latency test over a cluster in the lab: `check --latency` and `bench latency` over the ring of three, real
SSH into each node's namespace, the emulated ib_write_lat between them and a real mpirun of the emulated
all_reduce_perf across the three ranks. Every path of every cable is measured at 2 B and 48 KiB, one run at a time
across the whole cluster; the hot-plugged cable fails RDMA_LATENCY_HIGH on that cable alone; the bundle judged
offline says what the run said; `--anonymize` saves the copy `linkcheck anonymize` makes, with no node's name or
address in it; no process of ours is left on any node."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from tests.conftest import InProcessCli
    from tests.live.conftest import ClusterFactory

pytestmark = [pytest.mark.lab,
              pytest.mark.skipif(shutil.which("mpirun") is None, reason="mpirun not installed (openmpi-bin)")]

CABLES = {"a:p0<->b:p1", "a:p1<->c:p0", "b:p0<->c:p1"}
LATENCY_RULES = ("RDMA_LATENCY_HIGH", "NCCL_ALLREDUCE_LATENCY_HIGH")
OURS = ("ib_write_lat", "all_reduce_perf", "mpirun")  # what a latency run starts on a node


def _captures(bundle: Path) -> list[dict[str, Any]]:
    data = json.loads((bundle / "manifest.json").read_text(encoding="utf-8"))
    return [c for c in data["captures"] if c["meta"].get("kind") == "latency"]


def _latency_findings(data: dict[str, Any]) -> dict[str, set[tuple[str, str, str]]]:
    """Each test's latency findings: label -> (rule, status, subject)."""
    return {t["label"]: {(f["id"], f["status"], f["subject"]) for f in t["findings"] if f["id"] in LATENCY_RULES}
            for t in data["tests"]}



def _judged(report: dict[str, Any]) -> dict[str, Any]:
    """A report but for when it was written (`created`): what a bundle judged again must say exactly."""
    return {k: v for k, v in report.items() if k != "created"}

def test_check_latency_over_a_ring_measures_every_path_alone_and_names_the_hot_plugged_cable(
        cluster_factory: ClusterFactory, cli: InProcessCli, tmp_path: Path) -> None:
    ring = cluster_factory("ring3-hotplug")
    bundle = tmp_path / "bundle"
    run = cli("check", *ring.args, "--latency", "-f", "json", "--save", str(bundle), timeout=300)
    assert run.stdout, run.stderr
    data = json.loads(run.stdout)
    assert run.returncode == 2, (data["traffic_error"], [(t["label"], t["state"], t["problem"]) for t in data["tests"]])
    assert {t["label"] for t in data["tests"]} == CABLES and data["nccl"] is None
    # No rate measured: each test's state is its latency's (`slow` where its rules failed).
    assert {t["label"]: t["state"] for t in data["tests"]} == {
        label: "slow" if label == "a:p0<->b:p1" else "pass" for label in CABLES}
    lat = [c for c in _captures(bundle) if c["spec"] == "ib_write_lat"]
    clients = [c for c in lat if c["meta"]["role"] == "client"]
    # Both paths of each of the three cables at both sizes, from the cable's first end, each answered.
    assert len(clients) == 12 and len(lat) == 24, [c["command"] for c in lat]
    assert {(c["meta"]["path"].split("<->")[0].split(":")[0], c["meta"]["size_bytes"]) for c in clients} == {
        (n, s) for n in "ab" for s in ("2", "49152")}
    assert all(c["exit_status"] == 0 and c["stdout"] for c in lat), lat
    # One run at a time across the whole cluster: a run starts only once the run before has ended on both nodes.
    by_round: dict[str, tuple[float, float]] = {}
    for c in lat:
        end = float(c["meta"]["exited_at"])
        start = end - float(c["meta"]["elapsed_s"])
        low, high = by_round.get(c["meta"]["round"], (start, end))
        by_round[c["meta"]["round"]] = (min(low, start), max(high, end))
    ordered = sorted(by_round.values())
    # A start is the node's exit time less `elapsed_s`, which runs until linkcheck saw the exit (its poll): it reads
    # early by that lag, which a loaded machine stretches past 50 ms; half a second still tells runs side by side.
    assert len(ordered) == 12 and all(a[1] <= b[0] + 0.5 for a, b in zip(ordered, ordered[1:], strict=False)), ordered
    # The small all_reduce ran once, across all three ranks, from the head.
    reduce = [c for c in _captures(bundle) if c["spec"] == "all_reduce_perf"]
    assert len(reduce) == 1 and reduce[0]["exit_status"] == 0 and reduce[0]["meta"]["nodes"] == "a,b,c", reduce
    assert "-b 16384 -e 65536 -f 2 -g 1 -n 200 -w 20" in reduce[0]["command"]
    # Judged per cable by the pair's rules: the hot-plugged cable's two 48 KiB runs fail, nothing else does.
    found = _latency_findings(data)
    failing = {(label, subject) for label, fs in found.items() for rule, status, subject in fs if status == "fail"}
    assert {label for label, _ in failing} == {"a:p0<->b:p1"}, found
    assert len(failing) == 2 and all(s.endswith("ib_write_lat 48 KiB") for _, s in failing), failing
    for label in CABLES - {"a:p0<->b:p1"}:
        assert {status for rule, status, _ in found[label] if rule == "RDMA_LATENCY_HIGH"} == {"pass"}, found[label]
        assert len([r for r, _, _ in found[label] if r == "RDMA_LATENCY_HIGH"]) == 4, found[label]
    # The all_reduce across the nodes, healthy, passes on every cable that carries it.
    assert all(("NCCL_ALLREDUCE_LATENCY_HIGH", "pass", "all_reduce small messages") in fs for fs in found.values())
    ring.assert_none_running(*OURS)
    # Offline, the saved bundle says what the check said; advise reads the measured latency.
    assert cli("verify", str(bundle)).returncode == 0
    again = cli("diagnose", str(bundle), "-f", "json")
    assert again.returncode == 2 and _judged(json.loads(again.stdout)) == _judged(data)
    advice = cli("advise", str(bundle), "--model-gib", "60", "--concurrency", "64", "-f", "json")
    assert advice.returncode == 2, advice.stderr
    report = json.loads(advice.stdout)
    assert report["headline"] == "fix the link first" and report["latency_measured"], report
    assert any("RDMA_LATENCY_HIGH" in str(item) for item in report["fix_first"]), report["fix_first"]


def test_bench_latency_anonymize_over_a_ring_saves_the_copy_anonymize_makes(
        cluster_factory: ClusterFactory, cli: InProcessCli, tmp_path: Path) -> None:
    ring = cluster_factory("ring3")
    saved = tmp_path / "anon"
    run = cli("bench", "latency", *ring.args, "--anonymize", "-f", "json", "--save", str(saved),
              timeout=300)
    assert run.stdout, run.stderr
    data = json.loads(run.stdout)
    assert run.returncode == 0, [(t["label"], t["state"], t["problem"], t["findings"]) for t in data["tests"]]
    # The report on screen keeps the real names; the saved copy holds none of them.
    assert {t["label"] for t in data["tests"]} == CABLES and {t["state"] for t in data["tests"]} == {"pass"}
    assert cli("verify", str(saved)).returncode == 0
    text = "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in saved.rglob("*") if p.is_file())
    for name in ring.names:
        assert f"spark-{name}" not in text
    assert "198.18." not in text  # the lab's addresses, the data subnets and every target
    record = json.loads((saved / "cluster.json").read_text(encoding="utf-8"))
    assert [h["name"] for h in record["hosts"]] == ["n1", "n2", "n3"] and record["latency"] is True
    assert not list(tmp_path.glob("linkcheck-*"))
    # Judged offline, the copy gives the run's verdict and cables, renamed as `linkcheck anonymize` renames them.
    again = cli("diagnose", str(saved), "-f", "json")
    judged = json.loads(again.stdout)
    assert again.returncode == 0 and {t["label"] for t in judged["tests"]} == {
        "n1:p0<->n2:p1", "n1:p1<->n3:p0", "n2:p0<->n3:p1"}
    assert sorted((t["state"], t["verdict"]) for t in judged["tests"]) == sorted(
        (t["state"], t["verdict"]) for t in data["tests"]), judged["tests"]
    assert [len(_latency_findings(judged)[t]) for t in sorted(_latency_findings(judged))] == [5, 5, 5]
    ring.assert_none_running(*OURS)


def test_bench_latency_over_a_ring_says_its_plan_and_its_progress(cluster_factory: ClusterFactory,
                                                                   cli: InProcessCli, tmp_path: Path) -> None:
    """On the console the latency test alone says its planned wall time once the schedule is known, as a pair's
    `bench latency` does, then its runs as they go."""
    ring = cluster_factory("ring3")
    run = cli("bench", "latency", *ring.args, "--save", str(tmp_path / "saved"), timeout=300)
    said = " ".join(run.stderr.split())  # the console wraps its lines
    assert run.returncode == 0, run.stdout + run.stderr
    assert ("linkcheck bench latency: planned wall time ~21 s after the inspection (12 ib_write_lat runs one at a "
            "time (2 B and 48 KiB per path) and all_reduce_perf 16-64 KiB across every node (~20 s))") in said, said
    assert "latency: 12 ib_write_lat runs one at a time" in said and "latency: 12 of 12 ib_write_lat runs done" in said
    assert "ib_write_bw" not in said, said  # no round is planned or said
    ring.assert_none_running(*OURS)

"""`linkcheck accept` over a cluster in the lab: three nodes over real SSH, the emulated ib_write_bw in the
schedule's rounds, repeated, and the emulated all_gather_perf across the three nodes under mpirun.

A copy of dgx-spark-ring3 with 1 s rounds judges the runs. The healthy ring is accepted with every test and the
NCCL checks passing, the record covered by `verify`; a ring with a hot-plugged cable fails on that cable alone; a
profile written for a switch is refused before any traffic; a node that cannot be inspected leaves the acceptance
inconclusive, with the tests it is not in still measured. The copy with `latency: true` runs the latency test once,
on every path of every cable, and judges each cable by it; a node without ib_write_lat leaves it inconclusive, said
in one line.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from linkcheck.accept.profile import BUILTIN_DIR
from tests.lab.scenario import specs_for_scenario

if TYPE_CHECKING:
    from tests.conftest import InProcessCli
    from tests.live.conftest import ClusterFactory, ClusterLab

pytestmark = pytest.mark.lab

RING = ["a:p0<->b:p1", "a:p1<->c:p0", "b:p0<->c:p1"]


def _profile(tmp_path: Path, repetitions: int, latency: bool = False) -> Path:
    """A copy of dgx-spark-ring3 with 1 s rounds, `repetitions` and, with `latency`, `latency: true` (as a user would
    add it to the copy)."""
    text = (BUILTIN_DIR / "dgx-spark-ring3.yaml").read_text(encoding="utf-8")
    short = text.replace("rdma: {duration_s: 10,", "rdma: {duration_s: 1,").replace(
        "repetitions: 3 ", f"repetitions: {repetitions} ")
    if latency:
        short = short.replace("  nccl: {max_bytes: 17179869184}", "  nccl: {max_bytes: 17179869184}\n  latency: true")
        assert "  latency: true" in short
    assert short.count("duration_s: 1,") == 1 and f"repetitions: {repetitions} " in short
    profile = tmp_path / "ring3-lab.yaml"
    profile.write_text(short, encoding="utf-8")
    return profile


def _accept(cli: InProcessCli, cluster: ClusterLab, save: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    """The run's exit code, its acceptance as its JSON report holds it (the report `diagnose` gives the saved
    bundle), and stderr."""
    run = cli("accept", *cluster.args, "-f", "json", "--save", str(save), *args, timeout=400)
    return run.returncode, json.loads(run.stdout)["acceptance"] if run.stdout.strip() else {}, run.stderr


def _verdicts(record: dict[str, Any]) -> dict[str, str]:
    return {t["test"]: t["verdict"] for t in record["cluster"]["tests"]}


def test_a_healthy_ring_is_accepted_and_a_lost_node_leaves_it_inconclusive(
        cluster_factory: ClusterFactory, cli: InProcessCli, tmp_path: Path) -> None:
    cluster = cluster_factory("ring3")
    lab = cluster.lab
    profile = _profile(tmp_path, repetitions=2)

    code, record, err = _accept(cli, cluster, tmp_path / "healthy", "--profile", str(profile))
    assert code == 0, (err, [c for c in record.get("checks", []) if c["status"] != "PASS"])
    assert record["verdict"] == "PASS" and record["cluster"]["layout"] == "ring3"
    assert _verdicts(record) == dict.fromkeys(RING, "PASS")
    # Every path of every test, each way, alone and both at once, twice; the NCCL run across the three nodes.
    alone = [c for c in record["checks"] if c["id"] == "rdma_alone_gbps"]
    assert len(alone) == 3 * 2 * 2 and all(c["measured"]["samples"] == 2 for c in alone)
    assert {c["subject"] for c in record["checks"] if c["id"].startswith("nccl_")} == {"all_gather across 3 nodes"}
    assert record["standard"]["profile"] == "dgx-spark-ring3" and record["standard"]["non_standard"]
    # The record is the bundle's: verify covers it, and every end of every cable reads one serial per cable.
    saved = json.loads((tmp_path / "healthy" / "acceptance.json").read_text(encoding="utf-8"))
    assert saved["verdict"] == "PASS"
    verify = cli("verify", str(tmp_path / "healthy"))
    assert verify.returncode == 0, verify.stdout + verify.stderr
    serials = {(e["test"], e["serial"]) for e in saved["evidence"]["cable"]}
    assert len(serials) == 3 and {t for t, _ in serials} == set(RING)
    cluster.assert_none_running("ib_write_bw", "all_gather_perf")

    # A profile for a switch is refused once the nodes show a ring, before any traffic.
    code, _, err = _accept(cli, cluster, tmp_path / "switch", "--profile", "dgx-spark-switch")
    assert code == 4 and "the nodes show a ring of 3" in err and "--profile dgx-spark-ring3" in err, err
    assert not (tmp_path / "switch").exists()

    lab.stop_sshd("c")
    code, _, err = _accept(cli, cluster, tmp_path / "lost")
    assert code == 3 and "c not inspected" in err and "give --profile" in err, err
    code, record, err = _accept(cli, cluster, tmp_path / "lost-given", "--profile", str(profile), "-r", "1")
    assert code == 3 and record["verdict"] == "INCONCLUSIVE", err
    verdicts = _verdicts(record)
    assert verdicts.pop("a:p0<->b:p1") == "PASS" and set(verdicts.values()) == {"INCONCLUSIVE"}, record["cluster"]
    assert any("node c was not inspected" in n for n in record["notes"])


def test_a_ring_with_a_hot_plugged_cable_fails_on_that_cable_alone(cluster_factory: ClusterFactory,
                                                                     cli: InProcessCli, tmp_path: Path) -> None:
    cluster = cluster_factory("ring3-hotplug")
    profile = _profile(tmp_path, repetitions=1)
    code, record, err = _accept(cli, cluster, tmp_path / "hotplug", "--profile", str(profile))
    assert code == 2, err
    assert _verdicts(record) == {"a:p0<->b:p1": "FAIL", "a:p1<->c:p0": "PASS", "b:p0<->c:p1": "PASS"}
    failed = {(c["id"], c["subject"].split(" ")[0]) for c in record["checks"] if c["status"] == "FAIL"}
    assert ("rdma_concurrent_total_gbps", "a:p0<->b:p1") in failed
    assert {subject for _, subject in failed} == {"a:p0<->b:p1"}, failed
    assert ("LINK_HOTPLUG_DEGRADED", "fail") in {(f["id"], f["status"]) for f in record["diagnosis"]["findings"]}
    # Each test is in its two nodes' history with the acceptance's verdict beside it, as a pair's accept run is.
    log = cli("history", "-f", "json")
    assert log.returncode == 0, log.stderr
    rows = json.loads(log.stdout)
    assert {r["cable"] for r in rows} == set(_verdicts(record)) and {r["command"] for r in rows} == {"accept"}, rows
    assert {r["acceptance"] for r in rows} == {"FAIL"}, rows
    assert [r["verdict"] for r in rows if r["cable"] == "a:p0<->b:p1"] == ["fail"], rows


def _latency_runs(saved: Path) -> list[dict[str, Any]]:
    data = json.loads((saved / "manifest.json").read_text(encoding="utf-8"))
    return [c for c in data["captures"] if c["meta"].get("kind") == "latency"]


def test_a_profiles_latency_test_runs_on_every_cable_and_the_acceptance_judges_it(
        cluster_factory: ClusterFactory, cli: InProcessCli, tmp_path: Path) -> None:
    """A copy of the ring's profile with `latency: true` over the hot-plugged ring: after the rounds and NCCL, every
    path of every cable at 2 B and 48 KiB and the all_reduce across the three nodes, once; the hot-plugged cable's
    48 KiB writes fail RDMA_LATENCY_HIGH in the acceptance, as a pair's acceptance counts that finding."""
    cluster = cluster_factory("ring3-hotplug")
    profile = _profile(tmp_path, repetitions=1, latency=True)
    saved = tmp_path / "latency"
    run = cli("accept", *cluster.args, "--save", str(saved), "--profile", str(profile), timeout=400)
    assert run.returncode == 2, run.stdout + run.stderr
    # Said before the run and once the schedule is known, as a pair's plan says it (the console wraps long lines).
    said = " ".join(run.stderr.split())
    assert "then ib_write_lat per path of every cable, one run at a time" in said, run.stderr
    assert ("12 ib_write_lat runs one at a time (2 B and 48 KiB per path) and all_reduce_perf 16-64 KiB across "
            "every node") in said, run.stderr
    assert "with the latency test)" in run.stdout and "ACCEPTANCE: FAIL" in run.stdout
    lat = [c for c in _latency_runs(saved) if c["spec"] == "ib_write_lat"]
    clients = [c for c in lat if c["meta"]["role"] == "client"]
    # Every path of every cable at both sizes, once (not per repetition), each answered.
    assert len(clients) == 12 and len(lat) == 24 and all(c["exit_status"] == 0 for c in lat), lat
    assert {c["meta"]["path"].split("<->")[0].split(":")[0] + c["meta"]["path"].split("<->")[1].split(":")[0]
            for c in clients} == {"ab", "bc", "ac"}
    reduce = [c for c in _latency_runs(saved) if c["spec"] == "all_reduce_perf"]
    assert len(reduce) == 1 and reduce[0]["exit_status"] == 0 and reduce[0]["meta"]["nodes"] == "a,b,c"
    record = json.loads((saved / "acceptance.json").read_text(encoding="utf-8"))
    assert record["test"]["latency"] is True and record["verdict"] == "FAIL"
    failing = [f for f in record["diagnosis"]["findings"] if f["id"] == "RDMA_LATENCY_HIGH"]
    assert len(failing) == 2 and all(f["status"] == "fail" and f["subject"].startswith("a:p0<->b:p1 ")
                                     and f["subject"].endswith("ib_write_lat 48 KiB") for f in failing), failing
    runs = [r for r in record["evidence"]["runs"] if r["tool"] in ("ib_write_lat", "all_reduce_perf")]
    assert len(runs) == 25, runs  # every latency process, as the bundle recorded its command line
    assert cli("verify", str(saved)).returncode == 0
    # The saved bundle's report shows the figures beside the acceptance that judged them.
    report = json.loads(cli("report", str(saved), "-f", "json").stdout)
    assert report["acceptance"]["test"]["latency"] is True
    judged = {t["label"]: {f["status"] for f in t["findings"] if f["id"] == "RDMA_LATENCY_HIGH"}
              for t in report["tests"]}
    assert judged == {"a:p0<->b:p1": {"pass", "fail"}, "a:p1<->c:p0": {"pass"}, "b:p0<->c:p1": {"pass"}}, judged
    assert "## Latency" in cli("report", str(saved), "-f", "markdown").stdout
    cluster.assert_none_running("ib_write_lat", "all_reduce_perf", "mpirun")


def test_a_node_without_ib_write_lat_leaves_the_acceptance_inconclusive_in_one_line(
        cluster_factory: ClusterFactory, cli: InProcessCli, tmp_path: Path) -> None:
    specs = specs_for_scenario("ring3", tmp_path / "models")
    cluster = cluster_factory([replace(s, missing_tools=frozenset({"ib_write_lat"})) if s.name == "c" else s
                               for s in specs])
    profile = _profile(tmp_path, repetitions=1, latency=True)
    code, record, err = _accept(cli, cluster, tmp_path / "no-lat", "--profile", str(profile))
    assert code == 3 and record["verdict"] == "INCONCLUSIVE", err
    # One line naming the node, the tool and the fix, as a pair's missing ib_write_bw is said.
    said = [line for line in err.splitlines() if "ib_write_lat" in line]
    assert said == ["linkcheck: the latency test: traffic test stopped: node c: ib_write_lat not found (fix: sudo "
                    "apt-get install perftest)"], err
    assert "Traceback" not in err
    # The cable measured before the test stopped keeps its verdict; the two with node c never pass.
    verdicts = _verdicts(record)
    assert verdicts.pop("a:p0<->b:p1") == "PASS" and set(verdicts.values()) == {"INCONCLUSIVE"}, record["cluster"]
    assert any(n.startswith("the traffic test stopped: the latency test: traffic test stopped: node c: ib_write_lat "
                            "not found") for n in record["notes"]), record["notes"]
    server = [c for c in _latency_runs(tmp_path / "no-lat") if c["node"] == "c"]
    assert [c["exit_status"] for c in server] == [127], server  # recorded as the node answered
    cluster.assert_none_running("ib_write_lat", "all_reduce_perf", "mpirun")

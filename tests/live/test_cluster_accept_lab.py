"""`linkcheck accept` over a cluster in the lab: three nodes over real SSH, the emulated ib_write_bw in the
schedule's rounds, repeated, and the emulated all_gather_perf across the three nodes under mpirun.

A copy of dgx-spark-ring3 with 1 s rounds judges the runs. The healthy ring is accepted with every test and the
NCCL checks passing, the record covered by `verify`; a ring with a hot-plugged cable fails on that cable alone; a
profile written for a switch is refused before any traffic; a node that cannot be inspected leaves the acceptance
inconclusive, with the tests it is not in still measured.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from linkcheck.accept.profile import BUILTIN_DIR
from tests.lab.lab import Lab
from tests.lab.pytest_plugin import LabFactory

if TYPE_CHECKING:
    from tests.conftest import InProcessCli

pytestmark = pytest.mark.lab

NODES = ("--node=a", "--node=b", "--node=c")
RING = ["a:p0<->b:p1", "a:p1<->c:p0", "b:p0<->c:p1"]


def _setup(lab: Lab, tmp_path: Path, repetitions: int) -> tuple[Path, Path]:
    config = tmp_path / "linkcheck.yaml"
    config.write_text(f"ssh: {{config: {lab.ssh_config}, known_hosts: {lab.known_hosts}}}\n", encoding="utf-8")
    text = (BUILTIN_DIR / "dgx-spark-ring3.yaml").read_text(encoding="utf-8")
    short = text.replace("rdma: {duration_s: 10,", "rdma: {duration_s: 1,").replace(
        "repetitions: 3 ", f"repetitions: {repetitions} ")
    assert short.count("duration_s: 1,") == 1 and f"repetitions: {repetitions} " in short
    profile = tmp_path / "ring3-lab.yaml"
    profile.write_text(short, encoding="utf-8")
    return config, profile


def _accept(cli: InProcessCli, config: Path, save: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    run = cli("accept", *NODES, "-c", str(config), "-f", "json", "--save", str(save), *args, timeout=400)
    return run.returncode, json.loads(run.stdout) if run.stdout.strip() else {}, run.stderr


def _verdicts(record: dict[str, Any]) -> dict[str, str]:
    return {t["test"]: t["verdict"] for t in record["cluster"]["tests"]}


def test_a_healthy_ring_is_accepted_and_a_lost_node_leaves_it_inconclusive(
        lab_factory: LabFactory, cli: InProcessCli, tmp_path: Path) -> None:
    lab = lab_factory("ring3")
    config, profile = _setup(lab, tmp_path, repetitions=2)

    code, record, err = _accept(cli, config, tmp_path / "healthy", "--profile", str(profile))
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
    assert all(lab.running(n, "ib_write_bw", "all_gather_perf") == [] for n in lab.nodes)

    # A profile for a switch is refused once the nodes show a ring, before any traffic.
    code, _, err = _accept(cli, config, tmp_path / "switch", "--profile", "dgx-spark-switch")
    assert code == 4 and "the nodes show a ring of 3" in err and "--profile dgx-spark-ring3" in err, err
    assert not (tmp_path / "switch").exists()

    lab.stop_sshd("c")
    code, _, err = _accept(cli, config, tmp_path / "lost")
    assert code == 3 and "c not inspected" in err and "give --profile" in err, err
    code, record, err = _accept(cli, config, tmp_path / "lost-given", "--profile", str(profile), "-r", "1")
    assert code == 3 and record["verdict"] == "INCONCLUSIVE", err
    verdicts = _verdicts(record)
    assert verdicts.pop("a:p0<->b:p1") == "PASS" and set(verdicts.values()) == {"INCONCLUSIVE"}, record["cluster"]
    assert any("node c was not inspected" in n for n in record["notes"])


def test_a_ring_with_a_hot_plugged_cable_fails_on_that_cable_alone(lab_factory: LabFactory, cli: InProcessCli,
                                                                     tmp_path: Path) -> None:
    lab = lab_factory("ring3-hotplug")
    config, profile = _setup(lab, tmp_path, repetitions=1)
    code, record, err = _accept(cli, config, tmp_path / "hotplug", "--profile", str(profile))
    assert code == 2, err
    assert _verdicts(record) == {"a:p0<->b:p1": "FAIL", "a:p1<->c:p0": "PASS", "b:p0<->c:p1": "PASS"}
    failed = {(c["id"], c["subject"].split(" ")[0]) for c in record["checks"] if c["status"] == "FAIL"}
    assert ("rdma_concurrent_total_gbps", "a:p0<->b:p1") in failed
    assert {subject for _, subject in failed} == {"a:p0<->b:p1"}, failed
    assert ("LINK_HOTPLUG_DEGRADED", "fail") in {(f["id"], f["status"]) for f in record["diagnosis"]["findings"]}

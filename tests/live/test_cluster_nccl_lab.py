"""NCCL across every node of a cluster in the lab: a real Open MPI mpirun on the head node starts one emulated
all_gather_perf rank per node over the nodes' real sshd (the lab's stand-in for nccl-tests: tests/emulators/
live_nccl.py); the ranks rendezvous over the data links and each prints its own NCCL INFO lines. A healthy ring of
three proves NET/IB on every rank; on a switch where a worker carries the head's NCCL_IB_HCA, linkcheck's run gives
each rank its own HCAs (NET/IB everywhere) while the inspection names the copied setting, and the same run with the
head's HCAs handed to that worker (what a launcher with one value for all does) names that node's rank on sockets."""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import pytest
from msgspec.structs import replace

from linkcheck.app.topology import cluster_facts
from linkcheck.bench.nccl import NcclOptions, cluster_mpirun_script, plan_cluster_nccl, plan_meta, run_cluster_nccl
from linkcheck.cluster.facts import ClusterFacts
from linkcheck.collect.collector import collect
from linkcheck.collect.specs import CLUSTER_SPECS, SPECS
from linkcheck.diagnose.engine import Diagnosis, diagnose
from linkcheck.diagnose.playbook import load_playbooks
from linkcheck.facts.nccl_ranks import KIND, cluster_nccl_facts
from linkcheck.model import Capture, Status, Verdict
from linkcheck.transport.base import Transport

if TYPE_CHECKING:
    from tests.live.conftest import ClusterFactory, ClusterLab

pytestmark = pytest.mark.lab

RULES = load_playbooks(kind="cluster")
NCCL_RULES = {"NCCL_SOCKET_FALLBACK", "NCCL_BUSBW_LOW"}
OPTIONS = NcclOptions(max_bytes=1 << 30, timeout_s=120)
RANKS = ("all_gather_perf", "orted")  # what a cluster's NCCL run starts on a node


@contextmanager
def _cluster(cluster: ClusterLab) -> Iterator[tuple[dict[str, Transport], ClusterFacts]]:
    with cluster.transports() as transports:
        result = collect(transports, timeout_s=90, specs=SPECS + CLUSTER_SPECS)
        assert result.errors == {}
        yield transports, cluster_facts(cluster.names, result.captures, {})


def _judge(facts: ClusterFacts, captures: list[Capture]) -> tuple[ClusterFacts, Diagnosis]:
    judged = replace(facts, nccl=cluster_nccl_facts(facts.nodes, captures, facts.topology.layout))
    return judged, diagnose(judged, RULES)


def _fired(diagnosis: Diagnosis) -> set[tuple[str, str]]:
    return {(f.rule_id, f.subject) for f in diagnosis.findings if f.status in (Status.WARN, Status.FAIL)}


def test_a_healthy_ring_of_three_runs_nccl_over_ib_on_every_rank(cluster_factory: ClusterFactory) -> None:
    ring = cluster_factory("ring3")
    with _cluster(ring) as (transports, facts):
        assert facts.topology.layout == "ring3"
        result = run_cluster_nccl(transports, facts, OPTIONS)
    assert result.error is None, result.error
    main = next(c for c in result.captures if c.meta.get("kind") == KIND and c.meta.get("format") == "text")
    # One mpirun from the head, one app context per node, subnet-aware routing on the ring.
    assert main.node == "a" and main.command.count(" : ") == 2
    assert main.command.count("NCCL_IB_SUBNET_AWARE_ROUTING=1") == 3 and "NCCL_ALGO" not in main.command
    judged, diagnosis = _judge(facts, result.captures)
    assert judged.nccl is not None and judged.nccl.problem is None
    assert [(r.node, r.host, r.network, r.ib_proven) for r in judged.nccl.ranks] == [
        ("a", "spark-a", "IB", True), ("b", "spark-b", "IB", True), ("c", "spark-c", "IB", True)]
    assert all(set(r.ib_devices) == set(r.own_hcas) and len(r.own_hcas) == 4 for r in judged.nccl.ranks)
    assert judged.nccl.busbw_gbs is not None and judged.nccl.busbw_gbs > 20
    assert not {f for f in _fired(diagnosis) if f[0] in NCCL_RULES}
    judged_rules = {(f.rule_id, f.status) for f in diagnosis.findings if f.rule_id in NCCL_RULES}
    assert judged_rules == {(r, Status.PASS) for r in NCCL_RULES}
    assert diagnosis.verdict is Verdict.PASS
    # nccl-tests' own header lists one rank per node, on the node's host (a run of independent 1-rank jobs would
    # list rank 0 alone).
    assert [ln.split()[8] for ln in main.stdout.splitlines() if ln.startswith("#  Rank")] == [
        "spark-a", "spark-b", "spark-c"]
    ring.assert_none_running(*RANKS)


def test_a_worker_with_the_heads_nccl_ib_hca_is_named(cluster_factory: ClusterFactory) -> None:
    switch = cluster_factory("switch3-hca-copied")
    with _cluster(switch) as (transports, facts):
        # linkcheck's own run hands each rank its node's cabled HCAs: b's are p0's, whatever b's environment says.
        result = run_cluster_nccl(transports, facts, OPTIONS)
        assert result.error is None, result.error
        judged, diagnosis = _judge(facts, result.captures)
        assert judged.nccl is not None and all(r.ib_proven for r in judged.nccl.ranks)
        b = judged.nccl.rank("b")
        assert b is not None and b.given_hca == "=roceP2p1s0f0,rocep1s0f0" and set(b.ib_devices) == set(b.own_hcas)
        # The inspection still names the copied setting on b, the node it is on.
        assert _fired(diagnosis) == {("NCCL_IB_HCA_COPIED", "node b")}

        # What one value for every rank does: the head's HCAs on b select no active port there, and b's own rank
        # falls back to sockets; the proof names b and no other node.
        plan = plan_cluster_nccl(facts, OPTIONS)
        copied = replace(plan, ranks=tuple(replace(r, hcas=plan.ranks[0].hcas) for r in plan.ranks))
        script = cluster_mpirun_script(copied, None)
        run = switch.lab.ssh("a", f"cd /tmp && sh -c {shlex.quote(script)}", timeout=120)
        cap = Capture("a", "all_gather_perf", script.splitlines()[-1], run.stdout, run.stderr, run.returncode,
                      arg="cluster-nccl", meta=plan_meta(copied, "copied", OPTIONS))
    judged, diagnosis = _judge(facts, [cap])
    assert judged.nccl is not None and judged.nccl.fell_back == ("b",)
    b = judged.nccl.rank("b")
    assert b is not None and b.no_ib_device and b.network == "Socket"
    fired = {f for f in _fired(diagnosis) if f[0] in NCCL_RULES}
    assert ("NCCL_SOCKET_FALLBACK", "node b") in fired
    assert {s for r, s in fired if r == "NCCL_SOCKET_FALLBACK"} == {"node b"}
    switch.assert_none_running(*RANKS)

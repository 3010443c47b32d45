"""The latency test's plan, commands and captures, its planned wall time and the profile key that asks for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from linkcheck.accept.budget import latency_seconds, plan_line, planned_seconds
from linkcheck.accept.profile import ProfileError, TestPlan, parse_profile, resolve_profile
from linkcheck.app.accept import traffic_request
from linkcheck.app.topology import cluster_facts
from linkcheck.bench.latency import LatencyOptions, cluster_allreduce, lat_argv, lat_meta, plan_latency
from linkcheck.bench.nccl import NcclOptions, plan_cluster_nccl
from linkcheck.bench.plan import bench_paths
from linkcheck.bundle.format import load_bundle
from linkcheck.facts.latency_facts import build_latency_facts
from linkcheck.facts.model import LinkFacts
from linkcheck.facts.pair import build_link_facts
from linkcheck.model import Capture
from tests.emulators.bench_perftest import PerftestRun, render_ib_write_lat

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _healthy() -> LinkFacts:
    return build_link_facts(load_bundle(FIXTURES / "healthy").captures)


def test_every_path_at_every_size_one_after_another_each_server_on_its_own_port() -> None:
    paths = bench_paths(_healthy())
    runs = plan_latency(paths, LatencyOptions(port_base=31000))
    assert [(r.path.key, r.size_bytes) for r in runs] == [(p.key, s) for p in paths for s in (2, 49152)]
    assert [r.port for r in runs] == [31000, 31001, 31002, 31003]
    client, server = runs[0].ends()
    assert (client.node, server.node) == ("a", "b")


def test_the_client_names_the_server_and_both_take_the_paths_device_gid_size_and_port() -> None:
    run = plan_latency(bench_paths(_healthy()), LatencyOptions(port_base=31000))[1]
    client, server = run.ends()
    argv = lat_argv(client, run.port, run.size_bytes, 1000, server.ip)
    assert argv[:1] == ["ib_write_lat"] and argv[-1] == server.ip
    assert " ".join(argv[1:-1]) == f"-d {client.rdma_dev} -i 1 -x {client.gid_index} -p 31001 -F -s 49152 -n 1000"
    assert lat_argv(server, run.port, run.size_bytes, 1000, None)[-2:] == ["-n", "1000"]


def test_the_captures_carry_what_the_latency_facts_read() -> None:
    link = _healthy()
    runs = plan_latency(bench_paths(link), LatencyOptions(port_base=31000))
    caps = []
    for i, run in enumerate(runs):
        for role in ("client", "server"):
            end = run.ends()[0 if role == "client" else 1]
            out, _, _ = render_ib_write_lat(PerftestRun(role, end.rdma_dev, end.gid_index, "::ffff:1.2.3.4",
                                                        "::ffff:1.2.3.5", 0.0, size_bytes=run.size_bytes,
                                                        iterations=1000), 1.5 + i)
            caps.append(Capture(end.node, "ib_write_lat", "ib_write_lat ...", out, "", 0,
                                meta=lat_meta(run, role, "r1")))
    facts, allreduce = build_latency_facts(caps, link.paths)
    assert [(f.path_key, f.size_bytes, f.typical_us, f.client_node) for f in facts] == [
        (r.path.key, r.size_bytes, 1.5 + i, "a") for i, r in enumerate(runs)]
    assert allreduce is None


def test_the_small_all_reduce_uses_the_all_gather_launcher_on_both_twins() -> None:
    captures = load_bundle(FIXTURES / "healthy").captures
    plan = plan_cluster_nccl(cluster_facts(["a", "b"], captures, {}), NcclOptions())
    job = cluster_allreduce(plan, LatencyOptions(), "r1")
    script, cap = job.script, job.template
    last = script.splitlines()[-1]
    assert "all_reduce_perf" in script and "all_gather_perf" not in script and "StrictHostKeyChecking" not in script
    assert "-b 16384 -e 65536 -f 2 -g 1 -n 200 -w 20" in last
    assert last.count("NCCL_IB_HCA==roceP2p1s0f1,rocep1s0f1 ") == 2  # each rank its own cabled twins
    assert "-J" not in script  # the facts read the text; nccl-tests' JSON holds rank 0's whole environment
    assert (cap.spec, cap.meta["kind"], cap.meta["format"]) == ("all_reduce_perf", "latency", "text")


def test_the_plan_says_the_latency_test_and_counts_its_time() -> None:
    assert latency_seconds(2) == 2 * 2 * 1.5 + 2.0  # four runs of ~1.5 s, then mpirun's start
    assert planned_seconds(latency=True) == planned_seconds() + latency_seconds(2)
    line = plan_line("check", latency=True)
    assert "4 ib_write_lat runs one at a time (2 B and 48 KiB per path) and all_reduce_perf 16-64 KiB (~8 s)" in line
    # the other tiers' lines and times do not move
    quick = plan_line("check --quick", duration_s=4, traffic_total=True, adaptive=True)
    assert "ib_write_lat" not in quick
    assert planned_seconds(duration_s=4, adaptive=True) == planned_seconds(duration_s=4, adaptive=True, latency=False)


PROFILE = """profile: with-latency
version: 1
description: the test and the latency test
test:
  latency: {value}
checks:
  rdma_alone_gbps:
    fail_below: {{value: 92, unit: Gb/s, source: "a floor"}}
"""


def test_a_profile_asks_for_the_latency_test_and_the_built_in_one_does_not() -> None:
    assert resolve_profile(None).test.latency is False
    assert traffic_request(resolve_profile(None), 3).latency is None
    profile = parse_profile(PROFILE.format(value="true"), "p.yaml")
    assert profile.test == TestPlan(latency=True)
    assert traffic_request(profile, 3).latency == LatencyOptions()


def test_a_latency_key_that_is_not_true_or_false_is_refused_at_its_line() -> None:
    with pytest.raises(ProfileError, match=r"p\.yaml:5: .*bool"):
        parse_profile(PROFILE.format(value="1"), "p.yaml")

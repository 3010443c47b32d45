"""Traffic-test planning, buffer sizing, secret scrubbing and how results become facts (no lab needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from msgspec.structs import replace

from linkcheck.app.topology import cluster_facts
from linkcheck.bench.nccl import NcclOptions, cluster_mpirun_script, plan_cluster_nccl, scrub_env, size_max_bytes
from linkcheck.bench.plan import RdmaOptions, bench_paths, plan_rounds
from linkcheck.bench.snapshot import snapshot_command
from linkcheck.bundle.format import load_bundle
from linkcheck.errors import BenchError
from linkcheck.facts.bench_facts import build_bench_facts
from linkcheck.facts.model import LinkFacts, NodeFacts
from linkcheck.facts.pair import build_link_facts
from linkcheck.model import Capture

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _healthy() -> LinkFacts:
    return build_link_facts(load_bundle(FIXTURES / "healthy").captures)


def test_rounds_cover_alone_concurrent_both_directions_with_unique_ports() -> None:
    paths = bench_paths(_healthy())
    assert len(paths) == 2
    rounds = plan_rounds(paths, RdmaOptions(port_base=30000))
    assert [(r.mode, r.direction, len(r.paths)) for r in rounds] == [
        ("alone", "a->b", 1), ("alone", "a->b", 1), ("concurrent", "a->b", 2),
        ("alone", "b->a", 1), ("alone", "b->a", 1), ("concurrent", "b->a", 2)]
    ports = [p for r in rounds for p in r.ports]
    assert len(ports) == len(set(ports)) and min(ports) == 30000
    client, server = rounds[0].paths[0].ends("a->b")
    assert (client.node, server.node) == ("a", "b") and client.gid_index == 3


def test_no_gid_means_no_bench() -> None:
    link = build_link_facts(load_bundle(FIXTURES / "gid-stale").captures)

    broken = replace(link.a, functions=tuple(replace(f, gid_index=None) for f in link.a.functions))
    with pytest.raises(BenchError, match="no RoCE v2 GID"):
        bench_paths(replace(link, a=broken, paths=tuple(replace(p, a=replace(p.a, gid_index=None))
                                                             for p in link.paths)))


def test_nccl_buffer_fits_free_memory() -> None:
    link = _healthy()

    small = replace(link, a=replace(link.a, mem_available_kib=4 * 1024 * 1024))  # 4 GiB free
    size = size_max_bytes(small, 16 << 30)
    assert size & (size - 1) == 0  # a power of two
    assert size * 2.5 <= 4 * 1024**3 * 0.25 < size * 2 * 2.5
    with pytest.raises(BenchError, match="MemAvailable unknown"):
        size_max_bytes(replace(link, b=NodeFacts(name="b")), 1 << 30)


def test_a_pairs_mpirun_keeps_host_keys_strict_and_gives_each_rank_both_twins() -> None:
    captures = load_bundle(FIXTURES / "healthy").captures
    plan = plan_cluster_nccl(cluster_facts(["a", "b"], captures, {}), NcclOptions(max_bytes=1 << 28))
    script = cluster_mpirun_script(plan, None)
    assert "StrictHostKeyChecking" not in script and "NCCL_DEBUG=INFO" in script
    assert [r.node for r in plan.ranks] == ["a", "b"] and plan.layout == "pair"
    assert script.count("-x NCCL_IB_HCA==roceP2p1s0f1,rocep1s0f1 ") == 2  # each rank its own cabled twins
    assert "-e 268435456" in script


def test_scrub_env_removes_secrets() -> None:
    text = json.dumps({"version": 3, "env": {"AWS_SECRET_ACCESS_KEY": "hunter2"}, "results": []})
    assert "hunter2" not in scrub_env(text)
    assert json.loads(scrub_env(text))["results"] == []
    assert "hunter2" not in scrub_env('{"env": {"K": "hunter2"')  # truncated JSON: dropped, not kept


def test_snapshot_command_refuses_unsafe_names() -> None:
    with pytest.raises(ValueError):
        snapshot_command(["mlx5_0; rm -rf /"], [])


def _rdma_cap(node: str, round_id: str, text: str, *, fmt: str = "text", local: str = "enp1s0f1np1",
              dev: str = "rocep1s0f1", rc: int = 0) -> Capture:
    arg = f"{round_id}.client.{dev}" + (".json" if fmt == "json" else "")
    return Capture(node, "ib_write_bw", "ib_write_bw ...", text, exit_status=rc, arg=arg,
                   meta={"kind": "rdma", "round": round_id, "mode": "alone", "direction": "a->b", "role": "client",
                         "local_netdev": local, "peer_netdev": local, "local_rdma_dev": dev, "report_gbits": "true",
                         "format": fmt})


ROW = (" #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
       " 1048576    58000            0.00               97.51 \t\t     0.011625\n")


def _snap(node: str, round_id: str, phase: str, carrier_changes: int, xmit: int) -> Capture:
    text = (f"/sys/class/infiniband/rocep1s0f1/ports/1/counters/port_xmit_data\t{xmit}\n"
            f"/sys/class/infiniband/rocep1s0f1/ports/1/counters/port_rcv_data\t0\n"
            f"/sys/class/infiniband/rocep1s0f1/ports/1/counters/link_downed\t0\n"
            f"/sys/class/net/enp1s0f1np1/carrier_changes\t{carrier_changes}\n")
    return Capture(node, "sysfs_counters", "snapshot", text, arg=f"{round_id}.{phase}",
                   meta={"kind": "snapshot", "round": round_id, "phase": phase})


def test_flap_during_round_voids_its_number_and_counters_are_deltas() -> None:
    paths = _healthy().paths
    caps = [_rdma_cap("a", "alone-a2b-0", ROW), _snap("a", "alone-a2b-0", "before", 2, 1000),
            _snap("a", "alone-a2b-0", "after", 2, 1000 + 25_000_000)]
    facts, present = build_bench_facts(caps, paths)
    assert present == {"rdma"} and facts.rdma[0].gbps == pytest.approx(97.51) and facts.flapped == ()
    assert facts.counters[0].xmit_bytes == 100_000_000  # PMA counts 4-byte words
    caps[-1] = _snap("a", "alone-a2b-0", "after", 3, 2000)
    facts, _ = build_bench_facts(caps, paths)
    assert facts.flapped == ("alone-a2b-0",) and facts.rdma[0].gbps is None
    assert "flapped" in (facts.rdma[0].problem or "")


def test_failed_client_has_a_problem_not_a_number() -> None:
    caps = [_rdma_cap("a", "r1", ROW.splitlines()[0] + "\n", rc=1)]
    facts, _ = build_bench_facts(caps, _healthy().paths)
    assert facts.rdma[0].gbps is None and facts.rdma[0].problem


def test_json_report_preferred_over_text() -> None:
    js = json.dumps({"test_info": {"test": "RDMA_Write_BW_Test"},
                     "results": {"MsgSize": 1048576, "n_iterations": 5, "BW_peak": 0.0, "BW_average": 98.25,
                                 "MsgRate": 0.0117}})
    caps = [_rdma_cap("a", "r1", ROW), _rdma_cap("a", "r1", js, fmt="json")]
    facts, _ = build_bench_facts(caps, _healthy().paths)
    assert len(facts.rdma) == 1 and facts.rdma[0].gbps == pytest.approx(98.25)


def test_wait_exit_trusts_the_rc_file_over_a_lingering_pid(tmp_path: Path) -> None:
    """An orphaned leader can linger as a zombie (kill -0 still succeeds) until init reaps it; the rc file
    its shell writes on exit says it is done."""
    import subprocess
    import time

    from linkcheck.bench import remote
    from linkcheck.transport.local import LocalTransport

    node = LocalTransport("a")
    lingering = subprocess.Popen(["sleep", "30"])  # stands in for the unreaped leader
    try:
        folder = tmp_path / "p.1"
        folder.mkdir()
        proc = remote.RemoteProcess("a", lingering.pid, str(folder), "ib_write_bw client")
        start = time.monotonic()
        assert not remote.wait_exit(node, proc, 1)  # no rc file, PID alive: still running at the deadline
        assert time.monotonic() - start >= 0.9
        (folder / "rc").write_text("0\n")
        start = time.monotonic()
        assert remote.wait_exit(node, proc, 10)
        assert time.monotonic() - start < 2
    finally:
        lingering.kill()
        lingering.wait()


class _Canned:
    """A transport that answers every command with one fixed `grep -H .` output and records the commands."""

    def __init__(self, name: str, stdout: str) -> None:
        self.name, self.stdout = name, stdout
        self.commands: list[str] = []

    def run(self, command: str, *, timeout_s: float, stdin: str | None = None) -> object:
        from linkcheck.transport.base import RemoteResult

        self.commands.append(command)
        return RemoteResult(self.stdout, "", 0, 0.01)


def test_one_read_serves_the_snapshot_after_a_round_and_before_the_next() -> None:
    from linkcheck.bench.snapshot import Wanted, take

    ib, net = "/sys/class/infiniband", "/sys/class/net"
    answer = "\n".join([f"{ib}/devA/ports/1/counters/port_xmit_data:10",
                        f"{ib}/devB/ports/1/counters/port_xmit_data:20",
                        f"grep: {ib}/devB/ports/1/gid_attrs/types/5: Invalid argument",
                        f"{net}/ifA/carrier_changes:2", f"{net}/ifB/carrier_changes:4", "grep: a stray warning"]) + "\n"
    nodes = {"a": _Canned("a", answer), "b": _Canned("b", answer)}
    wanted = [Wanted("r0", "after", {"a": ["devA"], "b": ["devA"]}, {"a": ["ifA"], "b": ["ifA"]}),
              Wanted("r1", "before", {"a": ["devB"], "b": ["devB"]}, {"a": ["ifB"], "b": ["ifB"]})]
    caps = take(nodes, wanted, run_id="x")  # type: ignore[arg-type]  # duck-typed transports
    assert [(c.node, c.arg) for c in caps] == [("a", "r0.after"), ("b", "r0.after"), ("a", "r1.before"),
                                               ("b", "r1.before")]
    assert all(len(t.commands) == 1 for t in nodes.values())  # one command per node for both snapshots
    assert "devA" in nodes["a"].commands[0] and "devB" in nodes["a"].commands[0]
    assert caps[0].stdout.splitlines() == [f"{ib}/devA/ports/1/counters/port_xmit_data:10",
                                           f"{net}/ifA/carrier_changes:2", "grep: a stray warning"]
    assert caps[2].stdout.splitlines() == [f"{ib}/devB/ports/1/counters/port_xmit_data:20",
                                           f"grep: {ib}/devB/ports/1/gid_attrs/types/5: Invalid argument",
                                           f"{net}/ifB/carrier_changes:4", "grep: a stray warning"]
    assert caps[2].meta == {"kind": "snapshot", "round": "r1", "phase": "before", "run_id": "x"}


def test_a_path_with_a_down_twin_is_left_out_and_says_why() -> None:

    from linkcheck.bench.plan import untested_paths
    from linkcheck.bench.rounds import untested_runs

    link = build_link_facts(load_bundle(FIXTURES / "link-down").captures)
    left_out = untested_paths(link)
    assert len(link.paths) == 2 and len(left_out) == 1
    (key, why), = left_out.items()
    assert "enP2p1s0f1np1" in why and "no carrier" in why
    tested = bench_paths(link)
    assert [p.key for p in tested] == [p.key for p in link.paths if p.key != key]
    assert [r.mode for r in plan_rounds(tested, RdmaOptions())] == ["alone", "alone"]  # one path: no concurrent
    runs = build_bench_facts(untested_runs(link, RdmaOptions(), "r1"), link.paths)[0].rdma
    assert sorted((r.path_key, r.direction, r.gbps, r.problem) for r in runs) == [
        (key, "a->b", None, why), (key, "b->a", None, why)]
    all_down = replace(link, paths=tuple(replace(p, a=replace(p.a, carrier=False)) for p in link.paths))
    with pytest.raises(BenchError, match="no data path has carrier at both ends"):
        bench_paths(all_down)

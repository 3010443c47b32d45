"""NCCL across every node of a cluster, offline: the mpirun line the head runs (one app context per node, each with
its own cabled HCAs, quoted; subnet-aware routing on rings only; NCCL_ALGO=Ring on rings of four or more; sized to
the node with the least free memory), and the per-rank transport proof read from a merged NCCL log, judged by the
cluster's NCCL rules."""

from __future__ import annotations

import shlex

import pytest
from msgspec.structs import replace

from linkcheck.app.topology import cluster_facts
from linkcheck.bench.nccl import NcclOptions, cluster_mpirun_script, plan_cluster_nccl, plan_meta
from linkcheck.cluster.facts import ClusterFacts, with_nccl
from linkcheck.collect.specs import CLUSTER_SPECS, SPECS
from linkcheck.diagnose.engine import Diagnosis, diagnose
from linkcheck.diagnose.playbook import load_playbooks
from linkcheck.errors import BenchError
from linkcheck.facts.nccl_ranks import KIND, cluster_nccl_facts
from linkcheck.model import Capture, Status, Verdict
from linkcheck.parsers.nccl_log import parse_nccl_log
from tests.emulators.bench_nccl import NcclTestsRun, busbw_curve, render_all_gather_perf
from tests.emulators.bench_nccl_log import NcclLogRun, RankNet, render_nccl_log
from tests.emulators.captures import node_captures
from tests.lab.cluster import CLUSTER_SCENARIOS, Cluster, cluster_models, switch_by_cage

RULES = load_playbooks(kind="cluster")
NCCL_RULES = {"NCCL_SOCKET_FALLBACK", "NCCL_BUSBW_LOW"}
P0 = ("roceP2p1s0f0", "rocep1s0f0")  # the nodes' function order (by netdev name)
P1 = ("roceP2p1s0f1", "rocep1s0f1")


def _facts(cluster: Cluster) -> ClusterFacts:
    models = cluster_models(cluster)
    captures = [c for n, m in models.items() for c in node_captures(n, m, SPECS + CLUSTER_SPECS)]
    return cluster_facts(list(models), captures, {})


def _contexts(script: str) -> tuple[list[str], list[list[str]]]:
    """The mpirun line as the shell splits it: its global words, and each app context's words."""
    words = shlex.split(script.splitlines()[-1])
    assert words[:3] == ["exec", "mpirun", "$root"]
    contexts: list[list[str]] = [[]]
    for word in words[3:]:
        if word == ":":
            contexts.append([])
        else:
            contexts[-1].append(word)
    first = contexts[0].index("-np")
    return contexts[0][:first], [contexts[0][first:], *contexts[1:]]


def _exported(context: list[str]) -> dict[str, str]:
    return dict(context[i + 1].split("=", 1) for i, w in enumerate(context) if w == "-x")


def test_each_rank_gets_its_own_nodes_cabled_hcas_in_its_own_app_context() -> None:
    # On a switch by different cages, node b's cabled HCAs are p0's while a's and c's are p1's: one value for all
    # (the head's) would give b two HCAs without a cable.
    facts = _facts(switch_by_cage({"a": "p1", "b": "p0", "c": "p1"}))
    plan = plan_cluster_nccl(facts, NcclOptions())
    assert [(r.node, r.hcas) for r in plan.ranks] == [("a", P1), ("b", P0), ("c", P1)]
    words, contexts = _contexts(cluster_mpirun_script(plan, None))
    hosts = words[words.index("-H") + 1].split(",")
    assert hosts == ["192.168.100.1:1", "192.168.100.2:1", "192.168.100.3:1"]  # one slot per host, head first
    assert len(contexts) == 3 and all(c[:2] == ["-np", "1"] for c in contexts)
    assert [_exported(c)["NCCL_IB_HCA"] for c in contexts] == ["=" + ",".join(P1), "=" + ",".join(P0),
                                                              "=" + ",".join(P1)]
    for context in contexts:
        env = _exported(context)
        assert env["NCCL_DEBUG"] == "INFO" and env["NCCL_DEBUG_SUBSYS"] == "INIT,NET"
        assert "NCCL_IB_SUBNET_AWARE_ROUTING" not in env and "NCCL_ALGO" not in env  # a switch: neither
        assert context[-10:] == ["$exe", "-b", "1048576", "-e", str(plan.max_bytes), "-f", "2", "-g", "1", "$json"]
    assert words[words.index("--mca") + 1:words.index("--mca") + 3] == [
        "oob_tcp_if_include", "192.168.100.0/24,192.168.101.0/24"]
    # Host keys stay the user's: no ssh agent of our own, never StrictHostKeyChecking=no.
    assert "StrictHostKeyChecking" not in cluster_mpirun_script(plan, None)
    meta = plan_meta(plan, "run1", NcclOptions())
    assert meta["kind"] == KIND and meta["nodes"] == "a,b,c" and meta["hca.b"] == "=" + ",".join(P0)


@pytest.mark.parametrize(("name", "routing", "algo"), [("ring3", True, False), ("ring4", True, True),
                                                       ("switch4", False, False), ("mixed", False, False)])
def test_subnet_aware_routing_on_rings_only_and_ring_algo_from_four(name: str, routing: bool, algo: bool) -> None:
    facts = _facts(CLUSTER_SCENARIOS[name]())
    plan = plan_cluster_nccl(facts, NcclOptions())
    _, contexts = _contexts(cluster_mpirun_script(plan, None))
    assert len(contexts) == len(facts.topology.nodes)
    for context in contexts:
        env = _exported(context)
        assert (env.get("NCCL_IB_SUBNET_AWARE_ROUTING") == "1") is routing
        assert (env.get("NCCL_ALGO") == "Ring") is algo
        # NVIDIA's ring run also sets these (spark_cluster_setup.py: -x NCCL_IB_MERGE_NICS=0 -x NCCL_NET_PLUGIN=none).
        assert (env.get("NCCL_IB_MERGE_NICS"), env.get("NCCL_NET_PLUGIN")) == (("0", "none") if routing else
                                                                               (None, None))


def test_the_ranks_go_round_a_ring_in_cable_order_whatever_the_hosts_order() -> None:
    # NCCL's inter-node ring runs node n to node n+1 (src/graph/connect.cc connectRings): ranks a, c, b, d on the ring
    # a-b-c-d would send a to c, which shares no cable with it.
    models = cluster_models(CLUSTER_SCENARIOS["ring4"]())
    captures = [c for n, m in models.items() for c in node_captures(n, m, SPECS + CLUSTER_SPECS)]
    facts = cluster_facts(["a", "c", "b", "d"], captures, {})
    plan = plan_cluster_nccl(facts, NcclOptions())
    assert [r.node for r in plan.ranks] == ["a", "b", "c", "d"]
    switched = plan_cluster_nccl(_facts(switch_by_cage(dict.fromkeys("dcab", "p1"))), NcclOptions())
    assert [r.node for r in switched.ranks] == ["d", "c", "a", "b"]  # a switch: the hosts' order


def test_nodes_reached_at_addresses_start_over_those_addresses_with_nccls_sockets_off_the_fabric() -> None:
    # As NVIDIA's launcher: mpirun -H <management addresses>, Open MPI and NCCL's sockets kept on them, so no IP has
    # to cross a node of a ring of four (whose non-neighbours share no cable).
    facts = _facts(CLUSTER_SCENARIOS["ring4"]())
    reach = {n: f"10.20.0.{21 + i}" for i, n in enumerate("abcd")}
    plan = plan_cluster_nccl(facts, NcclOptions(), reach)
    words, contexts = _contexts(cluster_mpirun_script(plan, None))
    assert words[words.index("-H") + 1] == "10.20.0.21:1,10.20.0.22:1,10.20.0.23:1,10.20.0.24:1"
    include = "10.20.0.21/32,10.20.0.22/32,10.20.0.23/32,10.20.0.24/32"
    assert words[words.index("oob_tcp_if_include") + 1] == include
    assert words[words.index("btl_tcp_if_include") + 1] == include
    sockets = _exported(contexts[0])["NCCL_SOCKET_IFNAME"]
    assert sockets.startswith("^lo,docker,virbr,") and "enp1s0f0np0" in sockets and "enP2p1s0f1np1" in sockets
    # A node reached by a name (an ssh alias the head may not resolve): the data addresses stand in, as before.
    named = plan_cluster_nccl(facts, NcclOptions(), {**reach, "c": "spark-c"})
    assert named.ranks[1].host.startswith("192.168.") and "NCCL_SOCKET_IFNAME" not in dict(named.env)
    # Nor is one linkcheck reaches on its own machine (a node run from, `a=127.0.0.1`): no other rank could.
    here = plan_cluster_nccl(facts, NcclOptions(), {**reach, "a": "127.0.0.1"})
    assert all(not r.host.startswith("127.") for r in here.ranks) and "NCCL_SOCKET_IFNAME" not in dict(here.env)


def test_the_ring_reaches_each_worker_from_the_heads_side_and_a_non_neighbour_at_any_address() -> None:
    plan = plan_cluster_nccl(_facts(CLUSTER_SCENARIOS["ring4"]()), NcclOptions())
    hosts = {r.node: r.host for r in plan.ranks}
    # a-b on 192.168.10/11, a-d on 16/17 (d's p0 to a's p1); c shares no cable with a: its first address.
    assert hosts["b"].startswith("192.168.10.") and hosts["d"].startswith("192.168.16.")
    assert hosts["a"].startswith("192.168.10.") and hosts["c"].startswith("192.168.12.")
    assert len(plan.subnets) == 8


def test_the_smallest_nodes_free_memory_sizes_the_sweep_and_unsafe_names_are_refused() -> None:
    facts = _facts(CLUSTER_SCENARIOS["ring3"]())
    small = replace(facts.nodes["c"], mem_available_kib=8 * 1024 * 1024)  # 8 GiB: a quarter over 2.5 -> 512 MiB
    sized = plan_cluster_nccl(replace(facts, nodes={**facts.nodes, "c": small}), NcclOptions(max_bytes=1 << 34))
    assert sized.max_bytes == 512 << 20
    unknown = replace(facts.nodes["b"], mem_available_kib=None)
    with pytest.raises(BenchError, match="MemAvailable unknown on node b"):
        plan_cluster_nccl(replace(facts, nodes={**facts.nodes, "b": unknown}), NcclOptions())
    # A device name is the node's text: one that is not a plain name never reaches the command line.
    node = facts.nodes["b"]
    hostile = replace(node, functions=tuple(replace(f, rdma_dev="x;reboot") if f.rdma_dev == P0[0] else f
                                            for f in node.functions))
    with pytest.raises(BenchError, match="node b: refusing unsafe"):
        plan_cluster_nccl(replace(facts, nodes={**facts.nodes, "b": hostile}), NcclOptions())
    lost = {n: v for n, v in facts.nodes.items() if n != "c"}
    with pytest.raises(BenchError, match="not inspected: c"):
        plan_cluster_nccl(replace(facts, nodes=lost), NcclOptions())


def _rank(host: str, pid: int, hcas: tuple[str, ...], own: str | None = None) -> RankNet:
    gids = tuple(f"::ffff:192.168.{10 + i}.{pid % 7}" for i in range(len(hcas)))
    return RankNet(host, pid, "enP7s7", "10.20.0.1", hcas, (3,) * len(hcas), gids, transport=own)


def _run_capture(facts: ClusterFacts, ranks: tuple[RankNet, ...], transport: str, busbw: float,
                 exit_status: int = 0) -> Capture:
    """The head's capture of an mpirun across the cluster: rank 0's table, every rank's NCCL INFO lines."""
    plan = plan_cluster_nccl(facts, NcclOptions())
    tests = NcclTestsRun(hosts=tuple(r.host for r in ranks), curve=busbw_curve(busbw, 1 << 20, 1 << 30),
                         pids=tuple(r.pid for r in ranks))
    log = render_nccl_log(NcclLogRun(ranks=ranks, transport=transport, nccl_version="2.30.7"))[0]
    table = render_all_gather_perf(tests)[0]
    return Capture(plan.head, "all_gather_perf", "mpirun ...", log + table, "", exit_status,
                   arg="cluster-nccl", meta=plan_meta(plan, "r1", NcclOptions()))


def _judge(facts: ClusterFacts, cap: Capture) -> tuple[ClusterFacts, Diagnosis]:
    judged = with_nccl(facts, [cap])  # what a cluster check does with the run's captures
    assert judged.nccl == cluster_nccl_facts(facts.nodes, [cap], facts.topology.layout)
    return judged, diagnose(judged, RULES)


def _nccl_findings(diagnosis: Diagnosis) -> dict[tuple[str, str], Status]:
    return {(f.rule_id, f.subject): f.status for f in diagnosis.findings if f.rule_id in NCCL_RULES}


def test_net_ib_on_every_rank_proves_the_ring_and_its_bus_bandwidth_passes() -> None:
    facts = _facts(CLUSTER_SCENARIOS["ring3"]())
    ranks = tuple(_rank(f"spark-{n}", 4100 + i, P0 + P1) for i, n in enumerate("abc"))
    judged, diagnosis = _judge(facts, _run_capture(facts, ranks, "IB", 23.7))
    assert judged.nccl is not None and judged.nccl.fell_back == ()
    assert all(r.seen and r.ib_proven and r.network == "IB" for r in judged.nccl.ranks)
    assert judged.nccl.busbw_gbs == pytest.approx(23.7, abs=0.3)  # the curve reaches its plateau near 1 GiB
    found = _nccl_findings(diagnosis)
    assert set(found.values()) == {Status.PASS}
    assert ("NCCL_BUSBW_LOW", "cluster") in found
    assert {s for r, s in found if r == "NCCL_SOCKET_FALLBACK"} == {"node a", "node b", "node c"}
    assert diagnosis.verdict is Verdict.PASS


def test_the_rank_that_fell_back_to_sockets_is_named_on_its_own_node() -> None:
    facts = _facts(switch_by_cage({"a": "p1", "b": "p0", "c": "p1"}))
    # b was given the head's HCAs (p1's), which have no carrier on b: its NCCL finds no device and uses sockets;
    # the job then runs over sockets on every channel.
    ranks = (_rank("spark-a", 4100, P1, "IB"), _rank("spark-b", 4200, (), "Socket"), _rank("spark-c", 4300, P1, "IB"))
    judged, diagnosis = _judge(facts, _run_capture(facts, ranks, "Socket", 2.04))
    assert judged.nccl is not None and judged.nccl.fell_back == ("b",)
    b = judged.nccl.rank("b")
    assert b is not None and b.no_ib_device and b.network == "Socket" and not b.ib_proven
    fired = {k for k, v in _nccl_findings(diagnosis).items() if v in (Status.FAIL, Status.WARN)}
    assert fired == {("NCCL_SOCKET_FALLBACK", "node b"), ("NCCL_BUSBW_LOW", "cluster")}
    finding = next(f for f in diagnosis.findings if f.rule_id == "NCCL_SOCKET_FALLBACK"
                   and f.subject == "node b")
    assert "No device found" in finding.message and "NCCL_IB_HCA==roceP2p1s0f0,rocep1s0f0" in finding.message
    assert any("(roceP2p1s0f0,rocep1s0f0)" in step for step in finding.fix)  # its own cabled HCAs
    low = next(f for f in diagnosis.findings if f.rule_id == "NCCL_BUSBW_LOW")
    # 2.04 GB/s is a broken state's figure (below 8 GB/s): a failure over a cluster as over a pair, which the rank
    # on sockets explains.
    assert "ranks on sockets: b" in low.message and "below 8.0 GB/s" in low.message and low.status is Status.FAIL
    assert low.explained_by == finding.finding_id


def test_channels_off_net_ib_without_a_rank_that_says_it_fell_back_name_each_such_rank() -> None:
    facts = _facts(CLUSTER_SCENARIOS["ring3"]())
    ranks = tuple(_rank(f"spark-{n}", 4100 + i, P0 + P1, "IB") for i, n in enumerate("abc"))
    cap = _run_capture(facts, ranks, "IB", 23.7)
    # c's channels went over sockets (an IB plugin that gave up after init, say): its rank alone is not proven.
    text = "\n".join(line.replace("via NET/IB/", "via NET/Socket/") if line.startswith("spark-c:") else line
                     for line in cap.stdout.splitlines())
    judged, diagnosis = _judge(facts, replace(cap, stdout=text))
    fired = {k for k, v in _nccl_findings(diagnosis).items() if v is Status.FAIL}
    assert fired == {("NCCL_SOCKET_FALLBACK", "node c")}


def test_a_rank_without_a_line_in_the_log_is_never_passing() -> None:
    facts = _facts(CLUSTER_SCENARIOS["ring3"]())
    ranks = tuple(_rank(f"spark-{n}", 4100 + i, P0 + P1) for i, n in enumerate("ab"))
    cap = _run_capture(facts, ranks, "IB", 23.7, exit_status=3)
    judged, diagnosis = _judge(facts, cap)
    assert judged.nccl is not None and judged.nccl.problem == "mpirun exited 3"
    found = _nccl_findings(diagnosis)
    assert found[("NCCL_SOCKET_FALLBACK", "node c")] is Status.SKIP
    assert diagnosis.verdict is Verdict.INCONCLUSIVE


def test_a_short_sweep_is_not_judged_against_nvidias_figure_and_no_run_gives_no_finding() -> None:
    facts = _facts(CLUSTER_SCENARIOS["ring3"]())
    ranks = tuple(_rank(f"spark-{n}", 4100 + i, P0 + P1) for i, n in enumerate("abc"))
    cap = _run_capture(facts, ranks, "IB", 5.0)
    short = cap.stdout.replace(f"{1 << 30:12d}", f"{1 << 29:12d}")  # the largest row now 512 MiB
    _, diagnosis = _judge(facts, replace(cap, stdout=short))
    assert ("NCCL_BUSBW_LOW", "cluster") not in _nccl_findings(diagnosis)
    assert _nccl_findings(diagnose(facts, RULES)) == {}  # no NCCL run: nothing said


def test_the_log_is_read_per_host_also_through_mpiruns_tags() -> None:
    text = "\n".join([
        "[1,0]<stdout>:spark-a:11:11 [0] NCCL INFO NET/IB : Using [0]rocep1s0f1:1/RoCE [RO]; OOB enP7s7:10.0.0.1<0>",
        "[1,0]<stdout>:spark-a:11:11 [0] NCCL INFO Using network IB",
        "[1,1]<stdout>:spark-b.lab:22:22 [0] NCCL INFO NET/IB : No device found.",
        "[1,1]<stdout>:spark-b.lab:22:22 [0] NCCL INFO NET/Socket : Using [0]enP7s7:10.0.0.2<0>",
        "[1,1]<stdout>:spark-b.lab:22:22 [0] NCCL INFO Using network Socket",
        "[1,0]<stdout>:spark-a:11:19 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0",
        "[1,1]<stdout>:spark-b.lab:22:29 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [send] via NET/Socket/0",
    ])
    ranks = {r.host: r for r in parse_nccl_log(text).ranks}
    assert ranks["spark-a"].network == "IB" and ranks["spark-a"].ib_devices == ("rocep1s0f1",)
    assert ranks["spark-a"].channel_transports == ("IB",)
    assert ranks["spark-b.lab"].no_ib_device and ranks["spark-b.lab"].socket_devices == ("enP7s7",)
    assert ranks["spark-b.lab"].channel_transports == ("Socket",) and ranks["spark-b.lab"].network == "Socket"


def test_nvidias_figure_is_judged_with_nvidias_statistic_not_the_peak_row() -> None:
    # spark_cluster_setup.py (NVIDIA/dgx-spark-playbooks multi-sparks-through-switch) runs all_gather_perf
    # -b 16G -e 16G and compares "# Avg bus bandwidth" (the mean of out-of-place and in-place at 16 GiB) with
    # 21.875 GB/s. A sweep whose peak row (4 GiB) clears the line while its 16 GiB row does not is a warning.
    facts = _facts(switch_by_cage({"a": "p1", "b": "p1", "c": "p1"}))
    ranks = (_rank("spark-a", 4100, P1), _rank("spark-b", 4200, P1), _rank("spark-c", 4300, P1))
    cap = _run_capture(facts, ranks, "IB", 23.7)
    curve = ((1 << 30, 22.4), (1 << 31, 22.6), (1 << 32, 22.9), (1 << 33, 22.1), (1 << 34, 21.2))
    table = render_all_gather_perf(NcclTestsRun(hosts=tuple(r.host for r in ranks), curve=curve,
                                                pids=tuple(r.pid for r in ranks)))[0]
    log = render_nccl_log(NcclLogRun(ranks=ranks, transport="IB", nccl_version="2.30.7"))[0]
    judged, diagnosis = _judge(facts, replace(cap, stdout=log + table))
    assert judged.nccl is not None and judged.nccl.busbw_gbs == pytest.approx(22.9, abs=0.1)
    assert judged.nccl.nvidia_busbw_gbs == pytest.approx(21.2, abs=0.1)
    low = next(f for f in diagnosis.findings if f.rule_id == "NCCL_BUSBW_LOW")
    assert low.status is Status.WARN
    assert f"{judged.nccl.nvidia_busbw_gbs:g} GB/s by NVIDIA's statistic" in low.message
    assert f"peak {judged.nccl.busbw_gbs:g} GB/s" in low.message
    # The same sweep with a 16 GiB row above the line passes, whatever a smaller row did.
    healthy = curve[:-1] + ((1 << 34, 22.0),)
    table = render_all_gather_perf(NcclTestsRun(hosts=tuple(r.host for r in ranks), curve=healthy,
                                                pids=tuple(r.pid for r in ranks)))[0]
    _, diagnosis = _judge(facts, replace(cap, stdout=log + table))
    assert _nccl_findings(diagnosis)[("NCCL_BUSBW_LOW", "cluster")] is Status.PASS

"""The cluster's rules (linkcheck/playbooks/cluster.yaml) over the lab's cluster scenarios inspected offline: each
node model rendered into the captures a node answers to the pair's inspection and the cluster's own specs
(forwarding, iptables), built into facts as `linkcheck topology` builds them. Each trap fires on the scenario
that has it, naming its subject, and stays silent on the healthy one."""

from __future__ import annotations

import subprocess
from dataclasses import replace
from pathlib import Path

import msgspec
import pytest

from linkcheck.app.offline import configured_rules
from linkcheck.app.topology import cluster_facts, judge
from linkcheck.cluster.facts import ClusterFacts, missing_routes, ring_recabling, transits
from linkcheck.cluster.hosts import parse_node_values
from linkcheck.collect.specs import CLUSTER_SPECS, SPECS
from linkcheck.config import load_config
from linkcheck.diagnose.engine import Diagnosis, diagnose
from linkcheck.diagnose.facts_schema import _docker_accept
from linkcheck.diagnose.playbook import PlaybookError, load_playbooks
from linkcheck.errors import ExitCode
from linkcheck.facts.forwarding_facts import forward_ports
from linkcheck.facts.nccl_hca import nccl_algo_ring_only
from linkcheck.model import Finding, Severity, Status, Verdict
from linkcheck.parsers.netfilter import parse_iptables_s
from linkcheck.repair.files import NodeFiles
from linkcheck.repair.transit import transit_plan
from linkcheck.report.topology import view_text
from tests.emulators.build import with_function
from tests.emulators.captures import node_captures
from tests.emulators.derive import derived_routes
from tests.emulators.node import Node, Route
from tests.lab.cluster import CLUSTER_SCENARIOS, cluster_models, switch_by_cage

RULES = load_playbooks(kind="cluster")
DOCKER_FORWARD = "-P FORWARD DROP\n-A FORWARD -j DOCKER-USER\n-A FORWARD -j DOCKER-FORWARD\n"
DOCKER_USER = "-N DOCKER-USER\n-A DOCKER-USER -j RETURN\n"
# Routes that reach each non-neighbour of the ring of four (a-b-c-d-a, tests/lab/cluster.py) through the node
# between them: node -> (subnet, gateway, device).
RING4_ROUTES = {"a": ("192.168.12.0/24", "192.168.10.2", "enp1s0f0np0"),
                "b": ("192.168.14.0/24", "192.168.12.3", "enp1s0f0np0"),
                "c": ("192.168.10.0/24", "192.168.12.2", "enp1s0f1np1"),
                "d": ("192.168.12.0/24", "192.168.14.3", "enp1s0f1np1")}


def _models(name: str) -> dict[str, Node]:
    return cluster_models(CLUSTER_SCENARIOS[name]())


def _sockets(models: dict[str, Node], ifname: str) -> dict[str, Node]:
    """Every node with NCCL_SOCKET_IFNAME set to `ifname`."""
    return {n: replace(m, nccl_env={**m.nccl_env, "NCCL_SOCKET_IFNAME": ifname}) for n, m in models.items()}


def _routed(models: dict[str, Node]) -> dict[str, Node]:
    """The ring of four with forwarding on and a route to each non-neighbour."""
    out = {}
    for name, node in models.items():
        subnet, via, dev = RING4_ROUTES[name]
        route = Route(dst=subnet, dev=dev, protocol="static", scope=None, gateway=via)
        out[name] = replace(node, ip_forward=True, routes=(*derived_routes(node), route))
    return out


def _captures(models: dict[str, Node]) -> list[object]:
    return [c for n, m in models.items() for c in node_captures(n, m, SPECS + CLUSTER_SPECS)]


def _facts(models: dict[str, Node]) -> ClusterFacts:
    captures = [c for n, m in models.items() for c in node_captures(n, m, SPECS + CLUSTER_SPECS)]
    return cluster_facts(list(models), captures, {})


def _diagnose(models: dict[str, Node]) -> Diagnosis:
    return diagnose(_facts(models), RULES)


def _firing(diagnosis: Diagnosis) -> dict[tuple[str, str], Finding]:
    return {(f.rule_id, f.subject): f for f in diagnosis.findings if f.status in (Status.WARN, Status.FAIL)}


def test_a_healthy_ring_of_three_passes_every_cluster_rule() -> None:
    result = _diagnose(_models("ring3"))
    assert _firing(result) == {}
    assert result.verdict is Verdict.PASS
    # iptables is not installed on these nodes: the firewall rule skips, naming why, and the verdict stands.
    skips = {f.subject: f.skip_reason for f in result.findings if f.status is Status.SKIP}
    assert set(skips) == {"node a", "node b", "node c"}
    assert all("iptables" in (why or "") for why in skips.values())
    assert {f.rule_id for f in result.findings if f.status is Status.PASS} >= {
        "RING_SAME_PORT", "NODES_DIFFER", "MTU_NOT_JUMBO_EVERYWHERE", "CLUSTER_LAYOUT_UNSUPPORTED",
        "NO_ROUTE_TO_NON_NEIGHBOUR"}


def test_a_ring_of_four_without_forwarding_or_routes_names_each_transit_node() -> None:
    firing = _firing(_diagnose(_models("ring4-fabric-sockets")))
    assert set(firing) == {("CLUSTER_LAYOUT_UNSUPPORTED", "cluster"),
                           *{("TRANSIT_FORWARDING_OFF", f"node {n}") for n in "abcd"},
                           *{("NO_ROUTE_TO_NON_NEIGHBOUR", f"node {n}") for n in "abcd"}}
    off = firing[("TRANSIT_FORWARDING_OFF", "node b")]
    assert "between a<->c" in off.message and "net.ipv4.ip_forward = 0" in off.message
    assert off.fix[0] == "on node b: sudo sysctl -w net.ipv4.ip_forward=1"
    assert "NCCL_SOCKET_IFNAME=enp1s0f,enP2p1s0f puts NCCL's sockets on the CX-7 addresses" in off.message
    route = firing[("NO_ROUTE_TO_NON_NEIGHBOUR", "node a")]
    assert "c (192.168.12.0/24)" in route.message
    # The gateway is the neighbour between them: b's address on the cable a shares with b.
    assert route.fix[0].startswith("on node a: sudo ip route add 192.168.12.0/24 via 192.168.10.2")


def test_a_ring_of_four_whose_sockets_are_not_on_the_fabric_needs_no_forwarding() -> None:
    # NVIDIA's launcher keeps NCCL's sockets on the management port (NCCL_SOCKET_IFNAME=enP7s7): no IP crosses a
    # node, so forwarding and routes between the cables are not needed. Unset, that is assumed: a note that says so.
    off = _diagnose(_sockets(_models("ring4"), "enP7s7"))
    assert set(_firing(off)) == {("CLUSTER_LAYOUT_UNSUPPORTED", "cluster")}
    assert not [f for f in off.findings if f.rule_id in ("TRANSIT_FORWARDING_OFF", "NO_ROUTE_TO_NON_NEIGHBOUR")
                and f.status is not Status.SKIP]
    unset = _diagnose(_models("ring4"))
    assert set(_firing(unset)) == {("CLUSTER_LAYOUT_UNSUPPORTED", "cluster")}
    notes = {(f.rule_id, f.subject): f for f in unset.findings if f.severity is Severity.INFO}
    note = notes[("TRANSIT_FORWARDING_OFF", "node b")]
    assert note.status is Status.PASS and "NCCL_SOCKET_IFNAME is not set, so linkcheck assumes the management port" \
        in note.message
    assert ("NO_ROUTE_TO_NON_NEIGHBOUR", "node a") in notes


def test_a_routed_ring_of_four_is_only_unsupported() -> None:
    firing = _firing(_diagnose(_routed(_models("ring4"))))
    assert set(firing) == {("CLUSTER_LAYOUT_UNSUPPORTED", "cluster")}
    assert "NCCL_ALGO=Ring" in firing[("CLUSTER_LAYOUT_UNSUPPORTED", "cluster")].message


def test_dockers_forward_drop_on_a_transit_node_presents_like_a_dead_cable() -> None:
    models = _routed(_models("ring4-fabric-sockets"))
    models["b"] = replace(models["b"], iptables={"FORWARD": DOCKER_FORWARD, "DOCKER-USER": DOCKER_USER})
    models["c"] = replace(models["c"], iptables={"FORWARD": DOCKER_FORWARD,
                                                 "DOCKER-USER": "-N DOCKER-USER\n-A DOCKER-USER -i enp1s0f+ -j "
                                                                "ACCEPT\n-A DOCKER-USER -j RETURN\n"})
    models["d"] = replace(models["d"], iptables={"FORWARD": "-P FORWARD ACCEPT\n"})
    result = _diagnose(models)
    firing = _firing(result)
    assert set(firing) == {("CLUSTER_LAYOUT_UNSUPPORTED", "cluster"), ("DOCKER_FORWARD_DROP", "node b")}
    drop = firing[("DOCKER_FORWARD_DROP", "node b")]
    assert drop.status is Status.FAIL and "dead cable" in drop.message and "a<->c" in drop.message
    # The fix names the node's own ports and accepts what its repair inserts, rule for rule: its loop, run with a
    # sudo that prints its command, prints the repair's commands.
    head, loop = drop.fix[0].split(": ", 1)
    assert head == "on node b, for each ordered pair of its addressed CX-7 ports, as fix --apply does"
    (step,) = transit_plan(_facts(models), "b", drop, NodeFiles()).steps
    shown = subprocess.run(["sh", "-c", f'sudo() {{ echo "sudo $*"; }}; {loop}'], capture_output=True, text=True,
                           check=True).stdout.splitlines()
    assert len(shown) == 12 and sorted(shown) == sorted(step.runtime)
    assert [e.value for e in drop.evidence][0] == "DROP"
    # c accepts its CX-7 interfaces in DOCKER-USER, d's policy accepts: both pass; a has no iptables: a skip.
    status = {f.subject: f.status for f in result.findings if f.rule_id == "DOCKER_FORWARD_DROP"}
    assert status == {"node a": Status.SKIP, "node b": Status.FAIL, "node c": Status.PASS, "node d": Status.PASS}



def test_dockers_accepts_for_two_ports_are_written_out_and_without_two_say_what_to_fill_in() -> None:
    node = _facts(_routed(_models("ring4-fabric-sockets"))).nodes["b"]
    two = msgspec.structs.replace(node, functions=tuple(f for f in node.functions if f.netdev.startswith("enp1s0f")))
    assert forward_ports(two) == ["enp1s0f0np0", "enp1s0f1np1"]
    assert _docker_accept(two) == ("sudo iptables -I DOCKER-USER -i enp1s0f0np0 -o enp1s0f1np1 -j ACCEPT && "
                                   "sudo iptables -I DOCKER-USER -i enp1s0f1np1 -o enp1s0f0np0 -j ACCEPT")
    one = msgspec.structs.replace(node, functions=two.functions[:1])
    assert _docker_accept(one).startswith("sudo iptables -I DOCKER-USER -i IN -o OUT -j ACCEPT for each ordered pair")

def test_dockers_drop_on_a_node_that_routes_nothing_is_a_note() -> None:
    models = _models("ring3")
    models["a"] = replace(models["a"], iptables={"FORWARD": DOCKER_FORWARD, "DOCKER-USER": DOCKER_USER})
    result = _diagnose(models)
    (note,) = [f for f in result.findings if f.rule_id == "DOCKER_FORWARD_DROP" and f.subject == "node a"]
    assert note.status is Status.PASS and note.severity is Severity.INFO and "carries no traffic" in note.message
    assert result.verdict is Verdict.PASS


def test_dockers_drop_where_no_ip_is_known_to_cross_the_node_is_a_note() -> None:
    # A ring of four whose sockets are not set to the fabric: only a note, saying what is assumed.
    models = _routed(_models("ring4"))
    models["b"] = replace(models["b"], iptables={"FORWARD": DOCKER_FORWARD, "DOCKER-USER": DOCKER_USER})
    result = _diagnose(models)
    (note,) = [f for f in result.findings if f.rule_id == "DOCKER_FORWARD_DROP" and f.subject == "node b"]
    assert note.status is Status.PASS and note.severity is Severity.INFO
    assert "matters only if the job's bootstrap or sockets use the CX-7 addresses" in note.message


def test_an_iptables_that_sudo_refuses_is_a_skip_with_sudos_words() -> None:
    models = _models("ring3")
    models["a"] = replace(models["a"], iptables={"FORWARD": DOCKER_FORWARD}, sudo_ok=False)
    result = _diagnose(models)
    (skip,) = [f for f in result.findings if f.rule_id == "DOCKER_FORWARD_DROP" and f.subject == "node a"]
    assert skip.status is Status.SKIP and "a password is required" in (skip.skip_reason or "")
    assert not skip.required


def test_nodes_that_differ_are_named_with_what_each_has() -> None:
    models = _models("ring3")
    c = models["c"]
    for fn in c.functions:
        c = with_function(c, fn.netdev, fw_ver="28.39.1002")
    models["c"] = replace(c, kernel_release="6.14.0-1015-nvidia")
    (finding,) = [f for f in _firing(_diagnose(models)).values() if f.rule_id == "NODES_DIFFER"]
    assert "CX-7 firmware: 28.45.4028 on a, b; 28.39.1002 on c" in finding.message
    assert "kernel: 6.17.0-1008-nvidia on a, b; 6.14.0-1015-nvidia on c" in finding.message
    evidence = {e.fact: e.value for e in finding.evidence}
    assert evidence["CX-7 firmware"] == {"a": "28.45.4028", "b": "28.45.4028", "c": "28.39.1002"}


def test_a_switch_port_at_100g_is_named_as_a_warning_with_its_measured_effect() -> None:
    models = _models("switch4")
    models["c"] = with_function(models["c"], "enp1s0f1np1", speed_mbps=100000)
    firing = _firing(_diagnose(models))
    assert set(firing) == {("SWITCH_PORT_BELOW_200G", "c:enp1s0f1np1")}
    finding = firing[("SWITCH_PORT_BELOW_200G", "c:enp1s0f1np1")]
    assert "100.0 Gb/s" in finding.message and "switch segment 192.168.100.0/24" in finding.message
    # A breakout chosen on purpose changed decode by ~3 % (NVIDIA forum 373146): a warning, not an error.
    assert finding.status is Status.WARN and "~3 % on decode" in finding.message
    assert _firing(_diagnose(_models("switch4"))) == {}


def test_mtu_below_9000_on_one_hop_is_a_failure_and_on_every_hop_a_note() -> None:
    models = _models("ring3")
    models["b"] = with_function(models["b"], "enP2p1s0f0np0", mtu=1500)
    firing = _firing(_diagnose(models))
    # b's p0 twin 1 faces c's p1 twin 1 (192.168.13.0/24): its end is the one at 1500.
    # Hops that differ are the pair's trap, judged by the same rule (MTU_MISMATCH) over the cluster's hops.
    assert set(firing) == {("MTU_MISMATCH", "b:enP2p1s0f0np0")}
    finding = firing[("MTU_MISMATCH", "b:enP2p1s0f0np0")]
    assert finding.status is Status.FAIL and "other hops run 9000" in finding.message
    assert finding.fix[0] == "on node b: sudo ip link set dev enP2p1s0f0np0 mtu 9000"
    everywhere = _models("ring3")
    for name, node in everywhere.items():
        for fn in node.functions:
            node = with_function(node, fn.netdev, mtu=1500)
        everywhere[name] = node
    # NVIDIA's layouts run 1500 (no NVIDIA playbook sets an MTU): a uniform 1500 drops nothing and is a note.
    result = _diagnose(everywhere)
    assert _firing(result) == {}
    notes = [f for f in result.findings if f.rule_id == "MTU_NOT_JUMBO_EVERYWHERE" and f.severity is Severity.INFO]
    assert notes and all(f.status is Status.PASS and "community practice" in f.message for f in notes)


def test_a_ring_cabled_p0_to_p0_names_the_cables_to_move() -> None:
    result = _diagnose(_models("ring3-same-port"))
    firing = _firing(result)
    assert set(firing) == {("RING_SAME_PORT", "cable a:p0<->b:p0"), ("RING_SAME_PORT", "cable a:p1<->c:p1")}
    # Going round a, c, b only these two move, a's two cables swapping cages.
    assert firing[("RING_SAME_PORT", "cable a:p0<->b:p0")].fix[0].endswith("recable: node b p0 to node a p1")
    assert firing[("RING_SAME_PORT", "cable a:p1<->c:p1")].fix[0].endswith("recable: node a p0 to node c p1")
    # What NCCL does on such a cable is assumed from a field report, not derived from its code: a warning.
    assert {f.status for f in firing.values()} == {Status.WARN}
    assert "Assumed, not derived" in firing[("RING_SAME_PORT", "cable a:p0<->b:p0")].message
    assert result.exit_code == ExitCode.WARN


def test_a_mixed_cluster_is_unsupported_with_its_advice() -> None:
    firing = _firing(_diagnose(_models("mixed")))
    assert set(firing) == {("CLUSTER_LAYOUT_UNSUPPORTED", "cluster")}
    assert firing[("CLUSTER_LAYOUT_UNSUPPORTED", "cluster")].message.endswith(
        "Advice: put every node on the switch, or cable them directly; never both.")


def test_a_dangling_port_is_a_cabling_fault() -> None:
    models = _models("ring3")
    # c's p1 twin 0 readdressed into a subnet nobody else has: its cable now leads nowhere linkcheck can see.
    models["c"] = with_function(models["c"], "enp1s0f1np1", ipv4=("192.168.99.3/24",))
    firing = _firing(_diagnose(models))
    assert ("CABLING_FAULT", "dangling c:enp1s0f1np1") in firing
    assert "To fix: address the port" in firing[("CABLING_FAULT", "dangling c:enp1s0f1np1")].message


def test_the_derived_facts() -> None:
    facts = cluster_facts(["a", "b", "c", "d"], _captures(_models("ring4")), {})  # type: ignore[arg-type]
    assert transits(facts.topology) == {"a": ["b<->d"], "b": ["a<->c"], "c": ["b<->d"], "d": ["a<->c"]}
    assert [(m.to, m.subnet, m.via) for m in missing_routes(facts, "a")][:1] == [("c", "192.168.12.0/24",
                                                                                 "192.168.10.2")]
    assert ring_recabling(facts.topology) == {}
    assert facts.forwarding["a"].ip_forward is False


def test_topologys_view_prints_the_findings_and_their_fixes() -> None:
    models = _models("ring3-same-port")
    view = judge(parse_node_values(["a=h1", "b=h2", "c=h3"]), _captures(models), {})  # type: ignore[arg-type]
    text = view_text(view)
    assert "WARN RING_SAME_PORT (cable a:p0<->b:p0): ring cable a:p0<->b:p0 joins p0 on a to p0 on b" in text
    assert "recable: node b p0 to node a p1" in text
    assert text.splitlines()[-1] == "verdict: warn"
    assert view.exit_code == ExitCode.WARN


@pytest.mark.parametrize(("text", "policy", "targets"), [
    (DOCKER_FORWARD, "DROP", ["DOCKER-USER", "DOCKER-FORWARD"]),
    ('-P FORWARD ACCEPT\n-A FORWARD -m comment --comment "ring traffic" -i enp1s0f0np0 -j ACCEPT\n', "ACCEPT",
     ["ACCEPT"]),
])
def test_iptables_s_is_read_as_a_shell_would_split_it(text: str, policy: str, targets: list[str]) -> None:
    dump = parse_iptables_s(text)
    assert dump.policies == {"FORWARD": policy} and [r.target for r in dump.rules] == targets


def test_one_linkcheck_yaml_tunes_a_pairs_rules_and_a_clusters(tmp_path: Path) -> None:
    """A threshold override for a cluster rule is not an unknown rule to the pair's commands, and the reverse."""
    path = tmp_path / "linkcheck.yaml"
    path.write_text("thresholds:\n  SWITCH_PORT_BELOW_200G: {nominal_mbps: 100000}\n"
                    "  NCCL_BUSBW_LOW: {min_busbw_gbs: 22.5}\n", encoding="utf-8")
    config = load_config(path)
    pair = {r.id: r for r in configured_rules([], config)}
    cluster = {r.id: r for r in configured_rules([], config, kind="cluster")}
    assert pair["NCCL_BUSBW_LOW"].thresholds["min_busbw_gbs"] == 22.5 and "SWITCH_PORT_BELOW_200G" not in pair
    assert cluster["SWITCH_PORT_BELOW_200G"].thresholds["nominal_mbps"] == 100000
    # One rule judges a pair and a cluster: its one override reaches both layouts.
    assert cluster["NCCL_BUSBW_LOW"].thresholds["min_busbw_gbs"] == 22.5
    models = _models("switch4")
    models["c"] = with_function(models["c"], "enp1s0f1np1", speed_mbps=100000)
    captures = [c for n, m in models.items() for c in node_captures(n, m, SPECS + CLUSTER_SPECS)]
    judged = diagnose(cluster_facts(list(models), captures, {}), list(cluster.values()))
    assert _firing(judged) == {}  # the site accepts 100G ports
    path.write_text("thresholds:\n  NO_SUCH_RULE: {x: 1}\n", encoding="utf-8")
    with pytest.raises(PlaybookError, match="unknown rule NO_SUCH_RULE"):
        configured_rules([], load_config(path), kind="cluster")


def test_a_ring_node_with_an_nccl_older_than_2_30_7_fails_and_one_without_the_setting_warns() -> None:
    models = _models("ring3")
    models["b"] = replace(models["b"], versions={**models["b"].versions, "nccl": "2.30.4"})
    models["c"] = replace(models["c"], nccl_env={})
    firing = _firing(_diagnose(models))
    assert set(firing) == {("NCCL_SUBNET_ROUTING_MISSING", "node b"), ("NCCL_SUBNET_ROUTING_MISSING", "node c"),
                           ("NODES_DIFFER", "cluster"), ("NCCL_RING_SETTINGS_MISSING", "node c")}
    old = firing[("NCCL_SUBNET_ROUTING_MISSING", "node b")]
    assert old.status is Status.FAIL and "NCCL 2.30.4 predates NCCL_IB_SUBNET_AWARE_ROUTING" in old.message
    assert {e.fact: e.value for e in old.evidence}["NCCL version"] == "2.30.4"
    unset = firing[("NCCL_SUBNET_ROUTING_MISSING", "node c")]
    assert unset.status is Status.WARN and "is not set" in unset.message and "ring of 3" in unset.message
    assert "NCCL_IB_SUBNET_AWARE_ROUTING=1" in unset.fix[1]


def test_subnet_aware_routing_set_to_0_is_named_with_where_it_is_set() -> None:
    models = _models("ring4")
    models["d"] = replace(models["d"], nccl_env={"NCCL_IB_SUBNET_AWARE_ROUTING": "0"})
    (finding,) = [f for f in _firing(_diagnose(models)).values() if f.rule_id == "NCCL_SUBNET_ROUTING_MISSING"]
    assert finding.subject == "node d" and finding.status is Status.WARN
    assert "NCCL_IB_SUBNET_AWARE_ROUTING is 0 (environment), not 1" in finding.message


def test_subnet_aware_routing_is_judged_only_on_a_ring() -> None:
    models = _models("switch4")
    models = {n: replace(m, nccl_env={}, versions={**m.versions, "nccl": "2.28.9"}) for n, m in models.items()}
    result = _diagnose(models)
    assert not [f for f in result.findings if f.rule_id == "NCCL_SUBNET_ROUTING_MISSING"]
    healthy = _diagnose(_models("ring3"))
    assert {f.status for f in healthy.findings if f.rule_id == "NCCL_SUBNET_ROUTING_MISSING"} == {Status.PASS}


def test_an_nccl_version_that_was_not_read_is_a_skip_naming_the_node() -> None:
    models = _models("ring3")
    models["a"] = replace(models["a"], nccl_files=("/usr/lib/libnccl.so",))
    result = _diagnose(models)
    (skip,) = [f for f in result.findings if f.rule_id == "NCCL_SUBNET_ROUTING_MISSING" and f.subject == "node a"]
    assert skip.status is Status.SKIP and "NCCL's version on node a was not read" in (skip.skip_reason or "")
    assert not skip.required


def _switch_by_cage() -> dict[str, Node]:
    """a on the switch by p0, b, c and d by p1; a's NCCL_IB_HCA names its own cabled HCAs."""
    models = cluster_models(switch_by_cage({"a": "p0", "b": "p1", "c": "p1", "d": "p1"}))
    models["a"] = replace(models["a"], nccl_env={"NCCL_IB_HCA": "rocep1s0f0,roceP2p1s0f0"})
    return models


def test_an_nccl_ib_hca_copied_from_a_node_cabled_on_the_other_cage_is_named() -> None:
    models = _switch_by_cage()
    models["b"] = replace(models["b"], nccl_env=dict(models["a"].nccl_env))  # the head's setting, copied
    models["c"] = replace(models["c"], nccl_env={"NCCL_IB_HCA": "=rocep1s0f1,roceP2p1s0f1"})  # its own
    firing = _firing(_diagnose(models))
    assert set(firing) == {("NCCL_IB_HCA_COPIED", "node b")}
    finding = firing[("NCCL_IB_HCA_COPIED", "node b")]
    assert finding.status is Status.FAIL
    assert "selects roceP2p1s0f0,rocep1s0f0, which are not on its cabled cages" in finding.message
    assert "the cabled HCAs of a:" in finding.message
    assert finding.fix[0].startswith("on node b: set NCCL_IB_HCA=roceP2p1s0f1,rocep1s0f1 (its own cabled HCAs)")


def test_an_nccl_ib_hca_that_fits_its_own_node_or_no_other_is_not_a_copy() -> None:
    models = _switch_by_cage()
    # d lists an uncabled HCA too, but no node is cabled on exactly what it names: a mistake, not a copy. c's
    # empty setting lets NCCL use every HCA: nothing copied.
    models["d"] = replace(models["d"], nccl_env={"NCCL_IB_HCA": "rocep1s0f0,rocep1s0f1"})
    models["c"] = replace(models["c"], nccl_env={"NCCL_IB_HCA": ""})
    result = _diagnose(models)
    assert _firing(result) == {}
    status = {f.subject: f.status for f in result.findings if f.rule_id == "NCCL_IB_HCA_COPIED"}
    assert status == {"node a": Status.PASS, "node c": Status.PASS, "node d": Status.PASS}
    # On a ring every node is cabled on both cages: one setting of all four HCAs fits each node.
    ring = {n: replace(m, nccl_env={**m.nccl_env, "NCCL_IB_HCA": "rocep1s0f0,rocep1s0f1,roceP2p1s0f0,roceP2p1s0f1"})
            for n, m in _models("ring3").items()}
    assert _firing(_diagnose(ring)) == {}


def test_a_pairs_nccl_ib_hca_kept_on_a_ring_node_misses_its_other_cable() -> None:
    """A ring node keeping the pair's setting (the p1 twins, eugr's) selects nothing of its p0 cage: NCCL on it has
    no device on that cable (NCCL_IB_HCA is a filter: net_ib.cc ncclIbInit). Not a copy: it names its own HCAs."""
    ring = {n: replace(m, nccl_env={**m.nccl_env, "NCCL_IB_HCA": "rocep1s0f0,rocep1s0f1,roceP2p1s0f0,roceP2p1s0f1"})
            for n, m in _models("ring3").items()}
    ring["b"] = replace(ring["b"], nccl_env={**ring["b"].nccl_env, "NCCL_IB_HCA": "rocep1s0f1,roceP2p1s0f1"})
    result = _diagnose(ring)
    firing = _firing(result)
    assert set(firing) == {("NCCL_IB_HCA_MISSES_CAGE", "node b")}
    finding = firing[("NCCL_IB_HCA_MISSES_CAGE", "node b")]
    assert finding.status is Status.WARN
    assert "selects nothing of its cabled cage p0 (roceP2p1s0f0,rocep1s0f0)" in finding.message
    assert finding.fix[0].startswith("on node b: set NCCL_IB_HCA=roceP2p1s0f0,roceP2p1s0f1,rocep1s0f0,rocep1s0f1 ")
    status = {f.subject: f.status for f in result.findings if f.rule_id == "NCCL_IB_HCA_MISSES_CAGE"}
    assert status == {"node a": Status.PASS, "node b": Status.WARN, "node c": Status.PASS}
    # The setting a public three-node ring of Sparks ran NCCL over RoCE with (luxingcom/aicad-nccl-optimization
    # issue 1, closed 2026-09-18: one HCA of each cage, the cross-cabled ring, subnet-aware routing) is no miss.
    public = {n: replace(m, nccl_env={**m.nccl_env, "NCCL_IB_HCA": "rocep1s0f0,rocep1s0f1"})
              for n, m in _models("ring3").items()}
    assert not [f for f in _diagnose(public).findings
                if f.rule_id in ("NCCL_IB_HCA_MISSES_CAGE", "NCCL_IB_HCA_COPIED") and f.status is not Status.PASS]
    # On a switch, a node whose one cabled cage its setting leaves out (and that fits no other node) has no device.
    models = _switch_by_cage()
    cage = next(f.cage for f in models["c"].functions if f.carrier)
    other = "rocep1s0f1" if cage == "p0" else "rocep1s0f0"
    models["c"] = replace(models["c"], nccl_env={"NCCL_IB_HCA": f"={other}"})
    firing = _firing(_diagnose(models))
    assert ("NCCL_IB_HCA_MISSES_CAGE", "node c") in firing, firing


def test_a_ring_of_four_node_that_lets_nccl_use_tree_or_pat_is_named() -> None:
    models = _routed(_models("ring4"))  # the lab's ring of four sets NCCL_ALGO=Ring on every node
    models["b"] = replace(models["b"], nccl_env={**models["b"].nccl_env, "NCCL_ALGO": "Tree,Ring"})
    models["c"] = replace(models["c"], nccl_env={k: v for k, v in models["c"].nccl_env.items() if k != "NCCL_ALGO"})
    models["d"] = replace(models["d"], nccl_env={**models["d"].nccl_env, "NCCL_ALGO": "^tree,pat"})
    result = _diagnose(models)
    firing = _firing(result)
    assert set(firing) == {("CLUSTER_LAYOUT_UNSUPPORTED", "cluster"), ("NCCL_ALGO_NOT_RING", "node b"),
                           ("NCCL_ALGO_NOT_RING", "node c")}
    assert "NCCL_ALGO=Tree,Ring (environment), so NCCL may pick Tree or PAT" in firing[
        ("NCCL_ALGO_NOT_RING", "node b")].message
    unset = firing[("NCCL_ALGO_NOT_RING", "node c")]
    assert unset.status is Status.WARN and "NCCL_ALGO is not set" in unset.message
    assert unset.fix[0].startswith("on node c: export NCCL_ALGO=Ring")
    status = {f.subject: f.status for f in result.findings if f.rule_id == "NCCL_ALGO_NOT_RING"}
    assert status["node a"] is Status.PASS and status["node d"] is Status.PASS


def test_a_ring_node_without_nvidias_ring_settings_is_named() -> None:
    models = _models("ring3")  # the lab's rings set NVIDIA's three ring settings on every node
    models["b"] = replace(models["b"], nccl_env={k: v for k, v in models["b"].nccl_env.items()
                                                 if k != "NCCL_IB_MERGE_NICS"})
    models["c"] = replace(models["c"], nccl_env={**models["c"].nccl_env, "NCCL_NET_PLUGIN": "libnccl-net-ofi.so"})
    firing = _firing(_diagnose(models))
    assert {s for r, s in firing if r == "NCCL_RING_SETTINGS_MISSING"} == {"node b", "node c"}
    assert "NCCL_IB_MERGE_NICS is not set" in firing[("NCCL_RING_SETTINGS_MISSING", "node b")].message
    plugin = firing[("NCCL_RING_SETTINGS_MISSING", "node c")]
    assert "NCCL_NET_PLUGIN=libnccl-net-ofi.so (environment)" in plugin.message
    assert firing[("NCCL_RING_SETTINGS_MISSING", "node b")].status is Status.WARN
    # Not on a switch: NVIDIA's switch run sets neither.
    switch = _models("switch4")
    assert not any(r == "NCCL_RING_SETTINGS_MISSING" for r, _ in _firing(_diagnose(switch)))


def test_nccl_algo_ring_with_runtime_connect_off_is_not_enough() -> None:
    # NVIDIA/nccl src/init.cc 1552-1570: without runtime connect (cuMem off, or NCCL_RUNTIME_CONNECT=0) NCCL
    # connects Ring, Tree and PAT at init, whatever NCCL_ALGO says.
    models = _routed(_models("ring4"))
    models["a"] = replace(models["a"], nccl_env={**models["a"].nccl_env, "NCCL_CUMEM_ENABLE": "0"})
    models["b"] = replace(models["b"], nccl_env={**models["b"].nccl_env, "NCCL_RUNTIME_CONNECT": "0"})
    models["c"] = replace(models["c"], nccl_env={**models["c"].nccl_env, "NCCL_CUMEM_ENABLE": "1"})
    firing = _firing(_diagnose(models))
    assert {s for r, s in firing if r == "NCCL_ALGO_NOT_RING"} == {"node a", "node b"}
    a = firing[("NCCL_ALGO_NOT_RING", "node a")]
    assert "runtime connect is off (NCCL_CUMEM_ENABLE=0)" in a.message and "connects Tree and PAT at init" in a.message
    assert any("do not set NCCL_RUNTIME_CONNECT=0 or NCCL_CUMEM_ENABLE=0" in line for line in a.fix)
    assert "NCCL_RUNTIME_CONNECT=0" in firing[("NCCL_ALGO_NOT_RING", "node b")].message


def test_nccl_algo_is_judged_only_on_a_ring_of_four_or_more() -> None:
    for scenario in ("ring3", "switch4"):
        models = {n: replace(m, nccl_env={**m.nccl_env, "NCCL_ALGO": "Tree"}) for n, m in _models(scenario).items()}
        assert not [f for f in _diagnose(models).findings if f.rule_id == "NCCL_ALGO_NOT_RING"]


@pytest.mark.parametrize(("value", "ring_only"), [
    ("Ring", True), (" ring ", True), ("^Tree,PAT", True), ("^tree,pat,nvls", True), (None, False), ("", False),
    ("Tree", False), ("Ring,Tree", False), ("^Tree", False), ("^Tree,PAT,Ring", False), ("allreduce:ring", False),
])
def test_nccl_algo_ring_only(value: str | None, ring_only: bool) -> None:
    assert nccl_algo_ring_only(value) is ring_only

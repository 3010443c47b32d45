"""The transaction's cluster parts that need no node: forwarding, a route through a neighbour and a DOCKER-USER
accept as operations (and nothing else), their undo from the live state, the state read back and corrected, the
preflight over any number of nodes, and each planned finding judged again after the repair."""

from __future__ import annotations

from pathlib import Path

import pytest

from linkcheck.app.fix import NOT_JUDGED, STILL_FIRING, planned_findings
from linkcheck.app.offline import cluster_bundle
from linkcheck.bundle.verify import load_trusted
from linkcheck.diagnose.playbook import load_playbooks
from linkcheck.model import Status
from linkcheck.parsers.netplan import parse_netplan
from linkcheck.repair.apply import ApplyOptions, ApplyRefused, preflight, undo_of
from linkcheck.repair.cables import cluster_plan
from linkcheck.repair.checks import host_problems
from linkcheck.repair.edits import EditError, netplan_add_route
from linkcheck.repair.files import NodeFiles
from linkcheck.repair.livestate import corrections, differences, parse_state, state_command
from linkcheck.repair.model import RepairPlan, Step
from linkcheck.repair.runtime import (
    ACCEPT_DELETE,
    ACCEPT_INSERT,
    FORWARD,
    ROUTE_DEL,
    ROUTE_REPLACE,
    OpError,
    RuntimeOp,
    check_op,
    parse_op,
)
from linkcheck.repair.transit import transit_plan
from linkcheck.transport.base import RemoteResult
from tests.cluster.cluster_checks import saved_bundle

FORWARD_ON = "sudo sysctl -w net.ipv4.ip_forward=1"
ROUTE = "sudo ip route replace 198.19.12.0/24 via 198.19.10.2 dev enp1s0f0np0"
ACCEPT = "sudo iptables -I DOCKER-USER -i enp1s0f0np0 -o enp1s0f1np1 -j ACCEPT"


@pytest.mark.parametrize(("command", "op"), [
    (FORWARD_ON, RuntimeOp(FORWARD, value="1")),
    (ROUTE, RuntimeOp(ROUTE_REPLACE, "enp1s0f0np0", "198.19.12.0/24", via="198.19.10.2")),
    (ACCEPT, RuntimeOp(ACCEPT_INSERT, value="enp1s0f0np0", via="enp1s0f1np1")),
])
def test_a_clusters_command_is_read_as_its_operation_and_rendered_back(command: str, op: RuntimeOp) -> None:
    assert parse_op(command) == op and op.host
    assert parse_op(op.shell()) == op
    check_op(op)  # as a journal reads it back


@pytest.mark.parametrize("command", [
    "sudo sysctl -w net.ipv4.ip_forward=2", "sudo sysctl -w kernel.sysrq=1", "sudo sysctl net.ipv4.ip_forward=1",
    "sudo ip route replace 198.19.12.1/24 via 198.19.10.2 dev e",  # not the network's normal form
    "sudo ip route replace default via 198.19.10.2 dev e", "sudo ip route replace 198.19.12.0/24 via x dev e",
    "sudo iptables -I FORWARD -i enp1s0f0np0 -o enp1s0f1np1 -j ACCEPT", "sudo iptables -F DOCKER-USER",
    "sudo iptables -I DOCKER-USER -s 0.0.0.0/0 -j ACCEPT", "sudo iptables -I DOCKER-USER -i a+ -o b -j ACCEPT",
    "sudo iptables -I DOCKER-USER -i enp1s0f0np0 -o enp1s0f1np1 -j ACCEPT; reboot",
])
def test_any_other_routing_or_firewall_command_is_refused(command: str) -> None:
    with pytest.raises(OpError):
        parse_op(command)


class _Node:
    """A node that answers commands by their start, and records them."""

    local = False

    def __init__(self, name: str, answers: dict[str, str], fails: tuple[str, ...] = ()) -> None:
        self.name = name
        self.answers = answers
        self.fails = fails
        self.commands: list[str] = []

    def sh(self, command: str, *, timeout_s: float = 30, stdin: str | None = None) -> RemoteResult:
        self.commands.append(command)
        if command.startswith(self.fails):
            return RemoteResult("", "iptables: Bad rule", 1, 0)
        return RemoteResult(next((v for k, v in self.answers.items() if command.startswith(k)), ""), "", 0, 0)

    def change(self, op: RuntimeOp) -> None:
        raise AssertionError(f"changed: {op}")


def test_each_change_is_undone_from_what_the_node_holds_just_before() -> None:
    node = _Node("b", {"cat /proc/sys/net/ipv4/ip_forward": "0\n", "ip -j route show": "[]"})
    assert undo_of(node, parse_op(FORWARD_ON)) == RuntimeOp(FORWARD, value="0")  # type: ignore[arg-type]
    assert undo_of(node, parse_op(ROUTE)) == RuntimeOp(  # type: ignore[arg-type]
        ROUTE_DEL, "enp1s0f0np0", "198.19.12.0/24", via="198.19.10.2")
    assert undo_of(node, parse_op(ACCEPT)) == RuntimeOp(  # type: ignore[arg-type]
        ACCEPT_DELETE, value="enp1s0f0np0", via="enp1s0f1np1")
    # A route it replaces is put back as it was; forwarding already on needs nothing put back.
    held = _Node("b", {"cat /proc/sys/net/ipv4/ip_forward": "1\n",
                       "ip -j route show": '[{"dst":"198.19.12.0/24","gateway":"198.19.11.9","dev":"enP2p1s0f0np0"}]'})
    assert undo_of(held, parse_op(FORWARD_ON)) is None  # type: ignore[arg-type]
    assert undo_of(held, parse_op(ROUTE)) == RuntimeOp(  # type: ignore[arg-type]
        ROUTE_REPLACE, "enP2p1s0f0np0", "198.19.12.0/24", via="198.19.11.9")


def test_the_changes_are_read_back_live() -> None:
    ops = [parse_op(c) for c in (FORWARD_ON, ROUTE, ACCEPT)]
    done = _Node("b", {"cat /proc/sys/net/ipv4/ip_forward": "1\n",
                       "ip -j route show": '[{"dst":"198.19.12.0/24","gateway":"198.19.10.2","dev":"enp1s0f0np0"}]'})
    assert host_problems(done, "b", ops) == []  # type: ignore[arg-type]
    assert any("iptables -C DOCKER-USER -i enp1s0f0np0 -o enp1s0f1np1 -j ACCEPT" in c for c in done.commands)
    lost = _Node("b", {"cat /proc/sys/net/ipv4/ip_forward": "0\n", "ip -j route show": "[]"},
                 fails=("sudo -n iptables -C",))
    assert host_problems(lost, "b", ops) == [  # type: ignore[arg-type]
        "node b: net.ipv4.ip_forward is 0, not 1",
        "node b: no route to 198.19.12.0/24 via 198.19.10.2 dev enp1s0f0np0",
        "node b: DOCKER-USER has no rule -i enp1s0f0np0 -o enp1s0f1np1 -j ACCEPT"]


def _state(forward: str, rules: str, route: str = "[]") -> str:
    link = '[{"ifname":"e","mtu":9000}]'
    return f"D e\n{link}\n[]\n{route}\n[]\nH\n{forward}\nI\n{rules}J\nE\n"


def test_a_revert_is_read_back_against_forwarding_routes_and_the_docker_user_chain() -> None:
    assert "iptables -S DOCKER-USER" in state_command(["e"], host=True)
    assert "iptables" not in state_command(["e"])  # a run that changes none of them reads none of them
    before = parse_state(_state("0", "-N DOCKER-USER\n-A DOCKER-USER -j RETURN\n"), ["e"])
    assert before.forwarding == "0" and before.docker_user == ("-N DOCKER-USER", "-A DOCKER-USER -j RETURN")
    now = parse_state(_state("1", "-N DOCKER-USER\n-A DOCKER-USER -i enp1s0f0np0 -o enp1s0f1np1 -j ACCEPT\n"
                             "-A DOCKER-USER -j RETURN\n",
                             '[{"dst":"198.19.12.0/24","gateway":"198.19.10.2","metric":0}]'), ["e"])
    said = differences(before, now)
    assert any(d.startswith("net.ipv4.ip_forward 1, was 0") for d in said)
    assert any(d.startswith("DOCKER-USER holds") for d in said) and any("routes" in d for d in said)
    assert set(corrections(before, now)) == {
        RuntimeOp(ROUTE_DEL, "e", "198.19.12.0/24", via="198.19.10.2"), RuntimeOp(FORWARD, value="0"),
        RuntimeOp(ACCEPT_DELETE, value="enp1s0f0np0", via="enp1s0f1np1")}
    assert differences(before, before) == []


ANSWERS = {
    'printf "%s\\n" "${SSH_CONNECTION:-}"': "198.18.0.0 50000 198.18.0.1 22\n",
    "ip -j route show default": '[{"dst":"default","gateway":"10.0.0.1","dev":"enP7s7"}]',
    "ip -j route get": '[{"dst":"198.18.0.0","dev":"lcm-b","prefsrc":"198.18.0.1"}]',
}


def test_the_preflight_serves_any_nodes_and_asks_only_those_with_a_step() -> None:
    nodes = {n: _Node(n, ANSWERS) for n in "abcd"}
    plan = RepairPlan(steps=(Step("c", "TRANSIT_FORWARDING_OFF:node c", (FORWARD_ON,), None, (), ()),
                             Step("b", "NO_ROUTE_TO_NON_NEIGHBOUR:node b", (ROUTE,), None, (), ())))
    preps = preflight(plan, nodes, ApplyOptions(), lambda _: None)  # type: ignore[arg-type]
    assert [p.node for p in preps] == ["c", "b"]  # the plan's order
    assert not nodes["a"].commands and not nodes["d"].commands  # a node with no step is never asked
    elsewhere = RepairPlan(steps=(Step("e", "TRANSIT_FORWARDING_OFF:node e", (FORWARD_ON,), None, (), ()),))
    with pytest.raises(ApplyRefused, match="node 'e' is not one of the nodes reached"):
        preflight(elsewhere, nodes, ApplyOptions(), lambda _: None)  # type: ignore[arg-type]
    onto_mgmt = RepairPlan(steps=(Step("b", "NO_ROUTE_TO_NON_NEIGHBOUR:node b",
                                       ("sudo ip route replace 198.19.12.0/24 via 198.18.0.0 dev lcm-b",), None, (),
                                       ()),))
    with pytest.raises(ApplyRefused, match="the management interface"):
        preflight(onto_mgmt, nodes, ApplyOptions(), lambda _: None)  # type: ignore[arg-type]


def test_each_planned_finding_is_judged_again_by_its_id(tmp_path: Path) -> None:
    folder = saved_bundle(tmp_path / "bundle", "ring4-fabric-sockets")
    check = cluster_bundle(folder, load_playbooks(kind="all"))
    plan = cluster_plan(check, load_trusted(folder))
    assert plan.state_sha256 and plan.steps
    assert {state for _, state in planned_findings(plan, check)} == {STILL_FIRING}  # nothing changed yet
    now = check.statuses()
    assert now["TRANSIT_FORWARDING_OFF:node b"] is Status.WARN
    stray = RepairPlan(steps=(Step("a", "LINK_HOTPLUG_DEGRADED:x (cable a:p0<->b:p1)", (), None, (), ()),))
    assert planned_findings(stray, check) == [("LINK_HOTPLUG_DEGRADED:x (cable a:p0<->b:p1)", NOT_JUDGED)]


NETPLAN = """network:
  version: 2
  ethernets:
    enp1s0f0np0:
      addresses:
        - 192.168.10.1/24
      mtu: 9000
"""


def test_a_route_goes_into_the_interfaces_netplan_definition_as_a_block_list() -> None:
    one = netplan_add_route(NETPLAN, "enp1s0f0np0", "192.168.12.0/24", "192.168.10.2")
    two = netplan_add_route(one, "enp1s0f0np0", "192.168.13.0/24", "192.168.10.2")
    assert two.endswith("""    enp1s0f0np0:
      routes:
        - to: 192.168.12.0/24
          via: 192.168.10.2
        - to: 192.168.13.0/24
          via: 192.168.10.2
      addresses:
        - 192.168.10.1/24
      mtu: 9000
""")
    assert parse_netplan(two).ethernets[0].addresses == ("192.168.10.1/24",)  # the rest reads as before
    with pytest.raises(EditError, match="there already"):
        netplan_add_route(two, "enp1s0f0np0", "192.168.12.0/24", "192.168.10.2")
    flow = NETPLAN.replace("      mtu: 9000", "      mtu: 9000\n      routes: [{to: 10.0.0.0/8, via: 192.168.10.9}]")
    with pytest.raises(EditError, match="not a block list"):
        netplan_add_route(flow, "enp1s0f0np0", "192.168.12.0/24", "192.168.10.2")
    with pytest.raises(EditError):
        netplan_add_route(NETPLAN, "enp1s0f1np1", "192.168.12.0/24", "192.168.10.2")


def test_a_route_is_kept_runtime_only_where_no_netplan_file_defines_the_interface(tmp_path: Path) -> None:
    folder = saved_bundle(tmp_path / "bundle", "ring4-fabric-sockets")
    check = cluster_bundle(folder, load_playbooks(kind="all"))
    routes = [f for f in check.view.diagnosis.findings if f.finding_id == "NO_ROUTE_TO_NON_NEIGHBOUR:node a"]
    plan = transit_plan(check.facts, "a", routes[0], NodeFiles())
    assert plan.steps and all(s.persistent is None for s in plan.steps)
    assert plan.notes and all("runtime only (no netplan file defines enp1s0f0np0)" in n for n in plan.notes)

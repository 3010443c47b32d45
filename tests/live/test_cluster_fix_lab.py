"""`linkcheck fix --apply` and `--restore` over the lab's ring of four, asserting on the nodes' real state.

The ring of four with NCCL's sockets on the ring's addresses (tests/lab/cluster.py ring4-fabric-sockets): every node
lies between two others, and a fresh namespace neither forwards nor has a route to the node opposite it, so traffic
from a to c stops. What is real here: the SSH sessions, each node's own kernel state (`sysctl`, `ip route`, the
namespace's netfilter tables), the journal on each node's own /var/lib/linkcheck, the drop-in in each node's own
/etc/sysctl.d (a staged folder: nothing reaches the host's), Debian's `netplan generate` on every netplan file
written. A stand-in: `netplan try` (tests/lab/netplan_try_standin.py; these labs boot no renderer for the real one
to apply to)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.lab.cluster import RING4_C_FROM_A, docker_forward_drop, route_ring4

if TYPE_CHECKING:
    from tests.conftest import InProcessCli
    from tests.lab import Lab
    from tests.live.conftest import ClusterFactory, ClusterLab

pytestmark = pytest.mark.lab  # builds a lab of four nodes

NODES = "abcd"
DROP_IN = "/etc/sysctl.d/60-linkcheck-forward.conf"


def _state(lab: Lab, node: str) -> tuple[str, list[str], str, str]:
    """ip_forward, the main table's routes (destination, gateway, device), the drop-in's text (or `absent`), and
    the netplan files with their modes."""
    forward = lab.exec(node, ["cat", "/proc/sys/net/ipv4/ip_forward"]).stdout.strip()
    routes = json.loads(lab.exec(node, ["ip", "-j", "route", "show", "table", "main"]).stdout or "[]")
    drop_in = lab.exec(node, ["sh", "-c", f"cat {DROP_IN} 2>/dev/null || echo absent"]).stdout
    netplan = lab.exec(node, ["sh", "-c", 'for f in /etc/netplan/*; do stat -c "%n %a" "$f"; cat "$f"; done']).stdout
    return forward, sorted(f"{r.get('dst')} {r.get('gateway', '-')} {r.get('dev')}" for r in routes), drop_in, \
        netplan


def _run(cli: InProcessCli, cluster: ClusterLab, *args: str) -> tuple[int, str]:
    run = cli("fix", *args, *cluster.args, timeout=300)
    return run.returncode, run.stdout + run.stderr


def test_fix_apply_turns_forwarding_on_and_routes_through_the_ring_and_restore_puts_it_back(
        cluster_factory: ClusterFactory, cli: InProcessCli, tmp_path: Path) -> None:
    cluster = cluster_factory("ring4-fabric-sockets")
    lab = cluster.lab
    before = {n: _state(lab, n) for n in NODES}
    assert all(s[0] == "0" and s[2] == "absent\n" for s in before.values())
    assert lab.exec("a", ["ping", "-c", "1", "-W", "1", RING4_C_FROM_A]).returncode != 0

    code, said = _run(cli, cluster, "--apply", "--save", str(tmp_path / "fix"))
    # The ring of four stays an undocumented layout (CLUSTER_LAYOUT_UNSUPPORTED warns): exit 1, every repair fixed.
    assert code == 1, said
    for n in NODES:
        assert f"node {n}: committed" in said, said
        assert f"after the repair: TRANSIT_FORWARDING_OFF:node {n}: fixed" in said, said
        assert f"after the repair: NO_ROUTE_TO_NON_NEIGHBOUR:node {n}: fixed" in said, said
    after = {n: _state(lab, n) for n in NODES}
    for n in NODES:
        forward, routes, drop_in, netplan = after[n]
        assert forward == "1" and drop_in == "net.ipv4.ip_forward=1\n"
        added = set(routes) - set(before[n][1])
        assert added and all(r.split()[1] != "-" for r in added), routes  # each through a neighbour
        # Each route also in the interface's netplan definition (committed through netplan try), mode 600 kept.
        assert all(f"- to: {r.split()[0]}" in netplan and f"via: {r.split()[1]}" in netplan for r in added), netplan
        assert " 600\n" in netplan and "routes:" not in before[n][3]
    ping = lab.exec("a", ["ping", "-c", "1", "-W", "2", RING4_C_FROM_A])
    assert ping.returncode == 0, ping.stdout + ping.stderr  # a reaches c through b
    record = json.loads((tmp_path / "fix" / "apply.json").read_text(encoding="utf-8"))
    assert [o["node"] for o in record["nodes"]] == list(NODES)
    assert set(record["after"]["planned"].values()) == {"fixed"}

    code, said = _run(cli, cluster, "--restore")
    assert code == 0, said
    assert all(f"node {n}: run " in said and "live state as before the run" in said for n in NODES), said
    assert {n: _state(lab, n) for n in NODES} == before
    assert lab.exec("a", ["ping", "-c", "1", "-W", "1", RING4_C_FROM_A]).returncode != 0


def test_fix_apply_accepts_the_rings_own_subnets_in_docker_user_on_the_node_that_drops_them_only(
        cluster_factory: ClusterFactory, cli: InProcessCli, tmp_path: Path) -> None:
    """Real netfilter in b's namespace: forwarding and routes in place, Docker's FORWARD policy DROP with an empty
    DOCKER-USER on b stops a's traffic to c. `fix --apply` changes b alone (its exact accepts between its own CX-7
    ports), the others are never touched; `--restore` deletes exactly those rules and reads the chain back as it
    was."""
    cluster = cluster_factory("ring4-fabric-sockets")
    lab = cluster.lab
    route_ring4(lab)
    docker_forward_drop(lab, "b")
    chain = lab.exec("b", ["iptables", "-S", "DOCKER-USER"]).stdout
    assert lab.exec("a", ["ping", "-c", "1", "-W", "1", RING4_C_FROM_A]).returncode != 0

    code, said = _run(cli, cluster, "--apply", "--save", str(tmp_path / "fix"))
    assert code == 1, said  # CLUSTER_LAYOUT_UNSUPPORTED still warns
    assert "node b: committed" in said and "after the repair: DOCKER_FORWARD_DROP:node b: fixed" in said, said
    assert not any(f"node {n}: committed" in said for n in "acd"), said
    assert all(lab.exec(n, ["sh", "-c", "ls /var/lib/linkcheck/journal 2>/dev/null"]).stdout == "" for n in "acd")
    accepts = [r for r in lab.exec("b", ["iptables", "-S", "DOCKER-USER"]).stdout.splitlines() if "ACCEPT" in r]
    assert len(accepts) == 12 and all(r.startswith("-A DOCKER-USER -i en") and " -o en" in r for r in accepts), \
        accepts  # b's four addressed CX-7 ports, each ordered pair once
    ping = lab.exec("a", ["ping", "-c", "1", "-W", "2", RING4_C_FROM_A])
    assert ping.returncode == 0, ping.stdout + ping.stderr

    code, said = _run(cli, cluster, "--restore")
    assert code == 0 and "node b: run " in said and "live state as before the run" in said, said
    assert "node a: nothing to restore" in said, said
    assert lab.exec("b", ["iptables", "-S", "DOCKER-USER"]).stdout == chain
    assert lab.exec("a", ["ping", "-c", "1", "-W", "1", RING4_C_FROM_A]).returncode != 0


def test_a_node_that_cannot_be_changed_puts_back_the_nodes_committed_before_it(
        cluster_factory: ClusterFactory, cli: InProcessCli, tmp_path: Path) -> None:
    """A forced failure: on node c the forwarding drop-in's path is a symbolic link, which a repair never writes
    through. a and b, committed before c, are put back (their journals' files and runtime change undone, their live
    state read back as before), c is left as it was, d is never touched: every node reads as before the run."""
    cluster = cluster_factory("ring4-fabric-sockets")
    lab = cluster.lab
    assert lab.exec("c", ["ln", "-s", "/nonexistent-target", DROP_IN]).returncode == 0
    before = {n: _state(lab, n) for n in NODES}

    code, said = _run(cli, cluster, "--apply", "--save", str(tmp_path / "fix"))
    assert code == 2, said
    assert "node c: not applied;" in said and "is a symbolic link" in said, said
    for n in "ab":
        assert f"node {n}: putting back its committed change, as node c's was not applied" in said, said
        assert f"node {n}: reverted (journal " in said and "live state as before the run" in said, said
    assert "node d:" not in said.split("node c: not applied")[-1].split("\n")[0]
    assert lab.exec("d", ["sh", "-c", "ls /var/lib/linkcheck/journal 2>/dev/null"]).stdout == ""
    assert {n: _state(lab, n) for n in NODES} == before
    assert lab.exec("c", ["readlink", DROP_IN]).stdout.strip() == "/nonexistent-target"  # never written through


def _port(lab: Lab, node: str, dev: str) -> tuple[int, str]:
    """The port's live MTU, and its netplan definition as the node's files say it."""
    mtu = json.loads(lab.exec(node, ["ip", "-j", "link", "show", "dev", dev]).stdout)[0]["mtu"]
    show = f"sed -n '/^    {dev}:$/,/^    [^ ]/p' /etc/netplan/*.yaml"
    return int(mtu), lab.exec(node, ["sh", "-c", show]).stdout


def test_fix_apply_raises_a_rings_low_hop_to_the_clusters_mtu_and_restore_puts_it_back(
        cluster_factory: ClusterFactory, cli: InProcessCli, tmp_path: Path) -> None:
    """The b-c cable's second twins at MTU 1500 on both ends, live and in their files, while every other hop runs
    9000: no two ends of a path differ, so only the cluster's MTU_MISMATCH sees it. `fix --apply` raises both to 9000
    live and in their netplan definitions, node by node, and `fix --restore` puts both back."""
    cluster = cluster_factory("ring3")
    lab = cluster.lab
    ports = {"b": "enP2p1s0f0np0", "c": "enP2p1s0f1np1"}  # ring3: b's p0 faces c's p1
    for node, dev in ports.items():
        assert lab.exec(node, ["ip", "link", "set", "dev", dev, "mtu", "1500"]).returncode == 0
        drop = f"/^    {dev}:$/,/^    [^ ]/{{/^      mtu: 9000$/d}}"
        assert lab.exec(node, ["sh", "-c", f"sed -i '{drop}' /etc/netplan/*.yaml"]).returncode == 0
    before = {n: _port(lab, n, dev) for n, dev in ports.items()}
    assert all(mtu == 1500 and "mtu:" not in text and text for mtu, text in before.values()), before

    code, said = _run(cli, cluster, "--apply", "--save", str(tmp_path / "fix"))
    assert code == 0, said
    for node, dev in ports.items():
        assert f"node {node}: committed" in said, said
        assert f"after the repair: MTU_MISMATCH:{node}:{dev}: fixed" in said, said
        mtu, text = _port(lab, node, dev)
        assert mtu == 9000 and "mtu: 9000" in text, (node, mtu, text)

    code, said = _run(cli, cluster, "--restore")
    assert code == 0, said
    assert {n: _port(lab, n, dev) for n, dev in ports.items()} == before

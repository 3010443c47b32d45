"""collect(): both nodes in parallel, one round trip each, failures as entries; pyroute2 for localhost."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from msgspec.structs import replace

from linkcheck.collect.collector import close_transports, collect, open_transports
from linkcheck.collect.specs import SPECS, Spec
from linkcheck.errors import NodeError
from linkcheck.model import Capture
from linkcheck.transport.base import (
    CommandTimeoutError,
    ConnectionDroppedError,
    NodeTarget,
    RemoteResult,
    Transport,
    parse_target,
)
from linkcheck.transport.local import LocalTransport
from linkcheck.transport.pyroute_facts import PYROUTE_SPECS
from linkcheck.transport.ssh import SshTransport
from tests.transport import sshd_helper
from tests.transport.sshd_helper import Sshd

SMALL = (
    Spec("hostname", "hostname"),
    Spec("kernel_release", "uname -r"),
    Spec("ip_link", "ip -d -j link show"),
    Spec("answer", "echo 42; echo note >&2; exit 2"),
)


class Recording:
    """A transport wrapper that counts round trips and can delay, cut, or fail the answer."""

    def __init__(self, name: str, *, delay_s: float = 0, cut: float | None = None, fail: Exception | None = None):
        self.name = name
        self.inner = LocalTransport(name)
        self.delay_s, self.cut, self.fail = delay_s, cut, fail
        self.calls: list[str] = []

    def run(self, command: str, *, timeout_s: float, stdin: str | None = None) -> RemoteResult:
        self.calls.append(command)
        time.sleep(self.delay_s)
        if self.fail is not None:
            raise self.fail
        result = self.inner.run(command, timeout_s=timeout_s, stdin=stdin)
        if self.cut is None:
            return result
        return replace(result, stdout=result.stdout[: int(len(result.stdout) * self.cut)])

    def close(self) -> None:
        pass


def by_key(captures: list[Capture], node: str) -> dict[str, Capture]:
    return {c.spec: c for c in captures if c.node == node}


def test_two_nodes_in_parallel_one_round_trip_each() -> None:
    nodes = {"a": Recording("a", delay_s=1.0), "b": Recording("b", delay_s=1.0)}
    start = time.monotonic()
    result = collect(nodes, SMALL, timeout_s=30)
    assert time.monotonic() - start < 1.8  # the two 1 s delays overlapped
    assert result.errors == {}
    assert [len(t.calls) for t in nodes.values()] == [1, 1]
    for node in ("a", "b"):
        captures = by_key(result.captures, node)
        assert set(captures) == {s.id for s in SMALL}
        assert captures["answer"].stdout == "42\n" and captures["answer"].exit_status == 2
        assert captures["answer"].stderr == "note\n"
        assert captures["kernel_release"].stdout == os.uname().release + "\n"


def test_a_failing_node_is_an_entry_not_an_exception() -> None:
    down = NodeError("b", "connection refused by 10.0.0.2:22")
    nodes = {"a": Recording("a"), "b": Recording("b", fail=down)}
    result = collect(nodes, SMALL, timeout_s=30)
    assert result.errors == {"b": down}
    assert set(by_key(result.captures, "a")) == {s.id for s in SMALL}
    assert by_key(result.captures, "b") == {}


def test_a_bug_in_a_transport_does_not_escape() -> None:
    nodes = {"a": Recording("a", fail=RuntimeError("boom"))}
    result = collect(nodes, SMALL, timeout_s=30)
    assert isinstance(result.errors["a"], NodeError)
    assert "RuntimeError: boom" in str(result.errors["a"])


def test_truncated_answer_keeps_what_came_and_says_so() -> None:
    nodes = {"a": Recording("a", cut=0.5)}
    result = collect(nodes, SMALL, timeout_s=30)
    error = result.errors["a"]
    assert isinstance(error, NodeError) and "truncated" in str(error)
    captures = by_key(result.captures, "a")
    assert captures["hostname"].ok  # finished before the cut
    assert set(captures) == {s.id for s in SMALL}  # the rest is marked, not silently absent
    unfinished = [c for c in captures.values() if not c.ok]
    assert unfinished and all(c.skipped and c.exit_status is None for c in unfinished)


@pytest.mark.parametrize("kind", ["timeout", "dropped"])
def test_partial_answers_of_timeouts_and_drops_are_kept(kind: str) -> None:
    local = LocalTransport("a")

    class Cutting(Recording):
        def run(self, command: str, *, timeout_s: float, stdin: str | None = None) -> RemoteResult:
            full = local.run(command, timeout_s=timeout_s, stdin=stdin)
            part = replace(full, stdout=full.stdout[: len(full.stdout) // 2], exit_status=None)
            if kind == "timeout":
                raise CommandTimeoutError("a", "`sh`", timeout_s, part)
            raise ConnectionDroppedError("a", "sshd dropped the connection", part)

    result = collect({"a": Cutting("a")}, SMALL, timeout_s=30)
    assert isinstance(result.errors["a"], CommandTimeoutError if kind == "timeout" else ConnectionDroppedError)
    assert by_key(result.captures, "a")["hostname"].ok


def test_localhost_ip_captures_come_from_pyroute2() -> None:
    transports = open_transports([parse_target("localhost", name="a")])
    assert isinstance(transports["a"], LocalTransport)
    specs = tuple(s for s in SPECS if s.id in PYROUTE_SPECS) + (Spec("hostname", "hostname"),)
    result = collect(transports, specs, timeout_s=30)
    assert result.errors == {}
    captures = by_key(result.captures, "a")
    for spec, command in PYROUTE_SPECS.items():
        assert captures[spec].command == f"pyroute2: {command}"
        assert isinstance(json.loads(captures[spec].stdout), list)
    assert captures["hostname"].command == "hostname"


def test_open_transports_picks_ssh_unless_bare_localhost(tmp_path: Path) -> None:
    targets = [parse_target("localhost:22", name="a"), parse_target("root@127.0.0.1", name="b")]
    transports = open_transports(targets, ssh_config=tmp_path / "none")
    assert all(isinstance(t, SshTransport) for t in transports.values())
    close_transports(transports)  # nothing was connected yet: closing is harmless


def test_full_specs_on_this_machine_are_complete() -> None:
    result = collect({"a": LocalTransport("a")}, SPECS, timeout_s=60, per_command_timeout_s=10)
    assert result.errors == {}
    captures = by_key(result.captures, "a")
    assert {s.id for s in SPECS if not s.per_netdev and not s.per_container} <= set(captures)
    assert captures["kernel_release"].ok


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    reason = sshd_helper.skip_reason()
    if reason:
        pytest.skip(reason)
    running = sshd_helper.start_sshd(tmp_path_factory.mktemp("sshd"))
    try:
        yield running
    finally:
        running.stop()


@pytest.mark.lab  # real sshd or network namespaces
def test_local_and_ssh_nodes_together(server: Sshd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text(server.host_key_line())
    targets = [
        parse_target("localhost", name="a"),
        NodeTarget("b", "127.0.0.1", "root", server.port, str(server.client_key)),
    ]
    transports = open_transports(targets, known_hosts=known_hosts, ssh_config=tmp_path / "none")
    try:
        result = collect(transports, SMALL, timeout_s=30)
    finally:
        close_transports(transports)
    assert result.errors == {}
    a, b = by_key(result.captures, "a"), by_key(result.captures, "b")
    assert a["ip_link"].command.startswith("pyroute2: ") and b["ip_link"].command == "ip -d -j link show"
    assert b["answer"].stdout == "42\n" and b["answer"].exit_status == 2
    assert json.loads(a["ip_link"].stdout) and json.loads(b["ip_link"].stdout)


# --- pyroute2 against iproute2 -------------------------------------------------------------------

USED_LINK_KEYS = ("ifindex", "ifname", "mtu", "address", "flags", "operstate", "link_type", "altnames", "master")
USED_ADDR_KEYS = ("family", "local", "prefixlen", "scope", "broadcast", "secondary", "noprefixroute")


def ip_json(command: str, prefix: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    out = subprocess.run([*prefix, *command.split()], capture_output=True, text=True, check=True)
    parsed: list[dict[str, Any]] = json.loads(out.stdout)
    return parsed


# A few interfaces of each kind the fields above describe, in a network namespace of the test's own: both reads see
# the same interfaces, whatever else on the machine creates or removes one meanwhile.
OWN_NAMESPACE = """set -e
ip link set lo up
ip link add v0 type veth peer name v1
ip link add d0 type veth peer name d1
ip link set v0 up; ip link set d0 up; ip link set v1 mtu 9000
ip addr add 198.18.0.1/24 dev v0
ip addr add 198.18.0.2/24 dev v0
ip addr add 198.18.1.1/24 dev d0 noprefixroute
ip addr add fd00:1::1/64 dev v0 nodad
ip route add 198.19.0.0/16 via 198.18.0.254 dev v0
ip neigh add 198.18.0.9 lladdr 02:00:00:00:00:09 dev v0 nud permanent
exec "$0" -c "$1"
"""
READ_BOTH = """import json, subprocess, sys
from linkcheck.transport.pyroute_facts import PYROUTE_SPECS, render_ip_json
mine = {spec: json.loads(text) for spec, text in render_ip_json().items()}
real = {spec: json.loads(subprocess.run(cmd.split(), capture_output=True, text=True, check=True).stdout)
        for spec, cmd in PYROUTE_SPECS.items()}
json.dump({"mine": mine, "real": real}, sys.stdout)
"""


def _own_network_namespace() -> list[str]:
    """unshare's argv for a network namespace of our own: as root directly, else inside a user namespace of our own
    (where the kernel allows unprivileged ones); the test skips when neither works."""
    if shutil.which("ip") is None or shutil.which("unshare") is None:
        pytest.skip("iproute2 or unshare not installed")
    for argv in (["unshare", "--net"], ["unshare", "--user", "--map-root-user", "--net"]):
        if os.geteuid() != 0 and "--user" not in argv:
            continue
        if subprocess.run([*argv, "ip", "link", "add", "v0", "type", "veth"], capture_output=True).returncode == 0:
            return argv
    pytest.skip("cannot create a network namespace here (not root, no unprivileged user namespaces)")


def test_pyroute2_matches_ip_on_the_fields_we_use() -> None:
    argv = [*_own_network_namespace(), "sh", "-c", OWN_NAMESPACE, sys.executable, READ_BOTH]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=Path(__file__).parents[2])
    assert out.returncode == 0, out.stderr
    both = json.loads(out.stdout)
    mine, real = both["mine"], both["real"]
    assert [d["ifname"] for d in real["ip_link"]] == ["lo", "v1", "v0", "d1", "d0"]
    for spec in ("ip_link", "ip_addr"):
        assert [{k: d.get(k) for k in USED_LINK_KEYS} for d in mine[spec]] == [
            {k: d.get(k) for k in USED_LINK_KEYS} for d in real[spec]
        ]
    assert [[{k: a.get(k) for k in USED_ADDR_KEYS} for a in d["addr_info"]] for d in mine["ip_addr"]] == [
        [{k: a.get(k) for k in USED_ADDR_KEYS} for a in d["addr_info"]] for d in real["ip_addr"]
    ]
    assert [{k: d.get(k) for k in ("parentbus", "parentdev", "phys_port_name")} for d in mine["ip_link"]] == [
        {k: d.get(k) for k in ("parentbus", "parentdev", "phys_port_name")} for d in real["ip_link"]
    ]
    assert mine["ip_route"] == real["ip_route"] and len(real["ip_route"]) >= 2
    neigh_keys = ("dst", "dev", "lladdr")
    assert sorted(tuple(str(d.get(k)) for k in neigh_keys) for d in mine["ip_neigh"]) == sorted(
        tuple(str(d.get(k)) for k in neigh_keys) for d in real["ip_neigh"]
    )
    assert ("198.18.0.9", "v0", "02:00:00:00:00:09") in {tuple(d.get(k) for k in neigh_keys) for d in real["ip_neigh"]}


RICH_NAMESPACE = """set -e
ip -n {ns} link set lo up
ip -n {ns} link add v0 type veth peer name v1
ip -n {ns} link add v2 type veth peer name v3 netns {ns}-peer
ip -n {ns} link set v0 up; ip -n {ns} link set v1 mtu 9000; ip -n {ns} link set v2 up
ip -n {ns} link property add dev v0 altname enp1s0f0np0
ip -n {ns} addr add 198.18.0.1/24 dev v0
ip -n {ns} addr add 198.18.0.2/24 dev v0
ip -n {ns} addr add 198.18.1.1/24 dev v1 noprefixroute
ip -n {ns} addr add 10.9.9.1 peer 10.9.9.2/32 dev v2
ip -n {ns} addr add fd00:1::1/64 dev v0 nodad
ip -n {ns} addr add 198.18.2.1/24 dev v2 valid_lft 3000 preferred_lft 2000
ip -n {ns} route add 198.19.0.0/16 via 198.18.0.254 dev v0 metric 50 proto static
ip -n {ns} route add blackhole 203.0.113.0/24
ip -n {ns} route add 198.51.100.7 dev v0 scope link
ip -n {ns} route add 192.0.2.0/24 via 198.18.1.254 dev v2 onlink
ip -n {ns} neigh add 198.18.0.9 lladdr 02:00:00:00:00:09 dev v0 nud permanent
ip -n {ns} neigh add 198.18.0.10 lladdr 02:00:00:00:00:0a dev v0 nud stale
ip -n {ns} neigh add 198.18.0.11 lladdr 02:00:00:00:00:0b dev v0 nud noarp
"""


@pytest.fixture
def rich_namespace() -> Iterator[str]:
    """A throwaway netns with veth (local and cross-namespace), altname, secondary, peer, IPv6,
    lifetimes, static/blackhole/onlink routes and neighbours in several states; deleted afterwards."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("needs root and iproute2 to build a network namespace")
    ns = f"lc-pyr-{uuid.uuid4().hex[:8]}"
    made: list[str] = []
    try:
        for name in (ns, f"{ns}-peer"):
            if subprocess.run(["ip", "netns", "add", name], capture_output=True).returncode != 0:
                pytest.skip("cannot create network namespaces here")
            made.append(name)
        built = subprocess.run(["sh", "-c", RICH_NAMESPACE.format(ns=ns)], capture_output=True, text=True)
        if built.returncode != 0:
            pytest.skip(f"kernel lacks a feature the namespace needs: {built.stderr.strip()}")
        yield ns
    finally:
        for name in made:
            subprocess.run(["ip", "netns", "del", name], check=False)


def _without_running_lifetimes(links: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # Finite lifetimes count down between the two reads; the forever value 4294967295 must still match.
    for link in links:
        for addr in link.get("addr_info", []):
            for key in ("valid_life_time", "preferred_life_time"):
                if addr.get(key) != 4294967295:
                    addr[key] = "finite"
    return links


@pytest.mark.lab  # real sshd or network namespaces
def test_pyroute2_renders_exactly_what_ip_prints(rich_namespace: str) -> None:
    code = (
        "import json, sys; from linkcheck.transport.pyroute_facts import render_ip_json;"
        " json.dump(render_ip_json(), sys.stdout)"
    )
    prefix = ("ip", "netns", "exec", rich_namespace)
    out = subprocess.run([*prefix, sys.executable, "-c", code], capture_output=True, text=True, check=True)
    mine = {spec: json.loads(text) for spec, text in json.loads(out.stdout).items()}
    real = {spec: ip_json(command, prefix) for spec, command in PYROUTE_SPECS.items()}
    assert len(real["ip_link"]) == 4 and len(real["ip_route"]) >= 6 and len(real["ip_neigh"]) == 2
    assert mine["ip_link"] == real["ip_link"]
    assert _without_running_lifetimes(mine["ip_addr"]) == _without_running_lifetimes(real["ip_addr"])
    assert mine["ip_route"] == real["ip_route"]
    assert mine["ip_neigh"] == real["ip_neigh"]


def test_local_timeout_kills_the_process_group() -> None:
    marker = f"lc-test-{uuid.uuid4().hex}"
    transport = LocalTransport("a")
    start = time.monotonic()
    with pytest.raises(CommandTimeoutError) as caught:
        transport.run(f"echo $$; sleep 30 & echo $!; wait; : {marker}", timeout_s=1)
    assert time.monotonic() - start < 3
    pids = [int(p) for p in caught.value.partial.stdout.split()]
    time.sleep(0.2)
    for pid in pids:
        state = subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True, text=True).stdout
        assert state.strip() in ("", "Z"), (pid, state)  # gone, or dead and waiting for init to reap it


def test_transports_satisfy_the_protocol() -> None:
    def accepts(transport: Transport) -> str:
        return transport.name

    assert accepts(LocalTransport("a")) == "a"
    assert accepts(Recording("b")) == "b"

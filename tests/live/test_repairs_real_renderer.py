"""Repairs applied for real: `netplan try` and `netplan apply` are Debian 12's netplan 0.106 in a systemd-nspawn
container booted in each node's network namespace, with a real renderer (systemd-networkd or NetworkManager)
configuring the node's own veths (tests/lab/nspawn.py). Nothing here is a stand-in but the RDMA tools and the GID
tables (tests/lab/README.md).

Each test builds its own lab: each one breaks a node and repairs it, and a lab shared between them would make one
test's leftovers another's premise. While linkcheck changes a node, the host pings the node's management address
every 20 ms; every reply must come back (the management interface is never touched).
"""

from __future__ import annotations

import dataclasses
import json
import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from linkcheck.parsers.netplan import parse_netplan
from tests.lab import Lab, nspawn
from tests.lab.scenario import specs_for_scenario
from tests.live.test_fix_apply_lab import _wait_for
from tests.live.test_fix_lab import _state

pytestmark = [pytest.mark.lab, pytest.mark.skipif(nspawn.skip_reason() is not None,
                                                  reason=str(nspawn.skip_reason()))]

if TYPE_CHECKING:
    from tests.live.conftest import Live

TRY_S = "12"
RENDERERS = ("networkd", "NetworkManager")


def _real_lab(lab_factory: Callable[..., Lab], scenario: str, renderer: str, models: Path, *,
              applied: bool = True) -> Lab:
    """The scenario's pair, each node with its container of the real renderer. With the NetworkManager renderer the
    nodes' netplan files say so (`renderer: NetworkManager`, the scenarios' files name none, i.e. networkd).
    `applied`: the files applied once, as the boot of a node applies them (the container's boot applies nothing, so
    that a scenario whose files were never applied keeps its drift)."""
    lab = lab_factory([dataclasses.replace(s, renderer=renderer) for s in specs_for_scenario(scenario, models)])
    for node in lab.nodes:
        if renderer == "NetworkManager":
            say = ("for f in /etc/netplan/*.yaml; do grep -q '^  renderer:' \"$f\" || "
                   "sed -i 's/^network:$/network:\\n  renderer: NetworkManager/' \"$f\"; done")
            assert lab.exec(node, ["sh", "-c", say]).returncode == 0
        if applied:
            done = lab.exec(node, ["netplan", "apply"], timeout=90)
            assert done.returncode == 0, done.stderr
            # `netplan apply` returns once NetworkManager has the profiles, before it has activated them: a test
            # that read the node at once could find a port without its address (the "before" of a test).
            _wait_for(lambda n=node: all(_addrs(lab, n, dev) == want for dev, want in _stated(lab, n).items()), 30,
                      f"node {node}'s renderer to put on the addresses its netplan files state")
    return lab


def _stated(lab: Lab, node: str) -> dict[str, list[str]]:
    """Each interface the node's netplan files give addresses, with those addresses (sorted), as netplan merges the
    files (linkcheck's own parser of them)."""
    config = parse_netplan(lab.exec(node, ["sh", "-c", "tail -n +1 /etc/netplan/*.yaml"]).stdout)
    return {e.netdef_id: sorted(e.addresses) for e in config.ethernets if e.addresses}


def _files(lab: Lab, node: str) -> str:
    """Every netplan file with its mode and owner, and its text."""
    return lab.exec(node, ["sh", "-c", 'for f in /etc/netplan/*; do stat -c "%n %a %u:%g" "$f"; cat "$f"; done']).stdout


def _snapshot(lab: Lab) -> dict[str, object]:
    return {n: (_state(lab, n), _files(lab, n)) for n in ("a", "b")}


def _mtu(lab: Lab, node: str, dev: str) -> int:
    return int(json.loads(lab.exec(node, ["ip", "-j", "link", "show", "dev", dev]).stdout)[0]["mtu"])


def _addrs(lab: Lab, node: str, dev: str) -> list[str]:
    out = json.loads(lab.exec(node, ["ip", "-j", "-4", "addr", "show", "dev", dev]).stdout or "[]")
    return sorted(f"{a['local']}/{a['prefixlen']}" for i in out for a in i.get("addr_info", []))


def _generated(lab: Lab, node: str, dev: str) -> str:
    """What the renderer in the node's container was last given for `dev` by netplan: the systemd-networkd files
    and NetworkManager netplan profiles under the container's own /run (`netplan generate`/`apply` write them) that
    name it."""
    leader = (lab.node(node).node_dir / "nspawn" / nspawn.LEADER).read_text(encoding="ascii").strip()
    cat = ('for f in /run/systemd/network/* /run/NetworkManager/system-connections/*; do [ -f "$f" ] || continue; '
           'printf "\\f%s\\n" "$f"; cat "$f"; done')
    out = subprocess.run(["nsenter", "-t", leader, "-a", "--", "sh", "-c", cat], capture_output=True, text=True,
                         timeout=20, check=True)
    named = re.compile(rf"^(Name|OriginalName|interface-name)={dev}$", re.M)
    return "".join(f for f in out.stdout.split("\f") if named.search(f))


def _config(live: Live, lab: Lab, tmp_path: Path) -> Path:
    return live.lab_config(lab, tmp_path / "linkcheck.yaml", nodes={"a": {"target": "a"}, "b": {"target": "b"}})


@contextmanager
def _mgmt_ping(lab: Lab) -> Iterator[dict[str, tuple[int, int]]]:
    """Ping every node's management address from the host every 20 ms; yields {node: (sent, received)} once done."""
    result: dict[str, tuple[int, int]] = {}
    procs = {n: subprocess.Popen(["ping", "-n", "-q", "-i", "0.02", "-W", "1", lab.node(n).mgmt_ip],
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for n in lab.nodes}
    try:
        yield result
    finally:
        for name, proc in procs.items():
            proc.send_signal(signal.SIGINT)  # our own child: ping prints its summary on SIGINT
            out = proc.communicate(timeout=10)[0]
            m = re.search(r"(\d+) packets transmitted, (\d+) received", out)
            result[name] = (int(m.group(1)), int(m.group(2))) if m else (0, -1)


def _no_loss(pings: dict[str, tuple[int, int]]) -> None:
    for name, (sent, received) in pings.items():
        assert sent > 20 and received == sent, f"node {name}: management pings {received}/{sent}"


def _try_by_hand(lab: Lab, node: str, timeout_s: int) -> subprocess.Popen[str]:
    """`netplan try` as linkcheck starts it (a FIFO nobody writes as stdin) through the node's netplan wrapper."""
    script = (f"cd /var/lib/linkcheck && rm -f t.in t.out && mkfifo t.in && "
              f"exec netplan try --timeout {timeout_s} <>t.in >t.out 2>&1")
    return lab.spawn(node, ["sh", "-c", script])


@pytest.mark.parametrize("renderer", RENDERERS)
def test_netplan_try_reverts_the_address_but_leaves_the_mtu(renderer: str, lab_factory: Callable[..., Lab],
                                                           tmp_path: Path) -> None:
    """What the real netplan 0.106 does when `try` reverts at its timeout: the renderer's configuration comes back
    (the address), but neither renderer puts an MTU back that the original YAML does not state (s.3.1 of the design
    notes). So a revert that relies on netplan try alone leaves the new MTU: linkcheck must undo it itself."""
    lab = _real_lab(lab_factory, "mtu-mismatch", renderer, tmp_path / "models")
    dev = "enP2p1s0f1np1"
    orig = lab.exec("b", ["sh", "-c", "cat /etc/netplan/*.yaml"]).stdout
    path = lab.exec("b", ["sh", "-c", "ls /etc/netplan/*.yaml"]).stdout.split()[0]
    assert "mtu" not in orig.split(dev, 1)[1].split("\n    en", 1)[0], orig  # b's port has no mtu: in its YAML
    before = (_addrs(lab, "b", dev), _mtu(lab, "b", dev))
    assert before == (["198.19.101.11/24"], 1500), before
    tried = orig.replace("198.19.101.11/24", "198.19.101.41/24").replace(
        f"    {dev}:\n", f"    {dev}:\n      mtu: 9000\n", 1)
    assert tried != orig and "mtu: 9000" in tried
    lab.exec("b", ["sh", "-c", f"cat > {path}"], input_text=tried)
    proc = _try_by_hand(lab, "b", 5)
    _wait_for(lambda: "keep these settings" in lab.exec("b", ["cat", "/var/lib/linkcheck/t.out"]).stdout, 30,
              "netplan try's question")
    # The question can come before the renderer has put the tried address on (networkd flushes, then adds): read
    # the tried state once it is there, well within try's 5 s.
    _wait_for(lambda: _addrs(lab, "b", dev) == ["198.19.101.41/24"], 3, "the tried address")
    during = (_addrs(lab, "b", dev), _mtu(lab, "b", dev))
    assert proc.wait(timeout=30) == 0
    out = lab.exec("b", ["cat", "/var/lib/linkcheck/t.out"]).stdout
    assert "Reverting." in out, out
    _wait_for(lambda: _addrs(lab, "b", dev) == before[0], 10, "the renderer to put the address back")
    time.sleep(1)  # the renderer re-applies the old profile asynchronously: let it settle before reading the MTU
    after = (_addrs(lab, "b", dev), _mtu(lab, "b", dev))
    assert during == (["198.19.101.41/24"], 9000), during
    assert after == (["198.19.101.11/24"], 9000), f"measured after netplan try's revert: {after}"
    # /etc/netplan is never restored by netplan try: the tried file stays.
    assert "198.19.101.41/24" in lab.exec("b", ["cat", path]).stdout


@pytest.mark.parametrize("renderer", RENDERERS)
def test_a_reverted_mtu_repair_puts_the_mtu_back_although_netplan_try_does_not(
        renderer: str, lab_factory: Callable[..., Lab], live: Live, tmp_path: Path) -> None:
    """The RDMA check fails after the change, so linkcheck reverts: netplan try's own revert leaves MTU 9000
    (test above), so the MTU is back at 1500 only because linkcheck undoes and verifies it."""
    lab = _real_lab(lab_factory, "mtu-mismatch", renderer, tmp_path / "models")
    lab.set_fault("b", "ib_write_bw", "client-fail")
    before = _snapshot(lab)
    with _mgmt_ping(lab) as pings:
        run = live.run("fix", "--apply", "--try-timeout", TRY_S, "-c", str(_config(live, lab, tmp_path)), "--save",
                       str(tmp_path / "s"), timeout=240)
    assert run.returncode == 2, run.describe()
    assert "node b: reverted" in run.stderr, run.describe()
    _no_loss(pings)
    assert _mtu(lab, "b", "enP2p1s0f1np1") == 1500
    assert _snapshot(lab) == before


@pytest.mark.parametrize(("scenario", "renderer"), [("mtu-mismatch", "networkd"), ("mtu-mismatch", "NetworkManager"),
                                                    ("twins-same-subnet", "NetworkManager"),
                                                    ("netplan-not-applied", "networkd")])
def test_a_repair_committed_through_the_real_netplan_try_and_restored_byte_for_byte(
        scenario: str, renderer: str, lab_factory: Callable[..., Lab], live: Live, tmp_path: Path) -> None:
    lab = _real_lab(lab_factory, scenario, renderer, tmp_path / "models", applied=scenario != "netplan-not-applied")
    config = _config(live, lab, tmp_path)
    before = _snapshot(lab)
    with _mgmt_ping(lab) as pings:
        run = live.run("fix", "--apply", "--try-timeout", TRY_S, "-c", str(config), "--save", str(tmp_path / "s1"),
                       timeout=240)
    assert run.returncode == 0, run.describe()
    assert "committed (journal /var/lib/linkcheck/journal/" in run.stderr, run.describe()
    _no_loss(pings)
    record = json.loads((tmp_path / "s1" / "apply.json").read_text())
    assert record["before"]["findings"] and record["after"]["findings"] == [], record
    repaired = _snapshot(lab)
    assert repaired != before
    # The real netplan try said it was accepted; the renderer now holds what the files say.
    out = lab.exec("b" if scenario != "twins-same-subnet" else "a",
                   ["sh", "-c", "cat /var/lib/linkcheck/journal/*/try.out"]).stdout
    assert "Configuration accepted." in out, out
    jumbo = re.compile(r"^(MTUBytes|mtu)=9000$", re.M)  # networkd's .network/.link, NetworkManager's keyfile
    if scenario == "mtu-mismatch":
        assert _mtu(lab, "b", "enP2p1s0f1np1") == 9000
        assert jumbo.search(_generated(lab, "b", "enP2p1s0f1np1")), _generated(lab, "b", "enP2p1s0f1np1")
    with _mgmt_ping(lab) as pings:
        restored = live.run("fix", "--restore", "-c", str(config), timeout=120)
    assert restored.returncode == 0, restored.describe()
    _no_loss(pings)
    assert _snapshot(lab) == before
    if scenario == "mtu-mismatch":
        # The restore applied the put-back files with the real netplan in the node's container: the renderer's
        # generated configuration no longer says 9000, so a renderer restart or a boot cannot bring it back.
        assert "node b: netplan apply" in restored.stderr, restored.describe()
        assert not jumbo.search(_generated(lab, "b", "enP2p1s0f1np1")), _generated(lab, "b", "enP2p1s0f1np1")


def test_a_twin_moved_where_its_file_said_another_address_keeps_the_moved_one_through_the_next_apply(
        lab_factory: Callable[..., Lab], live: Live, tmp_path: Path) -> None:
    """Twins in one subnet, and b's file giving its second twin another address of that subnet than it has live (the
    files not applied since): `fix --apply` moves the twin and commits through the real netplan try, and the file
    then says the moved address, so the `netplan apply` a boot does keeps the twins apart (it once wrote the old
    live address into the file, which put them back in one subnet)."""
    lab = _real_lab(lab_factory, "twins-same-subnet", "NetworkManager", tmp_path / "models")  # its files say so
    dev = "enP2p1s0f1np1"
    [old] = _addrs(lab, "b", dev)
    assert old.startswith("198.19.100."), old
    edited = old.replace("198.19.100.", "198.19.100.2", 1)  # .15 -> .215: the same subnet, another host
    path = lab.exec("b", ["sh", "-c", f"grep -l {old} /etc/netplan/*.yaml"]).stdout.split()[0]
    assert lab.exec("b", ["sed", "-i", f"s#{old}#{edited}#", path]).returncode == 0
    config = _config(live, lab, tmp_path)
    with _mgmt_ping(lab) as pings:
        run = live.run("fix", "--apply", "--try-timeout", TRY_S, "-c", str(config), "--save", str(tmp_path / "s1"),
                       timeout=240)
    assert run.returncode == 0, run.describe()
    _no_loss(pings)
    record = json.loads((tmp_path / "s1" / "apply.json").read_text())
    fired = set(record["before"]["findings"])
    assert {f"NETPLAN_NOT_APPLIED:b:{dev}", "TWINS_SAME_SUBNET:node b"} <= fired, fired
    assert record["after"]["findings"] == [], record
    [moved] = _addrs(lab, "b", dev)
    assert not moved.startswith("198.19.100."), moved
    assert _stated(lab, "b")[dev] == [moved], _files(lab, "b")
    # What a boot applies: the files, by the real renderer. The twin keeps the address the repair gave it.
    done = lab.exec("b", ["netplan", "apply"], timeout=90)
    assert done.returncode == 0, done.stderr
    _wait_for(lambda: _addrs(lab, "b", dev) == [moved], 10, "the renderer to apply b's files")

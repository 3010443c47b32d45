"""NetworkManager repairs against the real daemon: each node whose model has NetworkManager keyfiles runs the real
NetworkManager 1.42 on a system bus of its own (tests/lab/nm_daemon.py), so linkcheck's checkpoint (`busctl call ...
CheckpointCreate`), `nmcli connection reload|up` and the rollbacks are NetworkManager's own. The faults are real
too: a firewall rule on the peer that drops jumbo frames (the link then fails linkcheck's `ping -M do -s 8972`),
and the SSH connection cut while the checkpoint is held. While linkcheck changes the node the host pings its
management address every 20 ms: every reply must come back.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.lab import Lab, nm_daemon
from tests.lab.scenario import specs_for_scenario
from tests.live.test_fix_apply_lab import _all_files, _journals, _try_result, _wait_for
from tests.live.test_repairs_real_renderer import _mgmt_ping, _no_loss

pytestmark = [pytest.mark.lab, pytest.mark.skipif(nm_daemon.skip_reason() is not None,
                                                  reason=str(nm_daemon.skip_reason()))]

if TYPE_CHECKING:
    from tests.live.conftest import Live

TRY_S = "12"
SCENARIO = "nm-profile-runtime-only"  # node a: a profile only in /run; the repair writes it to /etc
PORT = "enP2p1s0f1np1"
KEYFILE = "/etc/NetworkManager/system-connections/cx7-p1-2.nmconnection"


def _lab(lab_factory: Callable[..., Lab], tmp_path: Path) -> Lab:
    lab = lab_factory(specs_for_scenario(SCENARIO, tmp_path / "models"))
    assert lab.node("a").nm_real and lab.node("b").nm_real
    return lab


def _config(live: Live, lab: Lab, tmp_path: Path) -> Path:
    return live.lab_config(lab, tmp_path / "linkcheck.yaml", nodes={"a": {"target": "a"}, "b": {"target": "b"}})


def _device(lab: Lab, node: str) -> tuple[str, str]:
    """What the real NetworkManager says of the port: its state and its connection."""
    argv = ["nmcli", "-g", "GENERAL.STATE,GENERAL.CONNECTION", "device", "show", PORT]
    out = lab.exec(node, argv).stdout.splitlines()
    return (out[0], out[1]) if len(out) >= 2 else ("", "")


def test_the_nodes_reach_their_own_networkmanager_over_ssh(lab_factory: Callable[..., Lab], tmp_path: Path) -> None:
    lab = _lab(lab_factory, tmp_path)
    for node in ("a", "b"):
        version = lab.ssh(node, "busctl get-property org.freedesktop.NetworkManager /org/freedesktop/NetworkManager "
                                "org.freedesktop.NetworkManager Version")
        assert version.returncode == 0 and version.stdout.startswith('s "1.'), version
        managed = lab.ssh(node, "nmcli -t -f DEVICE,STATE device").stdout
        # Only the ports a keyfile names are managed: never the SSH link or the RJ45 NIC.
        assert f"lcm-{node}:unmanaged" in managed and "enP7s7:unmanaged" in managed, managed
    # Node a's runtime-only profile is active on its port, as NetworkManager brought it up (the lab's start).
    assert _device(lab, "a") == ("100 (connected)", "cx7-p1-2"), _device(lab, "a")


def test_a_profile_that_breaks_the_link_is_rolled_back_by_the_real_checkpoint(
        lab_factory: Callable[..., Lab], live: Live, tmp_path: Path) -> None:
    lab = _lab(lab_factory, tmp_path)
    before = _all_files(lab)
    # Node b drops every frame over 1500 bytes arriving on the twin: the jumbo ping linkcheck verifies with fails
    # once the profile is up, as through a switch port left at MTU 1500.
    rule = ["iptables", "-I", "INPUT", "-i", PORT, "-m", "length", "--length", "1501:65535", "-j", "DROP"]
    assert lab.exec("b", rule).returncode == 0
    with _mgmt_ping(lab) as pings:
        run = live.run("fix", "--apply", "--try-timeout", "60", "-c", str(_config(live, lab, tmp_path)), "--save",
                       str(tmp_path / "s"), timeout=240)
    assert run.returncode == 2, run.describe()
    assert "node a: reverted" in run.stderr and "ping -M do -s 8972" in run.stderr, run.describe()
    _no_loss(pings)
    # Rolled back on request by the real daemon, long before the 60 s timeout; the keyfiles put back byte for byte.
    assert [j["state"] for j in _journals(lab, "a")] == ["reverted"]
    assert _try_result(lab, "a") == "reverted\nnm-checkpoint"
    _wait_for(lambda: _device(lab, "a")[0].startswith("100"), 10, "the port re-activated after the rollback")
    assert _all_files(lab) == before


def test_ssh_lost_while_the_real_checkpoint_is_held_rolls_back_by_its_timeout(
        lab_factory: Callable[..., Lab], live: Live, tmp_path: Path) -> None:
    lab = _lab(lab_factory, tmp_path)
    config = _config(live, lab, tmp_path)
    before = _all_files(lab)
    args = ("fix", "--apply", "--try-timeout", TRY_S, "-c", str(config), "--save", str(tmp_path / "s"))
    started = live.start(*args)
    # The checkpoint is held and the keyfile installed: linkcheck now verifies the link (seconds of ib_write_bw).
    held = f"grep -lx ready /var/lib/linkcheck/journal/*/nm.out >/dev/null 2>&1 && test -e {KEYFILE}"
    _wait_for(lambda: lab.exec("a", ["sh", "-c", held]).returncode == 0, 120, "the checkpoint on node a")
    cut = time.monotonic()
    lab.stop_sshd("a")
    lab.kill_ssh_sessions("a")
    run = live.wait(started, args)
    assert run.returncode == 3, run.describe()
    # NetworkManager's own timer ends the checkpoint: nothing reaches the node any more.
    _wait_for(lambda: _try_result(lab, "a").startswith("reverted"), 60, "the checkpoint's rollback")
    took = time.monotonic() - cut
    assert _try_result(lab, "a") == "reverted\nnm-checkpoint"
    assert took < int(TRY_S) + 15, took
    _wait_for(lambda: _device(lab, "a")[0].startswith("100"), 10,
              f"the port re-activated after the rollback (now {_device(lab, 'a')})")
    assert _all_files(lab) == before
    lab.start_sshd("a")
    nxt = live.run("fix", "--apply", "--try-timeout", TRY_S, "-c", str(config), "--save", str(tmp_path / "s2"),
                   timeout=240)
    assert "was not confirmed: the NetworkManager checkpoint reverted it by its timeout" in nxt.stderr, nxt.describe()
    assert nxt.returncode == 0, nxt.describe()
    record = json.loads((tmp_path / "s2" / "apply.json").read_text())
    assert {n["node"]: n["state"] for n in record["nodes"]} == {"a": "committed"}


def test_a_rollback_on_a_port_networkmanager_took_as_configured_by_hand_leaves_no_profile_behind(
        lab_factory: Callable[..., Lab], live: Live, tmp_path: Path) -> None:
    """A port NetworkManager found configured by someone else (`connected (externally)`, its profile generated in
    /run): the real rollback re-creates that profile as a persistent keyfile in /etc, which the revert removes,
    and brings up no profile that no longer exists; the read-back then finds the node as before."""
    lab = _lab(lab_factory, tmp_path)
    addrs = json.loads(lab.exec("a", ["ip", "-j", "-4", "addr", "show", "dev", PORT]).stdout)[0]["addr_info"]
    assert lab.exec("a", ["nmcli", "connection", "down", "cx7-p1-2"]).returncode == 0
    for a in addrs:  # the port set up by hand with `ip`, as on a node whose profile was never brought up
        assert lab.exec("a", ["ip", "addr", "add", f"{a['local']}/{a['prefixlen']}", "dev", PORT]).returncode == 0
    _wait_for(lambda: _device(lab, "a") == ("100 (connected (externally))", PORT), 20,
              f"NetworkManager to take the port as configured by hand (now {_device(lab, 'a')})")
    etc = ["ls", "-A", "/etc/NetworkManager/system-connections"]
    before, listed = _all_files(lab), lab.exec("a", etc).stdout
    rule = ["iptables", "-I", "INPUT", "-i", PORT, "-m", "length", "--length", "1501:65535", "-j", "DROP"]
    assert lab.exec("b", rule).returncode == 0
    run = live.run("fix", "--apply", "--try-timeout", "60", "-c", str(_config(live, lab, tmp_path)), "--save",
                   str(tmp_path / "s"), timeout=240)
    assert run.returncode == 2, run.describe()
    assert "node a: reverted" in run.stderr, run.describe()
    assert f"/etc/NetworkManager/system-connections/{PORT}.nmconnection removed" in run.stderr, run.describe()
    assert "unknown connection" not in run.stderr and "connection up" not in run.stderr, run.describe()
    [journal] = _journals(lab, "a")
    assert (journal["state"], journal["verified"]) == ("reverted", True), journal
    assert lab.exec("a", etc).stdout == listed
    assert _all_files(lab) == before

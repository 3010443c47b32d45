"""The revert that checks itself: the live state read by one shell round trip (real `ip -j` output of this
machine's loopback, read-only), the comparison of a node's state with the journal's `before`, the runtime
operations that bring it back, and a revert whose state does not read back as before never called `reverted`."""

from __future__ import annotations

import json
import subprocess

import msgspec
import pytest
from msgspec.structs import replace

from linkcheck.repair.journal import (
    NOT_REVERTED,
    PERSISTENT_PENDING,
    REVERTED,
    SCHEMA,
    FoundJournal,
    Journal,
    SavedFile,
    describe,
    encode,
)
from linkcheck.repair.livestate import (
    IfaceState,
    NodeState,
    RendererState,
    corrections,
    differences,
    new_keyfiles,
    parse_state,
    state_command,
)
from linkcheck.repair.restore import put_back_verified, report_unfinished, restore_node
from linkcheck.repair.runtime import ADDR_ADD, ADDR_DEL, MTU, NEIGH_SET, RuntimeOp
from linkcheck.transport.base import RemoteResult

DEV = "enP2p1s0f1np1"
BEFORE = NodeState((IfaceState(DEV, True, 1500, ("192.168.101.14/24",),
                               ("192.168.101.0/24 via - metric 0",), ("192.168.101.11 aa:bb:cc:dd:ee:01 permanent",)),),
                   RendererState(True, ("cx7-p1:enP2p1s0f1np1",)))


def test_the_state_command_reads_a_real_interface_and_an_absent_one() -> None:
    out = subprocess.run(["sh", "-c", state_command(["lo", "nosuchif0"])], capture_output=True, text=True,
                         check=True).stdout
    state = parse_state(out, ["lo", "nosuchif0"])
    lo = state.iface("lo")
    assert lo is not None and lo.present and lo.mtu == 65536
    # 127.0.0.1/8 has host scope, not link scope: it counts; the kernel's own local routes are in another table.
    assert "127.0.0.1/8" in lo.addresses
    assert state.iface("nosuchif0") == IfaceState("nosuchif0", present=False)


def test_nmcli_terse_output_is_read_with_its_escapes_and_only_for_the_interfaces_read() -> None:
    text = (f"D {DEV}\n[]\n[]\n[]\n[]\nN\nrunning\nC\n"
            f"cx7\\:p1:{DEV}\nWired connection 1:enP7s7\nE\n")
    state = parse_state(text, [DEV])
    assert state.renderer == RendererState(True, (f"cx7:p1:{DEV}",))
    assert state.iface(DEV) == IfaceState(DEV, present=False)
    # nmcli present but no daemon answering: nothing to compare
    silent = parse_state("N\n?\nC\n?\nE\n", [])
    assert silent.renderer == RendererState(None, None)


def test_a_state_as_before_has_no_difference() -> None:
    assert differences(BEFORE, BEFORE) == []


def test_the_mtu_left_by_netplan_tries_revert_is_a_difference_and_its_correction() -> None:
    # netplan 0.106's revert: the old address is back, the new MTU stays (real-daemons.md s.2.3).
    now = NodeState((replace(BEFORE.interfaces[0], mtu=9000),), BEFORE.renderer)
    assert differences(BEFORE, now) == [f"{DEV}: MTU 9000, was 1500"]
    assert corrections(BEFORE, now) == [RuntimeOp(MTU, DEV, "1500")]


def test_addresses_neighbours_routes_and_the_renderer_are_compared() -> None:
    now = NodeState((IfaceState(DEV, True, 1500, ("192.168.100.14/24",), ("192.168.100.0/24 via - metric 0",), ()),),
                    RendererState(True, ()))
    assert differences(BEFORE, now) == [
        f"{DEV}: addresses 192.168.100.14/24, were 192.168.101.14/24",
        f"{DEV}: routes 192.168.100.0/24 via - metric 0, were 192.168.101.0/24 via - metric 0",
        f"{DEV}: static neighbours none, were 192.168.101.11 aa:bb:cc:dd:ee:01 permanent",
        f"NetworkManager's active profiles none, were cx7-p1:{DEV}",
    ]
    assert corrections(BEFORE, now) == [
        RuntimeOp(ADDR_DEL, DEV, "192.168.100.14/24"), RuntimeOp(ADDR_ADD, DEV, "192.168.101.14/24"),
        RuntimeOp(NEIGH_SET, DEV, "192.168.101.11", "aa:bb:cc:dd:ee:01", "permanent")]
    stopped = NodeState(now.interfaces, RendererState(False, None))
    assert "NetworkManager is not running, it was" in differences(BEFORE, stopped)
    gone = NodeState((IfaceState(DEV, present=False),), BEFORE.renderer)
    assert differences(BEFORE, gone) == [f"{DEV}: gone"] and corrections(BEFORE, gone) == []


def test_a_corrupt_value_read_back_gives_no_operation() -> None:
    odd = NodeState((IfaceState(DEV, True, 1500, ("not-an-address",)),))
    assert corrections(odd, NodeState((IfaceState(DEV, True, 1500, ()),))) == []


def _journal(state: str, **kw: object) -> Journal:
    j = Journal(SCHEMA, "20261202T120000Z-abcdef", "b", "dgx-spark-2", "2026-12-02T12:00:00+00:00", state,
                ("MTU_MISMATCH:x",), (RuntimeOp(MTU, DEV, "9000"),), (RuntimeOp(MTU, DEV, "1500"),), (),
                note="interrupted (Ctrl-C)", before=BEFORE)
    return replace(j, **kw)


def test_a_node_not_put_back_is_said_as_such_never_as_reverted() -> None:
    line = describe(FoundJournal("/d", _journal(NOT_REVERTED, verified=False,
                                                differences=(f"{DEV}: MTU 9000, was 1500",)), None)) or ""
    assert "is NOT as it was before" in line and f"{DEV}: MTU 9000, was 1500" in line and "fix --restore" in line
    assert "put back as it was" not in line
    ok = describe(FoundJournal("/d", _journal(REVERTED, verified=True), None)) or ""
    assert ok.endswith("was put back as it was before (interrupted (Ctrl-C)); its live state read back as before")


def test_the_before_state_and_the_verdict_travel_in_the_journal() -> None:
    j = _journal(NOT_REVERTED, verified=False, differences=(f"{DEV}: MTU 9000, was 1500",))
    assert msgspec.json.decode(encode(j), type=Journal) == j
    older = {k: v for k, v in msgspec.json.decode(encode(_journal(REVERTED))).items()
             if k not in ("before", "verified", "differences")}
    old = msgspec.json.decode(msgspec.json.encode(older), type=Journal)
    assert old.before is None and old.verified is None  # a journal an older linkcheck wrote still reads


class _Node:
    """A node whose journal listing, HOME and live state are given; it records what is written to it."""

    local = False
    name = "b"

    def __init__(self, listing: str, state: str) -> None:
        self.listing = listing
        self.state = state
        self.written: list[str] = []
        self.changed: list[RuntimeOp] = []

    def sh(self, command: str, *, timeout_s: float = 30, stdin: str | None = None) -> RemoteResult:
        if "journal.json.tmp" in command:
            self.written.append(stdin or "")
            return RemoteResult("", "", 0, 0)
        if command.startswith("sudo -n sh -c") and "/*/" in command:
            return RemoteResult(self.listing, "", 0, 0)
        if command.startswith('printf "%s" "$HOME"'):
            return RemoteResult("/home/nvidia", "", 0, 0)
        if command.startswith("echo D "):
            return RemoteResult(self.state, "", 0, 0)
        return RemoteResult("", "", 0, 0)

    def change(self, op: RuntimeOp) -> None:
        self.changed.append(op)


def _listing(j: Journal, result: str) -> str:
    return (f"J {j.run_id}\n" + "".join(f"|{line}\n" for line in encode(j).splitlines())
            + f"R\n|{result}\nE\n")


def _ip_state(mtu: int) -> str:
    """What the state command prints for DEV as BEFORE has it, at `mtu` (ip -j's shapes, trimmed)."""
    return (f"D {DEV}\n" + json.dumps([{"ifname": DEV, "mtu": mtu}]) + "\n"
            + json.dumps([{"addr_info": [{"family": "inet", "local": "192.168.101.14", "prefixlen": 24,
                                          "scope": "global"}]}]) + "\n"
            + json.dumps([{"dst": "192.168.101.0/24", "protocol": "kernel"}]) + "\n"
            + json.dumps([{"dst": "192.168.101.11", "lladdr": "aa:bb:cc:dd:ee:01", "state": ["PERMANENT"]}])
            + "\nE\n")


def test_a_run_its_node_reverted_alone_is_read_back_by_the_next_run_and_never_put_back_unasked(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("linkcheck.repair.livestate.SETTLE_S", 0.0)
    before = replace(BEFORE, renderer=RendererState())
    j = replace(_journal(PERSISTENT_PENDING), before=before)
    node = _Node(_listing(j, "reverted"), _ip_state(9000))
    said: list[str] = []
    lines = report_unfinished(node, "/var/lib/linkcheck/journal", said.append)
    assert lines == [f"node b: repair run {j.run_id} is NOT as it was before ({DEV}: MTU 9000, was 1500): "
                     "`linkcheck fix --restore` puts it back and checks it again"]
    assert node.changed == []  # only read
    written = msgspec.json.decode(node.written[-1], type=Journal)
    assert (written.state, written.verified, written.differences) == (
        NOT_REVERTED, False, (f"{DEV}: MTU 9000, was 1500",))
    # as before: settled `reverted`, read back
    node = _Node(_listing(j, "reverted"), _ip_state(1500))
    report_unfinished(node, "/var/lib/linkcheck/journal", said.append)
    written = msgspec.json.decode(node.written[-1], type=Journal)
    assert (written.state, written.verified) == (REVERTED, True)


def test_routes_are_compared_by_destination_and_gateway_not_by_metric() -> None:
    # NetworkManager's re-activation after a rollback gives the prefix route its device-type metric (100 for an
    # ethernet port, the real NetworkManager 1.42 in the lab) where `ip addr add` gave 0: the same path.
    renumbered = NodeState((replace(BEFORE.interfaces[0], routes=("192.168.101.0/24 via - metric 100",)),),
                           BEFORE.renderer)
    assert differences(BEFORE, renumbered) == []
    other_gw = NodeState((replace(BEFORE.interfaces[0], routes=("192.168.101.0/24 via 192.168.101.1 metric 0",)),),
                         BEFORE.renderer)
    assert differences(BEFORE, other_gw) == [
        f"{DEV}: routes 192.168.101.0/24 via 192.168.101.1 metric 0, were 192.168.101.0/24 via - metric 0"]


def test_the_profile_files_in_etc_are_read_and_a_new_one_is_a_difference() -> None:
    text = (f"D {DEV}\n[]\n[]\n[]\n[]\nN\nrunning\nC\ncx7-p1:{DEV}\nK\ncx7-p1.nmconnection\n"
            f"{DEV}.nmconnection\nE\n")
    state = parse_state(text, [DEV])
    assert state.renderer.nm_keyfiles == ("cx7-p1.nmconnection", f"{DEV}.nmconnection")
    before = NodeState(BEFORE.interfaces, RendererState(True, BEFORE.renderer.nm_active, ("cx7-p1.nmconnection",)))
    now = NodeState(BEFORE.interfaces, replace(before.renderer, nm_keyfiles=state.renderer.nm_keyfiles))
    assert new_keyfiles(before, now) == [f"/etc/NetworkManager/system-connections/{DEV}.nmconnection"]
    assert differences(before, now) == [
        "/etc/NetworkManager/system-connections holds "
        f"cx7-p1.nmconnection, {DEV}.nmconnection, held cx7-p1.nmconnection"]
    # A folder that cannot be read (`?`) or a NetworkManager that does not run: nothing to compare.
    assert parse_state("N\nrunning\nC\nK\n?\nE\n", []).renderer.nm_keyfiles is None
    assert parse_state("N\nnot running\nC\n?\nK\nx.nmconnection\nE\n", []).renderer.nm_keyfiles is None


class _Scripted:
    """A node that answers each command by the first of `answers` (substring -> stdout) it contains, and whose
    live state is the next of `states` at each read; it records every command and change."""

    local = False
    name = "a"

    def __init__(self, answers: dict[str, str], states: list[str]) -> None:
        self.answers = answers
        self.states = states
        self.commands: list[str] = []
        self.changed: list[RuntimeOp] = []

    def sh(self, command: str, *, timeout_s: float = 30, stdin: str | None = None) -> RemoteResult:
        self.commands.append(command)
        if command.startswith("echo D "):
            return RemoteResult(self.states.pop(0) if len(self.states) > 1 else self.states[0], "", 0, 0)
        for key, out in self.answers.items():
            if key in command:
                return RemoteResult(out, "", 0, 0)
        return RemoteResult("", "", 0, 0)

    def change(self, op: RuntimeOp) -> None:
        self.changed.append(op)


def _nm_state(keyfiles: list[str], active: str) -> str:
    return (_ip_state(1500).removesuffix("E\n") + f"N\nrunning\nC\n{active}\nK\n"
            + "".join(f"{k}\n" for k in keyfiles) + "E\n")


def test_a_profile_file_a_rollback_left_in_etc_is_removed_and_only_existing_profiles_are_brought_up(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A rollback on a port NetworkManager took as configured by hand re-creates its generated profile as a
    persistent file in /etc; the revert removes it, and does not `up` the generated profile, which is gone."""
    monkeypatch.setattr("linkcheck.repair.livestate.SETTLE_S", 0.0)
    generated = f"{DEV}:{DEV}"
    before = NodeState(BEFORE.interfaces, RendererState(True, (generated,), ()))
    ours = SavedFile("/etc/NetworkManager/system-connections/cx7-p1-2.nmconnection", existed=False)
    j = replace(_journal(PERSISTENT_PENDING), before=before, files=(ours,), runtime=(), undo=())
    leftover = _nm_state([f"{DEV}.nmconnection"], generated)
    node = _Scripted({"connection show\n": "", "-f NAME connection show": "cx7-p1-3\n"},
                     [leftover, leftover, _nm_state([], generated)])
    said: list[str] = []
    verified, diff, problems = put_back_verified(node, "/d", j, said.append)  # type: ignore[arg-type]
    assert (verified, diff, problems) == (True, [], [])
    assert f"sudo -n rm -f -- /etc/NetworkManager/system-connections/{DEV}.nmconnection" in node.commands
    assert "sudo -n nmcli connection reload" in node.commands
    assert not [c for c in node.commands if "connection up" in c], node.commands
    # linkcheck's own file is the journal's to put back, never taken for one that appeared
    assert not [c for c in node.commands if "rm -f -- " in c and "cx7-p1-2" in c]


def _restore_listing(j: Journal) -> str:
    return _listing(j, "accepted")


@pytest.mark.parametrize("mgmt_nm", [False, True])
def test_restore_applies_the_renderers_configuration_again_but_never_disconnects_the_management_interface(
        mgmt_nm: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("linkcheck.repair.livestate.SETTLE_S", 0.0)
    saved = SavedFile("/etc/netplan/40-cx7.yaml", True, "600", 0, 0, "ab" * 32, "files/0")
    j = replace(_journal("committed"), files=(saved,), before=replace(BEFORE, renderer=RendererState()))
    renderer = "NetworkManager" if mgmt_nm else "networkd"
    dump = (f"==> /etc/netplan/01-mgmt.yaml <==\nnetwork:\n  version: 2\n  renderer: {renderer}\n  ethernets:\n"
            "    enP7s7:\n      dhcp4: true\n")
    answers = {"/*/": _restore_listing(j), 'printf "%s\\n" "${SSH_CONNECTION:-}"': "198.18.0.1 50000 198.18.0.2 22\n",
               "ip -j route get": json.dumps([{"dev": "enP7s7"}]), "tail -n +1 /etc/netplan": dump,
               'printf "%s" "$HOME"': "/home/nvidia"}
    node = _Scripted(answers, [_ip_state(1500)])
    node.name = "b"
    out = restore_node(node, "/var/lib/linkcheck/journal", lambda _line: None)  # type: ignore[arg-type]
    applied = "sudo -n netplan apply" in node.commands
    if not mgmt_nm:
        assert applied and out.state == "restored" and out.verified is True, out
        return
    assert not applied and out.state == "failed", out
    assert "enP7s7 is defined in netplan for NetworkManager" in out.problems[0], out.problems
    assert "--allow-nm-disconnect" in out.problems[0]
    allowed = _Scripted(answers, [_ip_state(1500)])
    back = restore_node(allowed, "/var/lib/linkcheck/journal", lambda _line: None,  # type: ignore[arg-type]
                        allow_nm_disconnect=True)
    assert "sudo -n netplan apply" in allowed.commands and back.state == "restored", back


def test_a_profile_the_reload_auto_connected_on_a_port_configured_by_hand_is_taken_down(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """After the reload NetworkManager auto-connects the node's own profile where the port ran a configuration made
    by hand (its generated profile): the revert brings that profile down and adds the addresses back."""
    monkeypatch.setattr("linkcheck.repair.livestate.SETTLE_S", 0.0)
    monkeypatch.setattr("linkcheck.repair.restore.REACTIVATE_S", 0.0)
    generated = f"{DEV}:{DEV}"
    before = NodeState(BEFORE.interfaces, RendererState(True, (generated,), ()))
    j = replace(_journal(PERSISTENT_PENDING), before=before, files=(), runtime=(), undo=())
    own = _nm_state([], f"cx7-p1-2:{DEV}")
    down = own.replace('"local": "192.168.101.14", ', '"local": "192.168.101.99", ').replace(f"cx7-p1-2:{DEV}", "")
    node = _Scripted({"-f NAME connection show": f"cx7-p1-2\n{DEV}\n"},
                     [own, own, own, own, down, _nm_state([], generated)])
    verified, diff, problems = put_back_verified(node, "/d", j, lambda _line: None)  # type: ignore[arg-type]
    assert (verified, diff, problems) == (True, [], [])
    assert "sudo -n nmcli connection down cx7-p1-2" in node.commands
    assert f"sudo -n nmcli connection up {DEV}" in node.commands  # it exists here: brought up as before
    assert RuntimeOp(ADDR_ADD, DEV, "192.168.101.14/24") in node.changed


def test_restore_does_not_apply_netplan_files_that_never_ran(monkeypatch: pytest.MonkeyPatch) -> None:
    """The files put back name another address than the one that ran before the run (a netplan never applied):
    applying them would move the live address, so the restore leaves the renderer as it is and says why."""
    monkeypatch.setattr("linkcheck.repair.livestate.SETTLE_S", 0.0)
    saved = SavedFile("/etc/netplan/40-cx7.yaml", True, "600", 0, 0, "ab" * 32, "files/0")
    j = replace(_journal("committed"), files=(saved,), before=replace(BEFORE, renderer=RendererState()))
    dump = (f"==> /etc/netplan/40-cx7.yaml <==\nnetwork:\n  version: 2\n  ethernets:\n    {DEV}:\n"
            "      addresses: [192.168.102.14/24]\n")
    answers = {"/*/": _restore_listing(j), "tail -n +1 /etc/netplan": dump, 'printf "%s" "$HOME"': "/home/nvidia"}
    node = _Scripted(answers, [_ip_state(1500)])
    node.name = "b"
    said: list[str] = []
    out = restore_node(node, "/var/lib/linkcheck/journal", said.append)  # type: ignore[arg-type]
    assert "sudo -n netplan apply" not in node.commands and out.state == "restored", (out, node.commands)
    assert (f"node b: netplan apply not run: the files put back were not what ran before the run ({DEV}: the "
            "files say 192.168.102.14/24, 192.168.101.14/24 ran)") in said

"""The parts of `fix --apply` that need no node: the runtime commands a plan may hold (and nothing else), the
journal read back and what the next run says about it, the preflight's refusals, and the netplan try stand-in
behaving as netplan-try(8) documents."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from linkcheck.repair.apply import ApplyOptions, ApplyRefused, preflight, undo_of
from linkcheck.repair.journal import (
    PERSISTENT_PENDING,
    REVERTED,
    SCHEMA,
    FoundJournal,
    Journal,
    describe,
    encode,
    list_command,
    parse_list,
    settled_state,
)
from linkcheck.repair.model import RepairPlan, Step
from linkcheck.repair.runtime import FEC, MTU, NEIGH_SET, OpError, RuntimeOp, parse_op
from linkcheck.transport.base import RemoteResult

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("command", "op"), [
    ("sudo ip link set dev enP2p1s0f1np1 mtu 9000", RuntimeOp(MTU, "enP2p1s0f1np1", "9000")),
    ("sudo ip addr del 192.168.100.14/24 dev enP2p1s0f1np1",
     RuntimeOp("addr_del", "enP2p1s0f1np1", "192.168.100.14/24")),
    ("sudo ip neigh del 192.168.100.11 dev enp1s0f1np1", RuntimeOp("neigh_del", "enp1s0f1np1", "192.168.100.11")),
    ("sudo ethtool --set-fec enp1s0f1np1 encoding rs", RuntimeOp("fec", "enp1s0f1np1", "rs")),
    ("sudo systemctl reboot --no-block", RuntimeOp("reboot")),
])
def test_a_planned_command_is_read_as_its_operation_and_rendered_back_quoted(command: str, op: RuntimeOp) -> None:
    assert parse_op(command) == op
    assert op.shell().startswith("sudo -n ")
    assert parse_op(op.shell()) == op


@pytest.mark.parametrize("command", [
    "sudo rm -rf /", "sudo ip link set dev eth0 mtu 9000; reboot", "sudo ip link set dev 'a b' mtu 9000",
    "sudo ip link set dev eth0 mtu 99999999", "sudo ip addr add 10.0.0.1 dev eth0", "ip neigh del notanip dev x",
    "sudo ip link set dev $(reboot) mtu 9000",
])
def test_anything_else_in_a_plan_is_refused(command: str) -> None:
    with pytest.raises(OpError):
        parse_op(command)


def test_a_neighbour_put_back_is_quoted_word_by_word() -> None:
    op = RuntimeOp(NEIGH_SET, "enp1s0f1np1", "192.168.100.11", "aa:bb:cc:dd:ee:ff", "permanent")
    assert op.shell() == ("sudo -n ip neigh replace 192.168.100.11 lladdr aa:bb:cc:dd:ee:ff dev enp1s0f1np1 "
                          "nud permanent")


def _journal(state: str, note: str = "") -> Journal:
    return Journal(SCHEMA, "20261202T120000Z-abcdef", "b", "dgx-spark-2", "2026-12-02T12:00:00+00:00", state,
                   ("MTU_MISMATCH:x",), (RuntimeOp(MTU, "e", "9000"),), (RuntimeOp(MTU, "e", "1500"),), (),
                   note=note)


def test_the_journal_list_reads_back_and_says_what_a_run_left(tmp_path: Path) -> None:
    run = tmp_path / "20261202T120000Z-abcdef"
    run.mkdir()
    (run / "journal.json").write_text(encode(_journal(PERSISTENT_PENDING)))
    (run / "try.result").write_text("reverted\n")
    (tmp_path / "20261201T000000Z-000000").mkdir()  # a run whose journal was never written: nothing changed
    listing = subprocess.run(["sh", "-c", list_command(str(tmp_path)).removeprefix("sudo -n ")],
                             capture_output=True, text=True, check=True).stdout
    found = parse_list(listing, str(tmp_path), "/home/nvidia")
    assert len(found) == 1 and found[0].try_result == "reverted" and found[0].directory == str(run)
    assert settled_state(found[0]) == REVERTED
    assert "netplan try reverted it by its timeout" in (describe(found[0]) or "")
    pending = FoundJournal("/d", _journal(PERSISTENT_PENDING), None)
    assert "fix --restore" in (describe(pending) or "")
    assert describe(FoundJournal("/d", _journal("committed"), None)) is None
    assert "(interrupted (Ctrl-C))" in (describe(FoundJournal("/d", _journal(REVERTED, "interrupted (Ctrl-C)"),
                                                               None)) or "")


class _Node:
    """A node that answers the preflight's commands from a table; it records every command and changes nothing."""

    local = False

    def __init__(self, name: str, answers: dict[str, str], sudo: bool = True) -> None:
        self.name = name
        self.answers = answers
        self.sudo = sudo
        self.commands: list[str] = []

    def sh(self, command: str, *, timeout_s: float = 30, stdin: str | None = None) -> RemoteResult:
        self.commands.append(command)
        if command == "sudo -n true":
            return RemoteResult("", "" if self.sudo else "sudo: a password is required", 0 if self.sudo else 1, 0)
        return RemoteResult(next((v for k, v in self.answers.items() if command.startswith(k)), ""), "", 0, 0)

    def change(self, op: RuntimeOp) -> None:
        raise AssertionError(f"the preflight changed something: {op}")


ANSWERS = {
    'printf "%s\\n" "${SSH_CONNECTION:-}"': "198.18.0.0 50000 198.18.0.1 22\n",
    "ip -j route show default": '[{"dst":"default","gateway":"10.0.0.1","dev":"enP7s7"}]',
    "ip -j route get": '[{"dst":"198.18.0.0","dev":"lcm-a","prefsrc":"198.18.0.1"}]',
}


def _plan(*runtime: str, node: str = "a") -> RepairPlan:
    return RepairPlan(steps=(Step(node, "X:y", runtime, None, (), ()),))


@pytest.mark.parametrize(("command", "role"), [("sudo ip link set dev lcm-a mtu 9000", "management"),
                                               ("sudo ip link set dev enP7s7 mtu 9000", "default-route")])
def test_a_plan_touching_the_management_or_default_route_interface_is_refused(command: str, role: str) -> None:
    nodes = {"a": _Node("a", ANSWERS), "b": _Node("b", ANSWERS)}
    with pytest.raises(ApplyRefused, match=f"the {role} interface: refused, nothing changed"):
        preflight(_plan(command), nodes, ApplyOptions(), lambda _: None)


def test_sudo_refused_on_either_node_refuses_before_any_change() -> None:
    nodes = {"a": _Node("a", ANSWERS), "b": _Node("b", ANSWERS, sudo=False)}
    with pytest.raises(ApplyRefused, match="node b: sudo asks for a password") as caught:
        preflight(_plan("sudo ip link set dev e mtu 9000", node="b"), nodes, ApplyOptions(), lambda _: None)
    assert int(caught.value.exit_code) == 3


def test_a_reboot_step_is_left_out_unless_allowed() -> None:
    nodes = {"a": _Node("a", ANSWERS), "b": _Node("b", ANSWERS)}
    plan = RepairPlan(steps=(Step("a", "LINK_REPLUGGED_SINCE_BOOT:x", ("sudo systemctl reboot --no-block",), None,
                                  (), ("reboot",)),))
    assert preflight(plan, nodes, ApplyOptions(), lambda _: None) == []
    assert [p.node for p in preflight(plan, nodes, ApplyOptions(allow_reboot=True), lambda _: None)] == ["a"]


@pytest.mark.parametrize("prompt", ["Supported/Configured", "Configured"])  # ethtool >= 5.18, and older
def test_the_fec_undo_is_the_configured_encoding_read_before_the_change(prompt: str) -> None:
    text = f"FEC parameters for e:\n{prompt} FEC encodings: Auto\nActive FEC encoding: None\n"
    node = _Node("b", {"ethtool --show-fec e": text})
    assert undo_of(node, RuntimeOp(FEC, "e", "rs")) == RuntimeOp(FEC, "e", "auto")


# --- the netplan try stand-in (tests/lab/netplan_try_standin.py) -----------------------------------------------
def _default_hup_and_term() -> None:
    """The child's SIGHUP and SIGTERM at their default action, as on a node: a suite started under `nohup` (or any
    parent that ignores them) would hand the ignoring down through exec, and the stand-in would then survive them."""
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _standin(timeout_s: int) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-m", "tests.lab.netplan_try_standin", "try", "--timeout",
                             str(timeout_s)], cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env={**os.environ, "PYTHONPATH": str(REPO)},
                            preexec_fn=_default_hup_and_term)
    assert proc.stdout is not None
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if "keep these settings" in proc.stdout.readline():
            return proc
    proc.kill()
    pytest.fail("the stand-in never asked")


needs_netplan = pytest.mark.skipif(not os.path.exists("/usr/sbin/netplan") or not os.path.isdir("/etc/netplan"),
                                   reason="the stand-in runs the real netplan generate")


@needs_netplan
@pytest.mark.parametrize(("sig", "said", "code"), [(signal.SIGUSR1, "Configuration accepted.", 0),
                                                   (signal.SIGINT, "Reverting.", 0),
                                                   (signal.SIGTERM, "", -signal.SIGTERM),
                                                   (signal.SIGHUP, "", -signal.SIGHUP)])
def test_the_try_stand_in_accepts_on_usr1_reverts_on_int_and_dies_on_term_and_hup(sig: int, said: str,
                                                                                  code: int) -> None:
    proc = _standin(60)
    proc.send_signal(sig)  # our own child, by its handle
    out, _ = proc.communicate(timeout=10)
    assert proc.returncode == code
    assert (said in out) if said else ("Reverting." not in out and "accepted" not in out)


@needs_netplan
def test_the_try_stand_in_reverts_by_its_timeout() -> None:
    proc = _standin(1)
    out, _ = proc.communicate(timeout=10)
    assert proc.returncode == 0 and "Reverting." in out


_NETLINK = """
import json, subprocess
from linkcheck.repair.node import LocalNode
from linkcheck.repair.runtime import RuntimeOp
from linkcheck.transport.local import LocalTransport
subprocess.run(["ip", "link", "add", "lc0", "type", "veth", "peer", "name", "lc1"], check=True)
for dev in ("lc0", "lc1"):
    subprocess.run(["ip", "link", "set", "dev", dev, "up"], check=True)
node = LocalNode(LocalTransport("a"))
node.change(RuntimeOp("mtu", "lc0", "9000"))
node.change(RuntimeOp("addr_add", "lc0", "198.18.7.1/24"))
node.change(RuntimeOp("neigh_set", "lc0", "198.18.7.2", "aa:bb:cc:dd:ee:ff", "permanent"))
link = json.loads(subprocess.run(["ip", "-j", "addr", "show", "dev", "lc0"], capture_output=True, text=True).stdout)[0]
neigh = json.loads(subprocess.run(["ip", "-j", "neigh", "show", "dev", "lc0"], capture_output=True, text=True).stdout)
node.change(RuntimeOp("neigh_del", "lc0", "198.18.7.2"))
node.change(RuntimeOp("addr_del", "lc0", "198.18.7.1/24"))
after = json.loads(subprocess.run(["ip", "-j", "addr", "show", "dev", "lc0"], capture_output=True, text=True).stdout)[0]
print(json.dumps([link["mtu"], [a["local"] for a in link["addr_info"] if a["family"] == "inet"],
                  [(n["dst"], n["lladdr"], n["state"]) for n in neigh],
                  [a for a in after.get("addr_info", []) if a["family"] == "inet"]]))
"""


@pytest.mark.lab  # a network namespace of its own (root)
def test_the_local_node_changes_through_netlink(tmp_path: Path) -> None:
    from tests.lab.pytest_plugin import lab_skip_reason

    if lab_skip_reason():
        pytest.skip(lab_skip_reason() or "")
    done = subprocess.run(["unshare", "--net", sys.executable, "-c", _NETLINK], capture_output=True, text=True,
                          cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ('[9000, ["198.18.7.1"], [["198.18.7.2", "aa:bb:cc:dd:ee:ff", ["PERMANENT"]]], '
                                   '[]]')

"""`linkcheck fix --apply`, `--restore` and `--allow-reboot` against the two-node lab, asserting on the nodes' real
state (`ip -j addr`, `ip -j link`, the files in /etc/netplan with their modes, the journal).

What is real here: the SSH sessions, every `ip` change in the nodes' namespaces, Debian's `netplan generate` on
every file written, the journal on each node's own /var/lib/linkcheck. What is a stand-in: `netplan try`
(tests/lab/netplan_try_standin.py: these labs boot no renderer for the real one to apply to; the real one runs in
test_repairs_real_renderer.py), NetworkManager's `nmcli` and checkpoint API in the two tests of faults the real daemon
cannot be made to show (tests/lab/nm_standin.py; elsewhere the real NetworkManager runs, tests/lab/nm_daemon.py)
and, for the reboot, `systemctl` (a script that records its arguments:
nothing reboots the test machine).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.lab import Lab, LabNodeSpec
from tests.lab.scenario import specs_for_scenario
from tests.live.test_fix_lab import _state

pytestmark = pytest.mark.lab  # builds the two-node lab

if TYPE_CHECKING:
    from tests.live.conftest import Live

REPO = Path(__file__).resolve().parents[2]
TRY_S = "12"  # netplan try's timeout in these tests (the stand-in's, as the real one's)


def _files(lab: Lab, node: str) -> str:
    """Every netplan file with its mode and owner, and its text."""
    script = 'for f in /etc/netplan/*; do stat -c "%n %a %u:%g" "$f"; cat "$f"; done'
    return lab.exec(node, ["sh", "-c", script]).stdout


def _snapshot(lab: Lab) -> dict[str, object]:
    return {n: (_state(lab, n), _files(lab, n)) for n in ("a", "b")}


def _journals(lab: Lab, node: str) -> list[dict[str, object]]:
    out = lab.exec(node, ["sh", "-c", "cat /var/lib/linkcheck/journal/*/journal.json 2>/dev/null"]).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def _mtu(lab: Lab, node: str, dev: str) -> int:
    return int(json.loads(lab.exec(node, ["ip", "-j", "link", "show", "dev", dev]).stdout)[0]["mtu"])


def _config(live: Live, lab: Lab, tmp_path: Path) -> Path:
    return live.lab_config(lab, tmp_path / "linkcheck.yaml", nodes={"a": {"target": "a"}, "b": {"target": "b"}})


def _wait_for(check: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


def _trying(lab: Lab, node: str) -> bool:
    """netplan try (the stand-in) waits for its confirmation on the node."""
    script = "grep -l 'keep these settings' /var/lib/linkcheck/journal/*/try.out 2>/dev/null"
    return lab.exec(node, ["sh", "-c", script]).returncode == 0


# scenario -> (exit code, findings) of the re-check after the repair: the lab's GID tables follow the addresses
# (tests/lab/gid_watch.py), so a pair moved to new subnets re-checks clean, as a real pair does.
AFTER = {
    "mtu-mismatch": (0, []),
    "twins-same-subnet": (0, []),
}
# scenario -> the runtime verification's ib_write_bw: node b's step completes the path (a's end changed first, or
# not at all), so it runs from b into a, with the GID index of each end's (new) address.
TRAFFIC = {
    "mtu-mismatch": "node b: ib_write_bw -D 2 from b:roceP2p1s0f1 (GID index 3) to a:roceP2p1s0f1 (GID index 3)",
    "twins-same-subnet": "node b: ib_write_bw -D 2 from b:roceP2p1s0f1 (GID index 3) to a:roceP2p1s0f1 (GID index 3)",
}


@pytest.mark.parametrize("scenario", sorted(AFTER))
def test_apply_repairs_then_plans_nothing_and_restore_puts_it_back(scenario: str, lab_factory: Callable[..., Lab],
                                                                   live: Live, tmp_path: Path) -> None:
    lab = lab_factory(specs_for_scenario(scenario, tmp_path / "models"))
    config = _config(live, lab, tmp_path)
    before = _snapshot(lab)
    run = live.run("fix", "--apply", "--try-timeout", TRY_S, "-c", str(config), "--save", str(tmp_path / "s1"),
                   timeout=240)
    code, findings = AFTER[scenario]
    assert run.returncode == code, run.describe()
    assert "committed (journal /var/lib/linkcheck/journal/" in run.stderr
    assert TRAFFIC[scenario] in run.stderr, run.describe()
    assert "node b: ib_write_bw b:roceP2p1s0f1 -> a:roceP2p1s0f1: " in run.stderr
    repaired = _snapshot(lab)
    assert repaired != before
    record = json.loads((tmp_path / "s1" / "apply.json").read_text())
    assert record["before"]["findings"] and record["after"]["findings"] == findings
    assert {n["state"] for n in record["nodes"]} == {"committed"}
    for node in ("a", "b"):
        for line in _files(lab, node).splitlines():
            if line.startswith("/etc/netplan/"):
                assert line.split()[1:] == ["600", "0:0"], line
    if scenario == "mtu-mismatch":
        assert _mtu(lab, "b", "enP2p1s0f1np1") == 9000
        assert "mtu: 9000" in _files(lab, "b")
    else:
        assert "198.19.101.14/24" in _files(lab, "a") and "198.19.101.15/24" in _files(lab, "b")
    # A second --apply on the repaired pair plans nothing and changes nothing.
    again = live.run("fix", "--apply", "-c", str(config), "--save", str(tmp_path / "s2"), timeout=240)
    assert again.returncode == code, again.describe()  # the diagnosis's code: nothing was applied
    assert "nothing to apply: the plan has no step\n" in again.stderr
    assert _snapshot(lab) == repaired
    # --restore puts back every original file (bytes, mode, owner) and undoes the runtime change.
    restored = live.run("fix", "--restore", "-c", str(config), timeout=120)
    assert restored.returncode == 0, restored.describe()
    assert "restored" in restored.stderr
    assert _snapshot(lab) == before


def _nccl_conf(lab: Lab, node: str) -> str:
    """/etc/nccl.conf with its mode and owner, and its text."""
    return lab.exec(node, ["sh", "-c", 'stat -c "%a %u:%g" /etc/nccl.conf; cat /etc/nccl.conf']).stdout


def test_apply_unpins_a_stale_gid_index_in_nccl_conf_and_restore_puts_it_back(lab_factory: Callable[..., Lab],
                                                                             live: Live, tmp_path: Path) -> None:
    lab = lab_factory(specs_for_scenario("gid-stale", tmp_path / "models"))
    config = _config(live, lab, tmp_path)
    before = {n: _nccl_conf(lab, n) for n in ("a", "b")}
    assert all(text == "644 0:0\nNCCL_IB_GID_INDEX=3\n" for text in before.values()), before
    state = _snapshot(lab)
    run = live.run("fix", "--apply", "-c", str(config), "--save", str(tmp_path / "s1"), timeout=240)
    assert run.returncode == 0, run.describe()
    record = json.loads((tmp_path / "s1" / "apply.json").read_text())
    assert sorted(record["before"]["findings"]) == ["GID_INDEX_DIFFERS:pair", "GID_INDEX_STALE:b:roceP2p1s0f1"]
    assert record["after"]["findings"] == []
    assert {n["node"]: n["state"] for n in record["nodes"]} == {"a": "committed", "b": "committed"}
    # The pin is gone (NCCL resolves the index per HCA), the file keeps its mode and owner.
    assert {n: _nccl_conf(lab, n) for n in ("a", "b")} == {"a": "644 0:0\n", "b": "644 0:0\n"}
    assert _snapshot(lab) == state  # nothing else changed: no runtime step
    again = live.run("fix", "--apply", "-c", str(config), "--save", str(tmp_path / "s2"), timeout=240)
    assert again.returncode == 0, again.describe()
    assert "nothing to apply: the plan has no step\n" in again.stderr
    restored = live.run("fix", "--restore", "-c", str(config), timeout=120)
    assert restored.returncode == 0, restored.describe()
    assert {n: _nccl_conf(lab, n) for n in ("a", "b")} == before


def _fec(lab: Lab, node: str) -> str:
    """`ethtool --show-fec` of the node's two cabled twins."""
    script = "for i in enp1s0f1np1 enP2p1s0f1np1; do ethtool --show-fec $i; done"
    return lab.exec(node, ["sh", "-c", script]).stdout


def test_apply_sets_rs_fec_where_it_is_off_and_restore_puts_it_back(lab_factory: Callable[..., Lab], live: Live,
                                                                    tmp_path: Path) -> None:
    lab = lab_factory(specs_for_scenario("fec-off", tmp_path / "models"))
    config = _config(live, lab, tmp_path)
    before = _fec(lab, "b")
    assert before.count("Active FEC encoding: None") == 2, before
    state = _snapshot(lab)
    run = live.run("fix", "--apply", "-c", str(config), "--save", str(tmp_path / "s1"), timeout=240)
    assert run.returncode == 0, run.describe()
    for dev in ("enp1s0f1np1", "enP2p1s0f1np1"):
        assert f"node b: ethtool --set-fec {dev} encoding rs\n" in run.stderr, run.describe()
    record = json.loads((tmp_path / "s1" / "apply.json").read_text())
    assert sorted(record["before"]["findings"]) == ["FEC_NOT_RS:enP2p1s0f1np1<->enP2p1s0f1np1",
                                                    "FEC_NOT_RS:enp1s0f1np1<->enp1s0f1np1"]
    assert record["after"]["findings"] == []
    after = _fec(lab, "b")
    assert after.count("Supported/Configured FEC encodings: RS\nActive FEC encoding: RS\n") == 2, after
    assert _fec(lab, "a").count("Active FEC encoding: RS") == 2  # node a was right: untouched
    assert _snapshot(lab) == state
    again = live.run("fix", "--apply", "-c", str(config), "--save", str(tmp_path / "s2"), timeout=240)
    assert again.returncode == 0 and "nothing to apply: the plan has no step\n" in again.stderr, again.describe()
    # --restore configures what the journal read before the change (Auto), which the link ran as None here.
    restored = live.run("fix", "--restore", "-c", str(config), timeout=120)
    assert restored.returncode == 0, restored.describe()
    assert "node b: ethtool --set-fec enp1s0f1np1 encoding auto" in restored.stderr, restored.describe()
    assert _fec(lab, "b") == before


def test_a_fec_that_does_not_take_is_reverted_by_the_runtime_verification(lab_factory: Callable[..., Lab],
                                                                          live: Live, tmp_path: Path) -> None:
    # A fault on node b: its ethtool accepts --set-fec and changes nothing (the rest is the lab's emulator).
    fault = ('[ "${1:-}" = --set-fec ] && exit 0\n'
             f'exec {sys.executable} -m tests.emulators.cli ethtool "$@"\n')
    specs = specs_for_scenario("fec-off", tmp_path / "models")
    specs = [dataclasses.replace(s, extra_tools={"ethtool": fault}) if s.name == "b" else s for s in specs]
    lab = lab_factory(specs)
    before = _fec(lab, "b")
    run = live.run("fix", "--apply", "-c", str(_config(live, lab, tmp_path)), "--save", str(tmp_path / "s"),
                   timeout=240)
    assert run.returncode == 2, run.describe()
    assert "node b: reverted" in run.stderr
    assert "node b: enP2p1s0f1np1 runs FEC None, not RS" in run.stderr, run.describe()
    assert _fec(lab, "b") == before
    assert [j["state"] for j in _journals(lab, "b")] == ["reverted"]


# scenario -> (the diagnosis's exit code: 2 a failure, 1 a warning; what the run says of each finding it
# leaves): nothing is applied.
# nccl-hca-reversed is a healthy pair (NCCL_IB_HCA filters, it does not order); nccl-hca-pairing has no automatic
# repair (re-addressing a node's twins crosswise is a person's call); gid-empty-pin is a note (NCCL reads an empty
# value as unset); nccl-hca-uncabled sets the variable in the job's environment, which linkcheck cannot edit (its
# /etc/nccl.conf form is repaired below).
NOTHING_APPLIED = {
    "healthy": (0, []),
    "nccl-hca-reversed": (0, []),
    "nccl-hca-pairing": (2, ["not planned: NCCL_HCA_PAIRING:pair: no automatic repair"]),
    "gid-empty-pin": (0, []),
    "nccl-hca-uncabled": (1, [f"not planned: NCCL_HCA_UNCABLED:{n}:rocep1s0f0: node {n}: NCCL_IB_HCA is set in the "
                              "job's environment" for n in ("a", "b")]),
}


@pytest.mark.parametrize("scenario", sorted(NOTHING_APPLIED))
def test_apply_changes_nothing_where_nothing_is_planned(scenario: str, lab_factory: Callable[..., Lab], live: Live,
                                                        tmp_path: Path) -> None:
    lab = lab_factory(specs_for_scenario(scenario, tmp_path / "models"))
    before = _all_files(lab), {n: _nccl_conf(lab, n) for n in ("a", "b")}
    run = live.run("fix", "--apply", "-c", str(_config(live, lab, tmp_path)), "--save", str(tmp_path / "s"),
                   timeout=240)
    code, said = NOTHING_APPLIED[scenario]
    assert run.returncode == code, run.describe()
    assert "nothing to apply" in run.stderr
    shown = " ".join((run.stdout + run.stderr).split())  # the console wraps a long line to the terminal
    for line in said:
        assert " ".join(line.split()) in shown, run.describe()
    assert (_all_files(lab), {n: _nccl_conf(lab, n) for n in ("a", "b")}) == before
    assert all(_journals(lab, n) == [] for n in ("a", "b"))


def test_sudo_refused_prints_the_plan_and_changes_nothing(lab_factory: Callable[..., Lab], live: Live,
                                                          tmp_path: Path) -> None:
    specs = specs_for_scenario("mtu-mismatch", tmp_path / "models")
    specs = [dataclasses.replace(s, sudo_refuses=True) if s.name == "b" else s for s in specs]
    lab = lab_factory(specs)
    before = _snapshot(lab)
    run = live.run("fix", "--apply", "-c", str(_config(live, lab, tmp_path)), "--save", str(tmp_path / "s"),
                   timeout=240)
    assert run.returncode == 3, run.describe()
    assert "runtime: sudo ip link set dev enP2p1s0f1np1 mtu 9000" in run.stdout  # the plan, printed
    assert "node b: sudo asks for a password (sudo -n refused): plan only, nothing changed" in run.stderr
    assert _snapshot(lab) == before


def test_a_wrong_mtu_on_one_end_is_reverted_by_the_runtime_verification(lab_factory: Callable[..., Lab],
                                                                        live: Live, tmp_path: Path) -> None:
    real_ip = shutil.which("ip")
    assert real_ip is not None
    # A fault on node b: `ip` sets 8000 when asked for 9000 (the rest of ip is the real one).
    fault = ("#!/bin/sh\n# lab fault: a wrong MTU on this end\n"
             'for a in "$@"; do shift; [ "$a" = 9000 ] && a=8000; set -- "$@" "$a"; done\n'
             f'exec {real_ip} "$@"\n')
    specs = specs_for_scenario("mtu-mismatch", tmp_path / "models")
    specs = [dataclasses.replace(s, extra_tools={"ip": fault}) if s.name == "b" else s for s in specs]
    lab = lab_factory(specs)
    before = _snapshot(lab)
    run = live.run("fix", "--apply", "-c", str(_config(live, lab, tmp_path)), "--save", str(tmp_path / "s"),
                   timeout=240)
    assert run.returncode == 2, run.describe()
    assert "node b: reverted" in run.stderr
    assert "enP2p1s0f1np1 is at MTU 8000, not 9000" in run.stderr
    assert "ping -M do -s 8972" in run.stderr  # a's jumbo ping does not pass b's 8000
    assert _snapshot(lab) == before
    assert [j["state"] for j in _journals(lab, "b")] == ["reverted"]


def test_no_roce_v2_gid_for_the_new_address_is_reverted_by_the_runtime_verification(
        lab_factory: Callable[..., Lab], live: Live, tmp_path: Path) -> None:
    lab = lab_factory(specs_for_scenario("twins-same-subnet", tmp_path / "models"))
    lab.stop_gid_watch("a")  # node a's kernel adds no GID for a new address (its table keeps the old ones)
    before = _snapshot(lab)
    run = live.run("fix", "--apply", "-c", str(_config(live, lab, tmp_path)), "--save", str(tmp_path / "s"),
                   timeout=240)
    assert run.returncode == 2, run.describe()
    assert "node a: reverted" in run.stderr
    # Its interface still has RoCE v2 entries (fe80, and the old address's in the frozen table): not the new one's.
    assert ("node a: roceP2p1s0f1 has no RoCE v2 GID entry for 198.19.101.14 "
            "(0000:0000:0000:0000:0000:ffff:c613:650e) on enP2p1s0f1np1") in run.stderr, run.describe()
    assert _snapshot(lab) == before
    assert [j["state"] for j in _journals(lab, "a")] == ["reverted"]
    assert _journals(lab, "b") == []


def test_rdma_traffic_failing_on_the_repaired_path_is_reverted(lab_factory: Callable[..., Lab], live: Live,
                                                               tmp_path: Path) -> None:
    lab = lab_factory(specs_for_scenario("mtu-mismatch", tmp_path / "models"))
    lab.set_fault("b", "ib_write_bw", "client-fail")  # the link pings, RDMA writes fail with a completion error
    before = _snapshot(lab)
    pids = live.node_pids(lab)
    run = live.run("fix", "--apply", "-c", str(_config(live, lab, tmp_path)), "--save", str(tmp_path / "s"),
                   timeout=240)
    assert run.returncode == 2, run.describe()
    assert "node b: reverted" in run.stderr
    assert "node b: ib_write_bw client on b:roceP2p1s0f1 failed" in run.stderr, run.describe()
    assert _snapshot(lab) == before
    assert [j["state"] for j in _journals(lab, "b")] == ["reverted"]
    assert live.strays(lab, pids) == {}  # every process the run started on the nodes was ended


def test_ssh_lost_during_the_persistent_step_reverts_by_timeout_and_the_next_run_says_so(
        lab_factory: Callable[..., Lab], live: Live, tmp_path: Path) -> None:
    lab = lab_factory(specs_for_scenario("mtu-mismatch", tmp_path / "models"))
    config = _config(live, lab, tmp_path)
    before = _snapshot(lab)
    args = ("fix", "--apply", "--try-timeout", TRY_S, "-c", str(config), "--save", str(tmp_path / "s"))
    started = live.start(*args)
    _wait_for(lambda: _trying(lab, "b"), 60, "netplan try on node b")
    lab.stop_sshd("b")
    lab.kill_ssh_sessions("b")
    run = live.wait(started, args)
    assert run.returncode == 3, run.describe()  # inconclusive: the node finishes it alone
    assert "netplan try reverts the change by its timeout" in run.stderr, run.describe()
    result = "cat /var/lib/linkcheck/journal/*/try.result 2>/dev/null"
    _wait_for(lambda: lab.exec("b", ["sh", "-c", result]).stdout.strip() == "reverted", 40, "the try's revert")
    assert _snapshot(lab) == before  # its files put back and the MTU undone by the node itself
    lab.start_sshd("b")
    nxt = live.run("fix", "--apply", "--try-timeout", TRY_S, "-c", str(config), "--save", str(tmp_path / "s2"),
                   timeout=240)
    assert "was not confirmed: netplan try reverted it by its timeout" in nxt.stderr, nxt.describe()
    assert nxt.returncode == 0, nxt.describe()


def test_ctrl_c_while_netplan_try_waits_puts_the_node_back(lab_factory: Callable[..., Lab], live: Live,
                                                           tmp_path: Path) -> None:
    lab = lab_factory(specs_for_scenario("mtu-mismatch", tmp_path / "models"))
    config = _config(live, lab, tmp_path)
    before = _snapshot(lab)
    args = ("fix", "--apply", "--try-timeout", "60", "-c", str(config), "--save", str(tmp_path / "s"))
    started = live.start(*args)
    _wait_for(lambda: _trying(lab, "b"), 60, "netplan try on node b")
    started[0].send_signal(signal.SIGINT)  # our own child, by its handle
    run = live.wait(started, args)
    assert run.returncode == 130, run.describe()
    assert _snapshot(lab) == before
    assert [j["state"] for j in _journals(lab, "b")] == ["reverted"]
    nxt = live.run("fix", "--apply", "--try-timeout", TRY_S, "-c", str(config), "--save", str(tmp_path / "s2"),
                   timeout=240)
    assert "was put back as it was before (interrupted (Ctrl-C))" in nxt.stderr, nxt.describe()


def test_a_stale_bundle_and_another_pairs_bundle_are_refused(lab_factory: Callable[..., Lab], live: Live,
                                                             tmp_path: Path) -> None:
    lab = lab_factory(specs_for_scenario("mtu-mismatch", tmp_path / "models"))
    config = _config(live, lab, tmp_path)
    live.run("fix", "-c", str(config), "--save", str(tmp_path / "plan"), timeout=240)
    assert (tmp_path / "plan" / "repair.json").is_file()
    lab.exec("a", ["ip", "link", "set", "dev", "enp1s0f0np0", "mtu", "1600"])  # the live state changes
    before = _snapshot(lab)
    stale = live.run("fix", str(tmp_path / "plan"), "--apply", "-c", str(config), "--save", str(tmp_path / "s1"),
                     timeout=240)
    assert stale.returncode == 4, stale.describe()
    assert "the live state changed since the plan was made" in stale.stderr
    other = tmp_path / "other"
    shutil.copytree(REPO / "fixtures" / "real-healthy-gx10", other)
    foreign = live.run("fix", str(other), "--apply", "-c", str(config), "--save", str(tmp_path / "s2"), timeout=240)
    assert foreign.returncode == 4, foreign.describe()
    assert "the plan was made for gx10-a and gx10-b" in foreign.stderr
    assert _snapshot(lab) == before


def test_reboot_only_with_allow_reboot(lab_factory: Callable[..., Lab], live: Live, tmp_path: Path) -> None:
    calls = tmp_path / "systemctl-calls"
    calls.mkdir()
    specs = specs_for_scenario("replugged-since-boot", tmp_path / "models")
    # A stand-in for systemctl: it records what it was asked and reboots nothing.
    specs = [dataclasses.replace(s, extra_tools={"systemctl": f'echo "$*" >> {calls}/{s.name}\n'}) for s in specs]
    lab = lab_factory(specs)
    config = _config(live, lab, tmp_path)
    plain = live.run("fix", "--apply", "-c", str(config), "--save", str(tmp_path / "s1"), timeout=240)
    assert "the plan has no step but reboots (they need --allow-reboot)" in plain.stderr, plain.describe()
    assert list(calls.iterdir()) == []
    allowed = live.run("fix", "--apply", "--allow-reboot", "--reboot-wait", "3", "-c", str(config), "--save",
                       str(tmp_path / "s2"), timeout=240)
    assert {p.name: p.read_text() for p in calls.iterdir()} == {"a": "reboot --no-block\n", "b": "reboot --no-block\n"}
    # The stand-in reboots nothing, so no node comes back with a new boot id.
    assert allowed.returncode == 3, allowed.describe()
    assert "not back with a new boot within 3 s" in allowed.stderr


def _nm_files(lab: Lab, node: str) -> str:
    """Every NetworkManager keyfile under /etc and /run with its mode and owner, and its text; not the profiles the
    real NetworkManager makes for itself (`[.nmmeta] nm-generated=true`, volatile: a port it found configured by
    `ip`, gone once a profile is brought up on it), which are no file of the node's and none linkcheck touches."""
    script = ('for f in /etc/NetworkManager/system-connections/* /run/NetworkManager/system-connections/*; do '
              '[ -e "$f" ] || continue; grep -qx nm-generated=true "$f" && continue; '
              'stat -c "%n %a %u:%g" "$f"; cat "$f"; done')
    return lab.exec(node, ["sh", "-c", script]).stdout


def _all_files(lab: Lab) -> dict[str, object]:
    return {n: (_state(lab, n), _files(lab, n), _nm_files(lab, n)) for n in ("a", "b")}


# scenario -> (the node repaired, what its file must say afterwards, the step's line in the run's output)
FILE_REPAIRS = {
    "netplan-not-applied": ("b", "- 198.19.101.11/24", "node b: /etc/netplan/40-cx7.yaml written (mode 600)"),
    "nm-profile-runtime-only": (
        "a", "/etc/NetworkManager/system-connections/cx7-p1-2.nmconnection 600 0:0\n[connection]\nid=cx7-p1-2\n",
        "node a: /etc/NetworkManager/system-connections/cx7-p1-2.nmconnection written (mode 600)"),
}


@pytest.mark.parametrize("scenario", sorted(FILE_REPAIRS))
def test_apply_makes_the_file_say_what_runs_then_plans_nothing_and_restore_puts_it_back(
        scenario: str, lab_factory: Callable[..., Lab], live: Live, tmp_path: Path) -> None:
    lab = lab_factory(specs_for_scenario(scenario, tmp_path / "models"))
    config = _config(live, lab, tmp_path)
    before = _all_files(lab)
    node, says, line = FILE_REPAIRS[scenario]
    assert says not in _files(lab, node) + _nm_files(lab, node)
    run = live.run("fix", "--apply", "--try-timeout", TRY_S, "-c", str(config), "--save", str(tmp_path / "s1"),
                   timeout=240)
    assert run.returncode == 0, run.describe()
    assert line in run.stderr, run.describe()
    record = json.loads((tmp_path / "s1" / "apply.json").read_text())
    assert record["before"]["findings"] and record["after"]["findings"] == [], record
    assert {n["node"]: n["state"] for n in record["nodes"]} == {node: "committed"}
    repaired = _all_files(lab)
    assert says in _files(lab, node) + _nm_files(lab, node)
    if scenario == "nm-profile-runtime-only":
        # Committed through a NetworkManager checkpoint (the stand-in's), kept once the link verified.
        assert "node a: NetworkManager checkpoint with a rollback timeout of 12 s" in run.stderr, run.describe()
        assert "node a: ib_write_bw a:roceP2p1s0f1 -> b:roceP2p1s0f1: " in run.stderr, run.describe()
        assert _try_result(lab, "a") == "accepted\nnm-checkpoint"
    assert {n: s[0] for n, s in repaired.items()} == {n: s[0] for n, s in before.items()}  # the live state kept
    again = live.run("fix", "--apply", "-c", str(config), "--save", str(tmp_path / "s2"), timeout=240)
    assert again.returncode == 0 and "nothing to apply: the plan has no step\n" in again.stderr, again.describe()
    assert _all_files(lab) == repaired
    restored = live.run("fix", "--restore", "-c", str(config), timeout=120)
    assert restored.returncode == 0, restored.describe()
    assert _all_files(lab) == before


def _nm_standin(specs: list[LabNodeSpec]) -> list[LabNodeSpec]:
    return [dataclasses.replace(spec, networkmanager="standin") for spec in specs]


def _try_result(lab: Lab, node: str) -> str:
    return lab.exec(node, ["sh", "-c", "cat /var/lib/linkcheck/journal/*/try.result 2>/dev/null"]).stdout.strip()


def test_a_profile_that_breaks_the_link_is_rolled_back_by_the_nm_checkpoint(lab_factory: Callable[..., Lab],
                                                                            live: Live, tmp_path: Path) -> None:
    # The stand-in (tests/lab/nm_standin.py): the real NetworkManager cannot be made to leave a port at MTU 1500 when
    # a profile is activated; the real daemon's rollback is in test_repairs_real_nm.py.
    lab = lab_factory(_nm_standin(specs_for_scenario("nm-profile-runtime-only", tmp_path / "models")))
    lab.set_fault("a", "nmcli", "up-mtu-1500")  # activating the profile leaves the port at MTU 1500
    before = _all_files(lab)
    run = live.run("fix", "--apply", "--try-timeout", "60", "-c", str(_config(live, lab, tmp_path)), "--save",
                   str(tmp_path / "s"), timeout=240)
    assert run.returncode == 2, run.describe()
    assert "node a: reverted" in run.stderr and "ping -M do -s 8972" in run.stderr, run.describe()
    # Rolled back on request, long before the 60 s timeout: the MTU by the checkpoint, the keyfiles by both.
    assert _all_files(lab) == before
    assert [j["state"] for j in _journals(lab, "a")] == ["reverted"]
    assert _try_result(lab, "a") == "reverted\nnm-checkpoint"


def test_ssh_lost_during_the_nm_checkpoint_rolls_back_by_timeout_and_the_next_run_says_so(
        lab_factory: Callable[..., Lab], live: Live, tmp_path: Path) -> None:
    # The stand-in (tests/lab/nm_standin.py), whose `up` takes 4 s on request; the real daemon's rollback by its own
    # timeout is in test_repairs_real_nm.py.
    lab = lab_factory(_nm_standin(specs_for_scenario("nm-profile-runtime-only", tmp_path / "models")))
    lab.set_fault("a", "nmcli", "up-slow")  # `nmcli connection up` takes 4 s: the SSH connection is cut meanwhile
    config = _config(live, lab, tmp_path)
    before = _all_files(lab)
    args = ("fix", "--apply", "--try-timeout", TRY_S, "-c", str(config), "--save", str(tmp_path / "s"))
    started = live.start(*args)
    # The checkpoint held and the keyfile installed: linkcheck is in the slow `nmcli connection up`.
    held = ("grep -lx ready /var/lib/linkcheck/journal/*/nm.out >/dev/null 2>&1 && "
            "test -e /etc/NetworkManager/system-connections/cx7-p1-2.nmconnection")
    _wait_for(lambda: lab.exec("a", ["sh", "-c", held]).returncode == 0, 60, "the checkpoint on node a")
    lab.stop_sshd("a")
    lab.kill_ssh_sessions("a")
    run = live.wait(started, args)
    assert run.returncode == 3, run.describe()
    assert "the NetworkManager checkpoint rolls the change back by its timeout" in run.stderr, run.describe()
    _wait_for(lambda: _try_result(lab, "a").startswith("reverted"), 40, "the checkpoint's rollback")
    assert _try_result(lab, "a") == "reverted\nnm-checkpoint"
    assert _all_files(lab) == before  # the keyfile copy gone again, by the node alone
    lab.start_sshd("a")
    lab.set_fault("a", "nmcli", None)
    nxt = live.run("fix", "--apply", "--try-timeout", TRY_S, "-c", str(config), "--save", str(tmp_path / "s2"),
                   timeout=240)
    assert ("was not confirmed: the NetworkManager checkpoint reverted it by its timeout" in nxt.stderr), \
        nxt.describe()
    assert nxt.returncode == 0, nxt.describe()


def _neigh(lab: Lab, node: str) -> list[tuple[str, str, str, str]]:
    """The node's IPv4 neighbour entries on its data links: IP, interface, MAC, state (`ip -j neigh`)."""
    entries = json.loads(lab.exec(node, ["ip", "-j", "-4", "neigh", "show"]).stdout or "[]")
    return sorted((e["dst"], e["dev"], e.get("lladdr", ""), ",".join(e.get("state", []))) for e in entries
                  if e["dev"].startswith("en"))


def test_apply_removes_a_wrong_mac_binding_and_restore_puts_it_back(lab_factory: Callable[..., Lab], live: Live,
                                                                    tmp_path: Path) -> None:
    lab = lab_factory(specs_for_scenario("single-pcie-path", tmp_path / "models"))
    config = _config(live, lab, tmp_path)
    before, neigh = _snapshot(lab), _neigh(lab, "b")
    # Node b resolves a's domain-2 twin to the MAC of a's other twin, as a permanent entry (ARP never corrects it).
    wrong = [e for e in neigh if e[1] == "enP2p1s0f1np1" and e[3] == "PERMANENT"]
    assert len(wrong) == 1, neigh
    run = live.run("fix", "--apply", "-c", str(config), "--save", str(tmp_path / "s1"), timeout=240)
    assert f"node b: ip neigh del {wrong[0][0]} dev enP2p1s0f1np1" in run.stderr, run.describe()
    # Verified on the repaired path: a jumbo ping each way, then RDMA writes from b into a's GID of that twin.
    assert "node b: ib_write_bw -D 2 from b:roceP2p1s0f1 (GID index 3) to a:roceP2p1s0f1 (GID index 3)" in run.stderr
    assert "node b: ib_write_bw b:roceP2p1s0f1 -> a:roceP2p1s0f1: " in run.stderr
    record = json.loads((tmp_path / "s1" / "apply.json").read_text())
    assert "SINGLE_PCIE_PATH:b:enP2p1s0f1np1" in record["before"]["findings"], record
    assert {n["node"]: n["state"] for n in record["nodes"]} == {"b": "committed"}
    assert run.returncode == 0 and record["after"]["findings"] == [], run.describe()
    # The next packet resolved the peer again: its own MAC now, learnt by ARP, not a permanent entry.
    after = [e for e in _neigh(lab, "b") if e[0] == wrong[0][0] and e[1] == "enP2p1s0f1np1"]
    assert after and all(e[2] != wrong[0][2] and e[3] != "PERMANENT" for e in after), after
    assert _snapshot(lab) == before  # no address, MTU or file changed
    again = live.run("fix", "--apply", "-c", str(config), "--save", str(tmp_path / "s2"), timeout=240)
    assert again.returncode == 0 and "nothing to apply: the plan has no step\n" in again.stderr, again.describe()
    restored = live.run("fix", "--restore", "-c", str(config), timeout=120)
    assert restored.returncode == 0, restored.describe()
    assert [e for e in _neigh(lab, "b") if e[1] == "enP2p1s0f1np1" and e[3] == "PERMANENT"] == wrong
    assert _snapshot(lab) == before


def _set_in_nccl_conf(models: Path, key: str) -> None:
    """Move `key` from the job's environment of both node models into their /etc/nccl.conf: the scenarios set it in
    the environment, which linkcheck cannot edit (it leaves that to a person), while the file it repairs."""
    for path in (models / "a.json", models / "b.json"):
        model = json.loads(path.read_text(encoding="utf-8"))
        value = model["nccl_env"].pop(key)
        model["nccl_conf"] = f"{key}={value}\n"
        path.write_text(json.dumps(model), encoding="utf-8")


# scenario -> (the variable moved into /etc/nccl.conf, the file's text before, after the repair, the findings)
NCCL_CONF_REPAIRS = {
    "nccl-hca-uncabled": ("NCCL_IB_HCA", "NCCL_IB_HCA=rocep1s0f0,rocep1s0f1,roceP2p1s0f1\n",
                          "NCCL_IB_HCA==rocep1s0f1,roceP2p1s0f1\n",
                          ["NCCL_HCA_UNCABLED:a:rocep1s0f0", "NCCL_HCA_UNCABLED:b:rocep1s0f0"]),
}


@pytest.mark.parametrize("scenario", sorted(NCCL_CONF_REPAIRS))
def test_apply_edits_nccl_conf_then_plans_nothing_and_restore_puts_it_back(
        scenario: str, lab_factory: Callable[..., Lab], live: Live, tmp_path: Path) -> None:
    key, text, repaired, findings = NCCL_CONF_REPAIRS[scenario]
    specs = specs_for_scenario(scenario, tmp_path / "models")
    _set_in_nccl_conf(tmp_path / "models", key)
    lab = lab_factory(specs)
    config = _config(live, lab, tmp_path)
    before = {n: _nccl_conf(lab, n) for n in ("a", "b")}
    assert before == {"a": f"644 0:0\n{text}", "b": f"644 0:0\n{text}"}, before
    state = _snapshot(lab)
    run = live.run("fix", "--apply", "-c", str(config), "--save", str(tmp_path / "s1"), timeout=240)
    record = json.loads((tmp_path / "s1" / "apply.json").read_text())
    assert sorted(record["before"]["findings"]) == findings, record
    assert {n["node"]: n["state"] for n in record["nodes"]} == {"a": "committed", "b": "committed"}, run.describe()
    assert run.returncode == 0 and record["after"]["findings"] == [], run.describe()
    # The file says what the repair means and keeps its mode and owner; nothing else changed (no runtime step).
    assert {n: _nccl_conf(lab, n) for n in ("a", "b")} == {"a": f"644 0:0\n{repaired}", "b": f"644 0:0\n{repaired}"}
    assert _snapshot(lab) == state
    again = live.run("fix", "--apply", "-c", str(config), "--save", str(tmp_path / "s2"), timeout=240)
    assert again.returncode == 0 and "nothing to apply: the plan has no step\n" in again.stderr, again.describe()
    restored = live.run("fix", "--restore", "-c", str(config), timeout=120)
    assert restored.returncode == 0, restored.describe()
    assert {n: _nccl_conf(lab, n) for n in ("a", "b")} == before
    assert _snapshot(lab) == state


def _both_nccl_confs(lab: Lab, node: str) -> str:
    """/etc/nccl.conf and root's ~/.nccl.conf (linkcheck's user on the lab's nodes), each with mode and owner."""
    script = 'for f in /etc/nccl.conf "$HOME/.nccl.conf"; do stat -c "%n %a %u:%g" "$f"; cat "$f"; done'
    return lab.exec(node, ["sh", "-c", script]).stdout


def test_apply_unpins_a_gid_index_in_every_nccl_conf_that_pins_it(lab_factory: Callable[..., Lab], live: Live,
                                                                  tmp_path: Path) -> None:
    # Both files pin the stale index: ~/.nccl.conf's shadows /etc/nccl.conf's, which takes effect once it is gone.
    specs = specs_for_scenario("gid-stale", tmp_path / "models")
    for path in (tmp_path / "models" / "a.json", tmp_path / "models" / "b.json"):
        model = json.loads(path.read_text(encoding="utf-8"))
        model["nccl_conf_user"] = "NCCL_IB_GID_INDEX=3\n"
        path.write_text(json.dumps(model), encoding="utf-8")
    lab = lab_factory(specs)
    config = _config(live, lab, tmp_path)
    before = {n: _both_nccl_confs(lab, n) for n in ("a", "b")}
    assert all(t.count("NCCL_IB_GID_INDEX=3\n") == 2 for t in before.values()), before
    state = _snapshot(lab)
    run = live.run("fix", "--apply", "-c", str(config), "--save", str(tmp_path / "s1"), timeout=240)
    record = json.loads((tmp_path / "s1" / "apply.json").read_text())
    assert {n["node"]: n["state"] for n in record["nodes"]} == {"a": "committed", "b": "committed"}, run.describe()
    assert run.returncode == 0 and record["after"]["findings"] == [], run.describe()
    after = {n: _both_nccl_confs(lab, n) for n in ("a", "b")}
    assert all("NCCL_IB_GID_INDEX" not in t and t.count(" 644 0:0\n") == 2 for t in after.values()), after
    assert _snapshot(lab) == state
    again = live.run("fix", "--apply", "-c", str(config), "--save", str(tmp_path / "s2"), timeout=240)
    assert again.returncode == 0 and "nothing to apply: the plan has no step\n" in again.stderr, again.describe()
    restored = live.run("fix", "--restore", "-c", str(config), timeout=120)
    assert restored.returncode == 0, restored.describe()
    assert {n: _both_nccl_confs(lab, n) for n in ("a", "b")} == before


def _ip_keeping_mtu(real_ip: str) -> str:
    """A fault for node b's `ip`: `... mtu 1500` does nothing while `ip-keeps-mtu` is in the node's fault folder,
    or once while `ip-keeps-mtu-once` is (it is then removed); the rest is the real ip."""
    return ('f="${LINKCHECK_LAB_FAULTS:-/nonexistent}"\n'
            'case " $* " in *" mtu 1500 "*)\n'
            '  [ -e "$f/ip-keeps-mtu" ] && exit 0\n'
            '  [ -e "$f/ip-keeps-mtu-once" ] && rm -f "$f/ip-keeps-mtu-once" && exit 0;;\n'
            'esac\n'
            f'exec {real_ip} "$@"\n')


def _fault_file(lab: Lab, node: str, name: str, text: str | None) -> None:
    """A fault the node's own wrappers read from its fault folder (lab.fault_dir): written, or removed (None)."""
    path = lab.fault_dir(node) / name
    if text is None:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="ascii")


def _mtu_fault_lab(lab_factory: Callable[..., Lab], tmp_path: Path) -> Lab:
    real_ip = shutil.which("ip")
    assert real_ip is not None
    specs = specs_for_scenario("mtu-mismatch", tmp_path / "models")
    specs = [dataclasses.replace(s, extra_tools={"ip": _ip_keeping_mtu(real_ip)}) if s.name == "b" else s
             for s in specs]
    return lab_factory(specs)


def test_a_try_revert_that_leaves_the_new_mtu_is_completed_and_verified(lab_factory: Callable[..., Lab],
                                                                        live: Live, tmp_path: Path) -> None:
    lab = _mtu_fault_lab(lab_factory, tmp_path)
    # netplan try as 0.106 with a real renderer: it applies the files, and its revert leaves the new MTU; and the
    # try script's own MTU undo does not take (once): only linkcheck's verified revert can put the MTU back.
    _fault_file(lab, "b", "netplan", "renderer-0.106\n")
    _fault_file(lab, "b", "ip-keeps-mtu-once", "")
    config = _config(live, lab, tmp_path)
    before = _snapshot(lab)
    args = ("fix", "--apply", "--try-timeout", "60", "-c", str(config), "--save", str(tmp_path / "s"))
    started = live.start(*args)
    _wait_for(lambda: _trying(lab, "b"), 60, "netplan try on node b")
    started[0].send_signal(signal.SIGINT)  # our own child, by its handle
    run = live.wait(started, args)
    assert run.returncode == 130, run.describe()
    out = lab.exec("b", ["sh", "-c", "cat /var/lib/linkcheck/journal/*/try.out"]).stdout
    assert "Reverting." in out and "renderer: enP2p1s0f1np1 reverted: addresses" in out, out
    assert "mtu left at 9000" in out, out
    assert not (lab.fault_dir("b") / "ip-keeps-mtu-once").exists()  # the try script's undo was the one lost
    assert "node b: not as before the run (enP2p1s0f1np1: MTU 9000, was 1500): putting it back" in run.stderr, \
        run.describe()
    assert "node b: live state read back as before the run" in run.stderr
    assert _snapshot(lab) == before
    journal = _journals(lab, "b")
    assert [j["state"] for j in journal] == ["reverted"] and journal[0]["verified"] is True
    assert [i["mtu"] for i in journal[0]["before"]["interfaces"]] == [1500]


def test_a_revert_that_cannot_put_the_mtu_back_is_not_reverted_and_restore_finishes_it(
        lab_factory: Callable[..., Lab], live: Live, tmp_path: Path) -> None:
    lab = _mtu_fault_lab(lab_factory, tmp_path)
    lab.set_fault("b", "ib_write_bw", "client-fail")  # the runtime verification fails: the change is undone
    _fault_file(lab, "b", "ip-keeps-mtu", "")  # ... but node b's MTU cannot be lowered back
    config = _config(live, lab, tmp_path)
    before = _snapshot(lab)
    run = live.run("fix", "--apply", "-c", str(config), "--save", str(tmp_path / "s"), timeout=240)
    assert run.returncode == 2, run.describe()
    assert "node b: not-reverted (journal " in run.stderr, run.describe()
    assert "NOT as before the run: enP2p1s0f1np1: MTU 9000, was 1500" in run.stderr
    assert "node b: reverted" not in run.stderr
    assert _mtu(lab, "b", "enP2p1s0f1np1") == 9000
    journal = _journals(lab, "b")
    assert [(j["state"], j["verified"], j["differences"]) for j in journal] == [
        ("not-reverted", False, ["enP2p1s0f1np1: MTU 9000, was 1500"])]
    applied = [json.loads(p.read_text()) for p in (tmp_path / "s").rglob("apply.json")]
    assert [(n["node"], n["state"], n["verified"]) for a in applied for n in a["nodes"]] == [
        ("b", "not-reverted", False)]
    # fix --restore re-runs the restore and checks again: still held, it says so; the fault gone, it finishes.
    held = live.run("fix", "--restore", "-c", str(config), timeout=240)
    assert held.returncode == 2, held.describe()
    assert "node b: run " in held.stderr and "not fully restored; NOT as before the run" in held.stderr
    _fault_file(lab, "b", "ip-keeps-mtu", None)
    lab.set_fault("b", "ib_write_bw", None)
    done = live.run("fix", "--restore", "-c", str(config), timeout=240)
    assert done.returncode == 0, done.describe()
    assert "restored; live state as before the run" in done.stderr, done.describe()
    assert _snapshot(lab) == before
    assert [(j["state"], j["verified"]) for j in _journals(lab, "b")] == [("restored", True)]


def test_a_rollback_that_reactivates_late_is_waited_for_then_verified(lab_factory: Callable[..., Lab], live: Live,
                                                                      tmp_path: Path) -> None:
    # The stand-in (tests/lab/nm_standin.py): the real NetworkManager cannot be made to leave a port at MTU 1500
    # when its profile says 9000, nor to hold a rollback's re-activation back for 3 s on request.
    lab = lab_factory(_nm_standin(specs_for_scenario("nm-profile-runtime-only", tmp_path / "models")))
    lab.set_fault("a", "nmcli", "up-mtu-1500")  # activating the profile leaves the port at MTU 1500: rolled back
    # ... and the rollback returns with the port still without its address, back 3 s later (tests/lab/nm_standin.py)
    _fault_file(lab, "a", "busctl", "rollback-reactivates-late\n")
    before = _all_files(lab)
    run = live.run("fix", "--apply", "--try-timeout", "60", "-c", str(_config(live, lab, tmp_path)), "--save",
                   str(tmp_path / "s"), timeout=240)
    assert run.returncode == 2, run.describe()
    assert "node a: reverted (journal " in run.stderr and "; live state as before the run" in run.stderr, \
        run.describe()
    assert "node a: live state read back as before the run" in run.stderr
    # The address was waited for: it came back by itself. What did not is the port's permanent neighbour entry,
    # which the kernel dropped with the port's last IPv4 address (the rollback's deactivation): linkcheck put it back.
    differ = [line for line in run.stderr.splitlines() if "node a: not as before the run (" in line]
    assert len(differ) == 1 and "static neighbours" in differ[0] and "addresses" not in differ[0], run.describe()
    assert "node a: ip neigh replace " in run.stderr
    assert _all_files(lab) == before
    journal = _journals(lab, "a")
    assert [(j["state"], j["verified"]) for j in journal] == [("reverted", True)]

"""Faults during a live `linkcheck check` against the lab, each as it happens in the field.

Every fault must give: one clear line on stderr naming the node and the cause, the documented exit code
(3, inconclusive: something required could not be measured), the bundle of what was collected (with the
other node's captures), no traceback, and no process of ours left on any node.

Connection faults break node b of a healthy lab while node a stays fine. Per-command faults are paired,
one per node (or per fact group), so a lab run serves two tests:
  run 1: node a has no ethtool installed;          node b's sudo wants a password
  run 2: node a's `ip -j addr` hangs (per-command timeout) and its `ethtool -m` answer is cut off mid-line;
         node b's `ethtool -m` prints binary garbage
The stand-ins are put in front of the emulators through the lab's `extra_tools` (the emulator has no
hang or garbage mode of its own).
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.lab import Lab, LabNodeSpec
from tests.lab.scenario import specs_for_scenario

pytestmark = pytest.mark.lab  # builds the two-node lab

if TYPE_CHECKING:
    from tests.live.conftest import CliRun, Live

REPO = Path(__file__).resolve().parents[2]
BENCH_RULES = frozenset({"LINK_HOTPLUG_DEGRADED", "LINK_BELOW_NOMINAL", "NCCL_SOCKET_FALLBACK", "NCCL_BUSBW_LOW"})
INCONCLUSIVE = 3
# The tests reading one module fixture's lab or run go to one worker (`--dist loadgroup`), which makes it once.
ON_CONN_LAB = pytest.mark.xdist_group("live-faults-conn")
ON_MISSING_SUDO_RUN = pytest.mark.xdist_group("live-faults-missing-sudo")
ON_HANG_RUN = pytest.mark.xdist_group("live-faults-hang-cut-garbage")
HANG_TIMEOUT_S = 12  # above the slowest healthy command on a loaded 2-core machine: here every ethtool call starts
# the Python emulator (the cut and garbage wrappers below), which took over 6 s at a load average of 18
KILL_GRACE_S = 2  # linkcheck's `timeout -k`
EMULATOR = f"{shlex.quote(sys.executable)} -m tests.emulators.cli"
ALL_STATUSES = ("pass", "warn", "fail", "skip")


# -- shared checks ------------------------------------------------------------------------------------------


def _spec_ids() -> set[str]:
    """Every spec a lab node answers: not the per-container ones (no --container named), and not gpu_state (the
    lab's nodes have no GPU and no nvidia-smi: an optional tool that is absent is skipped)."""
    from linkcheck.collect.specs import SPECS

    return {s.id for s in SPECS if not s.per_container} - {"gpu_state"}


def _rules_needing(groups: set[str]) -> set[str]:
    from linkcheck.diagnose.playbook import load_playbooks

    return {rule.id for rule in load_playbooks(None) if groups.intersection(rule.needs)}


def _one_line(run: CliRun, node: str, cause: str) -> str:
    """The single stderr line that names `node` and matches the cause pattern; no traceback anywhere."""
    assert "Traceback" not in run.stderr and "internal error" not in run.stderr, run.describe()
    lines = [ln for ln in run.error_lines() if f"node {node}" in ln and re.search(cause, ln, re.IGNORECASE)]
    assert len(lines) == 1, f"want one stderr line naming node {node} and /{cause}/; {run.describe()}"
    assert lines[0].startswith("linkcheck: "), lines[0]
    return lines[0]


def _manifest(run: CliRun, saved: Path) -> dict[str, Any]:
    assert run.saved_to() == saved, run.describe()
    data = json.loads((saved / "manifest.json").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def _complete(manifest: dict[str, Any], node: str) -> set[str]:
    """Spec ids the node answered (not skipped); the caller compares with every spec."""
    return {c["spec"] for c in manifest["captures"] if c["node"] == node and not c["skipped"]}


def _inconclusive(run: CliRun) -> None:
    assert run.returncode == INCONCLUSIVE, run.describe()
    assert run.report["verdict"] == "inconclusive" and run.report["exit_code"] == INCONCLUSIVE


def _connection_fault(run: CliRun, saved: Path, cause: str) -> str:
    """Node b could not be reached at all, node a was inspected in full; returns b's stderr line."""
    line = _one_line(run, "b", cause)
    assert run.error_lines() == [line], run.describe()
    _inconclusive(run)
    manifest = _manifest(run, saved)
    assert list(manifest["collection_errors"]) == ["b"]
    assert _complete(manifest, "a") >= _spec_ids()
    assert _complete(manifest, "b") == set()
    return line


def _healthy_specs(workdir: Path, a: dict[str, Any] | None = None, b: dict[str, Any] | None = None
                   ) -> list[LabNodeSpec]:
    """The healthy scenario's nodes, with spec changes (extra_tools, missing_tools, sudo_refuses) applied."""
    changes = {"a": a or {}, "b": b or {}}
    return [replace(s, **changes[s.name]) for s in specs_for_scenario("healthy", workdir / "models")]


# -- connection faults on one shared healthy lab --------------------------------------------------------------


@pytest.fixture(scope="module")
def conn_lab(module_lab_factory: Callable[..., Lab]) -> Lab:
    return module_lab_factory("healthy")


@ON_CONN_LAB
def test_wrong_key(conn_lab: Lab, live: Live, tmp_path: Path) -> None:
    other = tmp_path / "not_authorized"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    nodes = {"a": {"target": "a"}, "b": {"target": "b", "identity_file": str(other)}}
    cfg = live.lab_config(conn_lab, tmp_path / "linkcheck.yaml", nodes=nodes)
    before = live.node_pids(conn_lab)
    run = live.run("check", "--config", str(cfg), "--save", str(tmp_path / "saved"), "-f", "json")
    line = _connection_fault(run, tmp_path / "saved", "authentication failed")
    assert f"root@{conn_lab.node('b').mgmt_ip}:22" in line and str(other) in line
    assert live.strays(conn_lab, before) == {}


@ON_CONN_LAB
def test_broken_playbook_stops_the_run_with_its_file_and_line(conn_lab: Lab, live: Live, tmp_path: Path) -> None:
    # The inspection starts while the playbooks load; a broken one must still stop everything at once:
    # exit 4, one line with file:line, nothing saved, no inspection left running on the nodes.
    broken = tmp_path / "mine.yaml"
    broken.write_text("rules:\n  - id: MINE\n    severity: loud\n", encoding="utf-8")
    cfg = live.lab_config(conn_lab, tmp_path / "linkcheck.yaml", nodes={"a": "a", "b": "b"})
    cfg.write_text(cfg.read_text(encoding="utf-8") + f"playbooks: [{json.dumps(str(broken))}]\n", encoding="utf-8")
    before = live.node_pids(conn_lab)
    run = live.run("check", "--config", str(cfg), "--save", str(tmp_path / "saved"), "-f", "json")
    assert run.returncode == 4, run.describe()
    assert "Traceback" not in run.stderr
    assert len(run.error_lines()) == 1 and f"{broken}:" in run.error_lines()[0], run.describe()
    assert not (tmp_path / "saved").exists()
    assert live.strays(conn_lab, before) == {}


def _fingerprint(public_key_line: str, tmp: Path) -> str:
    pub = tmp / "host.pub"
    pub.write_text(public_key_line + "\n", encoding="ascii")
    out = subprocess.run(["ssh-keygen", "-lf", str(pub)], capture_output=True, text=True, check=True).stdout
    return out.split()[1]


@ON_CONN_LAB
def test_unknown_host_key_names_the_exact_keyscan_fix(conn_lab: Lab, live: Live, tmp_path: Path) -> None:
    ip_b = conn_lab.node("b").mgmt_ip
    known = tmp_path / "known_hosts"
    known.write_text("".join(ln + "\n" for ln in conn_lab.known_hosts.read_text().splitlines()
                             if ln.split(",")[0] != ip_b), encoding="ascii")
    cfg = live.lab_config(conn_lab, tmp_path / "linkcheck.yaml", known_hosts=known)
    before = live.node_pids(conn_lab)
    run = live.run("check", "-n", "a=a", "-n", "b=b", "-c", str(cfg), "--save", str(tmp_path / "saved"), "-f", "json")
    line = _connection_fault(run, tmp_path / "saved", "unknown SSH host key")
    scan = f"ssh-keyscan -p 22 -t ed25519 {ip_b} >> {known}"
    assert scan in line
    assert _fingerprint(conn_lab.node("b").host_pub, tmp_path) in line  # the key the node really has
    assert live.strays(conn_lab, before) == {}
    # The fix, run as printed, makes the node trusted: the real OpenSSH client now connects strictly.
    subprocess.run(["sh", "-c", scan], check=True, capture_output=True, timeout=30)
    probe = subprocess.run(
        ["ssh", "-F", "/dev/null", "-i", str(conn_lab.client_key), "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
         "-o", f"UserKnownHostsFile={known}", "-o", "StrictHostKeyChecking=yes", f"root@{ip_b}", "true"],
        capture_output=True, text=True, timeout=30, check=False)
    assert probe.returncode == 0, probe.stderr


@ON_CONN_LAB
def test_unknown_host_keys_on_both_nodes(conn_lab: Lab, live: Live, tmp_path: Path) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("", encoding="ascii")
    cfg = live.lab_config(conn_lab, tmp_path / "linkcheck.yaml", known_hosts=empty)
    run = live.run("check", "-n", "a=a", "-n", "b=b", "-c", str(cfg), "--save", str(tmp_path / "saved"), "-f", "json")
    for node in ("a", "b"):
        ip = conn_lab.node(node).mgmt_ip
        assert f"ssh-keyscan -p 22 -t ed25519 {ip} >> {empty}" in _one_line(run, node, "unknown SSH host key")
    # No node answered: one line per node, exit 3 (could not measure), no report and no empty bundle folder.
    assert len(run.error_lines()) == 2, run.describe()
    assert run.returncode == 3 and run.stdout == "", run.describe()
    assert not (tmp_path / "saved").exists()
    assert empty.read_text() == ""  # nothing trusted behind the user's back


def _wait_reachable(lab: Lab, node: str, deadline_s: float = 15.0) -> None:
    end = time.monotonic() + deadline_s
    while lab.ssh(node, "true", timeout=10).returncode != 0:
        if time.monotonic() > end:
            pytest.fail(f"node {node} did not come back after set_reachable(True)")
        time.sleep(0.3)


@ON_CONN_LAB
def test_unreachable_node(conn_lab: Lab, live: Live, tmp_path: Path) -> None:
    cfg = live.lab_config(conn_lab, tmp_path / "linkcheck.yaml", connect_timeout_s=2)
    before = live.node_pids(conn_lab)
    conn_lab.set_reachable("b", False)
    try:
        run = live.run("check", "-n", "a=a", "-n", "b=b", "-c", str(cfg), "--save", str(tmp_path / "saved"),
                       "-f", "json")
    finally:
        conn_lab.set_reachable("b", True)
    line = _connection_fault(run, tmp_path / "saved", "timed out")
    assert f"{conn_lab.node('b').mgmt_ip}:22" in line
    assert live.strays(conn_lab, before) == {}
    _wait_reachable(conn_lab, "b")


def test_changed_host_key_is_refused_even_when_accepting_new_keys(
        lab_factory: Callable[..., Lab], live: Live, tmp_path: Path) -> None:
    lab = lab_factory("healthy")
    known = tmp_path / "known_hosts"
    shutil.copy(lab.known_hosts, known)
    lab.replace_host_key("b")
    cfg = live.lab_config(lab, tmp_path / "linkcheck.yaml", known_hosts=known)
    before = live.node_pids(lab)
    run = live.run("check", "-n", "a=a", "-n", "b=b", "-c", str(cfg), "--accept-new-host-keys",
                   "--save", str(tmp_path / "saved"), "-f", "json")
    line = _connection_fault(run, tmp_path / "saved", "host key .* has CHANGED")
    assert "refusing to connect" in line
    assert f"ssh-keygen -R {lab.node('b').mgmt_ip} -f {known}" in line
    assert _fingerprint(lab.node("b").host_pub, tmp_path) in line
    assert known.read_text() == lab.known_hosts.read_text()  # the changed key was not recorded
    assert live.strays(lab, before) == {}


# -- the connection drops mid-run ----------------------------------------------------------------------------------


def test_sshd_stopped_mid_run(lab_factory: Callable[..., Lab], live: Live, tmp_path: Path) -> None:
    marker = tmp_path / "rdma-started"
    # `rdma` runs mid-script (all commands start at once). It waits until every section before its own
    # is complete (the script's N.d files), gives the script a moment to send them, reports where the
    # script keeps its temp files (its stdout), then takes 3 s.
    slow_rdma = ('out=$(readlink /proc/$$/fd/1); n=${out##*/}; n=${n%.out}; i=1\n'
                 'while [ "$i" -lt "$n" ]; do if [ -e "${out%/*}/$i.d" ]; then i=$((i+1)); else sleep 0.05; fi; done\n'
                 f'sleep 0.5; echo "$out" > {marker}.part && mv {marker}.part {marker}\n'
                 "exec sleep 3\n")
    lab = lab_factory(_healthy_specs(tmp_path, b={"extra_tools": {"rdma": slow_rdma}}))
    cfg = live.lab_config(lab, tmp_path / "linkcheck.yaml")
    before = live.node_pids(lab)
    args = ("check", "-n", "a=a", "-n", "b=b", "-c", str(cfg), "--save", str(tmp_path / "saved"), "-f", "json")
    started = live.start(*args)
    end = time.monotonic() + 60
    while not marker.exists() and time.monotonic() < end and started[0].poll() is None:
        time.sleep(0.05)
    assert marker.exists(), "the inspection never reached `rdma` on node b"
    lab.stop_sshd("b")
    assert lab.kill_ssh_sessions("b"), "no SSH session of linkcheck on node b"
    run = live.wait(started, args)
    _one_line(run, "b", "connection|dropped|lost")
    _inconclusive(run)
    manifest = _manifest(run, tmp_path / "saved")
    assert list(manifest["collection_errors"]) == ["b"]
    assert _complete(manifest, "a") >= _spec_ids()
    got_b = _complete(manifest, "b")
    assert {"hostname", "ip_addr", "sysfs_net"} <= got_b and "rdma_link" not in got_b  # what came before the drop
    skipped_b = {c["spec"] for c in manifest["captures"] if c["node"] == "b" and c["skipped"]}
    assert {"ibv_devinfo", "lspci", "dmesg"} <= skipped_b  # never reached, and marked so
    # The orphaned script ends when `rdma` does (it cannot write any more); then nothing of ours is left.
    assert live.strays(lab, before, wait_s=3 + KILL_GRACE_S + 5) == {}
    script_tmp = Path(marker.read_text().strip()).parent
    assert script_tmp.name.startswith("linkcheck."), script_tmp
    left = script_tmp.exists()
    shutil.rmtree(script_tmp, ignore_errors=True)  # the node's /dev/shm is this machine's: do not litter it
    assert not left, f"the inspection script left its temp directory {script_tmp} on node b"


# -- per-command faults, two per lab run ---------------------------------------------------------------------------


@dataclass
class FaultRun:
    run: CliRun
    saved: Path
    strays: dict[str, list[str]]


def _fault_run(make_lab: Callable[..., Lab], live: Live, work: Path, specs: list[LabNodeSpec],
               **ssh: object) -> FaultRun:
    lab = make_lab(specs)
    try:
        cfg = live.lab_config(lab, work / "linkcheck.yaml", **ssh)
        before = live.node_pids(lab)
        run = live.run("check", "-n", "a=a", "-n", "b=b", "-c", str(cfg), "--save", str(work / "saved"), "-f", "json")
        strays = live.strays(lab, before)
    finally:
        lab.down()
    return FaultRun(run, work / "saved", strays)


@pytest.fixture(scope="module")
def run_missing_and_sudo(module_lab_factory: Callable[..., Lab], live: Live,
                         tmp_path_factory: pytest.TempPathFactory) -> FaultRun:
    work = tmp_path_factory.mktemp("missing-sudo")
    specs = _healthy_specs(work, a={"missing_tools": frozenset({"ethtool"})}, b={"sudo_refuses": True})
    return _fault_run(module_lab_factory, live, work, specs)


_IP_HANGS_ON_ADDR = 'case " $* " in *" addr "*) exec sleep 600 ;; esac\nexec {ip} "$@"\n'
_ETHTOOL_M_CUT = (  # the real (emulated) answer, cut inside the "Vendor PN" line: label, no value
    'if [ "$1" = -m ]; then\n  out=$({emu} ethtool "$@"); rc=$?\n'
    "  printf '%s\\n' \"$out\" | sed -n '1,/Vendor PN/p' | sed '$ s/:.*//'; exit $rc\nfi\n"
    'exec {emu} ethtool "$@"\n'
)
_ETHTOOL_M_GARBAGE = (
    'if [ "$1" = -m ]; then printf \'\\033[2J\\001\\002\\377\\376garbage\\n\\000\\003PK\\003\\004\\n\'; exit 0; fi\n'
    'exec {emu} ethtool "$@"\n'
)


@pytest.fixture(scope="module")
def run_hang_cut_garbage(module_lab_factory: Callable[..., Lab], live: Live,
                         tmp_path_factory: pytest.TempPathFactory) -> Iterator[FaultRun]:
    work = tmp_path_factory.mktemp("hang-cut-garbage")
    ip = shutil.which("ip") or "/usr/sbin/ip"
    tools_a = {"ip": _IP_HANGS_ON_ADDR.format(ip=ip), "ethtool": _ETHTOOL_M_CUT.format(emu=EMULATOR)}
    tools_b = {"ethtool": _ETHTOOL_M_GARBAGE.format(emu=EMULATOR)}
    specs = _healthy_specs(work, a={"extra_tools": tools_a}, b={"extra_tools": tools_b})
    yield _fault_run(module_lab_factory, live, work, specs, command_timeout_s=HANG_TIMEOUT_S)


@pytest.fixture(scope="module")
def healthy_findings(live: Live) -> set[tuple[str, str, str]]:
    """Every non-bench finding of the healthy scenario (all pass): what an unaffected rule must still give."""
    run = live.run("diagnose", str(REPO / "fixtures" / "healthy"), "-f", "json")
    return {f for f in run.findings(ALL_STATUSES) if f[0] not in BENCH_RULES}


def _command_fault(fault: FaultRun, healthy: set[tuple[str, str, str]], node: str, group: str,
                   broken_groups: set[str], reason: str) -> str:
    """The node's `group` facts are unavailable for `reason`, the rules needing them skip with it, every
    other rule is judged as on a healthy pair, the run is inconclusive and the rest was collected."""
    run = fault.run
    _inconclusive(run)
    unavailable = run.report["nodes"][node]["unavailable"]
    assert group in unavailable, f"node {node} facts unavailable: {unavailable}"
    assert re.search(reason, unavailable[group]), unavailable[group]
    for rule in _rules_needing({group}):
        skips = [f for f in run.report["findings"] if f["id"] == rule and f["subject"] == f"node {node}"]
        assert [f["status"] for f in skips] == ["skip"] and skips[0]["skip_reason"] == unavailable[group]
    unaffected = {f for f in healthy if f[0] not in _rules_needing(broken_groups)}
    assert unaffected <= run.findings(ALL_STATUSES), sorted(unaffected - run.findings(ALL_STATUSES))
    manifest = _manifest(run, fault.saved)
    assert manifest["collection_errors"] == {}
    assert {c["spec"] for c in manifest["captures"] if c["node"] == node} >= _spec_ids()  # a result for each
    assert fault.strays == {}, f"processes of ours left on the nodes: {fault.strays}"
    return unavailable[group]


BOTH_FAULTS = {"cable", "fec", "netplan", "nm_profiles"}


@ON_MISSING_SUDO_RUN
def test_missing_tool(run_missing_and_sudo: FaultRun, healthy_findings: set[tuple[str, str, str]]) -> None:
    # One run holds both faults: no ethtool on a (no EEPROM, no FEC), no sudo on b (no EEPROM, no netplan files,
    # no NetworkManager keyfiles).
    _command_fault(run_missing_and_sudo, healthy_findings, "a", "cable", BOTH_FAULTS, r"tool missing: ethtool")
    _one_line(run_missing_and_sudo.run, "a", r"ethtool.*(missing|not found|not installed)")


@ON_MISSING_SUDO_RUN
def test_sudo_refused(run_missing_and_sudo: FaultRun, healthy_findings: set[tuple[str, str, str]]) -> None:
    _command_fault(run_missing_and_sudo, healthy_findings, "b", "cable", BOTH_FAULTS, r"sudo refused")
    _one_line(run_missing_and_sudo.run, "b", r"sudo")
    manifest = _manifest(run_missing_and_sudo.run, run_missing_and_sudo.saved)
    refused = {c["spec"] for c in manifest["captures"] if c["node"] == "b" and "sudo" in (c["skipped"] or "")}
    assert {"lspci", "netplan_files", "ethtool_m", "nm_connections"} <= refused


@ON_HANG_RUN
def test_hanging_command_times_out_and_the_rest_is_judged(
        run_hang_cut_garbage: FaultRun, healthy_findings: set[tuple[str, str, str]]) -> None:
    fault = run_hang_cut_garbage
    _command_fault(fault, healthy_findings, "a", "addresses", {"addresses", "cable"},
                   rf"ip_addr: timed out after {HANG_TIMEOUT_S}s")
    _one_line(fault.run, "a", r"(\bip\b|ip_addr).*timed out|timed out.*(\bip\b|ip_addr)")
    # The hung command cost its own timeout, not the whole inspection's.
    assert fault.run.duration_s < 60, fault.run.describe()


@ON_HANG_RUN
def test_garbage_output(run_hang_cut_garbage: FaultRun, healthy_findings: set[tuple[str, str, str]]) -> None:
    reason = _command_fault(run_hang_cut_garbage, healthy_findings, "b", "cable", {"addresses", "cable"},
                            r"ethtool_m\[")
    assert "binary" in reason
    _one_line(run_hang_cut_garbage.run, "b", r"ethtool")


@ON_HANG_RUN
def test_truncated_output(run_hang_cut_garbage: FaultRun, healthy_findings: set[tuple[str, str, str]]) -> None:
    _command_fault(run_hang_cut_garbage, healthy_findings, "a", "cable", {"addresses", "cable"}, r"ethtool_m\[")
    _one_line(run_hang_cut_garbage.run, "a", r"ethtool")

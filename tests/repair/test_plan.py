"""The repair plan from each trap fixture: exact steps, quoted node text, never a GID pin, diffs that parse."""

from __future__ import annotations

import ipaddress
import shlex
import shutil
from pathlib import Path

import msgspec
import pytest

from linkcheck.app.offline import diagnose_bundle
from linkcheck.model import Finding, Severity, Status
from linkcheck.outcome import Outcome
from linkcheck.parsers.netplan import parse_netplan
from linkcheck.repair.edits import EditError, apply_edit, netplan_add_address, netplan_replace_address, netplan_set_mtu
from linkcheck.repair.files import NodeFiles, node_files, split_dump
from linkcheck.repair.model import RepairPlan, Step
from linkcheck.repair.plan import plan_repairs
from linkcheck.repair.saved import plan_for
from tests.adversarial.adversarial_helpers import rewrite_capture

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _plan(name: str) -> tuple[Outcome, RepairPlan]:
    return _plan_of(FIXTURES / name)


def _plan_of(bundle: Path) -> tuple[Outcome, RepairPlan]:
    outcome = diagnose_bundle(bundle)
    return outcome, plan_for(outcome)


def _after(step: Step, files: NodeFiles) -> str:
    """The file a step's persistent change leaves, made from the captured text by the step's own edit."""
    assert step.persistent is not None
    path = step.persistent.path
    before = files.netplan.get(path) or files.nccl_conf.get(path)
    return apply_edit(before, step.persistent.edit)


def test_healthy_pair_plans_nothing() -> None:
    _, plan = _plan("healthy")
    assert plan.steps == () and plan.not_planned == ()


def test_mtu_mismatch_raises_the_low_end_and_persists_it() -> None:
    outcome, plan = _plan("mtu-mismatch")
    assert [(s.node, s.finding, s.runtime) for s in plan.steps] == [
        ("b", "MTU_MISMATCH:enP2p1s0f1np1<->enP2p1s0f1np1", ("sudo ip link set dev enP2p1s0f1np1 mtu 9000",))]
    step = plan.steps[0]
    assert step.persistent is not None and step.persistent.mode == "600"
    assert "+      mtu: 9000" in step.persistent.diff
    after = parse_netplan(_after(step, node_files(outcome.bundle, "b")))
    assert {e.netdef_id: e.mtu for e in after.ethernets} == {"enp1s0f1np1": 9000, "enP2p1s0f1np1": 9000}
    assert "ping -M do -s 8972 -c 3 -W 1 -I enP2p1s0f1np1 192.168.101.10" in step.verify


@pytest.mark.parametrize("fixture", ["twins-same-subnet", "real-dec2025-same-subnet"])
def test_twins_on_one_subnet_are_readdressed_on_both_nodes(fixture: str) -> None:
    outcome, plan = _plan(fixture)
    assert [s.node for s in plan.steps] == ["a", "b"]
    subnets = set()
    for step in plan.steps:
        old, new = (shlex.split(c)[4] for c in step.runtime)
        assert step.runtime == (f"sudo ip addr del {old} dev enP2p1s0f1np1",
                                f"sudo ip addr add {new} dev enP2p1s0f1np1")
        assert old.rsplit(".", 1)[1] == new.rsplit(".", 1)[1]  # the host number stays
        after = parse_netplan(_after(step, node_files(outcome.bundle, step.node)))
        addresses = {e.netdef_id: e.addresses for e in after.ethernets}
        assert new in addresses["enP2p1s0f1np1"] and old not in addresses["enP2p1s0f1np1"]
        assert {a.rsplit(".", 1)[0] for a in addresses["enp1s0f1np1"]} != {new.rsplit(".", 1)[0]}
        subnets.add(new.rsplit(".", 1)[0])
    assert len(subnets) == 1  # both nodes' twins moved into the same new subnet: the path survives
    assert plan.steps[1].verify[-1].startswith("ping -c 3 -W 1 -I enP2p1s0f1np1 ")


def test_netplan_not_applied_persists_the_working_live_address() -> None:
    _, plan = _plan("netplan-not-applied")
    (step,) = plan.steps
    assert step.node == "b" and step.runtime == ()
    assert step.persistent is not None
    assert "-        - 192.168.102.11/24\n+        - 192.168.101.11/24" in step.persistent.diff


def test_a_twin_moved_out_of_the_shared_subnet_is_persisted_at_its_new_address(tmp_path: Path) -> None:
    """Twins in one subnet, and b's file saying yet another address of that subnet for its second twin (the files
    not applied): the plan moves the twin live and makes the file say the new address, never the old live one that
    would put the twins back in one subnet at the next boot."""
    bundle = tmp_path / "bundle"
    shutil.copytree(FIXTURES / "twins-same-subnet", bundle)
    text = (bundle / "b" / "netplan_files.stdout").read_text(encoding="utf-8")
    assert text.count("192.168.100.15/24") == 1
    rewrite_capture(bundle, "b", "netplan_files", text.replace("192.168.100.15/24", "192.168.100.25/24").encode())
    outcome, plan = _plan_of(bundle)
    firing = {f.finding_id for f in outcome.diagnosis.findings if f.status in (Status.WARN, Status.FAIL)}
    assert "NETPLAN_NOT_APPLIED:b:enP2p1s0f1np1" in firing and "TWINS_SAME_SUBNET:node b" in firing
    moved = next(s for s in plan.steps if s.node == "b" and s.runtime)
    new = shlex.split(moved.runtime[1])[4]
    assert ipaddress.ip_interface(new).network != ipaddress.ip_network("192.168.100.0/24")
    files = node_files(outcome.bundle, "b")
    text = files.netplan["/etc/netplan/40-cx7.yaml"]
    for step in (s for s in plan.steps if s.node == "b" and s.persistent is not None):
        text = apply_edit(text, step.persistent.edit)
    addresses = {e.netdef_id: e.addresses for e in parse_netplan(text).ethernets}
    assert addresses["enP2p1s0f1np1"] == (new,), text
    assert not [n for n in plan.not_planned if n.finding.endswith("node b")], plan.not_planned


def test_runtime_only_nm_profile_is_copied_to_etc() -> None:
    _, plan = _plan("nm-profile-runtime-only")
    (step,) = plan.steps
    assert step.persistent is not None
    assert step.persistent.path == "/etc/NetworkManager/system-connections/cx7-p1-2.nmconnection"
    assert (step.persistent.manager, step.persistent.mode, step.persistent.edit.kind) == ("NetworkManager", "600",
                                                                                        "copy_from")
    assert step.persistent.diff.startswith("--- /dev/null\n")


@pytest.mark.parametrize("fixture", ["gid-stale", "drift-after-reboot"])
def test_a_gid_pin_is_removed_never_moved(fixture: str) -> None:
    outcome, plan = _plan(fixture)
    assert {s.node for s in plan.steps} == {"a", "b"}
    for step in plan.steps:
        assert step.persistent is not None and step.persistent.edit.kind == "conf_drop_key"
        after = _after(step, node_files(outcome.bundle, step.node))
        assert "NCCL_IB_GID_INDEX" not in after
    text = msgspec.json.encode(plan).decode()
    assert "conf_set_key" not in text and "NCCL_IB_GID_INDEX=" not in text.replace("-NCCL_IB_GID_INDEX=3", "")


def test_an_empty_pin_is_a_note_with_nothing_to_repair() -> None:
    _, plan = _plan("gid-empty-pin")
    assert plan.steps == () and plan.not_planned == ()


def test_a_pin_in_the_users_nccl_conf_is_removed_with_the_one_it_shadows_in_etc() -> None:
    outcome = diagnose_bundle(FIXTURES / "gid-stale")
    # NCCL reads ~/.nccl.conf first: /etc/nccl.conf's pin takes effect once the user's file no longer pins.
    nodes = {n: msgspec.structs.replace(outcome.link.node(n), nccl_sources={
        **outcome.link.node(n).nccl_sources, "NCCL_IB_GID_INDEX": "~/.nccl.conf"}) for n in ("a", "b")}
    link = msgspec.structs.replace(outcome.link, a=nodes["a"], b=nodes["b"])
    both = NodeFiles(nccl_conf={"/etc/nccl.conf": "# site\nNCCL_IB_GID_INDEX=3\n",
                                "~/.nccl.conf": "NCCL_IB_GID_INDEX=3\n"})
    only_user = NodeFiles(nccl_conf={"/etc/nccl.conf": "NCCL_IB_HCA=rocep1s0f1\n",
                                     "~/.nccl.conf": "NCCL_IB_GID_INDEX=3\n"})
    plan = plan_repairs(link, outcome.diagnosis.findings, {"a": both, "b": only_user})
    paths = [(s.node, s.persistent.path) for s in plan.steps if s.persistent is not None]
    assert paths == [("a", "~/.nccl.conf"), ("a", "/etc/nccl.conf"), ("b", "~/.nccl.conf")]
    assert len(plan.steps) == 3 and plan.not_planned == ()
    etc = plan.steps[1]
    assert etc.persistent is not None and apply_edit(both.nccl_conf["/etc/nccl.conf"], etc.persistent.edit) == \
        "# site\n"
    assert etc.verify[0].startswith("! sudo grep -Eq ") and etc.verify[0].endswith(" /etc/nccl.conf")

def test_fec_is_set_to_rs_where_it_is_not() -> None:
    _, plan = _plan("fec-off")
    assert sorted(s.runtime for s in plan.steps) == [("sudo ethtool --set-fec enP2p1s0f1np1 encoding rs",),
                                                     ("sudo ethtool --set-fec enp1s0f1np1 encoding rs",)]
    assert {s.node for s in plan.steps} == {"b"} and all(s.persistent is None for s in plan.steps)


def test_a_wrong_neighbour_entry_is_deleted() -> None:
    _, plan = _plan("single-pcie-path")
    (step,) = plan.steps
    assert (step.node, step.runtime) == ("b", ("sudo ip neigh del 192.168.101.10 dev enP2p1s0f1np1",))
    assert {n.finding for n in plan.not_planned} == {"SINGLE_PCIE_PATH:rdma a->b concurrent",
                                                      "SINGLE_PCIE_PATH:rdma b->a concurrent"}


def test_the_hotplug_state_plans_a_reboot_of_both_nodes() -> None:
    _, plan = _plan("hotplug-degraded")
    assert [(s.node, s.runtime, s.reboot) for s in plan.steps] == [
        ("a", ("sudo systemctl reboot --no-block",), True), ("b", ("sudo systemctl reboot --no-block",), True)]


def test_nccl_ib_hca_in_a_file_is_set_to_the_cabled_twins(tmp_path: Path) -> None:
    bundle = tmp_path / "b"
    shutil.copytree(FIXTURES / "nccl-hca-uncabled", bundle)
    outcome = diagnose_bundle(bundle)
    # The fixture sets it in the environment; the same value from /etc/nccl.conf is what a file repair edits.
    link = msgspec.structs.replace(outcome.link, a=msgspec.structs.replace(
        outcome.link.a, nccl_sources={**outcome.link.a.nccl_sources, "NCCL_IB_HCA": "/etc/nccl.conf"}))
    value = outcome.link.a.nccl["NCCL_IB_HCA"]
    files = {"a": NodeFiles(nccl_conf={"/etc/nccl.conf": f"# site\nNCCL_IB_HCA={value}\n"}), "b": NodeFiles()}
    plan = plan_repairs(link, outcome.diagnosis.findings, files)
    (step,) = plan.steps
    assert step.persistent is not None
    after = apply_edit(files["a"].nccl_conf["/etc/nccl.conf"], step.persistent.edit)
    assert after == "# site\nNCCL_IB_HCA==rocep1s0f1,roceP2p1s0f1\n"
    assert step.verify == ("sudo grep -qx NCCL_IB_HCA==rocep1s0f1,roceP2p1s0f1 /etc/nccl.conf",)
    assert [n.finding for n in plan.not_planned] == ["NCCL_HCA_UNCABLED:b:rocep1s0f0"]


HOSTILE = "en$(reboot);x"


def test_node_text_is_quoted_in_every_command() -> None:
    outcome, _ = _plan("mtu-mismatch")
    path = next(p for p in outcome.link.paths if p.a.mtu != p.b.mtu)
    bad = msgspec.structs.replace(path, b=msgspec.structs.replace(path.b, netdev=HOSTILE))
    link = msgspec.structs.replace(outcome.link, paths=tuple(bad if p is path else p for p in outcome.link.paths))
    finding = Finding("MTU_MISMATCH", Status.FAIL, Severity.ERROR, bad.key, "t", "m")
    plan = plan_repairs(link, [finding], {"a": NodeFiles(), "b": NodeFiles()})
    (step,) = plan.steps
    for command in (*step.runtime, *step.verify):
        assert HOSTILE in shlex.split(command), command  # one word, never shell syntax
    assert f"interface:{HOSTILE}" in step.touches


def test_a_redacted_netplan_file_is_not_rewritten() -> None:
    outcome, _ = _plan("mtu-mismatch")
    files = node_files(outcome.bundle, "b")
    (path,) = files.netplan
    redacted = files.netplan[path] + '  wifis: {w: {password: "(not collected)"}}\n'
    secret = msgspec.structs.replace(files, netplan={path: redacted})
    plan = plan_repairs(outcome.link, outcome.diagnosis.findings, {"a": node_files(outcome.bundle, "a"), "b": secret})
    (step,) = plan.steps
    assert step.persistent is None and step.runtime == ("sudo ip link set dev enP2p1s0f1np1 mtu 9000",)
    assert any("secret values" in n.reason for n in plan.not_planned)


def test_the_plan_digest_follows_the_state() -> None:
    outcome, plan = _plan("mtu-mismatch")
    again = plan_for(outcome)
    assert again.state_sha256 == plan.state_sha256
    fn = outcome.link.b.functions[0]
    changed = msgspec.structs.replace(outcome.link, b=msgspec.structs.replace(
        outcome.link.b, functions=(msgspec.structs.replace(fn, mtu=(fn.mtu or 0) + 1), *outcome.link.b.functions[1:])))
    assert plan_repairs(changed, outcome.diagnosis.findings, {n: node_files(outcome.bundle, n) for n in "ab"}
                        ).state_sha256 != plan.state_sha256


def test_split_dump_names_files_and_the_only_file() -> None:
    assert split_dump("==> /etc/netplan/a.yaml <==\nx: 1\n\n==> /etc/netplan/b.yaml <==\ny: 2\n") == {
        "/etc/netplan/a.yaml": "x: 1\n", "/etc/netplan/b.yaml": "y: 2\n"}
    assert split_dump("network: {}\n") == {"/etc/netplan/*.yaml": "network: {}\n"}
    assert split_dump("") == {}


def test_unsafe_edits_are_refused() -> None:
    text = "network:\n  ethernets:\n    e0:\n      addresses: [10.0.0.1/24, 10.0.0.1/24]\n"

    with pytest.raises(EditError, match="2 times"):
        netplan_replace_address(text, "10.0.0.1/24", "10.0.1.1/24")
    with pytest.raises(EditError, match="no block-style"):
        netplan_set_mtu("network: {ethernets: {e0: {mtu: 1500}}}\n", "e0", 9000)
    assert netplan_add_address(text.replace(", 10.0.0.1/24", ""), "e0", "10.0.9.1/24").endswith(
        "addresses: [10.0.0.1/24, 10.0.9.1/24]\n")
    assert netplan_set_mtu(text, "e0", 9000).split("\n")[3] == "      mtu: 9000"

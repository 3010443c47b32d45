"""The node's netplan and renderers as a repair judges them: netplan's version from its package, the renderer of
each netplan-defined interface (the NetworkManager 90-NM form included), and the combinations the plan notes or
refuses (linkcheck.repair.renderer), with the preflight's refusal for a management interface that `netplan try`
would disconnect."""

from __future__ import annotations

import msgspec
import pytest

from linkcheck.app.offline import diagnose_bundle
from linkcheck.repair.apply import ApplyOptions, ApplyRefused, preflight
from linkcheck.repair.edits import apply_edit
from linkcheck.repair.files import NodeFiles, node_files
from linkcheck.repair.model import FileChange, FileEdit, RepairPlan, Step
from linkcheck.repair.plan import plan_repairs, renderer_rules
from linkcheck.repair.renderer import (
    interface_renderers,
    mgmt_disconnect_refusal,
    nm_mtu_interfaces,
    parse_is_enabled,
    parse_netplan_version,
    try_revert_note,
)
from linkcheck.transport.base import RemoteResult
from tests.repair.test_plan import FIXTURES

# The form NetworkManager writes on Ubuntu >= 23.10 (`/etc/netplan/90-NM-<UUID>.yaml`), as canonical/netplan's
# doc/netplan-everywhere.md shows it ("Limitation" example), with the interface name of a Spark's management port.
NM_90 = """network:
  version: 2
  ethernets:
    NM-0f7a33ac-512e-4c03-b088-4db00fe3292e:
      renderer: NetworkManager
      match:
        name: "enP7s7"
      dhcp4: true
      networkmanager:
        uuid: "0f7a33ac-512e-4c03-b088-4db00fe3292e"
        name: "Ethernet connection 1"
        passthrough:
          ethernet._: ""
          ipv6.method: "disabled"
"""
CX7 = """network:
  version: 2
  renderer: networkd
  ethernets:
    enp1s0f1np1:
      addresses: [192.168.100.10/24]
    enP2p1s0f1np1:
      addresses: [192.168.101.10/24]
      mtu: 9000
"""
DUMP = f"==> /etc/netplan/40-cx7.yaml <==\n{CX7}\n==> /etc/netplan/90-NM-0f7a33ac.yaml <==\n{NM_90}"


@pytest.mark.parametrize(("text", "version"), [
    ("0.106-2+deb12u1\n", (0, 106)),  # Debian 12 (this machine's dpkg-query)
    ("1.1.2-2~ubuntu24.04.1\n", (1, 1, 2)),
    ("1:2.0-1\n", (2, 0)),
    ("", None), ("dpkg-query: no packages found matching netplan.io\n", None),
])
def test_netplans_version_is_read_from_its_package(text: str, version: tuple[int, ...] | None) -> None:
    assert parse_netplan_version(text) == version


def test_the_masked_networkd_capture_is_one_word() -> None:
    assert parse_is_enabled("masked\n") == "masked" and parse_is_enabled("not-masked\n") == "not-masked"
    assert parse_is_enabled("") is None and parse_is_enabled("\x1b[31m\n") is None


def test_each_interface_gets_its_definitions_renderer_else_the_global_one() -> None:
    assert interface_renderers(DUMP) == {"enp1s0f1np1": "networkd", "enP2p1s0f1np1": "networkd",
                                         "enP7s7": "NetworkManager"}
    # no global renderer: networkd, netplan's default
    assert interface_renderers("network:\n  version: 2\n  ethernets:\n    eth0: {}\n") == {"eth0": "networkd"}
    assert interface_renderers("not: [yaml") == {}
    nm_global = CX7.replace("renderer: networkd", "renderer: NetworkManager")
    assert nm_mtu_interfaces(nm_global) == ["enP2p1s0f1np1"] and nm_mtu_interfaces(CX7) == []


def test_an_mtu_edit_of_a_90_nm_file_keeps_its_networkmanager_keys() -> None:
    netdef = "NM-0f7a33ac-512e-4c03-b088-4db00fe3292e"
    after = apply_edit(NM_90, FileEdit("netplan_set_mtu", netdef=netdef, value=9000))
    assert "      mtu: 9000\n" in after and 'uuid: "0f7a33ac-512e-4c03-b088-4db00fe3292e"' in after
    assert 'ipv6.method: "disabled"' in after


def test_a_netplan_before_1_2_is_noted_never_relied_upon() -> None:
    assert "canonical/netplan#548, LP #2083029" in (try_revert_note("b", (0, 106)) or "")
    assert "netplan unknown" in (try_revert_note("b", None) or "")
    assert try_revert_note("b", (1, 2)) is None


def _mtu_step(node: str, netdef: str) -> Step:
    change = FileChange("/etc/netplan/40-cx7.yaml", "netplan", "", "600", FileEdit("netplan_set_mtu", netdef=netdef,
                                                                                      value=9000), "x" * 64)
    return Step(node, f"MTU_MISMATCH:{node}", (f"sudo ip link set dev {netdef} mtu 9000",), change, (),
                (f"interface:{netdef}",))


def test_a_masked_networkd_with_an_mtu_rendered_for_networkmanager_refuses_the_netplan_step() -> None:
    nm_cx7 = CX7.replace("renderer: networkd", "renderer: NetworkManager").replace("      mtu: 9000\n", "")
    files = {"b": NodeFiles(netplan={"/etc/netplan/40-cx7.yaml": nm_cx7}, netplan_version=(0, 106),
                            networkd="masked")}
    steps, refused, notes = renderer_rules([_mtu_step("b", "enP2p1s0f1np1")], files)
    assert steps == [] and notes == []
    assert [r.finding for r in refused] == ["MTU_MISMATCH:b"]
    assert "systemd-networkd is masked" in refused[0].reason and "nmcli connection modify" in refused[0].reason
    # networkd not masked: planned, with the notes
    files = {"b": NodeFiles(netplan={"/etc/netplan/40-cx7.yaml": nm_cx7}, netplan_version=(0, 106),
                            networkd="not-masked")}
    steps, refused, notes = renderer_rules([_mtu_step("b", "enP2p1s0f1np1")], files)
    assert len(steps) == 1 and refused == []
    assert any("LP #2083029" in n for n in notes) and any("disconnects each of them" in n for n in notes)


class _Node:
    local = False

    def __init__(self, dump: str) -> None:
        self.name = "a"
        self.dump = dump
        self.commands: list[str] = []

    def sh(self, command: str, *, timeout_s: float = 30, stdin: str | None = None) -> RemoteResult:
        self.commands.append(command)
        answers = {'printf "%s\\n" "${SSH_CONNECTION:-}"': "198.18.0.0 50000 198.18.0.1 22\n",
                   "ip -j route get": '[{"dst":"198.18.0.0","dev":"enP7s7","prefsrc":"198.18.0.1"}]',
                   "ip -j route show default": "[]"}
        if "tail -n +1 /etc/netplan" in command:
            return RemoteResult(self.dump, "", 0, 0)
        if "mktemp -d" in command:
            return RemoteResult("/tmp/x\n", "", 0, 0)
        return RemoteResult(next((v for k, v in answers.items() if command.startswith(k)), ""), "", 0, 0)

    def change(self, op: object) -> None:
        raise AssertionError("the preflight changed something")


def test_a_netplan_change_that_would_disconnect_the_management_interface_is_refused_unless_allowed() -> None:
    assert mgmt_disconnect_refusal("a", "enp1s0f1np1", interface_renderers(DUMP)) is None
    plan = RepairPlan(steps=(_mtu_step("a", "enP2p1s0f1np1"),))
    node = _Node(DUMP)
    with pytest.raises(ApplyRefused, match="the management interface enP7s7 is defined in netplan for "
                                           "NetworkManager"):
        preflight(plan, {"a": node, "b": _Node("")}, ApplyOptions(), lambda _: None)
    assert not any("ip link set" in c for c in node.commands)
    preps = preflight(plan, {"a": _Node(DUMP), "b": _Node("")}, ApplyOptions(allow_nm_disconnect=True),
                      lambda _: None)
    assert [p.node for p in preps] == ["a"]


def test_an_mtu_repair_of_a_port_networkmanager_keeps_in_a_90_nm_file_edits_that_file() -> None:
    outcome = diagnose_bundle(FIXTURES / "mtu-mismatch")
    uuid = "0f7a33ac-512e-4c03-b088-4db00fe3292e"
    path, netdef = f"/etc/netplan/90-NM-{uuid}.yaml", f"NM-{uuid}"
    profile = NM_90.replace("enP7s7", "enP2p1s0f1np1").replace("      dhcp4: true\n",
                                                                 "      addresses:\n      - 192.168.101.11/24\n")
    b = outcome.link.b
    intents = tuple(msgspec.structs.replace(i, netdef_id=netdef, source=path, renderer="NetworkManager")
                    if i.netdev == "enP2p1s0f1np1" else i for i in b.netplan)
    link = msgspec.structs.replace(outcome.link, b=msgspec.structs.replace(b, netplan=intents))
    files = {"a": node_files(outcome.bundle, "a"),
             "b": NodeFiles(netplan={path: profile}, netplan_read=True, netplan_version=(1, 1, 2),
                            networkd="not-masked")}
    plan = plan_repairs(link, outcome.diagnosis.findings, files)
    [step] = [s for s in plan.steps if s.node == "b"]
    assert step.persistent is not None and step.persistent.path == path
    assert step.persistent.edit == FileEdit("netplan_set_mtu", netdef=netdef, value=9000)
    after = apply_edit(profile, step.persistent.edit)
    assert "      mtu: 9000\n" in after and f'uuid: "{uuid}"' in after and 'ipv6.method: "disabled"' in after
    # netplan 1.1 still has the try revert bug; the port is rendered by NetworkManager: both said in the plan
    assert any("netplan 1.1.2" in n for n in plan.notes)
    assert any("netplan renders enP2p1s0f1np1 with NetworkManager" in n for n in plan.notes)

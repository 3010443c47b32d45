"""NCCL_HCA_PAIRING: NCCL_IB_HCA is a filter, not an order; device i of one node must face device i of the other.

NCCL's ncclIbInit takes the devices in ibv_get_device_list() order, keeps the ACTIVE ports and drops those the
variable does not match (spark-link s.9). The NCCL log, when the bundle has it, names each rank's devices.
"""

from __future__ import annotations

from pathlib import Path

from msgspec.structs import replace

from linkcheck.bundle.format import load_bundle
from linkcheck.diagnose.checks.nccl_hca import enumeration_order, nccl_devices
from linkcheck.diagnose.engine import diagnose
from linkcheck.diagnose.playbook import load_playbooks
from linkcheck.facts.pair import build_link_facts
from linkcheck.model import Capture, Finding, Status

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
REVERSED_B = "NCCL_IB_HCA=roceP2p1s0f1,rocep1s0f1\nNCCL_SOCKET_IFNAME=enP7s7\n"


def _captures(fixture: str, *, env_b: str | None = None, log_edit: tuple[str, str] | None = None,
              bench: bool = True) -> list[Capture]:
    out = []
    for cap in load_bundle(FIXTURES / fixture).captures:
        if cap.meta and not bench:
            continue
        if cap.spec == "nccl_env" and cap.node == "b" and env_b is not None:
            cap = replace(cap, stdout=env_b)
        if cap.spec == "nccl_log" and log_edit is not None:
            old, new = log_edit
            assert old in cap.stdout, "the test's edit did not apply"
            cap = replace(cap, stdout=cap.stdout.replace(old, new))
        out.append(cap)
    return out


def _findings(captures: list[Capture], rule_id: str) -> list[Finding]:
    rules = [r for r in load_playbooks() if r.id == rule_id]
    return list(diagnose(build_link_facts(captures), rules).findings)


def _pairing(captures: list[Capture]) -> Finding:
    (finding,) = _findings(captures, "NCCL_HCA_PAIRING")
    return finding


def test_enumeration_order_is_pci_order_whatever_the_names() -> None:
    link = build_link_facts(_captures("healthy", bench=False))
    assert [f.rdma_dev for f in enumeration_order(link.a)] == [
        "rocep1s0f0", "rocep1s0f1", "roceP2p1s0f0", "roceP2p1s0f1"]  # mlx5_0..3: 0000:01:00.0, .1, 0002:01:00.0, .1
    # the variable filters: the empty cage's twins are not ACTIVE, and the names' order changes nothing
    assert nccl_devices(link.a) == ["rocep1s0f1", "roceP2p1s0f1"]


def test_opposite_order_in_nccl_ib_hca_with_correct_facing_passes() -> None:
    finding = _pairing(_captures("healthy", env_b=REVERSED_B, bench=False))
    assert finding.status is Status.PASS
    assert ("devices NCCL uses on b, in order", ["rocep1s0f1", "roceP2p1s0f1"]) in [
        (e.fact, e.value) for e in finding.evidence]


def test_opposite_order_passes_with_the_nccl_log_too() -> None:
    finding = _pairing(_captures("healthy", env_b=REVERSED_B))
    assert finding.status is Status.PASS
    assert any(e.source.startswith("NCCL log") for e in finding.evidence)


def test_the_reversed_fixture_is_a_healthy_pair() -> None:
    finding = _pairing(_captures("nccl-hca-reversed"))
    assert finding.status is Status.PASS


def test_device_i_on_another_subnet_than_the_peers_device_i_fails() -> None:
    finding = _pairing(_captures("nccl-hca-pairing"))
    assert finding.status is Status.FAIL
    assert "device 0: a:rocep1s0f1 (192.168.100.0/24) faces b:rocep1s0f1 (192.168.101.0/24)" in finding.message
    assert "device 1: a:roceP2p1s0f1 (192.168.101.0/24)" in finding.message
    assert any("b:rocep1s0f1 into 192.168.100.0/24" in f for f in finding.fix)


def test_the_nccl_log_is_preferred_over_the_settings() -> None:
    # The inspected settings are healthy, but rank b's own NET/IB line shows it used the twins the other way
    # round (a job started with another environment): the log is the evidence of what NCCL did.
    line_b = "dgx-spark-2:398211:398248 [0] NCCL INFO NET/IB : Using [0]rocep1s0f1:1/RoCE [1]roceP2p1s0f1:1/RoCE"
    swapped = line_b.replace("[0]rocep1s0f1:1/RoCE [1]roceP2p1s0f1", "[0]roceP2p1s0f1:1/RoCE [1]rocep1s0f1")
    finding = _pairing(_captures("healthy", log_edit=(line_b, swapped)))
    assert finding.status is Status.FAIL
    assert "device 0: a:rocep1s0f1 (192.168.100.0/24) faces b:roceP2p1s0f1 (192.168.101.0/24)" in finding.message
    assert "from NCCL log" in finding.message


def test_the_log_overrules_settings_that_look_crossed() -> None:
    # Inspection alone judges the crossed addressing a failure; a log whose ranks used devices that face each
    # other (b's line naming roceP2p1s0f1 first) says what NCCL really paired.
    caps = _captures("nccl-hca-pairing")
    assert _pairing(caps).status is Status.FAIL
    log = next(c for c in load_bundle(FIXTURES / "healthy").captures if c.spec == "nccl_log")
    line_b = "dgx-spark-2:398211:398248 [0] NCCL INFO NET/IB : Using [0]rocep1s0f1:1/RoCE [1]roceP2p1s0f1:1/RoCE"
    text = log.stdout.replace(line_b, line_b.replace("[0]rocep1s0f1:1/RoCE [1]roceP2p1s0f1",
                                                     "[0]roceP2p1s0f1:1/RoCE [1]rocep1s0f1"))
    finding = _pairing([*caps, replace(log, stdout=text)])
    assert finding.status is Status.PASS


def test_a_filter_that_excludes_one_twin_still_fires_the_both_twins_rule() -> None:
    caps = _captures("healthy", env_b="NCCL_IB_HCA==rocep1s0f1\nNCCL_SOCKET_IFNAME=enP7s7\n", bench=False)
    findings = _findings(caps, "SINGLE_PCIE_PATH")
    assert any(f.status is Status.FAIL and "selects rocep1s0f1 only" in f.message for f in findings), findings
    # device 0 faces device 0 (rocep1s0f1 on both); position 1 exists on a only, which is SINGLE_PCIE_PATH's
    assert _pairing(caps).status is Status.PASS

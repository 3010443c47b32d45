"""Partial collections must never turn into findings: missing data skips rules, it does not fail them."""

from __future__ import annotations

from pathlib import Path

from linkcheck.bundle.format import load_bundle
from linkcheck.diagnose.engine import diagnose
from linkcheck.diagnose.playbook import load_playbooks
from linkcheck.facts.pair import build_link_facts
from linkcheck.model import Status, Verdict

HEALTHY = Path(__file__).resolve().parents[2] / "fixtures" / "healthy"


def _diagnose_without(drop: set[str], node: str = "b") -> tuple[Verdict, set[str], dict[str, str]]:
    caps = [c for c in load_bundle(HEALTHY).captures if c.meta or c.node != node or c.spec not in drop]
    link = build_link_facts(caps)
    result = diagnose(link, load_playbooks())
    fired = {f.rule_id for f in result.findings if f.status in (Status.WARN, Status.FAIL)}
    return result.verdict, fired, link.node(node).unavailable


def test_answer_cut_after_sysfs_net_is_inconclusive_not_link_down() -> None:
    per_netdev = {"ethtool", "ethtool_i", "ethtool_s", "ethtool_m"}
    verdict, fired, unavailable = _diagnose_without({"sysfs_pci", "lspci", "rdma_link", "dmesg"} | per_netdev)
    assert fired == set()
    assert verdict is Verdict.INCONCLUSIVE and "cable" in unavailable and "pcie" in unavailable


def test_no_way_to_tell_cx7_functions_is_unknown_not_absent() -> None:
    verdict, fired, unavailable = _diagnose_without(
        {"sysfs_pci", "sysfs_infiniband", "ethtool", "ethtool_i", "ethtool_s", "ethtool_m"})
    assert "LINK_DOWN" not in fired and "netdevs" in unavailable
    assert verdict is Verdict.INCONCLUSIVE


def test_ip_addr_missing_skips_address_rules() -> None:
    verdict, fired, unavailable = _diagnose_without({"ip_addr"})
    assert "addresses" in unavailable and verdict is Verdict.INCONCLUSIVE
    assert not fired & {"MTU_MISMATCH", "TWINS_SAME_SUBNET", "SINGLE_PCIE_PATH"}

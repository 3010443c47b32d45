"""From inspection alone: an unaddressed twin of the cabled cage, or an NCCL_IB_HCA entry without a RoCE v2 GID."""

from __future__ import annotations

import json
from pathlib import Path

from msgspec.structs import replace

from linkcheck.bundle.format import load_bundle
from linkcheck.diagnose.engine import diagnose
from linkcheck.diagnose.playbook import load_playbooks
from linkcheck.facts.pair import build_link_facts
from linkcheck.model import Capture, Finding, Status

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _readdress(cap: Capture, netdev: str, new: list[dict[str, object]]) -> Capture:
    """The node's `ip -j addr` with the IPv4 entries of one netdev replaced."""
    links = json.loads(cap.stdout)
    for link in links:
        if link["ifname"] == netdev:
            link["addr_info"] = [a for a in link["addr_info"] if a["family"] != "inet"] + new
    return replace(cap, stdout=json.dumps(links))


def _inspection(edits: dict[str, list[dict[str, object]]], nccl_env: str | None = None) -> list[Finding]:
    captures = []
    for cap in load_bundle(FIXTURES / "healthy").captures:
        if cap.meta:
            continue  # inspection alone: no traffic test
        if cap.spec == "ip_addr":
            for netdev, new in edits.items():
                cap = _readdress(cap, netdev, new)
        if cap.spec == "nccl_env" and nccl_env is not None:
            cap = replace(cap, stdout=nccl_env)
        captures.append(cap)
    return list(diagnose(build_link_facts(captures), load_playbooks()).findings)


def _fired(findings: list[Finding], rule: str) -> set[str]:
    return {f.subject for f in findings if f.rule_id == rule and f.status in (Status.WARN, Status.FAIL)}


def test_the_healthy_inspection_names_nothing() -> None:
    findings = _inspection({})
    assert not _fired(findings, "SINGLE_PCIE_PATH")
    assert all(f.status in (Status.PASS, Status.SKIP) for f in findings)


def test_a_removed_twin_address_with_its_hca_still_in_nccl_ib_hca_fails() -> None:
    findings = _inspection({"enP2p1s0f1np1": []})
    assert _fired(findings, "SINGLE_PCIE_PATH") == {"a:enP2p1s0f1np1", "b:enP2p1s0f1np1",
                                                    "a:roceP2p1s0f1", "b:roceP2p1s0f1"}
    text = " ".join(f.message + " ".join(f.fix) for f in findings if f.rule_id == "SINGLE_PCIE_PATH")
    assert "netplan" in text and "NCCL_IB_HCA=rocep1s0f1,roceP2p1s0f1 names roceP2p1s0f1" in text
    # The suggested address keeps the host part in the next /24, as NVIDIA's current layout does.
    assert "enP2p1s0f1np1: {addresses: [192.168.101.10/24], dhcp4: false}" in text


def test_nvidia_october_2025_layout_one_link_local_twin_fails() -> None:
    # The Oct-2025 playbook: link-local IPv4 on enp1s0f0np0 and enp1s0f1np1 only (two different cages), the
    # domain-0002 twins left alone; with one cable in p1 only enp1s0f1np1 is addressed. NCCL_IB_HCA unset.
    link_local = {"enp1s0f1np1": [{"family": "inet", "local": "169.254.35.62", "prefixlen": 16, "scope": "link",
                                   "label": "enp1s0f1np1"}],
                  "enP2p1s0f1np1": []}
    findings = _inspection(link_local, nccl_env="")
    assert _fired(findings, "SINGLE_PCIE_PATH") == {"a:enP2p1s0f1np1", "b:enP2p1s0f1np1"}
    assert not _fired(findings, "TWINS_SAME_SUBNET")

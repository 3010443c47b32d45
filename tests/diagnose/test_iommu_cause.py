"""A second cause of ~13 Gb/s per path: with no late cable plug-in in either kernel log and the CX-7's DMA translated
by the IOMMU (group type DMA or DMA-FQ), the finding names the IOMMU mode and passthrough, not another reboot. The
inspection reads each CX-7 function's IOMMU group type and the IOMMU words of /proc/cmdline in its one round trip."""

from __future__ import annotations

from dataclasses import replace

import pytest

from linkcheck.diagnose.engine import diagnose
from linkcheck.diagnose.playbook import load_playbooks
from linkcheck.facts.model import LinkFacts
from linkcheck.facts.pair import build_link_facts
from linkcheck.model import Finding, Status
from tests.emulators.build import boot_dmesg
from tests.emulators.captures import scenario_bench_captures, scenario_captures
from tests.emulators.node import Node
from tests.emulators.scenarios import SCENARIOS


def _node(node: Node, iommu: str, late_plug: bool) -> Node:
    fns = tuple(replace(f, iommu_type=iommu) for f in node.functions)
    out = replace(node, functions=fns, cmdline_iommu=("iommu.passthrough=0",) if iommu != "identity" else ())
    return out if late_plug else replace(out, dmesg=tuple(boot_dmesg(node.functions, None)))


def _link(iommu: str, late_plug: bool) -> LinkFacts:
    base = SCENARIOS["hotplug-degraded"]
    scenario = replace(base, node_a=_node(base.node_a, iommu, late_plug), node_b=_node(base.node_b, iommu, late_plug))
    return build_link_facts(scenario_captures(scenario) + scenario_bench_captures(scenario))


def _slow(link: LinkFacts) -> list[Finding]:
    found = [f for f in diagnose(link, load_playbooks()).findings if f.rule_id == "LINK_HOTPLUG_DEGRADED"]
    return [f for f in found if f.status is Status.FAIL]


def test_the_inspection_reads_the_iommu_group_type_and_the_cmdline_words() -> None:
    link = _link("DMA-FQ", late_plug=False)
    assert {f.iommu_type for f in link.a.functions} == {"DMA-FQ"}
    assert link.a.iommu_cmdline == ("iommu.passthrough=0",)


def test_no_late_plug_in_and_translated_dma_names_the_iommu_mode_not_a_reboot() -> None:
    slow = _slow(_link("DMA-FQ", late_plug=False))
    assert len(slow) == 2
    for finding in slow:
        assert "the kernel log shows no late cable plug-in, and the IOMMU translates the CX-7's DMA" in finding.message
        assert "ServeTheHome reports a ~12.7 Gb/s per-port cap" in finding.message and "assumed" in finding.message
        assert finding.fix[0].startswith("on both nodes: put the IOMMU in passthrough for DMA: add iommu.passthrough=1")
        assert "reboot both nodes" not in finding.fix[0]
        assert any(e.fact.startswith("IOMMU group type of a:") and e.value == "DMA-FQ" for e in finding.evidence)


@pytest.mark.parametrize(("iommu", "late_plug"), [("DMA-FQ", True), ("identity", False), ("identity", True)])
def test_a_late_plug_in_or_passthrough_keeps_the_hot_plug_cause(iommu: str, late_plug: bool) -> None:
    slow = _slow(_link(iommu, late_plug))
    assert len(slow) == 2
    for finding in slow:
        assert "came up through the hot-plug path" in finding.message and "IOMMU" not in finding.message
        assert finding.fix[0].startswith("with the cable attached, reboot both nodes")


def test_a_healthy_pair_in_translated_mode_raises_nothing() -> None:
    base = SCENARIOS["healthy"]
    scenario = replace(base, node_a=_node(base.node_a, "DMA", False), node_b=_node(base.node_b, "DMA", False))
    link = build_link_facts(scenario_captures(scenario) + scenario_bench_captures(scenario))
    assert diagnose(link, load_playbooks()).verdict.value == "pass"

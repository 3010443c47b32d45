"""The GID index NCCL uses, read as NCCL reads it: an empty NCCL_IB_GID_INDEX is unset (a note), a negative one asks
for auto-selection, a pin is parsed by strtoll base 0, and before NCCL 2.21 unset means index 0."""

from __future__ import annotations

from pathlib import Path

import pytest
from msgspec.structs import replace

from linkcheck.app.offline import diagnose_bundle
from linkcheck.baseline.store import read_baseline
from linkcheck.bundle.format import load_bundle
from linkcheck.diagnose.engine import diagnose
from linkcheck.diagnose.playbook import load_playbooks
from linkcheck.facts.model import LinkFacts
from linkcheck.facts.nccl_hca import gid_index_in_effect, nccl_int
from linkcheck.facts.pair import build_link_facts
from linkcheck.model import Finding, Severity, Status, Verdict
from linkcheck.repair.files import node_files
from linkcheck.repair.plan import plan_repairs

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _link(pin: str | None, version: str | None = "2.28.9", source: str = "environment") -> LinkFacts:
    link = build_link_facts(load_bundle(FIXTURES / "healthy").captures)
    nodes = []
    for node in (link.a, link.b):
        nccl = {k: v for k, v in node.nccl.items() if k != "NCCL_IB_GID_INDEX"}
        sources = {k: v for k, v in node.nccl_sources.items() if k != "NCCL_IB_GID_INDEX"}
        if pin is not None:
            nccl["NCCL_IB_GID_INDEX"], sources["NCCL_IB_GID_INDEX"] = pin, source
        nodes.append(replace(node, nccl=nccl, nccl_sources=sources,
                             identity=replace(node.identity, nccl_version=version)))
    return replace(link, a=nodes[0], b=nodes[1])


def _judged(link: LinkFacts, rule: str) -> list[Finding]:
    return [f for f in diagnose(link, load_playbooks()).findings if f.rule_id == rule]


@pytest.mark.parametrize(("text", "value"), [(None, None), ("", None), ("3", 3), ("0x3", 3), ("010", 8),
                                             (" 4", 4), ("3abc", 3), ("abc", 0), ("-1", -1), ("9" * 20, None)])
def test_a_parameter_is_read_as_ncclloadparam_reads_it(text: str | None, value: int | None) -> None:
    assert nccl_int(text) == value


def test_an_empty_pin_on_nccl_2_21_or_later_is_a_note_not_a_trap() -> None:
    link = _link("")
    result = diagnose(link, load_playbooks())
    assert result.verdict is Verdict.PASS
    empty = [f for f in result.findings if f.rule_id == "GID_INDEX_EMPTY_PIN"]
    assert [(f.status, f.severity) for f in empty] == [(Status.PASS, Severity.INFO)] * 2
    assert "reads an empty value exactly as an unset one: NCCL 2.28.9 (2.21 or later)" in empty[0].message
    assert all(f.status is Status.PASS for f in _judged(link, "GID_INDEX_STALE"))
    assert gid_index_in_effect(link.a).index is None


def test_an_unknown_nccl_version_is_assumed_2_21_or_later_and_says_so() -> None:
    [note, _] = _judged(_link("", version=None), "GID_INDEX_EMPTY_PIN")
    assert note.status is Status.PASS and "assumed 2.21 or later" in note.message


@pytest.mark.parametrize("pin", ["-1", "0x3", "3"])
def test_a_negative_pin_asks_for_auto_selection_and_a_hex_pin_is_its_number(pin: str) -> None:
    # the healthy fixture's RoCE v2 IPv4 entries are all at index 3
    assert all(f.status is Status.PASS for f in _judged(_link(pin), "GID_INDEX_STALE"))


def test_a_pin_of_zero_is_the_trap() -> None:
    stale = [f for f in _judged(_link("0"), "GID_INDEX_STALE") if f.status is not Status.PASS]
    assert {f.status for f in stale} == {Status.FAIL} and len(stale) == 4
    assert stale[0].fix[0].startswith("on node a: unset NCCL_IB_GID_INDEX")


@pytest.mark.parametrize("pin", [None, ""])
def test_before_nccl_2_21_unset_or_empty_means_index_0_a_warning(pin: str | None) -> None:
    stale = [f for f in _judged(_link(pin, version="2.20.5"), "GID_INDEX_STALE") if f.status is not Status.PASS]
    assert {(f.status, f.severity) for f in stale} == {(Status.WARN, Severity.WARNING)} and len(stale) == 4
    assert "NCCL_IB_GID_INDEX=0 (from NCCL 2.20.5's default" in stale[0].message
    assert "use NCCL 2.21 or later, or set NCCL_IB_GID_INDEX=3" in stale[0].fix[0]


def test_before_nccl_2_21_the_repair_sets_the_right_index_instead_of_removing_the_pin() -> None:
    link = _link("0", version="2.20.5", source="/etc/nccl.conf")
    findings = [f for f in diagnose(link, load_playbooks()).findings if f.status is not Status.PASS]
    bundle = load_bundle(FIXTURES / "healthy")
    files = {n: replace(node_files(bundle, n), nccl_conf={"/etc/nccl.conf": "NCCL_IB_GID_INDEX=0\n",
                                                          "~/.nccl.conf": None}) for n in ("a", "b")}
    plan = plan_repairs(link, findings, files)
    assert {s.node for s in plan.steps} == {"a", "b"}
    for step in plan.steps:
        assert step.persistent is not None and step.persistent.edit.kind == "conf_set_key"
        assert step.persistent.edit.new == "3" and "+NCCL_IB_GID_INDEX=3" in step.persistent.diff


def test_a_moved_index_under_an_empty_pin_is_a_note_in_the_drift_too() -> None:
    name = "drift-after-reboot"
    link = diagnose_bundle(FIXTURES / name, baseline=read_baseline(FIXTURES / name / "baseline.json")).link
    b = replace(link.b, nccl={**link.b.nccl, "NCCL_IB_GID_INDEX": ""})
    moved = [f for f in _judged(replace(link, b=b), "DRIFT_GID_INDEX") if f.subject == "b:roceP2p1s0f1"]
    assert [(f.status, f.severity) for f in moved] == [(Status.PASS, Severity.INFO)]

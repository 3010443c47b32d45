"""A cable from cage p1 on one node to p0 on the other carries full traffic: a note, never LINK_DOWN."""

from __future__ import annotations

from pathlib import Path

from msgspec.structs import replace

from linkcheck.bundle.format import load_bundle
from linkcheck.diagnose.engine import diagnose
from linkcheck.diagnose.playbook import load_playbooks
from linkcheck.facts.model import LinkFacts
from linkcheck.facts.pair import build_link_facts
from linkcheck.model import Status, Verdict

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
SWAP = {"p0": "p1", "p1": "p0"}


def _healthy() -> LinkFacts:
    return build_link_facts(load_bundle(FIXTURES / "healthy").captures)


def test_cross_cage_cabling_passes_with_a_note() -> None:
    link = _healthy()
    b = replace(link.b, functions=tuple(replace(f, cage=SWAP[f.cage or "p0"]) for f in link.b.functions))
    link = replace(link, b=b)
    assert link.a.cabled_cages == ("p1",) and link.b.cabled_cages == ("p0",)
    result = diagnose(link, load_playbooks())
    assert not [f for f in result.findings if f.rule_id == "LINK_DOWN" and f.status is not Status.PASS]
    assert result.verdict is Verdict.PASS
    assert any("different cages (a p1, b p0)" in note for note in result.notes)


def test_same_cage_has_no_note() -> None:
    assert not diagnose(_healthy(), load_playbooks()).notes


def test_no_shared_subnet_between_the_nodes_is_a_failure() -> None:
    link = _healthy()
    moved = tuple(replace(f, ipv4=tuple(c.replace("192.168.", "10.9.") for c in f.ipv4)) for f in link.b.functions)
    link = replace(link, b=replace(link.b, functions=moved), paths=())
    findings = [f for f in diagnose(link, load_playbooks()).findings if f.rule_id == "LINK_DOWN"]
    assert [f.subject for f in findings if f.status is Status.FAIL] == ["pair"]
    assert any("no data path" in f.message for f in findings)


def test_unknown_carrier_is_not_a_down_link() -> None:
    link = _healthy()
    unknown = tuple(replace(f, carrier=None) for f in link.a.functions)
    findings = diagnose(replace(link, a=replace(link.a, functions=unknown)), load_playbooks()).findings
    (node_a,) = [f for f in findings if f.rule_id == "LINK_DOWN" and f.subject == "node a"]
    assert node_a.status is Status.SKIP and "carrier could be read" in (node_a.skip_reason or "")

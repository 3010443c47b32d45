"""Differing RoCE v2 GID indices matter when something pins the index; unpinned, NCCL resolves each HCA's."""

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


def _moved_index(pin: str | None) -> LinkFacts:
    link = build_link_facts(load_bundle(FIXTURES / "healthy").captures)
    moved = tuple(replace(f, gid_index=5) if f.netdev == "enP2p1s0f1np1" else f for f in link.b.functions)
    nccl = {k: v for k, v in link.b.nccl.items() if k != "NCCL_IB_GID_INDEX"}
    b = replace(link.b, functions=moved, nccl=nccl if pin is None else {**nccl, "NCCL_IB_GID_INDEX": pin})
    return replace(link, b=b)


def test_unpinned_differing_indices_are_a_note() -> None:
    result = diagnose(_moved_index(None), load_playbooks())
    (finding,) = [f for f in result.findings if f.rule_id == "GID_INDEX_DIFFERS"]
    assert finding.status is Status.PASS and result.verdict is Verdict.PASS
    assert any("GID_INDEX_DIFFERS" in note and "b:roceP2p1s0f1=5" in note for note in result.notes)


def test_pinned_differing_indices_warn() -> None:
    result = diagnose(_moved_index("3"), load_playbooks())
    statuses = {f.rule_id: f.status for f in result.findings if f.status is not Status.PASS}
    assert statuses["GID_INDEX_DIFFERS"] is Status.WARN and statuses["GID_INDEX_STALE"] is Status.FAIL

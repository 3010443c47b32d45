"""The container, known-bad and GPU rules offline: on the lab's container fixture, on every shipped bundle without
container data (nothing of theirs fires, skips or moves a verdict), and with a user's own known-bad entry."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from linkcheck.app.offline import diagnose_bundle
from linkcheck.diagnose.checks.containers import gpu_waiting
from linkcheck.diagnose.playbook import load_playbooks
from linkcheck.errors import PlaybookError
from linkcheck.facts.drift import changes
from linkcheck.facts.model import Function, NodeFacts
from linkcheck.facts.snapshot import snapshot_from
from linkcheck.model import Status
from linkcheck.parsers.nccl_probe import GpuReading

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
WHEEL = "/usr/local/lib/python3.12/dist-packages/nvidia/nccl/lib/libnccl.so.2"
OURS = {r.id for r in load_playbooks(kind="all") if r.source.rsplit("/", 1)[-1].split(":")[0]
        in ("containers.yaml", "known-bad.yaml")}
WITHOUT = sorted(p.name for p in FIXTURES.iterdir() if (p / "expected.yaml").is_file() and p.name != "containers-lab")


@pytest.mark.parametrize("name", WITHOUT)
def test_a_bundle_without_container_data_has_no_subject_for_these_rules(name: str) -> None:
    findings = diagnose_bundle(FIXTURES / name).diagnosis.findings
    assert not [f for f in findings if f.rule_id in OURS], name


def test_the_known_bad_version_is_named_with_its_source() -> None:
    findings = diagnose_bundle(FIXTURES / "containers-lab").diagnosis.findings
    known = [f for f in findings if f.rule_id == "NCCL_KNOWN_BAD"]
    assert {f.subject for f in known} == {"nccl 2.30.4 in container vllm on a", "nccl 2.30.4 in container vllm on b"}
    assert all(f.status is Status.WARN and "NVIDIA/nccl#2167" in f.message for f in known)
    assert all("NCCL_NVLS_ENABLE=0" in f.message for f in known)  # the entry's way around it


def test_a_users_known_bad_entry_in_an_extra_playbook(tmp_path: Path) -> None:
    extra = tmp_path / "site.yaml"
    extra.write_text("playbook: site\nrules: []\nknown_bad:\n  - tool: nccl\n    versions: [\"2.30.4\"]\n"
                     "    symptom: our vLLM image hangs at start\n    source: site ticket OPS-123\n"
                     "    fixed: \"2.30.7\"\n", encoding="utf-8")
    known = [f for f in diagnose_bundle(FIXTURES / "containers-lab", [extra]).diagnosis.findings
             if f.rule_id == "NCCL_KNOWN_BAD"]
    ours = [f for f in known if "site ticket OPS-123" in f.message]
    assert len(ours) == 2 and all("Fixed in: 2.30.7" in f.message for f in ours)
    assert len(known) == 4  # the built-in entry still judges as well
    assert any(str(extra) in str(e.source) for f in ours for e in f.evidence)


def test_a_known_bad_entry_is_checked_like_the_rest_of_a_playbook(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("playbook: x\nrules: []\nknown_bad:\n  - tool: nccl\n    versions: [two]\n    symptom: s\n"
                   "    source: s\n", encoding="utf-8")
    with pytest.raises(PlaybookError) as err:
        load_playbooks([bad])
    assert "bad.yaml:" in str(err.value) and "known_bad[0].versions[0]" in str(err.value)
    assert "a version such as 2.30.4" in str(err.value)


def _node(gpus: tuple[GpuReading, ...], carrier: bool = True) -> NodeFacts:
    fn = Function(node="a", netdev="enp1s0f1np1", ipv4=("192.168.100.10/24",), carrier=carrier, rdma_state="ACTIVE")
    return NodeFacts(name="a", functions=(fn,), gpus=gpus)


def test_busy_at_idle_power_names_a_waiting_rank_only_while_the_link_is_up() -> None:
    limits = {"min_utilization_pct": 90, "max_power_w": 30}
    # tests/samples/containers/real/nvidia_smi_util_power_busy_low_power.txt: 100 % at 16.67 W
    waiting = gpu_waiting([_node((GpuReading(100.0, 16.67),))], limits)
    assert [o.fired for o in waiting] == [True]
    # nvidia_smi_util_power_steady.txt: 94 % at 70.58 W is work, not waiting
    assert [o.fired for o in gpu_waiting([_node((GpuReading(94.0, 70.58),))], limits)] == [False]
    # a dead link is the link rules' to name
    assert gpu_waiting([_node((GpuReading(96.0, 22.0),), carrier=False)], limits) == []
    assert gpu_waiting([_node(())], limits) == []


def test_drift_names_a_container_whose_nccl_changed() -> None:
    link = diagnose_bundle(FIXTURES / "containers-lab").link
    before = snapshot_from((), link, "warn")
    view = next(v for v in link.b.nccl_views if v.container == "vllm")
    assert view.library is not None
    rebuilt = msgspec.structs.replace(view, library=msgspec.structs.replace(view.library, build_id="0" * 40))
    after_link = msgspec.structs.replace(link, b=msgspec.structs.replace(
        link.b, nccl_views=tuple(rebuilt if v is view else v for v in link.b.nccl_views)))
    after = snapshot_from((), after_link, "warn")
    changed, _ = changes(before.configuration, after.configuration, before, after)
    assert [c.field for c in changed] == ["b.nccl_library.container vllm"]
    assert WHEEL in str(changed[0]) and "0" * 40 in str(changed[0])
    # A container read in one run only is no change (asked for once; a baseline older than the probe)
    dropped = msgspec.structs.replace(after_link, b=msgspec.structs.replace(link.b, nccl_views=()))
    gone = snapshot_from((), dropped, "warn")
    assert not [c for c in changes(before.configuration, gone.configuration, before, gone)[0]
                if "nccl_library" in c.field]

"""The fix lines do what they say: a wrong neighbour entry is deleted (a flush never removes a PERMANENT one), a FEC
change on mlx5 toggles the port and is verified once carrier and the renegotiated FEC are back, the MTU fix and the
plan choose one MTU and say 9000 is community practice, and NetworkManager's persistent profiles are where Ubuntu
23.10 and later keep them."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import msgspec
import pytest

from linkcheck.app.offline import diagnose_bundle
from linkcheck.diagnose.engine import diagnose
from linkcheck.diagnose.playbook import load_playbooks
from linkcheck.model import Status
from linkcheck.repair.checks import wait_fec_settled
from linkcheck.repair.files import node_files
from linkcheck.repair.plan import plan_repairs
from linkcheck.transport.base import RemoteResult

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def test_no_fix_flushes_a_neighbour_entry_it_means_to_remove() -> None:
    for rule in load_playbooks():
        texts = [*rule.fix, *(c.text for choices in rule.values.values() for c in choices)]
        assert not [t for t in texts if "ip neigh flush" in t and "never removes" not in t], rule.id
    single = {r.id: r for r in load_playbooks()}["SINGLE_PCIE_PATH"]
    assert any("sudo ip neigh del <peer IP> dev <twin netdev>" in f for f in single.fix)


def test_the_fec_repair_says_the_port_toggles_and_waits_for_carrier_before_verifying() -> None:
    outcome = diagnose_bundle(FIXTURES / "fec-off")
    steps = [s for s in plan_repairs(outcome.link, list(outcome.diagnosis.findings),
                                     {n: node_files(outcome.bundle, n) for n in ("a", "b")}).steps
             if s.finding.startswith("FEC_NOT_RS")]
    assert steps
    for step in steps:
        assert step.runtime[0].startswith("sudo ethtool --set-fec ")
        assert "the port goes down and up (mlx5 toggles the link)" in step.verify[0] and "carrier" in step.verify[0]
        assert step.verify[1].startswith("ethtool --show-fec ") and step.verify[2].startswith("ping ")
    [rule] = [r for r in load_playbooks() if r.id == "FEC_NOT_RS"]
    assert any("mlx5 takes the port down and up" in f for f in rule.fix)
    assert any("mlx5_toggle_port_link" in r for r in rule.references)


class _Shell:
    """Runs a command in a local sh, as a node would (the loop under test is the real one)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env

    def sh(self, command: str, *, timeout_s: float = 30, stdin: str | None = None) -> RemoteResult:
        done = subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=timeout_s, env=self.env,
                              check=False)
        return RemoteResult(done.stdout, done.stderr, done.returncode, 0.0)


@pytest.mark.parametrize(("carrier", "active", "settled"), [("1", "RS", True), ("0", "RS", False),
                                                           ("1", "None", False)])
def test_the_fec_wait_needs_carrier_and_the_wanted_fec(tmp_path: Path, carrier: str, active: str,
                                                       settled: bool) -> None:
    (tmp_path / "net" / "eth9").mkdir(parents=True)
    (tmp_path / "net" / "eth9" / "carrier").write_text(carrier + "\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "ethtool"  # a stand-in for ethtool --show-fec: prints the format mlx5 gives
    fake.write_text(f"#!/bin/sh\nprintf 'FEC parameters for eth9:\\nSupported/Configured FEC encodings: Auto\\n"
                    f"Active FEC encoding: {active}\\n'\n")
    fake.chmod(0o755)
    node = _Shell({**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"})
    assert wait_fec_settled(node, "eth9", "RS", wait_s=1, root=str(tmp_path / "net")) is settled  # type: ignore[arg-type]


def test_the_mtu_fix_and_the_plan_choose_the_same_mtu() -> None:
    outcome = diagnose_bundle(FIXTURES / "mtu-mismatch")
    link = outcome.link
    # the low end at 1500, the high end at 4200 (not 9000): both must name 4200
    b = msgspec.structs.replace(link.b, functions=tuple(
        msgspec.structs.replace(f, mtu=4200) if f.mtu == 9000 else f for f in link.b.functions))
    a = msgspec.structs.replace(link.a, functions=tuple(
        msgspec.structs.replace(f, mtu=4200) if f.mtu == 9000 else f for f in link.a.functions))
    link = msgspec.structs.replace(link, a=a, b=b)
    link = msgspec.structs.replace(link, paths=tuple(
        msgspec.structs.replace(p, a=a.function(p.a.netdev) or p.a, b=b.function(p.b.netdev) or p.b)
        for p in link.paths))
    findings = [f for f in diagnose(link, load_playbooks()).findings if f.status is not Status.PASS]
    [mismatch] = [f for f in findings if f.rule_id == "MTU_MISMATCH"]
    assert "mtu 4200" in mismatch.fix[0] and "community practice, not NVIDIA's" in mismatch.fix[0]
    plan = plan_repairs(link, findings, {n: node_files(outcome.bundle, n) for n in ("a", "b")})
    mtu_steps = [s for s in plan.steps if s.finding.startswith("MTU_MISMATCH")]
    assert [s.runtime for s in mtu_steps] == [(mismatch.fix[0].split(": ", 1)[1].split("  (")[0],)]


def test_nm_runtime_profiles_name_where_ubuntu_23_10_keeps_persistent_ones() -> None:
    [rule] = [r for r in load_playbooks() if r.id == "NM_PROFILE_RUNTIME_ONLY"]
    assert "/etc/netplan/90-NM-<uuid>.yaml" in rule.mechanism
    assert any("as /etc/netplan/90-NM-<uuid>.yaml on Ubuntu 23.10 and later" in f for f in rule.fix)

"""`linkcheck fix` live against the two-node lab: the inspection over real SSH, the plan from what it saw, saved in
the bundle it wrote; a healthy pair plans nothing, and fix changes nothing on the nodes (it only plans)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.lab import Lab
from tests.lab.scenario import specs_for_scenario

pytestmark = pytest.mark.lab  # builds the two-node lab

if TYPE_CHECKING:
    from tests.live.conftest import Live

# scenario -> (node, rule, first runtime command template with the lab's mapped addresses)
PLANS = {
    "mtu-mismatch": [("b", "MTU_MISMATCH", ("sudo ip link set dev enP2p1s0f1np1 mtu 9000",))],
    "twins-same-subnet": [
        ("a", "TWINS_SAME_SUBNET", ("sudo ip addr del 198.19.100.14/24 dev enP2p1s0f1np1",
                                    "sudo ip addr add 198.19.101.14/24 dev enP2p1s0f1np1")),
        ("b", "TWINS_SAME_SUBNET", ("sudo ip addr del 198.19.100.15/24 dev enP2p1s0f1np1",
                                    "sudo ip addr add 198.19.101.15/24 dev enP2p1s0f1np1"))],
    "healthy": [],
}


def _state(lab: Lab, node: str) -> list[tuple[str, int, list[str]]]:
    """Each interface's name, MTU and IPv4 addresses (IPv6 link-local DAD flags change on their own)."""
    links = json.loads(lab.exec(node, ["ip", "-j", "-4", "addr"]).stdout)
    mtus = {i["ifname"]: i["mtu"] for i in json.loads(lab.exec(node, ["ip", "-j", "link"]).stdout)}
    addrs = {i["ifname"]: sorted(f"{a['local']}/{a['prefixlen']}" for a in i.get("addr_info", [])) for i in links}
    return sorted((name, mtu, addrs.get(name, [])) for name, mtu in mtus.items())


@pytest.mark.parametrize("scenario", sorted(PLANS))
def test_live_fix_plans_from_what_it_saw(scenario: str, lab_factory: Callable[..., Lab], live: Live,
                                         tmp_path: Path) -> None:
    lab = lab_factory(specs_for_scenario(scenario, tmp_path / "models"))
    config = live.lab_config(lab, tmp_path / "linkcheck.yaml", nodes={"a": {"target": "a"}, "b": {"target": "b"}})
    before = {n: _state(lab, n) for n in ("a", "b")}
    run = live.run("fix", "-c", str(config), "--save", str(tmp_path / "saved"), "-f", "json", timeout=240)
    steps = json.loads(run.stdout)["steps"]
    assert [(s["node"], s["finding"].split(":", 1)[0], tuple(s["runtime"])) for s in steps] == PLANS[scenario], \
        run.stderr
    saved = json.loads((tmp_path / "saved" / "repair.json").read_text())
    assert [s["runtime"] for s in saved["plan"]["steps"]] == [s["runtime"] for s in steps]
    assert live.run("verify", str(tmp_path / "saved")).returncode == 0
    # Read back offline, the plan a live fix added is the one linkcheck makes from the bundle: shown as the plan.
    repair = json.loads(live.run("report", str(tmp_path / "saved"), "-f", "json").stdout)["repair"]
    assert "problem" not in repair and repair["steps"] == steps, repair
    assert {n: _state(lab, n) for n in ("a", "b")} == before  # read-only: addresses and MTUs as they were

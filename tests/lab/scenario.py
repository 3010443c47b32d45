"""Lab node specs from node models and named scenarios (the same scenarios as the offline fixtures).

A model's CX-7 functions become data links named, addressed and sized as in the model; a function is
cabled to the same-named function of the other node when both report carrier, else it has no peer
(no carrier). `plain` is a built-in cabled pair without models, for tests of the lab itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.lab.errors import LabError
from tests.lab.spec import LabNodeSpec, LinkSpec, OobNicSpec

PLAIN = "plain"

# Cage p1 of two GB10s cabled (twins in separate subnets, as NVIDIA's playbook sets them), cage p0 empty.
_PLAIN_IFS = (
    ("enp1s0f0np0", "2c", None),
    ("enp1s0f1np1", "2d", "192.168.100.{host}/24"),
    ("enP2p1s0f0np0", "30", None),
    ("enP2p1s0f1np1", "31", "192.168.101.{host}/24"),
)


def plain_pair(mtu: int = 9000) -> list[LabNodeSpec]:
    """Two cabled nodes "a" and "b" with GB10 interface names, no node models (sysfs net/ only)."""
    specs = []
    for name, other, host, mac_byte in (("a", "b", 10, "00"), ("b", "a", 11, "01")):
        links = tuple(
            LinkSpec(
                ifname=ifname,
                mac=f"4c:bb:47:00:{mac_byte}:{last}",
                mtu=mtu,
                addresses=(addr.format(host=host),) if addr else (),
                peer=(other, ifname) if addr else None,
            )
            for ifname, last, addr in _PLAIN_IFS
        )
        specs.append(LabNodeSpec(name=name, links=links, hostname=f"spark-{name}"))
    return specs


def specs_from_models(models: Mapping[str, Path]) -> list[LabNodeSpec]:
    """Lab specs for nodes given as {lab node name: node model JSON path}."""
    from tests.emulators.node import Node

    loaded = {name: Node.load(path) for name, path in models.items()}
    specs = []
    for name, node in loaded.items():
        others = {n: m for n, m in loaded.items() if n != name}
        links = tuple(_link(fn, others) for fn in node.functions)
        specs.append(
            LabNodeSpec(
                name=name,
                model=Path(models[name]),
                links=links,
                hostname=node.hostname,
                missing_tools=frozenset(node.missing_tools),
                sudo_refuses=not node.sudo_ok,
                oob=OobNicSpec(node.mgmt.name, node.mgmt.mac, node.mgmt.ipv4, node.mgmt.gateway),
            )
        )
    return specs


def _link(fn: Any, others: Mapping[str, Any]) -> LinkSpec:
    peer = None
    if fn.carrier:
        for other_name, other in others.items():
            match = [o for o in other.functions if o.netdev == fn.netdev and o.carrier]
            if match:
                peer = (other_name, fn.netdev)
                break
    return LinkSpec(ifname=fn.netdev, mac=fn.mac, mtu=fn.mtu, addresses=tuple(fn.ipv4), peer=peer, up=fn.admin_up)


def scenario_names() -> list[str]:
    """Names accepted by specs_for_scenario."""
    try:
        from tests.emulators.scenarios import SCENARIOS
    except ImportError:
        return [PLAIN]
    return [PLAIN, *sorted(SCENARIOS)]


def specs_for_scenario(name: str, model_dir: Path) -> list[LabNodeSpec]:
    """Specs for a named scenario; its node models are written to `model_dir` as a.json and b.json."""
    if name == PLAIN:
        return plain_pair()
    try:
        from tests.emulators.scenarios import SCENARIOS
    except ImportError as exc:
        raise LabError(f"scenario {name!r} needs tests.emulators.scenarios: {exc}") from exc
    if name not in SCENARIOS:
        raise LabError(f"unknown scenario {name!r}; known: {', '.join(scenario_names())}")
    scenario = SCENARIOS[name]
    model_dir.mkdir(parents=True, exist_ok=True)
    paths = {}
    for lab_name, node in (("a", scenario.node_a), ("b", scenario.node_b)):
        path = model_dir / f"{lab_name}.json"
        path.write_text(node.to_json(), encoding="utf-8")
        paths[lab_name] = path
    return specs_from_models(paths)

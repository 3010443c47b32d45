"""Lab node specs from node models and named scenarios (the same scenarios as the offline fixtures).

A model's CX-7 functions become data links named, addressed and sized as in the model; a function is
cabled to the same-named function of the other node when both report carrier, else it has no peer
(no carrier). A cluster scenario (tests/lab/cluster.py) says instead where each function is cabled: to a
function of another node, or to a switch. `plain` is a built-in cabled pair without models, for tests of the lab itself.
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


# How a cluster's functions are cabled: (node, netdev) -> the (node, netdev) at the cable's other end, or the name
# of the switch the function is a port of. A function it does not name has no cable.
Wiring = Mapping[tuple[str, str], "tuple[str, str] | str"]


def specs_from_models(models: Mapping[str, Path], wiring: Wiring | None = None) -> list[LabNodeSpec]:
    """Lab specs for nodes given as {lab node name: node model JSON path}; without `wiring`, each function with
    carrier is cabled to the same-named function of another node (a pair)."""
    from tests.emulators.node import Node

    loaded = {name: Node.load(path) for name, path in models.items()}
    specs = []
    for name, node in loaded.items():
        others = {n: m for n, m in loaded.items() if n != name}
        links = tuple(_link(fn, others) if wiring is None else _wired(name, fn, wiring) for fn in node.functions)
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


def _wired(name: str, fn: Any, wiring: Wiring) -> LinkSpec:
    end = wiring.get((name, fn.netdev))
    peer, switch = (end, None) if isinstance(end, tuple) else (None, end)
    return LinkSpec(ifname=fn.netdev, mac=fn.mac, mtu=fn.mtu, addresses=tuple(fn.ipv4), peer=peer, up=fn.admin_up,
                    switch=switch)


def scenario_names() -> list[str]:
    """Names accepted by specs_for_scenario."""
    try:
        from tests.emulators.scenarios import SCENARIOS
        from tests.lab.cluster import CLUSTER_SCENARIOS
    except ImportError:
        return [PLAIN]
    return [PLAIN, *sorted(SCENARIOS), *sorted(CLUSTER_SCENARIOS)]


def specs_for_scenario(name: str, model_dir: Path) -> list[LabNodeSpec]:
    """Specs for a named scenario; its node models are written to `model_dir` as a.json and b.json (and c.json ...
    for a cluster scenario of tests/lab/cluster.py)."""
    if name == PLAIN:
        return plain_pair()
    try:
        from tests.emulators.scenarios import SCENARIOS
        from tests.lab.cluster import CLUSTER_SCENARIOS, cluster_specs
    except ImportError as exc:
        raise LabError(f"scenario {name!r} needs tests.emulators.scenarios: {exc}") from exc
    if name in CLUSTER_SCENARIOS:
        return cluster_specs(name, model_dir)
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

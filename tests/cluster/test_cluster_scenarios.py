"""The lab's cluster scenarios (tests/lab/cluster.py), inspected offline: each node model rendered into the
captures a node would answer, built into facts as a live run builds them, and the topology inferred from those
must be what the scenario states. tests/live/test_cluster_lab.py asks the same of the lab over real SSH."""

from __future__ import annotations

from pathlib import Path

import pytest

from linkcheck.cluster.schedule import schedule
from linkcheck.cluster.topology import Topology, infer_topology
from linkcheck.facts.build import build_node_facts
from tests.emulators.captures import node_captures
from tests.lab.cluster import CLUSTER_SCENARIOS, cluster_models, cluster_specs
from tests.lab.errors import LabError
from tests.lab.spec import LabNodeSpec, LinkSpec, validate_specs


def _topology(name: str) -> Topology:
    models = cluster_models(CLUSTER_SCENARIOS[name]())
    return infer_topology({n: build_node_facts(n, node_captures(n, m)) for n, m in models.items()})


@pytest.mark.parametrize("name", sorted(CLUSTER_SCENARIOS))
def test_each_cluster_scenario_is_inferred_as_it_states(name: str) -> None:
    expected = CLUSTER_SCENARIOS[name]().expected
    topo = _topology(name)
    assert topo.layout == expected.layout
    assert sorted(c.key for c in topo.cables) == sorted(expected.cables)
    assert len(topo.segments) == expected.segments
    assert sorted((f.kind, f.subject) for f in topo.flags) == sorted(expected.flags)
    assert all(p.neighbour_confirmed for c in topo.cables for p in c.paths)
    assert all(len(c.paths) == 2 for c in topo.cables)


def test_the_scenarios_round_counts() -> None:
    assert len(schedule(_topology("ring3")).rounds) == 3
    assert len(schedule(_topology("ring4")).rounds) == 2
    assert len(schedule(_topology("switch4")).rounds) == 3


def test_a_cluster_scenarios_links_go_where_its_wiring_says(tmp_path: Path) -> None:
    specs = {s.name: s for s in cluster_specs("mixed", tmp_path)}
    validate_specs(list(specs.values()))
    links = {(n, link.ifname): (link.peer, link.switch) for n, s in specs.items() for link in s.links}
    assert links[("a", "enp1s0f0np0")] == (("b", "enp1s0f0np0"), None)
    assert links[("c", "enp1s0f1np1")] == (None, "s1")
    assert links[("c", "enp1s0f0np0")] == (None, None)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "b.json", "c.json"]


def test_a_link_to_a_peer_and_a_switch_at_once_is_refused() -> None:
    a = LabNodeSpec("a", links=(LinkSpec("x0", peer=("b", "y0"), switch="s1"),))
    b = LabNodeSpec("b", links=(LinkSpec("y0", peer=("a", "x0")),))
    with pytest.raises(LabError, match="not both"):
        validate_specs([a, b])
    with pytest.raises(LabError, match="switch name"):
        validate_specs([LabNodeSpec("a", links=(LinkSpec("x0", switch="Bad-Switch"),))])

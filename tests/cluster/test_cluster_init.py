"""A cluster's linkcheck.yaml: the `cluster:` section `init` writes (nodes, cables, switch), read back through the
config's model, and LINK_CHANGED when the live cabling differs from it."""

from __future__ import annotations

from pathlib import Path

import pytest
from msgspec.structs import replace

from linkcheck.app.init import render_cluster_config
from linkcheck.app.topology import cluster_facts
from linkcheck.cluster.facts import ClusterFacts, ExpectedCluster, cabling_changes
from linkcheck.cluster.hosts import cluster_hosts, parse_node_values
from linkcheck.collect.specs import CLUSTER_SPECS, SPECS
from linkcheck.config import SshOptions, load_config
from linkcheck.diagnose.engine import diagnose
from linkcheck.diagnose.playbook import load_playbooks
from linkcheck.errors import ConfigError
from linkcheck.model import Status
from tests.emulators.captures import node_captures
from tests.lab.cluster import CLUSTER_SCENARIOS, cluster_models

RULES = load_playbooks(kind="cluster")


def _facts(name: str) -> ClusterFacts:
    models = cluster_models(CLUSTER_SCENARIOS[name]())
    captures = [c for n, m in models.items() for c in node_captures(n, m, SPECS + CLUSTER_SPECS)]
    return cluster_facts(list(models), captures, {})


def _changed(facts: ClusterFacts) -> list[str]:
    return [f.message for f in diagnose(facts, RULES).findings
            if f.rule_id == "LINK_CHANGED" and f.status is Status.WARN]


@pytest.mark.parametrize("name", ["ring3", "switch4", "mixed"])
def test_init_writes_the_cabling_and_reading_it_back_finds_no_change(name: str, tmp_path: Path) -> None:
    facts = _facts(name)
    hosts = parse_node_values([f"{n}=root@{n}.lab:2222" for n in facts.nodes])
    path = tmp_path / "linkcheck.yaml"
    path.write_text(render_cluster_config(hosts, SshOptions(known_hosts=Path("/tmp/k h")), facts), encoding="utf-8")
    config = load_config(path)
    assert [str(t) for t in config.cluster_nodes] == [f"root@{n}.lab:2222" for n in facts.nodes]
    assert config.ssh.known_hosts == Path("/tmp/k h")
    assert config.expected_cluster is not None
    assert sorted(config.expected_cluster.cables) == sorted(c.key for c in facts.topology.cables)
    # The hosts come from the file when none is named on the command line.
    assert [h.name for h in cluster_hosts(configured=config.cluster_nodes)] == list(facts.nodes)
    assert _changed(replace(facts, expected=config.expected_cluster)) == []


def test_init_keeps_each_hosts_key_file(tmp_path: Path) -> None:
    facts = _facts("ring3")
    keyed = {"a": "/home/u/.ssh/id_a", "c": "/keys/c key"}
    hosts = [replace(h, target=replace(h.target, identity_file=keyed.get(h.name)))
             for h in parse_node_values([f"{n}=root@{n}.lab" for n in facts.nodes])]
    path = tmp_path / "linkcheck.yaml"
    path.write_text(render_cluster_config(hosts, SshOptions(), facts), encoding="utf-8")
    config = load_config(path)
    assert {t.name: t.identity_file for t in config.cluster_nodes} == {"a": keyed["a"], "b": None, "c": keyed["c"]}
    assert [str(t) for t in config.cluster_nodes] == [f"root@{n}.lab" for n in facts.nodes]


def test_a_cable_gone_or_new_and_a_node_off_the_switch_are_named() -> None:
    ring = _facts("ring3")
    recorded = ExpectedCluster(cables=("b:p1<->a:p0", "a:p1<->c:p0", "b:p0<->c:p1", "a:p0<->c:p0"))
    changes = cabling_changes(replace(ring, expected=recorded))
    # The same cable written end for end is the same cable; one that is not there is gone.
    assert changes is not None and changes.cables_gone == ("a:p0<->c:p0",) and changes.cables_new == ()
    [message] = _changed(replace(ring, expected=recorded))
    assert "recorded cables not found: a:p0<->c:p0" in message and "linkcheck.yaml" in message
    new = _changed(replace(ring, expected=ExpectedCluster(cables=("a:p0<->b:p1", "a:p1<->c:p0"))))
    assert len(new) == 1 and "new cables: b:p0<->c:p1" in new[0]
    switch = _facts("switch4")
    off = _changed(replace(switch, expected=ExpectedCluster(switch=("a", "b", "c"))))
    assert len(off) == 1 and "newly on the switch: d" in off[0]
    # Nothing recorded: nothing compared, no finding at all.
    assert not [f for f in diagnose(ring, RULES).findings if f.rule_id == "LINK_CHANGED"]


BAD = {
    "cluster:\n  cables: [a-b]\n": ("cluster.cables[0]", 2),
    "cluster:\n  nodes: {a: host1}\n  switch: [z]\n": ("switch", 3),
    "cluster:\n  nodes: {'a b': host1}\n": ("cluster.nodes", 2),
    "cluster:\n  nodes: {a: 'user@'}\n": ("", 2),
    "cluster:\n  cables: {a: b}\n": ("cluster.cables", 2),
    "cluster:\n  links: []\n": ("links", 2),
}


@pytest.mark.parametrize("text", sorted(BAD))
def test_a_bad_cluster_section_is_refused_at_its_line(text: str, tmp_path: Path) -> None:
    path = tmp_path / "linkcheck.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    where, line = BAD[text]
    assert caught.value.line == line, str(caught.value)
    assert where in str(caught.value)

"""Node names and addresses get the same checks from every source (--node, a hostfile, an inventory, Slurm,
linkcheck.yaml's cluster.nodes): no final newline, no address named twice, no name that is no host name; and a
cluster test planned with traffic but with no run in its bundle is inconclusive, never passed."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from linkcheck.app.offline import judge_cluster
from linkcheck.bundle.run_record import SCHEMA, SCHEMA_VERSION, CableEntry, ClusterDocument, HostEntry
from linkcheck.cluster.cables import cable_tests
from linkcheck.cluster.hosts import NODE_NAME_RE, parse_hostfile, parse_node_values, parse_slurm_nodelist
from linkcheck.cluster.inventory import parse_inventory
from linkcheck.cluster.schedule import schedule
from linkcheck.collect.specs import CLUSTER_SPECS, SPECS
from linkcheck.config import load_config
from linkcheck.diagnose.playbook import load_playbooks
from linkcheck.errors import ConfigError
from linkcheck.model import Verdict
from tests.adversarial.adversarial_helpers import one_line_error, run
from tests.emulators.captures import node_captures
from tests.lab.cluster import cluster_models, ring3

BAD_NAMES = ["s1\n", "s1\r", "s1\x1b[2J", "s1\udc80", "s1 s2", "-oProxyCommand=x", "../s1", "s1/x", "", "s" * 64,
             "s1\u202e", "s1;id"]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_a_bad_node_name_is_refused_by_every_source(name: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        parse_node_values([f"{name}=198.18.0.1", "b=198.18.0.2"])
    if name.strip() and "\n" not in name and "\r" not in name and " " not in name:
        with pytest.raises(ConfigError):
            parse_hostfile(f"{name}\nb\n", "hosts")
        with pytest.raises(ConfigError):
            parse_slurm_nodelist(f"{name},b")
    config = tmp_path / "linkcheck.yaml"
    quoted = name.encode("unicode_escape").decode("ascii").replace('"', '\\"')
    config.write_text(f'version: 1\ncluster:\n  nodes:\n    "{quoted}": 198.18.0.1\n    b: 198.18.0.2\n',
                      encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_config(config)
    assert caught.value.line is not None


@given(st.text(min_size=1, max_size=70))
def test_a_name_is_accepted_only_when_it_is_a_host_name(name: str) -> None:
    accepted = NODE_NAME_RE.match(name) is not None
    assert accepted == (len(name) <= 63 and name[0] not in ".-" and
                        all(c.isascii() and (c.isalnum() or c in "_.-") for c in name))


def test_a_final_newline_in_a_user_or_host_is_refused() -> None:
    for target in ["nv\n@198.18.0.1", "nv@host\n:22", "nv@host\n"]:
        with pytest.raises(ConfigError):
            parse_node_values([f"a={target}x" if target.endswith("\n") else f"a={target}", "b=198.18.0.2"])


@pytest.mark.parametrize("second", ["198.18.0.1", "root@198.18.0.1", "198.18.0.1:22"])
def test_linkcheck_yaml_cluster_nodes_may_not_name_one_address_twice(tmp_path: Path, second: str) -> None:
    config = tmp_path / "linkcheck.yaml"
    first = "198.18.0.1:22" if second.endswith(":22") else "198.18.0.1"
    config.write_text(f"version: 1\ncluster:\n  nodes:\n    s1: {first}\n    s2: {second}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="same address") as caught:
        load_config(config)
    assert caught.value.line == 5
    one_line_error(run("check", "-c", str(config)), 4, "linkcheck.yaml:5", "same address")


def test_an_address_twice_is_refused_alike_from_node_hostfile_inventory() -> None:
    for read in (lambda: parse_node_values(["s1=198.18.0.1", "s2=198.18.0.1"]),
                 lambda: parse_hostfile("198.18.0.1\nroot@198.18.0.1\n", "hosts"),
                 lambda: parse_inventory("[g]\ns1 ansible_host=198.18.0.1\ns2 ansible_host=198.18.0.1\n", "inv")):
        with pytest.raises(ConfigError):
            hosts = read()
            from linkcheck.cluster.hosts import hosts_from_inventory
            if hosts and not hasattr(hosts[0], "target"):
                hosts_from_inventory(hosts, "inv")  # type: ignore[arg-type]


def _judged(traffic: bool) -> tuple[list[Verdict], Verdict]:
    models = cluster_models(ring3())
    captures = [c for n, m in models.items() for c in node_captures(n, m, SPECS + CLUSTER_SPECS)]
    hosts = parse_node_values([f"{n}=root@{n}.lab" for n in models])
    entries = (HostEntry(h.name, str(h.target), h.origin) for h in hosts)
    from linkcheck.app.topology import cluster_facts

    facts = cluster_facts(list(models), captures, {})
    tests = cable_tests(facts, schedule(facts.topology))
    assert tests
    doc = ClusterDocument(SCHEMA, SCHEMA_VERSION, tuple(entries),
                          tuple(CableEntry(t.label, t.round, t.a, t.b, t.pass_no, t.switched) for t in tests),
                          traffic=traffic)
    check = judge_cluster(hosts, captures, {}, doc, load_playbooks(kind="all"))
    return [r.verdict for r in check.cables], check.verdict


def test_a_test_planned_with_traffic_but_never_run_is_inconclusive() -> None:
    verdicts, overall = _judged(traffic=True)
    assert verdicts and all(v is Verdict.INCONCLUSIVE for v in verdicts), verdicts
    assert overall is not Verdict.PASS

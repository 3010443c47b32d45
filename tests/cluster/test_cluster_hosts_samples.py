"""Host sources over real Open MPI hostfiles and Ansible inventories that users pasted (tests/cluster/samples/real/,
sources in PROVENANCE.md): each is read to the nodes, users, addresses and slots its author meant."""

from __future__ import annotations

from pathlib import Path

import pytest

from linkcheck.cluster.hosts import read_hostfile, read_inventory

REAL = Path(__file__).parent / "samples" / "real"


def _nodes(hosts: tuple) -> list[tuple[str, str, int | None]]:  # type: ignore[type-arg]
    return [(h.name, str(h.target), h.slots) for h in hosts]


def test_every_real_host_sample_has_provenance() -> None:
    provenance = (REAL / "PROVENANCE.md").read_text()
    for sample in REAL.iterdir():
        assert sample.name == "PROVENANCE.md" or sample.name in provenance, sample


@pytest.mark.parametrize(("name", "nodes"), [
    ("hostfile_ompi13292_slots_max_slots", [("node0", "node0", 2), ("node1", "node1", 2)]),
    ("hostfile_mpi_operator29_generated", [("caffe-wd-mpijob-worker-0", "caffe-wd-mpijob-worker-0", 8),
                                           ("caffe-wd-mpijob-worker-1", "caffe-wd-mpijob-worker-1", 8)]),
    ("hostfile_ompi12574_bare_addresses", [("10.4.0.1", "10.4.0.1", None), ("10.4.0.2", "10.4.0.2", None)]),
    ("hostfile_ompi3133_comment", [("worker-0", "worker-0", 1)]),
])
def test_real_hostfiles(name: str, nodes: list[tuple[str, str, int | None]]) -> None:
    hosts = read_hostfile(REAL / name)
    assert _nodes(hosts) == nodes
    assert hosts[-1].origin == f"{REAL / name}:{len(nodes) + (1 if 'comment' in name else 0)}"


def test_a_real_ini_inventory_with_a_children_group() -> None:
    path = REAL / "inventory_k3s_ansible208.ini"
    every = ["192.168.30.38", "192.168.30.39", "192.168.30.40", "192.168.30.41", "192.168.30.42"]
    assert [h.name for h in read_inventory(path)] == every
    assert [h.name for h in read_inventory(path, group="k3s_cluster")] == every
    assert [h.name for h in read_inventory(path, group="node")] == every[3:]
    assert all(h.target.user is None and h.target.port is None for h in read_inventory(path))


def test_the_same_inventory_in_ini_and_yaml_gives_the_same_nodes() -> None:
    # The old ansible_ssh_user spelling; machine_hostname is the playbook's own variable, not a connection one.
    ini = read_inventory(REAL / "inventory_debian11_hardening1.ini")
    yml = read_inventory(REAL / "inventory_debian11_hardening1.yml", group="servers")
    want = [(f"192.168.0.1{i}", f"admin@192.168.0.1{i}", None) for i in (1, 2, 3)]
    assert _nodes(ini) == _nodes(yml) == want
    assert [h.origin.rsplit(":", 1)[1] for h in yml] == ["4", "7", "10"]


def test_an_empty_hosts_key_in_yaml_is_a_group_without_hosts() -> None:
    # The inventory Ansible 2.4 misread as ten hosts: it names three.
    path = REAL / "inventory_ansible34760_empty_hosts.yml"
    assert [h.name for h in read_inventory(path)] == ["host1", "host2", "host3"]
    assert [h.name for h in read_inventory(path, group="group1")] == ["host2"]
    assert [h.name for h in read_inventory(path, group="group2")] == ["host3"]


def test_aliases_reached_through_ansible_host_with_their_users() -> None:
    hosts = read_inventory(REAL / "inventory_deepops377_aliases.ini")
    assert _nodes(hosts) == [("master-server", "mgmt@10.123.192.10", None),
                             ("worker-server", "nvidia@10.123.192.20", None)]

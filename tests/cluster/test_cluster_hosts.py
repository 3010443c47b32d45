"""Host sources: --node values, Open MPI hostfiles, Ansible inventories (INI, YAML), Slurm hostlists.

Each source is read from real-format samples (tests/cluster/samples/), and each class of bad input is refused
with one ConfigError naming the source and, where there is one, its line.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from linkcheck.cluster.hostlist import (
    MAX_HOSTS,
    HostRangeError,
    compress_hostlist,
    expand_ansible_pattern,
    expand_hostlist,
)
from linkcheck.cluster.hosts import (
    cluster_hosts,
    parse_hostfile,
    parse_node_values,
    parse_slurm_nodelist,
    read_hostfile,
    read_inventory,
)
from linkcheck.cluster.inventory import parse_ini_inventory, parse_inventory, parse_yaml_inventory
from linkcheck.errors import ConfigError, ExitCode

SAMPLES = Path(__file__).parent / "samples"


def _targets(hosts: tuple) -> list[tuple[str, str]]:  # type: ignore[type-arg]
    return [(h.name, str(h.target)) for h in hosts]


# -- Slurm hostlists ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "names"), [
    ("spark[01-04,07],other", ["spark01", "spark02", "spark03", "spark04", "spark07", "other"]),
    ("n[8-11]", ["n8", "n9", "n10", "n11"]),
    ("n[008-010]", ["n008", "n009", "n010"]),
    ("gpu-[1-2]-ib[0-1]", ["gpu-1-ib0", "gpu-1-ib1", "gpu-2-ib0", "gpu-2-ib1"]),
    ("a,b c\td", ["a", "b", "c", "d"]),
    ("solo", ["solo"]),
    ("x[5]", ["x5"]),
    ("spark[1,3-4],spark[10]", ["spark1", "spark3", "spark4", "spark10"]),
])
def test_slurm_hostlists_expand_as_scontrol_does(text: str, names: list[str]) -> None:
    assert list(expand_hostlist(text)) == names


@pytest.mark.parametrize(("text", "says"), [
    ("spark[01-04", "never closed"),
    ("spark01-04]", "without its '['"),
    ("n[4-2]", "runs backwards"),
    ("n[a-c]", "not a number"),
    ("n[1-2", "never closed"),
    ("n[[1-2]]", "nested"),
    ("n[1-]", "not a number"),
    ("n[0-99999999]", f"more than {MAX_HOSTS}"),
    ("a[0-99]b[0-99]", f"more than {MAX_HOSTS}"),
])
def test_bad_slurm_hostlists_are_refused(text: str, says: str) -> None:
    with pytest.raises(HostRangeError, match=says.replace("[", r"\[")):
        expand_hostlist(text)


def test_a_bad_slurm_nodelist_names_the_variable() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_slurm_nodelist("spark[01-")
    assert str(caught.value).startswith("$SLURM_JOB_NODELIST: ")
    assert caught.value.exit_code == ExitCode.BAD_INPUT


_PREFIX = st.text(alphabet="abcxyz-", min_size=1, max_size=4).filter(lambda p: not p.startswith("-"))


@st.composite
def _names(draw: st.DrawFn) -> list[str]:
    """Distinct host names as clusters name them: prefixes, numbers padded or not, and plain names."""
    out: list[str] = []
    for _ in range(draw(st.integers(0, 12))):
        prefix = draw(_PREFIX)
        kind = draw(st.sampled_from(["plain", "number", "padded"]))
        number = draw(st.integers(0, 120))
        name = prefix if kind == "plain" else prefix + (str(number).zfill(draw(st.integers(2, 4)))
                                                        if kind == "padded" else str(number))
        if name not in out:
            out.append(name)
    return out


@given(_names())
@settings(max_examples=300, deadline=None)
def test_a_compressed_hostlist_expands_to_the_same_names_in_order(names: list[str]) -> None:
    assert list(expand_hostlist(compress_hostlist(names))) == names


@given(st.text(max_size=40))
@settings(max_examples=300, deadline=None)
def test_any_text_gives_names_or_a_range_error(text: str) -> None:
    try:
        names = expand_hostlist(text)
    except HostRangeError:
        return
    assert all(name and "," not in name and "[" not in name for name in names)


@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 5)), min_size=1, max_size=4),
       st.integers(1, 3))
@settings(max_examples=200, deadline=None)
def test_a_range_list_expands_to_each_range_in_turn(ranges: list[tuple[int, int]], width: int) -> None:
    body = ",".join(f"{str(lo).zfill(width)}-{lo + span}" for lo, span in ranges)
    expected = [f"n{str(n).zfill(width)}" for lo, span in ranges for n in range(lo, lo + span + 1)]
    assert list(expand_hostlist(f"n[{body}]")) == expected


# -- --node ---------------------------------------------------------------------------------------------------------

def test_node_values_named_or_bare() -> None:
    hosts = parse_node_values(["s1=nvidia@spark-1", "spark-2:2222", "v6=[fd00::2]:22", "root@198.18.0.5"])
    assert _targets(hosts) == [("s1", "nvidia@spark-1"), ("spark-2", "spark-2:2222"), ("v6", "[fd00::2]:22"),
                               ("198.18.0.5", "root@198.18.0.5")]
    assert all(h.origin == "--node" for h in hosts)


@pytest.mark.parametrize(("values", "says"), [
    (["a=b@@c"], "bad"),
    (["x="], "expected name="),
    ([""], "expected name="),
    (["a=h1", "a=h2"], "node a is named twice"),
    (["a=h1", "b=H1"], "same address"),
    (["fd00::1"], "bad node name"),
    (["bad/name=h"], "bad node name"),
    (["a=host:99999"], "bad port"),
    (["a=[fd00::1::2]:22"], "not an IPv6 address"),
])
def test_bad_node_values_are_refused(values: list[str], says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        parse_node_values(values)


# -- Open MPI hostfiles -------------------------------------------------------------------------------------------

def test_the_sample_hostfile() -> None:
    hosts = read_hostfile(SAMPLES / "hostfile")
    assert _targets(hosts) == [("spark-01", "spark-01"), ("spark-02", "spark-02"), ("spark-03", "nvidia@spark-03"),
                               ("spark-04", "spark-04")]
    assert [h.slots for h in hosts] == [1, 1, 1, None]
    assert hosts[2].origin == f"{SAMPLES / 'hostfile'}:4"


def test_a_host_on_two_lines_is_one_node_with_the_slots_added() -> None:
    hosts = parse_hostfile("s1 slots=1\ns2\ns1 slots=2\n", "hf")
    assert [(h.name, h.slots) for h in hosts] == [("s1", 3), ("s2", None)]


@pytest.mark.parametrize(("text", "line", "says"), [
    ("s1\ns2 slots=0\n", 2, "at least 1"),
    ("s1 slots=x\n", 1, "at least 1"),
    ("s1 cores\n", 1, "keyword=value"),
    ("s1 gpus=2\n", 1, "unknown hostfile keyword"),
    ("s1 slots=4 max_slots=2\n", 1, "more than max_slots"),
    ("\n\ns1\nb@d!host\n", 4, "bad"),
    ("u1@s1\nu2@s1\n", 2, "another user"),
])
def test_bad_hostfiles_name_file_and_line(text: str, line: int, says: str) -> None:
    with pytest.raises(ConfigError, match=says) as caught:
        parse_hostfile(text, "hosts.txt")
    assert caught.value.path == "hosts.txt" and caught.value.line == line
    assert str(caught.value).startswith(f"hosts.txt:{line}: ")


def test_an_unreadable_hostfile_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        read_hostfile(tmp_path / "missing")
    with pytest.raises(ConfigError, match="not a regular file"):
        read_hostfile(tmp_path)
    (tmp_path / "latin1").write_bytes(b"sp\xe4rk\n")
    with pytest.raises(ConfigError, match="cannot read"):
        read_hostfile(tmp_path / "latin1")


# -- Ansible inventories ------------------------------------------------------------------------------------------

def test_the_sample_ini_inventory() -> None:
    hosts = read_inventory(SAMPLES / "inventory.ini")
    assert _targets(hosts) == [
        ("bastion.lab.example", "198.18.0.10"), ("spark01", "nvidia@spark01"), ("spark02", "nvidia@spark02"),
        ("spark03", "nvidia@spark03"), ("spark04", "admin@198.18.4.4:2222")]
    assert hosts[4].target.identity_file is not None and hosts[4].target.identity_file.endswith("/.ssh/id_spark")
    assert "~" not in hosts[4].target.identity_file
    assert hosts[0].target.identity_file is None


def test_an_ini_group_with_children_selects_their_hosts() -> None:
    hosts = read_inventory(SAMPLES / "inventory.ini", group="gpu")
    assert [h.name for h in hosts] == ["spark01", "spark02", "spark03", "spark04"]
    assert [h.name for h in read_inventory(SAMPLES / "inventory.ini", group="all")][0] == "bastion.lab.example"


def test_the_sample_yaml_inventory() -> None:
    hosts = read_inventory(SAMPLES / "inventory.yml")
    assert _targets(hosts) == [("bastion.lab.example", "ops@198.18.0.10"), ("spark01", "root@spark01"),
                               ("spark02", "nvidia@spark02"), ("spark03", "nvidia@198.18.3.3:2222")]
    assert [h.name for h in read_inventory(SAMPLES / "inventory.yml", group="head")] == ["spark01"]


def test_deeper_groups_override_shallower_ones_and_host_vars_win() -> None:
    text = ("[all:vars]\nansible_user=a0\n[top:vars]\nansible_user=a1\n[top:children]\nmid\n[mid:vars]\n"
            "ansible_user=a2\n[mid]\nh1\nh2 ansible_user=own\n[other]\nh3\n")
    hosts = parse_ini_inventory(text, "inv")
    assert [(h.name, h.user) for h in hosts] == [("h1", "a2"), ("h2", "own"), ("h3", "a0")]


def test_ini_host_ports_ranges_and_ipv6() -> None:
    text = "web[a:c]:2200\nn[01:05:2]\n[2001:db8::1]:22\nfd00::9\nplain ansible_port=22 # a comment\n"
    hosts = parse_ini_inventory(text, "inv")
    assert [(h.name, h.port) for h in hosts] == [
        ("weba", 2200), ("webb", 2200), ("webc", 2200), ("n01", None), ("n03", None), ("n05", None),
        ("2001:db8::1", 22), ("fd00::9", None), ("plain", 22)]


def test_inventory_format_is_told_by_its_first_line() -> None:
    assert [h.name for h in parse_inventory("all:\n  hosts:\n    s1:\n", "inv")] == ["s1"]
    assert [h.name for h in parse_inventory("---\nall: {hosts: {s1: }}\n", "inv")] == ["s1"]
    assert [h.name for h in parse_inventory("# c\ns1:22\n", "inv")] == ["s1"]
    assert [h.name for h in parse_inventory("", "inv")] == []


@pytest.mark.parametrize(("text", "line", "says"), [
    ("[sparks\ns1\n", 1, "bad section header"),
    ("[sparks:hosts]\ns1\n", 1, "bad section header"),
    ("[g:vars]\nnovalue\n", 2, "expected key=value"),
    ("s1 ansible_user\n", 1, "expected key=value after the host"),
    ("s1 ansible_user='x\n", 1, "cannot split"),
    ("n[3:1]\n", 1, "runs backwards"),
    ("n[1:x]\n", 1, "mixes a number and a letter"),
    ("n[01:100]\n", 1, "one width"),
    ("n[1:2:0]\n", 1, "stride below 1"),
    ("s1:http\n", 1, "bad port"),
    ("s1 ansible_port=none\n", 1, "bad ansible_port"),
    ("\n[a:children]\nb\n[b:children]\na\n", 2, "its own child"),
    ("s1 ansible_user=b@d\n", 1, "bad user name"),
    ("[bad group]\n", 1, "bad section header"),
])
def test_bad_ini_inventories_name_file_and_line(text: str, line: int, says: str) -> None:
    with pytest.raises(ConfigError, match=says) as caught:
        read = parse_ini_inventory(text, "inv.ini")
        from linkcheck.cluster.hosts import hosts_from_inventory
        hosts_from_inventory(read, "inv.ini")
    assert caught.value.path == "inv.ini" and caught.value.line == line


@pytest.mark.parametrize(("text", "line", "says"), [
    ("all:\n  hosts:\n    s1:\n  hostz:\n    s2:\n", 4, "unknown key 'hostz'"),
    ("all:\n  hosts: [s1, s2]\n", 2, "hosts must be a mapping"),
    ("all:\n  hosts:\n    s1: yes\n", 3, "expected a mapping of variables"),
    ("all: [s1]\n", 1, "expected a mapping of hosts"),
    ("- s1\n", 1, "expected a mapping of groups"),
    ("all:\n  hosts:\n    s1:\n      ansible_port: 70000\n", 3, "bad ansible_port"),
    ("all:\n  hosts:\n    s1:\n      ansible_host: [a]\n", 3, "must be text"),
    ("all:\n  hosts:\n    s1:\n  hosts:\n", 4, "duplicate key"),
    ("all:\n  hosts:\n    'n[1:0]':\n", 3, "runs backwards"),
])
def test_bad_yaml_inventories_name_file_and_line(text: str, line: int, says: str) -> None:
    with pytest.raises(ConfigError, match=says) as caught:
        parse_yaml_inventory(text, "inv.yml")
    assert caught.value.path == "inv.yml" and caught.value.line == line


def test_an_unknown_group_is_named_with_the_known_ones() -> None:
    with pytest.raises(ConfigError, match=r"no group 'gpus' in the inventory \(groups: .*sparks"):
        read_inventory(SAMPLES / "inventory.ini", group="gpus")


def test_ansible_ranges() -> None:
    assert expand_ansible_pattern("n[1:3]x") == ("n1x", "n2x", "n3x")
    assert expand_ansible_pattern("n[08:10]") == ("n08", "n09", "n10")
    assert expand_ansible_pattern("r[1:2]n[a:b]") == ("r1na", "r1nb", "r2na", "r2nb")


# -- choosing the source ------------------------------------------------------------------------------------------

def test_one_source_at_a_time_and_slurm_when_none_is_given() -> None:
    slurm = {"SLURM_JOB_NODELIST": "spark[1-3]"}
    assert [h.name for h in cluster_hosts(environ=slurm)] == ["spark1", "spark2", "spark3"]
    assert [h.name for h in cluster_hosts(nodes=["a=h1", "b=h2"], environ=slurm)] == ["a", "b"]
    assert [h.name for h in cluster_hosts(hostfile=SAMPLES / "hostfile")][0] == "spark-01"
    with pytest.raises(ConfigError, match="one way, not --node and --hostfile"):
        cluster_hosts(nodes=["a=h"], hostfile=SAMPLES / "hostfile")
    with pytest.raises(ConfigError, match="give --inventory too"):
        cluster_hosts(nodes=["a=h"], group="sparks")
    with pytest.raises(ConfigError, match="no nodes given") as caught:
        cluster_hosts(environ={})
    assert caught.value.fix and "SLURM_JOB_NODELIST" in caught.value.fix


@pytest.mark.parametrize(("kwargs", "said"), [
    ({"nodes": ["only=h1"]}, "--node: 1 node given; a cluster needs 2 to 8"),
    ({"nodes": [f"n{i}=h{i}" for i in range(9)]}, "--node: 9 nodes given; linkcheck checks at most 8"),
    ({"environ": {"SLURM_JOB_NODELIST": "spark[01-12]"}}, "$SLURM_JOB_NODELIST: 12 nodes given"),
])
def test_fewer_than_two_or_more_than_eight_nodes_are_refused(kwargs: dict[str, object], said: str) -> None:
    with pytest.raises(ConfigError) as caught:
        cluster_hosts(**kwargs)  # type: ignore[arg-type]
    assert said in str(caught.value)
    assert cluster_hosts(nodes=[f"n{i}=h{i}" for i in range(8)])  # eight is the documented maximum

"""Ansible inventories built to hurt: groups sharing children level after level (2^levels ways down), thousands of
nested groups, circles, group names of hex letters that look like IPv6 addresses, and random group DAGs. Each is
read in time linear in its size, or refused with file:line; none hangs or ends in an internal error."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from linkcheck.cluster.inventory import MAX_GROUP_DEPTH, parse_inventory
from linkcheck.errors import ConfigError
from tests.adversarial.adversarial_helpers import one_line_error, run


def _diamonds(levels: int) -> str:
    """Two groups per level, each the parent of both groups of the level below: 2^levels ways from top to hosts."""
    out = ["[g0a]", "h1", "[g0b]", "h2"]
    for i in range(1, levels):
        for side in "ab":
            out += [f"[g{i}{side}:children]", f"g{i - 1}a", f"g{i - 1}b"]
    out += [f"[g{levels - 1}a:vars]", "ansible_user=nv"]
    return "\n".join(out) + "\n"


def _timed(text: str) -> tuple[float, object]:
    start = time.perf_counter()
    try:
        result: object = parse_inventory(text, "inv")
    except ConfigError as exc:
        result = exc
    return time.perf_counter() - start, result


@pytest.mark.parametrize("levels", [40, 60])
def test_groups_sharing_children_are_read_in_linear_time(levels: int) -> None:
    took, hosts = _timed(_diamonds(levels))
    assert took < 2, took
    assert isinstance(hosts, tuple) and [h.user for h in hosts] == ["nv", "nv"]


def test_groups_nested_past_the_bound_are_refused_at_their_line() -> None:
    text = "".join(f"[g{i}:children]\ng{i + 1}\n" for i in range(3000)) + "[g3000]\nh1\n"
    took, result = _timed(text)
    assert took < 2 and isinstance(result, ConfigError), result
    assert f"more than {MAX_GROUP_DEPTH}" in str(result) and result.line is not None


def test_a_deep_but_allowed_chain_is_read() -> None:
    text = "".join(f"[g{i}:children]\ng{i + 1}\n" for i in range(MAX_GROUP_DEPTH - 2)) + \
        f"[g{MAX_GROUP_DEPTH - 2}]\nh1 ansible_port=2222\n"
    assert [(h.name, h.port) for h in parse_inventory(text, "inv")] == [("h1", 2222)]


@pytest.mark.parametrize("size", [3, 500])
def test_a_circle_of_any_length_is_named(size: int) -> None:
    text = "".join(f"[g{i}:children]\ng{(i + 1) % size}\n" for i in range(size)) + "[h]\nh1\n"
    took, result = _timed(text)
    assert took < 2 and isinstance(result, ConfigError), result
    assert "its own child" in str(result) and result.line is not None


@pytest.mark.parametrize("name", ["db", "cafe", "beef", "dead", "abc", "fe80", "ff", "d0c5"])
def test_group_names_made_of_hex_letters_are_groups(name: str) -> None:
    text = f"[{name}]\ns1 ansible_host=198.18.0.1\n[{name}:vars]\nansible_user=nv\n[other]\ns2\n"
    hosts = parse_inventory(text, "inv")
    assert [(h.name, h.user) for h in hosts] == [("s1", "nv"), ("s2", None)]
    assert [h.name for h in parse_inventory(text, "inv", group=name)] == ["s1"]


def test_a_header_may_carry_a_comment_and_ipv6_hosts_stay_hosts() -> None:
    text = "[db]   # the database nodes\n[fd00::1]:2222\nfd00::2\n[cafe:children]  ; not a comment here\n"
    with pytest.raises(ConfigError, match="bad section header"):
        parse_inventory(text, "inv")
    hosts = parse_inventory("[db]   # the database nodes\n[fd00::1]:2222\nfd00::2\n", "inv")
    assert [(h.name, h.port) for h in hosts] == [("fd00::1", 2222), ("fd00::2", None)]


def test_an_inventory_of_more_hosts_than_the_bound_is_refused_at_its_line() -> None:
    text = "".join(f"[g{i}]\nn{i}-[0000:0099]\n" for i in range(20))
    with pytest.raises(ConfigError, match="more than 1024 hosts") as caught:
        parse_inventory(text, "inv")
    assert caught.value.line is not None


@st.composite
def _dags(draw: st.DrawFn) -> str:
    """A random inventory: groups whose children are only later groups (a DAG), hosts scattered among them."""
    count = draw(st.integers(min_value=1, max_value=40))
    lines: list[str] = []
    for i in range(count):
        later = list(range(i + 1, count))
        children = draw(st.lists(st.sampled_from(later), unique=True, max_size=6)) if later else []
        if children:
            lines += [f"[g{i}:children]", *(f"g{c}" for c in children)]
        hosts = draw(st.lists(st.integers(min_value=0, max_value=20), unique=True, max_size=3))
        lines += [f"[g{i}]", *(f"h{h}" for h in hosts)]
        if draw(st.booleans()):
            lines += [f"[g{i}:vars]", f"ansible_user=u{i}"]
    return "\n".join(lines) + "\n"


@given(_dags(), st.integers(min_value=0, max_value=39))
@settings(max_examples=60, deadline=None)
def test_random_group_dags_are_read_fast_with_each_hosts_deepest_variables(text: str, pick: int) -> None:
    took, hosts = _timed(text)
    assert took < 1, took
    assert isinstance(hosts, tuple)
    group = f"g{pick}"
    if f"[{group}]" in text:
        chosen = parse_inventory(text, "inv", group=group)
        assert {h.name for h in chosen} <= {h.name for h in hosts}


def test_the_cli_refuses_a_deep_inventory_in_one_line_before_any_node(tmp_path: Path) -> None:
    inv = tmp_path / "inv.ini"
    inv.write_text("".join(f"[g{i}:children]\ng{i + 1}\n" for i in range(3000)) + "[g3000]\nh1\nh2\n",
                   encoding="utf-8")
    one_line_error(run("check", "-i", str(inv), timeout=30), 4, "inv.ini:", "deep")


def test_the_cli_refuses_diamonds_past_the_depth_in_one_line(tmp_path: Path) -> None:
    inv = tmp_path / "inv.ini"
    inv.write_text(_diamonds(200), encoding="utf-8")
    one_line_error(run("check", "-i", str(inv), timeout=30), 4, "inv.ini:", "deep")

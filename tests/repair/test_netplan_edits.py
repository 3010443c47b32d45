"""The netplan editor finds a definition however YAML lets its key be written, keeps every comment, and refuses with
one line what it cannot edit safely.

netplan reads its files with libyaml and takes any scalar key under `ethernets:` as a definition ID
(canonical/netplan src/parse.c, handle_network_type, assert_valid_id): a comment after the key, a quoted key and
space before the colon are the same definition to it. The files edited here are netplan's own examples as Debian's
netplan.io installs them (/usr/share/doc/netplan/examples), each also re-written with those forms.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from linkcheck.app.fix import plan_for
from linkcheck.app.offline import diagnose_bundle
from linkcheck.parsers.netplan import SAFE_LOADER, parse_netplan
from linkcheck.repair.edits import (
    EditError,
    check_netplan,
    netplan_add_address,
    netplan_add_route,
    netplan_remove_address,
    netplan_set_mtu,
)
from linkcheck.repair.files import node_files
from linkcheck.repair.plan import plan_repairs

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
EXAMPLES = Path("/usr/share/doc/netplan/examples")

# The form a user reported: a comment after the interface's key.
COMMENTED = """\
# CX-7 ports, set up by hand
network:
  version: 2
  ethernets:  # both cages
    enp1s0f0np0:  # the cable to spark-b
      # static, no DHCP
      dhcp4: false
      addresses:
        - 192.168.100.10/24   # spark-a
      mtu: 1500  # raised later
    enp1s0f1np1:
      addresses: [192.168.101.10/24]
"""


def _eth(text: str, netdef: str) -> Any:
    return yaml.load(text, Loader=SAFE_LOADER)["network"]["ethernets"][netdef]  # libyaml, as netplan reads it


def _comments(text: str) -> list[str]:
    return [m.group(0).strip() for m in re.finditer(r"(?<!\S)#.*", text)]


@pytest.mark.parametrize("header", [
    "    enp1s0f0np0:  # the cable to spark-b",
    "    'enp1s0f0np0':",
    '    "enp1s0f0np0":  # quoted',
    "    enp1s0f0np0 :",
    "    'enp1s0f0np0'   :   # spaced",
    "    enp1s0f0np0:\t# a tab after the colon (libyaml reads it as space)",
])
def test_each_way_of_writing_the_key_is_the_one_definition(header: str) -> None:
    text = COMMENTED.replace("    enp1s0f0np0:  # the cable to spark-b", header)
    after = netplan_set_mtu(text, "enp1s0f0np0", 9000)
    check_netplan(after, "enp1s0f0np0", ("192.168.100.10/24",), 9000)
    assert after.count("enp1s0f0np0") == 1 and len(parse_netplan(after).ethernets) == 2
    assert header in after.split("\n")
    assert "      mtu: 9000  # raised later" in after.split("\n")  # the line's comment stays
    assert _comments(after) == _comments(text)
    routed = netplan_add_route(text, "enp1s0f0np0", "192.168.102.0/24", "192.168.100.11")
    assert _eth(routed, "enp1s0f0np0")["routes"] == [{"to": "192.168.102.0/24", "via": "192.168.100.11"}]
    added = netplan_add_address(text, "enp1s0f0np0", "192.168.100.20/24")
    assert _eth(added, "enp1s0f0np0")["addresses"] == ["192.168.100.10/24", "192.168.100.20/24"]
    assert _comments(added) == _comments(text) and _comments(routed) == _comments(text)


def test_quoted_and_spaced_keys_inside_the_definition_are_its_keys() -> None:
    text = COMMENTED.replace("      mtu: 1500  # raised later", '      "mtu" : 1500  # raised later').replace(
        "      addresses:\n", "      'addresses':  # the list\n")
    after = netplan_set_mtu(text, "enp1s0f0np0", 9000)
    assert _eth(after, "enp1s0f0np0")["mtu"] == 9000 and after.count("mtu") == 1
    added = netplan_add_address(text, "enp1s0f0np0", "192.168.100.20/24")
    assert _eth(added, "enp1s0f0np0")["addresses"] == ["192.168.100.10/24", "192.168.100.20/24"]
    flow = netplan_add_address(text, "enp1s0f1np1", "192.168.101.20/24")
    assert _eth(flow, "enp1s0f1np1")["addresses"] == ["192.168.101.10/24", "192.168.101.20/24"]


def test_an_address_goes_into_the_addresses_list_not_a_routes_list_after_it() -> None:
    text = COMMENTED.replace("      mtu: 1500  # raised later\n",
                             "      routes:\n        - to: 10.0.0.0/8\n          via: 192.168.100.1\n")
    added = netplan_add_address(text, "enp1s0f0np0", "192.168.100.20/24")
    eth = _eth(added, "enp1s0f0np0")
    assert eth["addresses"] == ["192.168.100.10/24", "192.168.100.20/24"]
    assert eth["routes"] == [{"to": "10.0.0.0/8", "via": "192.168.100.1"}]


# libyaml, which netplan parses with, starts a comment at a `#` it meets between tokens (yaml/libyaml 840b65c
# src/scanner.c 1945-1959, yaml_parser_scan_to_next_token), which is after blanks or a flow indicator such as `]`;
# inside a plain scalar only a `#` after a blank ends it (3433-3436, yaml_parser_scan_plain_scalar), and a quoted
# scalar holds a `#` as text. An address taken out of a flow list leaves the rest of its line as it was.
_FLOW_LINE = "      addresses: [192.168.101.10/24]"


@pytest.mark.parametrize(("line", "old", "after", "addresses"), [
    ("      addresses: [192.168.101.10/24, 192.168.101.11/24]  # both cages", "192.168.101.11/24",
     "      addresses: [192.168.101.10/24]  # both cages", ["192.168.101.10/24"]),
    ("      addresses: [192.168.101.10/24, 192.168.101.11/24]  # both cages", "192.168.101.10/24",
     "      addresses: [192.168.101.11/24]  # both cages", ["192.168.101.11/24"]),
    ("      addresses: [192.168.101.10/24]  # the only one", "192.168.101.10/24",
     "      addresses: []  # the only one", []),
    ("      addresses: [192.168.101.10/24, 192.168.101.11/24]  # see [1], [2]", "192.168.101.11/24",
     "      addresses: [192.168.101.10/24]  # see [1], [2]", ["192.168.101.10/24"]),
    ("      addresses: [192.168.101.10/24, 192.168.101.11/24]# glued to the bracket", "192.168.101.11/24",
     "      addresses: [192.168.101.10/24]# glued to the bracket", ["192.168.101.10/24"]),
    ("      'addresses': [\"192.168.101.10/24\", '192.168.101.11/24']  # quoted", "192.168.101.10/24",
     "      'addresses': ['192.168.101.11/24']  # quoted", ["192.168.101.11/24"]),
    # A `#` inside a quoted scalar is the label's text, not a comment (netplan takes a label as any scalar:
    # canonical/netplan src/parse.c handle_address_option_label).
    ("      addresses: [192.168.101.10/24, {\"192.168.101.12/24\": {label: \"cx7 #2\"}}]  # on the cable",
     "192.168.101.10/24",
     "      addresses: [{\"192.168.101.12/24\": {label: \"cx7 #2\"}}]  # on the cable",
     [{"192.168.101.12/24": {"label": "cx7 #2"}}]),
    ("      addresses: [192.168.101.10/24, 192.168.101.11/24]", "192.168.101.11/24",
     "      addresses: [192.168.101.10/24]", ["192.168.101.10/24"]),
])
def test_an_address_leaves_a_flow_list_and_the_line_keeps_its_comment(line: str, old: str, after: str,
                                                                       addresses: list[Any]) -> None:
    text = COMMENTED.replace(_FLOW_LINE, line)
    removed = netplan_remove_address(text, old)
    assert removed == text.replace(line, after)  # that line alone changes
    assert _eth(removed, "enp1s0f1np1")["addresses"] == addresses
    assert _eth(removed, "enp1s0f0np0") == _eth(text, "enp1s0f0np0")


@pytest.mark.parametrize(("line", "after"), [
    ("      addresses: [192.168.101.10/24]  # see [1]",
     "      addresses: [192.168.101.10/24, 192.168.101.20/24]  # see [1]"),
    ("      addresses: [192.168.101.10/24]# glued to the bracket",
     "      addresses: [192.168.101.10/24, 192.168.101.20/24]# glued to the bracket"),
    ("      addresses: [{\"192.168.101.12/24\": {label: \"cx7 #2\"}}]  # on the cable",
     "      addresses: [{\"192.168.101.12/24\": {label: \"cx7 #2\"}}, 192.168.101.20/24]  # on the cable"),
    ("      addresses: []  # none yet", "      addresses: [192.168.101.20/24]  # none yet"),
    (_FLOW_LINE, "      addresses: [192.168.101.10/24, 192.168.101.20/24]"),
])
def test_an_address_joins_a_flow_list_and_the_line_keeps_its_comment(line: str, after: str) -> None:
    text = COMMENTED.replace(_FLOW_LINE, line)
    added = netplan_add_address(text, "enp1s0f1np1", "192.168.101.20/24")
    assert added == text.replace(line, after)
    assert _eth(added, "enp1s0f1np1")["addresses"][-1] == "192.168.101.20/24"


@pytest.mark.parametrize(("old", "gone"), [("192.168.100.10/24", "# spark-a"), ("192.168.100.11/24", "# spare")])
def test_an_address_leaves_a_block_list_with_its_own_comment_and_no_other(old: str, gone: str) -> None:
    text = COMMENTED.replace("        - 192.168.100.10/24   # spark-a\n",
                             "        - 192.168.100.10/24   # spark-a\n        - 192.168.100.11/24  # spare\n")
    removed = netplan_remove_address(text, old)
    assert _eth(removed, "enp1s0f0np0")["addresses"] == [a for a in ("192.168.100.10/24", "192.168.100.11/24")
                                                         if a != old]
    assert _comments(removed) == [c for c in _comments(text) if c != gone]


@pytest.mark.parametrize(("line", "lines", "says"), [
    # `#` right after the address is part of the scalar (`192.168.100.11/24#spare`): not the address asked for.
    ("        - 192.168.100.10/24   # spark-a",
     "        - 192.168.100.10/24   # spark-a\n        - 192.168.100.11/24#spare", "not a list item of its own"),
    (_FLOW_LINE, "      addresses: [192.168.101.10/24]  # was 192.168.100.11/24",
     "not an item of the 'addresses:' list"),
    (_FLOW_LINE, "      addresses: [192.168.101.10/24,\n        192.168.100.11/24]", "over more than one line"),
])
def test_an_address_that_is_not_an_item_of_its_own_line_is_refused(line: str, lines: str, says: str) -> None:
    text = COMMENTED.replace(line, lines)
    with pytest.raises(EditError, match=re.escape(says)) as refused:
        netplan_remove_address(text, "192.168.100.11/24")
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize(("text", "says"), [
    (COMMENTED.replace("    enp1s0f0np0:", "\tenp1s0f0np0:"), "line 5: a tab where YAML wants spaces"),
    (COMMENTED.replace("      dhcp4: false", "\t  dhcp4: false"), "line 7: a tab where YAML wants spaces"),
    (COMMENTED + "---\nnetwork: {}\n", "not valid YAML at line 13"),
    ("network: {ethernets: {enp1s0f0np0: {mtu: 1500}}}\n", "no block-style 'ethernets:' mapping"),
    (COMMENTED.replace("    enp1s0f0np0:  # the cable to spark-b\n", "    enp1s0f0np0: {mtu: 1500}\n    x:\n"),
     "no block-style definition of enp1s0f0np0"),
    (COMMENTED.replace("  # the cable to spark-b", " &base") + "    enp1s0f2np2: *base\n", "anchors and aliases"),
    (COMMENTED + "    enp1s0f0np0:\n      mtu: 1\n", "enp1s0f0np0 is defined twice"),
    (COMMENTED.replace("      dhcp4: false", "      mtu: 1500\n      dhcp4: false"), "'mtu:' appears twice"),
    (COMMENTED.replace("      mtu: 1500  # raised later", "      mtu:\n        1500"), "not a value on its own line"),
    (COMMENTED.replace("# static", "# stat\u2028ic"), "line breaks other than"),
    (COMMENTED.replace("    enp1s0f0np0:", "    enp1s0f9np9:"), "no block-style definition of enp1s0f0np0"),
    ("# nothing but a comment\n", "no single 'network:' mapping"),
])
def test_what_cannot_be_edited_safely_is_refused_with_one_line(text: str, says: str) -> None:
    with pytest.raises(EditError, match=re.escape(says)) as refused:
        netplan_set_mtu(text, "enp1s0f0np0", 9000)
    assert "\n" not in str(refused.value)


def test_the_plan_persists_the_mtu_in_a_file_whose_definition_carries_a_comment() -> None:
    outcome = diagnose_bundle(FIXTURES / "mtu-mismatch")
    files = node_files(outcome.bundle, "b")
    (path,) = files.netplan
    assert "    enP2p1s0f1np1:\n" in files.netplan[path]
    commented = files.netplan[path].replace("    enP2p1s0f1np1:\n", "    'enP2p1s0f1np1':  # the cable to a\n")
    nodes = {"a": node_files(outcome.bundle, "a"), "b": msgspec.structs.replace(files, netplan={path: commented})}
    plan = plan_repairs(outcome.link, outcome.diagnosis.findings, nodes)
    assert plan_for(outcome).steps[0].persistent is not None  # the plain file: persisted, as before
    (step,) = plan.steps
    assert step.persistent is not None and plan.not_planned == ()
    assert "+      mtu: 9000" in step.persistent.diff and "the cable to a" in step.persistent.diff


# --- netplan's own examples, plain and re-written -------------------------------------------------------------
def _examples() -> list[tuple[str, str, str]]:
    """(file, text, ethernets definition) of each installed example with a block-style ethernets definition."""
    found = []
    for path in sorted(EXAMPLES.glob("*.yaml")) if EXAMPLES.is_dir() else []:
        text = path.read_text()
        eth = (yaml.safe_load(text) or {}).get("network", {}).get("ethernets") or {}
        found += [(path.name, text, str(netdef)) for netdef, body in eth.items()
                  if isinstance(body, dict) and f"{netdef}: {{" not in text]
    return found


EXAMPLE_DEFS = _examples()
needs_examples = pytest.mark.skipif(not EXAMPLE_DEFS, reason=f"netplan.io's examples are not in {EXAMPLES}")
_KEY_LINE = re.compile(r"^(\s*)([A-Za-z0-9][A-Za-z0-9_.-]*):((\s.*)?)$")


def _dress(text: str, choices: list[tuple[int, int, bool, bool]]) -> str:
    """The same YAML with each block mapping key written another way: quoted ('k' or "k"), spaces before the colon,
    a comment after the line, a comment line before it."""
    out = []
    for i, line in enumerate(text.split("\n")):
        quote, spaces, comment, above = choices[i % len(choices)]
        m = _KEY_LINE.match(line)
        if m is None or line.lstrip().startswith("#"):
            out.append(line)
            continue
        key = f"{'' if quote == 0 else chr(39) if quote == 1 else chr(34)}{m.group(2)}"
        key += key[0] if quote else ""
        rest = m.group(3)
        if above:
            out.append(f"{m.group(1)}# before {m.group(2)}")
        tail = f"  # after {m.group(2)}" if comment and "#" not in rest and "|" not in rest else ""
        out.append(f"{m.group(1)}{key}{' ' * spaces}:{rest}{tail}")
    return "\n".join(out)


@needs_examples
@pytest.mark.parametrize(("name", "text", "netdef"), EXAMPLE_DEFS, ids=[f"{n}:{d}" for n, _, d in EXAMPLE_DEFS])
def test_netplans_examples_take_each_edit(name: str, text: str, netdef: str) -> None:
    eth = _eth(text, netdef)
    after = netplan_set_mtu(text, netdef, 9000)
    assert _eth(after, netdef)["mtu"] == 9000 and _comments(after) == _comments(text)
    others = yaml.safe_load(text)["network"]["ethernets"]
    assert {k: v for k, v in yaml.safe_load(after)["network"]["ethernets"].items() if k != netdef} == \
        {k: v for k, v in others.items() if k != netdef}
    if not isinstance(eth.get("routes", []), list) or "routes:" in text and "routes: [" in text:
        return
    routed = netplan_add_route(text, netdef, "192.0.2.0/24", "198.51.100.1")
    assert _eth(routed, netdef)["routes"][-1] == {"to": "192.0.2.0/24", "via": "198.51.100.1"}


@needs_examples
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(example=st.sampled_from(EXAMPLE_DEFS or [("", "", "")]),
       choices=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2), st.booleans(), st.booleans()),
                        min_size=1, max_size=12))
def test_a_rewritten_example_is_edited_as_the_plain_one(example: tuple[str, str, str],
                                                        choices: list[tuple[int, int, bool, bool]]) -> None:
    _, text, netdef = example
    dressed = _dress(text, choices)
    assert yaml.safe_load(dressed) == yaml.safe_load(text)  # the same YAML, written another way
    after = netplan_set_mtu(dressed, netdef, 9000)
    assert yaml.safe_load(after) == yaml.safe_load(netplan_set_mtu(text, netdef, 9000))
    assert _comments(after) == _comments(dressed)
    assert len(after.split("\n")) - len(dressed.split("\n")) in (0, 1)  # one line added or one replaced

"""A node's strings in a suggested fix line are one shell word each: quoted by the renderer (shlex.quote), so a
NetworkManager profile id or a netdev holding `'`, `;` or `$(...)` cannot break out of the command."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec.structs import replace

from linkcheck.app.offline import diagnose_bundle, diagnose_facts
from linkcheck.bundle.format import load_bundle
from linkcheck.diagnose import engine
from linkcheck.diagnose.checks.netplan import _remedy
from linkcheck.diagnose.observation import Observation, ShellText
from linkcheck.diagnose.playbook import PLACEHOLDER_RE, load_playbooks
from linkcheck.errors import PlaybookError
from linkcheck.facts.model import NetplanIntent, NmRuntimeProfile
from linkcheck.facts.nccl_hca import unset_command
from tests.adversarial.adversarial_helpers import ROOT

HOSTILE = [
    "it's",
    "x'; touch /tmp/pwned; echo '",
    "$(reboot)",
    "`id`",
    "a b",
    "p\nsudo rm -rf /",
    '"; id; "',
    "-rf",
    "\\'",
]


def _nm_fix(profile: str) -> str:
    """The nmcli fix line of NM_PROFILE_RUNTIME_ONLY for a node whose runtime profile has this id."""
    fixture = ROOT / "fixtures" / "nm-profile-runtime-only"
    outcome = diagnose_bundle(fixture)
    link = outcome.link
    node = link.a if link.a.nm_runtime else link.b
    odd = replace(node, nm_runtime=tuple(replace(p, profile_id=profile) for p in node.nm_runtime))
    assert isinstance(odd.nm_runtime[0], NmRuntimeProfile)
    link = replace(link, a=odd) if node is link.a else replace(link, b=odd)
    rules = [r for r in load_playbooks() if r.id == "NM_PROFILE_RUNTIME_ONLY"]
    found = diagnose_facts(load_bundle(fixture), link, rules).diagnosis.findings
    fixes = [line for f in found if f.fix for line in f.fix if "nmcli connection modify" in line]
    assert fixes, found
    return fixes[0]


@pytest.mark.parametrize("profile", HOSTILE)
def test_nmcli_profile_is_one_word(profile: str) -> None:
    line = _nm_fix(profile)
    command = line[line.index("sudo nmcli"):line.index(" (a modify")]
    assert shlex.split(command) == ["sudo", "nmcli", "connection", "modify", profile, "connection.autoconnect", "yes"]


def test_a_plain_name_is_not_quoted() -> None:
    line = _nm_fix("cx7-runtime")
    assert "sudo nmcli connection modify cx7-runtime connection.autoconnect yes" in line


@settings(max_examples=60, deadline=None)
@given(st.text(min_size=1, max_size=30))
def test_every_placeholder_of_every_fix_is_one_word(value: str) -> None:
    """Every built-in fix template, each placeholder filled with the same arbitrary text: each place holds
    exactly shlex.quote(text), so whatever the text, the shell reads it as one word."""
    marker = "\x00MARK\x00"
    for rule in load_playbooks():
        for template in rule.fix:
            names = PLACEHOLDER_RE.findall(template)
            if not names:
                continue
            rendered = engine.render(template, engine.shell_words({n: value for n in names}))
            expected = PLACEHOLDER_RE.sub(marker, template).replace(marker, shlex.quote(value))
            assert rendered == expected


def test_check_composed_text_is_kept_and_its_parts_are_quoted() -> None:
    values = {"remedy": ShellText("sudo ip neigh del 10.0.0.1 dev " + shlex.quote("e'th")), "node": "b'"}
    out = engine.render("on node {node}: {remedy}", engine.shell_words(values))
    assert out == "on node 'b'\"'\"'': sudo ip neigh del 10.0.0.1 dev 'e'\"'\"'th'"


@pytest.mark.parametrize("source", HOSTILE[:4])
def test_gid_pin_source_is_quoted(source: str) -> None:
    text = unset_command("NCCL_IB_GID_INDEX", source, "remove NCCL_IB_GID_INDEX")  # what the GID rule's remedy says
    assert shlex.split(text)[-1] == source


@pytest.mark.parametrize("netdef", HOSTILE[:4])
def test_netplan_remedy_quotes_the_node_names(netdef: str) -> None:
    fields = {name: None for name in NetplanIntent.__struct_fields__}
    intent = NetplanIntent(**{**fields, "netdev": "x", "netdef_id": netdef, "source": "/etc/netplan/a b.yaml",
                              "addresses": (), "dhcp4": False})
    text = _remedy(intent, ["address 10.0.0.1/24"], ["address 10.0.0.2/24"])
    assert shlex.quote(netdef) in text and "'/etc/netplan/a b.yaml'" in text


@pytest.mark.parametrize("quoted", ["'{netdev}'", '"{netdev}"'])
def test_a_quoted_placeholder_in_a_fix_is_refused(tmp_path: Path, quoted: str) -> None:
    book = tmp_path / "p.yaml"
    book.write_text(
        "rules:\n  - id: MY_RULE\n    title: t\n    severity: warning\n    scope: function\n"
        "    when: {fact: mtu, lt: 9000}\n    message: m\n    mechanism: m\n"
        f"    fix:\n      - \"sudo ip link set dev {quoted.replace(chr(34), chr(92) + chr(34))} mtu 9000\"\n")
    with pytest.raises(PlaybookError, match="quoted in 'fix'"):
        load_playbooks([book])


def test_no_builtin_fix_quotes_a_placeholder() -> None:
    for rule in load_playbooks():
        for line in rule.fix:
            assert not re.search(r"""(['"])\{[\w.]+\}\1""", line), (rule.id, line)


def test_observation_values_keep_shelltext() -> None:
    obs = Observation("s", True, values={"remedy": ShellText("a b")})
    assert isinstance(obs.value_map()["remedy"], ShellText)

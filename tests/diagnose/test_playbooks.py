"""The playbook loader is strict: every mistake names file and line; valid user playbooks are used."""

from __future__ import annotations

from pathlib import Path

import pytest

from linkcheck.diagnose.playbook import load_playbooks, parse_playbook
from linkcheck.errors import PlaybookError

GOOD = """\
playbook: site
rules:
  - id: MTU_NOT_JUMBO
    title: A used twin is not at MTU 9000
    severity: warning
    scope: function
    where: {fact: used, eq: true}
    when: {fact: mtu, lt: $jumbo}
    thresholds: {jumbo: 9000}
    needs: [addresses]
    message: "{label} has MTU {mtu}, site policy is {thresholds.jumbo}"
    fix: ["sudo ip link set dev {netdev} mtu {thresholds.jumbo}"]
"""


def _error(text: str) -> PlaybookError:
    with pytest.raises(PlaybookError) as info:
        parse_playbook(text, "site.yaml")
    return info.value


def test_builtin_playbooks_load_with_all_issue_rules() -> None:
    ids = {r.id for r in load_playbooks()}
    assert {"GID_INDEX_STALE", "GID_INDEX_EMPTY_PIN", "GID_INDEX_DIFFERS", "LINK_HOTPLUG_DEGRADED",
            "SINGLE_PCIE_PATH", "TWINS_SAME_SUBNET", "MTU_MISMATCH", "LINK_DOWN", "PCIE_LINK_DEGRADED",
            "CABLE_NOT_APPROVED", "NCCL_SOCKET_FALLBACK", "NCCL_BUSBW_LOW", "LINK_BELOW_NOMINAL"} <= ids


def test_good_user_rule_parses() -> None:
    (rule,) = parse_playbook(GOOD, "site.yaml")
    assert rule.id == "MTU_NOT_JUMBO" and rule.thresholds == {"jumbo": 9000}
    assert rule.source == "site.yaml:3"


@pytest.mark.parametrize(
    ("old", "new", "reason", "line"),
    [
        ("    title:", "    titel:", "unknown key 'titel'", 4),
        ("when: {fact: mtu, lt: $jumbo}", "when: {fact: mtu, lessthan: $jumbo}", "unknown operator lessthan", 8),
        ("when: {fact: mtu,", "when: {fact: mtuu,", "unknown fact path 'mtuu'", 8),
        ("{mtu}, site", "{mtuu}, site", "unknown placeholder {mtuu}", 11),
        ("lt: $jumbo}", "lt: $jumbos}", "threshold '$jumbos' is not defined", 8),
        ("severity: warning", "severity: fatal", "severity must be one of", 5),
        ("needs: [addresses]", "needs: [adresses]", "unknown fact group 'adresses'", 10),
        ("id: MTU_NOT_JUMBO", "id: mtu-not-jumbo", "must be UPPER_SNAKE", 3),
        ("    scope: function\n", "    scope: galaxy\n", "scope must be one of", 6),
    ],
)
def test_mistakes_name_the_line(old: str, new: str, reason: str, line: int) -> None:
    assert old in GOOD
    err = _error(GOOD.replace(old, new))
    assert reason in err.reason
    assert err.line == line
    assert str(err).startswith(f"site.yaml:{line}: ")


def test_yaml_syntax_error_has_line() -> None:
    err = _error("playbook: x\nrules:\n  - id: A\n   title: [unclosed\n")
    assert err.line is not None and "invalid YAML" in err.reason


def test_duplicate_key_and_duplicate_id(tmp_path: Path) -> None:
    assert "duplicate key" in _error(GOOD.replace("    severity: warning\n", "    severity: warning\n"
                                                  "    severity: error\n")).reason
    extra = tmp_path / "dup.yaml"
    extra.write_text(GOOD.replace("MTU_NOT_JUMBO", "MTU_MISMATCH"))
    with pytest.raises(PlaybookError, match="duplicate rule id MTU_MISMATCH"):
        load_playbooks([extra])


def test_named_check_must_exist_and_get_its_thresholds() -> None:
    text = ("playbook: x\nrules:\n  - id: A\n    title: t\n    severity: error\n    check: nope\n"
            "    message: m\n")
    assert "unknown check 'nope'" in _error(text).reason
    text = text.replace("check: nope", "check: nccl_busbw_low")
    assert "needs threshold 'fail_below_busbw_gbs'" in _error(text).reason


def test_no_eval_python_tags_rejected() -> None:
    err = _error("playbook: x\nrules:\n  - !!python/object/apply:os.system ['true']\n")
    assert "invalid YAML" in err.reason


def test_user_playbook_folder_is_loaded(tmp_path: Path) -> None:
    (tmp_path / "site.yaml").write_text(GOOD)
    ids = [r.id for r in load_playbooks([tmp_path])]
    assert "MTU_NOT_JUMBO" in ids and "GID_INDEX_STALE" in ids
    with pytest.raises(PlaybookError, match="no such playbook"):
        load_playbooks([tmp_path / "missing.yaml"])

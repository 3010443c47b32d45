"""Plain comparisons of facts are `when:` conditions, not named Python checks: twins sharing a subnet (node facts
shared_subnet / shared_netdevs) and NCCL's socket fallback (the `nccl` scope: the NCCL test's result)."""

from __future__ import annotations

from pathlib import Path

import pytest

from linkcheck.app.offline import diagnose_bundle
from linkcheck.diagnose.checks.registry import CHECKS
from linkcheck.diagnose.facts_schema import nccl_values
from linkcheck.diagnose.playbook import load_playbooks, parse_playbook
from linkcheck.errors import PlaybookError
from linkcheck.model import Status

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def test_comparisons_are_conditions_not_named_checks() -> None:
    rules = {r.id: r for r in load_playbooks()}
    converted = (("TWINS_SAME_SUBNET", "twins_same_subnet"), ("NCCL_SOCKET_FALLBACK", "nccl_socket_fallback"))
    for rule_id, check in converted:
        assert rules[rule_id].check is None and rules[rule_id].when is not None, rule_id
        assert check not in CHECKS
    assert rules["NCCL_SOCKET_FALLBACK"].scope == "nccl"


def _rule(extra: str) -> str:
    return ("playbook: t\nrules:\n  - id: T\n    title: t\n    severity: warning\n    message: \"{network}\"\n"
            + extra)


def test_the_nccl_scope_takes_the_nccl_results_facts() -> None:
    [rule] = parse_playbook(_rule("    scope: nccl\n    when: {fact: busbw_gbs, lt: 5}\n"
                                  "    unknown: no result row\n"), "t.yaml")
    assert rule.unknown == "no result row"
    with pytest.raises(PlaybookError, match="'lt' compares numbers, but fact 'uses_socket' is bool"):
        parse_playbook(_rule("    scope: nccl\n    when: {fact: uses_socket, lt: 5}\n"), "t.yaml")
    with pytest.raises(PlaybookError, match="unknown fact path 'mtu' for scope 'nccl'"):
        parse_playbook(_rule("    scope: nccl\n    when: {fact: mtu, lt: 5}\n"), "t.yaml")
    assert set(nccl_values(None).values()) == {None}


def test_unknown_belongs_to_when_rules() -> None:
    with pytest.raises(PlaybookError, match="'unknown' is the skip reason of a 'when' rule") as raised:
        parse_playbook(_rule("    check: link_down\n    unknown: nothing\n").replace('"{network}"', "x"), "t.yaml")
    assert raised.value.line == 8  # the line of `unknown:`


def test_the_converted_rules_judge_as_before() -> None:
    twins = diagnose_bundle(FIXTURES / "twins-same-subnet").diagnosis.findings
    fired = [f for f in twins if f.rule_id == "TWINS_SAME_SUBNET" and f.status is Status.WARN]
    assert [f.subject for f in fired] and all(" share subnet " in f.message for f in fired)
    socket = diagnose_bundle(FIXTURES / "nccl-socket-fallback").diagnosis.findings
    [fallback] = [f for f in socket if f.rule_id == "NCCL_SOCKET_FALLBACK"]
    assert fallback.subject == "nccl" and fallback.status is Status.FAIL and "(TCP sockets)" in fallback.message

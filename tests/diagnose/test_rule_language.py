"""The rule language carries what the named checks did in Python for plain comparisons: per-item subjects
(`subject:` over a scope, the pair, each HCA of a baseline), computed texts (`values:`), graded severity
(`grades:`), the evidence shown (`evidence:`, `each:` for a mapping) and a skip reason with placeholders
(`unknown:`). Eight of the 23 named checks are `when:` conditions now, and judge as they did."""

from __future__ import annotations

from pathlib import Path

import pytest
from msgspec.structs import replace

from linkcheck.app.offline import diagnose_bundle
from linkcheck.baseline.store import read_baseline
from linkcheck.bundle.format import load_bundle
from linkcheck.diagnose.checks.registry import CHECKS
from linkcheck.diagnose.engine import diagnose
from linkcheck.diagnose.playbook import load_playbooks, parse_playbook
from linkcheck.errors import PlaybookError
from linkcheck.facts.pair import build_link_facts
from linkcheck.model import Evidence, Severity, Status

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
CONVERTED = {"TWINS_SAME_SUBNET": "twins_same_subnet", "NCCL_SOCKET_FALLBACK": "nccl_socket_fallback",
             "GID_INDEX_EMPTY_PIN": "gid_index_empty_pin", "GID_INDEX_DIFFERS": "gid_index_differs",
             "NCCL_HCA_UNCABLED": "nccl_hca_uncabled", "DRIFT_IDENTITY": "drift_identity",
             "DRIFT_CONFIG": "drift_config", "DRIFT_GID_INDEX": "drift_gid_index"}


def test_eight_named_checks_are_conditions() -> None:
    rules = {r.id: r for r in load_playbooks()}
    for rule_id, check in CONVERTED.items():
        assert rules[rule_id].check is None and rules[rule_id].when is not None, rule_id
        assert check not in CHECKS, check
    assert len([c for c in CHECKS.values() if not c.cluster]) == 28 - len(CONVERTED)  # the pair's named checks


def _findings(name: str, rule_id: str, baseline: str | None = None) -> list:  # type: ignore[type-arg]
    base = read_baseline(FIXTURES / name / baseline) if baseline else None
    return [f for f in diagnose_bundle(FIXTURES / name, baseline=base).diagnosis.findings if f.rule_id == rule_id]


def test_the_converted_rules_judge_as_the_checks_did() -> None:
    empty = _findings("gid-empty-pin", "GID_INDEX_EMPTY_PIN")
    assert [(f.subject, f.status, f.severity) for f in empty] == [("node a", Status.PASS, Severity.INFO),
                                                                  ("node b", Status.PASS, Severity.INFO)]
    assert empty[0].evidence == (Evidence("NCCL_IB_GID_INDEX", "", "environment"),
                                 Evidence("NCCL version", "2.28.9", "libnccl.so"))
    assert "set but empty on node a (from environment)" in empty[0].message
    unset = _findings("healthy", "GID_INDEX_EMPTY_PIN")
    assert [f.evidence[0] for f in unset] == [Evidence("NCCL_IB_GID_INDEX", None, "not set")] * 2

    uncabled = [f for f in _findings("nccl-hca-uncabled", "NCCL_HCA_UNCABLED") if f.status is Status.WARN]
    assert [f.subject for f in uncabled] == ["a:rocep1s0f0", "b:rocep1s0f0"]
    assert "which is in cage p0, not the cabled p1;" in uncabled[0].message
    assert uncabled[0].fix[0].startswith("on node a: export NCCL_IB_HCA=roceP2p1s0f1,rocep1s0f1 ")
    assert [e.fact for e in uncabled[0].evidence] == ["NCCL_IB_HCA", "cage of enp1s0f0np0", "rocep1s0f0 port state"]
    # Its port is DOWN: NCCL skips it (net_ib.cc ncclIbInit keeps ACTIVE ports only), and the message says so.
    assert "NCCL skips it while its port is not ACTIVE" in uncabled[0].message
    assert "NCCL uses it" not in uncabled[0].message
    # A twin of the cabled cage without carrier: skipped too, the node's NCCL on fewer twins until it is back.
    [down] = [f for f in _findings("link-down", "NCCL_HCA_UNCABLED") if f.status is Status.WARN]
    assert "has its RDMA port DOWN; NCCL skips it" in down.message and "fewer twins" in down.message
    assert "a cable in that cage" not in down.message


def test_a_listed_port_that_is_active_off_the_cable_is_said_to_be_taken_by_nccl() -> None:
    """The field report's case (getainode/ainode#89): the extra port is live, so NCCL takes it beside the twins."""
    bundle = load_bundle(FIXTURES / "nccl-hca-uncabled")
    link = build_link_facts(bundle.captures, bundle.collection_errors)
    live = tuple(replace(f, rdma_state="ACTIVE") if f.rdma_dev == "rocep1s0f0" else f for f in link.a.functions)
    link = replace(link, a=replace(link.a, functions=live))
    [finding] = [f for f in diagnose(link, load_playbooks()).findings
                 if f.rule_id == "NCCL_HCA_UNCABLED" and f.subject == "a:rocep1s0f0"]
    assert finding.status is Status.WARN
    assert "NCCL uses it beside the cable's twins" in finding.message and "skips" not in finding.message

    moved = _findings("drift-after-reboot", "DRIFT_GID_INDEX", "baseline.json")
    [fired] = [f for f in moved if f.status is Status.FAIL]
    assert fired.subject == "b:roceP2p1s0f1" and fired.severity is Severity.ERROR
    assert "index 3 in baseline" in fired.message and "is pinned (from /etc/nccl.conf)" in fired.message
    assert fired.evidence[0].value == {"baseline": 3, "now": 4}
    [config] = [f for f in _findings("drift-after-reboot", "DRIFT_CONFIG", "baseline.json")]
    assert config.status is Status.WARN and config.message.startswith("2 setting(s) differ from baseline")
    assert [e.source for e in config.evidence] == [f"baseline {config.message.split()[5]}"] * 2
    assert _findings("healthy", "DRIFT_IDENTITY") == []  # no baseline: no finding


GOOD = """\
playbook: site
rules:
  - id: SITE_JUMBO
    title: t
    severity: error
    scope: function
    subject: "{node}/{netdev}"
    where: {fact: used, eq: true}
    when: {fact: mtu, le: $jumbo}
    thresholds: {jumbo: 9000}
    grades:
      - {when: {fact: domain, eq: "0002"}, severity: warning}
    values:
      size:
        - {when: {fact: mtu, ge: $jumbo}, text: jumbo}
        - text: "small ({mtu})"
      said: "{size} frames"
    evidence:
      - {fact: mtu, name: "MTU of {netdev}", source: ip link}
    message: "{label} runs {said}"
"""


def test_a_user_rule_takes_subject_values_grades_and_evidence() -> None:
    rules = parse_playbook(GOOD, "site.yaml")
    link = build_link_facts(load_bundle(FIXTURES / "healthy").captures)
    found = {f.subject: f for f in diagnose(link, rules).findings}
    assert set(found) == {"a/enp1s0f1np1", "a/enP2p1s0f1np1", "b/enp1s0f1np1", "b/enP2p1s0f1np1"}
    assert found["a/enp1s0f1np1"].status is Status.FAIL and found["a/enP2p1s0f1np1"].status is Status.WARN
    assert found["a/enp1s0f1np1"].message == "a:enp1s0f1np1 runs jumbo frames"
    assert found["a/enp1s0f1np1"].evidence == (Evidence("MTU of enp1s0f1np1", 9000, "ip link"),)


@pytest.mark.parametrize(("old", "new", "reason"), [
    ('text: "small ({mtu})"', 'text: "small ({nope})"', "unknown placeholder {nope} in 'values.size'"),
    ('said: "{size} frames"', 'said: "{said} frames"', "unknown placeholder {said} in 'values.said'"),
    ("      size:\n", "      mtu:\n", "value 'mtu' must be a name of its own"),
    ("{fact: mtu, name:", "{fact: mtu, each: mtu, name:", "exactly one of 'fact'"),
    ("{fact: mtu, name:", "{each: mtu, name:", "'each' takes a fact that holds a mapping"),
    ('name: "MTU of {netdev}"', 'name: "MTU of {entry}"', "unknown placeholder {entry}"),
    ("severity: warning}", "severity: fatal}", "'rules[0].grades[0].severity' is 'fatal'"),
    ('subject: "{node}/{netdev}"', 'subject: "{nod}"', "unknown placeholder {nod} in 'subject'"),
    ("    message:", "    explained_by: [SITE_JUMBO]\n    message:", "explained_by names 'SITE_JUMBO'"),
    ("    scope: function\n", "    check: link_down\n", "'subject' belongs to a 'when' rule"),
])
def test_the_new_keys_are_checked_when_the_file_loads(old: str, new: str, reason: str) -> None:
    assert old in GOOD
    with pytest.raises(PlaybookError) as raised:
        parse_playbook(GOOD.replace(old, new).replace("    when: {fact: mtu, le: $jumbo}\n", "", "check:" in new),
                       "site.yaml")
    assert reason in raised.value.reason and raised.value.line is not None, str(raised.value)


def test_explained_by_names_a_known_rule(tmp_path: Path) -> None:
    book = tmp_path / "site.yaml"
    book.write_text(GOOD.replace("    message:", "    explained_by: [NO_SUCH_RULE]\n    message:"))
    with pytest.raises(PlaybookError, match="explained_by names no rule NO_SUCH_RULE") as raised:
        load_playbooks([book])
    assert raised.value.line == 3
    book.write_text(GOOD.replace("    message:", "    explained_by: [LINK_DOWN, {rule: MTU_MISMATCH, "
                                                "same_subject: true}]\n    message:"))
    [rule] = [r for r in load_playbooks([book]) if r.id == "SITE_JUMBO"]
    assert [(c.rule, c.same_subject) for c in rule.explained_by] == [("LINK_DOWN", False), ("MTU_MISMATCH", True)]


def test_a_skip_reason_takes_placeholders() -> None:
    text = GOOD.replace("    message:", '    unknown: "{netdev} has no MTU"\n    message:')
    rules = parse_playbook(text, "site.yaml")
    link = build_link_facts(load_bundle(FIXTURES / "healthy").captures)
    from msgspec.structs import replace

    b = replace(link.b, functions=tuple(replace(f, mtu=None) if f.netdev == "enp1s0f1np1" else f
                                        for f in link.b.functions))
    [skip] = [f for f in diagnose(replace(link, b=b), rules).findings if f.status is Status.SKIP]
    assert skip.subject == "b/enp1s0f1np1" and skip.skip_reason == "enp1s0f1np1 has no MTU"

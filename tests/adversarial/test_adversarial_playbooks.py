"""Hostile or mistaken playbooks are refused by `playbooks validate` with file:line, fast, never run."""

from __future__ import annotations

from pathlib import Path

import pytest

from linkcheck.diagnose.conditions import UnknownFact, evaluate
from linkcheck.diagnose.operands import MAX_MATCH_INPUT, regex_problem
from linkcheck.diagnose.rule import Condition
from tests.adversarial.adversarial_helpers import HEALTHY, one_line_error, run

RULE = """playbook: site
rules:
  - id: SITE_RULE
    title: t
    severity: warning
    scope: {scope}
    when: {when}
    thresholds: {thresholds}
    message: "m"
"""


def _book(tmp_path: Path, when: str, thresholds: str = "{}", scope: str = "function") -> Path:
    path = tmp_path / "site.yaml"
    path.write_text(RULE.format(when=when, thresholds=thresholds, scope=scope), encoding="utf-8")
    return path


BAD_OPERANDS = [
    ("{fact: mtu, lt: $j}", "{j: big}", "function", "needs a number"),
    ("{fact: mtu, lt: abc}", "{}", "function", "needs a number"),
    ("{fact: mtu, lt: true}", "{}", "function", "needs a number"),
    ("{fact: mtu, lt: [1, 2]}", "{}", "function", "needs a number"),
    ("{fact: mtu, ge: null}", "{}", "function", "needs a number"),
    ("{fact: netdev, lt: 5}", "{}", "function", "is text"),
    ("{fact: carrier, gt: 0}", "{}", "function", "is bool"),
    ("{fact: hostname, le: 3}", "{}", "node", "is text"),
    ("{fact: a.netdev, lt: 3}", "{}", "path", "is text"),
    ("{fact: mtu, in: 5}", "{}", "function", "needs a list"),
    ("{fact: mtu, not_in: abc}", "{}", "function", "needs a list"),
    ("{fact: mtu, in: [[1]]}", "{}", "function", "needs a list"),
    ("{fact: mtu, between: 5}", "{}", "function", "[low, high]"),
    ("{fact: mtu, between: [9000]}", "{}", "function", "[low, high]"),
    ("{fact: mtu, between: [9000, 1500]}", "{}", "function", "low <= high"),
    ("{fact: mtu, between: [a, b]}", "{}", "function", "[low, high]"),
    ("{fact: mtu, below_baseline: fast}", "{}", "function", "below_baseline"),
    ("{fact: mtu, below_baseline: {baseline: x}}", "{}", "function", "below_baseline"),
    ("{fact: mtu, below_baseline: {baseline: 5, tolerance_pct: 500}}", "{}", "function", "below_baseline"),
    ("{fact: mtu, below_baseline: {tolerance_pct: 5}}", "{}", "function", "below_baseline"),
    ("{fact: netdev, below_baseline: 5}", "{}", "function", "is text"),
    ("{fact: mtu, eq: [1, 2]}", "{}", "function", "needs one value"),
    ("{fact: mtu, ne: {a: 1}}", "{}", "function", "needs one value"),
    ("{fact: mtu, missing: yes please}", "{}", "function", "true or false"),
    ("{fact: netdev, matches: 5}", "{}", "function", "as text"),
    ("{fact: netdev, matches: '^((.*)*)*Z$'}", "{}", "function", "nested quantifier"),
    ("{fact: netdev, matches: '(a+)+$'}", "{}", "function", "nested quantifier"),
    ("{fact: netdev, matches: '(\\d+\\.)*x'}", "{}", "function", "nested quantifier"),
    ("{fact: netdev, matches: '(x|xx)+y'}", "{}", "function", "alternation"),
    ("{fact: netdev, matches: '.*.*.*Z'}", "{}", "function", "unbounded repeats"),
    ("{fact: netdev, matches: '(a)\\1'}", "{}", "function", "back-references"),
    ("{fact: netdev, matches: '['}", "{}", "function", "invalid"),
    ("{fact: netdev, matches: $p}", "{p: '(a*)*'}", "function", "nested quantifier"),
]


@pytest.mark.parametrize(("when", "thresholds", "scope", "reason"), BAD_OPERANDS)
def test_wrong_operand_refused_at_load(tmp_path: Path, when: str, thresholds: str, scope: str, reason: str) -> None:
    book = _book(tmp_path, when, thresholds, scope)
    one_line_error(run("playbooks", "validate", str(book), timeout=30), 4, "site.yaml:7", reason)


@pytest.mark.parametrize(("when", "thresholds", "scope"), [
    ("{fact: mtu, lt: $j}", "{j: 9000}", "function"),
    ("{fact: mtu, between: [1500, 9000]}", "{}", "function"),
    ("{fact: mtu, in: [1500, 9000]}", "{}", "function"),
    ("{fact: netdev, matches: '^enp[0-9]+s0f[01]np[01]$'}", "{}", "function"),
    ("{fact: mtu, below_baseline: {baseline: 9000, tolerance_pct: 5}}", "{}", "function"),
    ("{fact: uptime_s, lt: 600}", "{}", "node"),
    ("{fact: a.mtu, ne: 9000}", "{}", "path"),
])
def test_right_operands_still_load(tmp_path: Path, when: str, thresholds: str, scope: str) -> None:
    proc = run("playbooks", "validate", str(_book(tmp_path, when, thresholds, scope)), timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("ok:")


ALIAS_BOMB = """playbook: bomb
description: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]
rules: []
x: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
"""


def _bomb(levels: int) -> str:
    lines = ["playbook: bomb", 'description: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels):
        lines.append(f"k{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\nrules: []\n"


@pytest.mark.parametrize("text", [
    _bomb(9),
    "playbook: x\ndescription: &d hello\nrules:\n  - id: A\n    title: *d\n",
    RULE.format(when="{fact: mtu, lt: $j}", thresholds="&t {j: 1}", scope="function") + "    fix: [*t]\n",
], ids=["billion-laughs", "alias-in-title", "alias-in-thresholds"])
def test_aliases_refused(tmp_path: Path, text: str) -> None:
    book = tmp_path / "bomb.yaml"
    book.write_text(text, encoding="utf-8")
    one_line_error(run("playbooks", "validate", str(book), timeout=30), 4, "bomb.yaml", "aliases")


@pytest.mark.parametrize(("text", "reason"), [
    ("playbook: x\nrules: []\n# " + "x" * (1 << 20) + "\n", "larger than"),
    ("playbook: x\nrules: " + "[" * 200 + "]" * 200 + "\n", "nested deeper"),
    ("playbook: x\nrules: []\n\xff\xfe", "cannot read"),
    ("playbook: x\nrules: !!python/object/apply:os.system [true]\n", "invalid YAML"),
    ("- just\n- a list\n", "must be a mapping"),
    ("playbook: x\nrules: {a: 1}\n", "must be a list"),
    ("playbook: x\nrules:\n  - 5\n", "must be a mapping"),
], ids=["huge", "deep", "not-utf8", "python-tag", "list", "rules-mapping", "rule-scalar"])
def test_malformed_files(tmp_path: Path, text: str, reason: str) -> None:
    book = tmp_path / "bad.yaml"
    book.write_bytes(text.encode("utf-8", "surrogateescape") if "\xff" not in text else text.encode("latin-1"))
    one_line_error(run("playbooks", "validate", str(book), timeout=30), 4, "bad.yaml", reason)


def test_runaway_regex_never_reaches_diagnose(tmp_path: Path) -> None:
    book = _book(tmp_path, "{fact: netdev, matches: '^((.*)*)*Z$'}")
    one_line_error(run("diagnose", str(HEALTHY), "-p", str(book), timeout=30), 4, "site.yaml:7")


def test_long_fact_is_not_matched_but_unknown() -> None:
    cond = Condition("matches", fact="netdev", value="^a.*b$")
    assert evaluate(cond, {"netdev": "a" + "x" * 100 + "b"}, {})
    with pytest.raises(UnknownFact, match="longer than"):
        evaluate(cond, {"netdev": "a" * (MAX_MATCH_INPUT + 1)}, {})


def test_text_fact_in_numeric_comparison_is_unknown_not_a_crash() -> None:
    with pytest.raises(UnknownFact):
        evaluate(Condition("lt", fact="mtu", value=5), {"mtu": "big"}, {})


@pytest.mark.parametrize("pattern", ["(a*)*b", "(?:x+)+", "(a|ab)*c", "(.*){2,}", "(x{1,5})*"])
def test_regex_problem_names_the_risk(pattern: str) -> None:
    assert regex_problem(pattern) is not None


@pytest.mark.parametrize("pattern", ["^MCP1650-V0\\d{2}E26$", "(a|b)*", "x.*y", "^(\\d{1,3}\\.){3}\\d{1,3}$"])
def test_regex_problem_accepts_plain_patterns(pattern: str) -> None:
    assert regex_problem(pattern) is None

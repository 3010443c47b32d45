"""A profile names rule thresholds instead of restating them: one value and one source, in the playbook.

A profile may tighten a named threshold (a stricter value with its own source); a looser one is refused at load
with file:line, since the run would then not be the standard acceptance.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from linkcheck.accept.judge import AcceptVerdict, judge_check
from linkcheck.accept.profile import BUILTIN_DIR, ProfileError, load_profile_file, parse_profile
from linkcheck.accept.text import describe_profile
from linkcheck.app.offline import diagnose_bundle
from linkcheck.diagnose.playbook import load_playbooks, with_thresholds
from tests.conftest import run_cli

ROOT = Path(__file__).resolve().parents[2]
PROFILE = BUILTIN_DIR / "dgx-spark-pair.yaml"
GOOD = PROFILE.read_text(encoding="utf-8")
WARN = "      threshold: NCCL_BUSBW_LOW.min_busbw_gbs\n      unit: GB/s\n"
CABLE = "      threshold: CABLE_NOT_APPROVED.approved_part_numbers\n      unit: part number\n"


def _rules() -> dict[str, dict[str, object]]:
    return {r.id: dict(r.thresholds) for r in load_playbooks()}


def _line(text: str, needle: str) -> int:
    return next(i for i, ln in enumerate(text.splitlines(), 1) if needle in ln)


def test_shipped_profile_takes_each_rule_threshold_from_its_playbook() -> None:
    rules = {r.id: r for r in load_playbooks()}
    profile = load_profile_file(PROFILE)
    named = {t.rule: t for c in profile.checks for t in c.thresholds if t.rule}
    assert set(named) == {"NCCL_BUSBW_LOW.min_busbw_gbs", "NCCL_BUSBW_LOW.fail_below_busbw_gbs",
                          "PCIE_LINK_DEGRADED.min_width", "PCIE_LINK_DEGRADED.min_speed_gts",
                          "CABLE_NOT_APPROVED.approved_part_numbers"}
    for ref, t in named.items():
        rule_id, name = ref.split(".")
        value = rules[rule_id].thresholds[name]
        assert (list(t.value) if isinstance(t.value, tuple) else t.value) == value, ref
        assert t.source == " ".join(rules[rule_id].threshold_sources[name].split()) and not t.tightened, ref
    # declared once: the profile file restates none of those values
    for restated in ("21.65", "value: 8\n", "NJAAKK-N911", "value: 32\n", "value: 4\n"):
        assert restated not in GOOD, restated


def test_a_changed_rule_threshold_changes_the_profile() -> None:
    rules = with_thresholds(load_playbooks(), {"NCCL_BUSBW_LOW": {"min_busbw_gbs": 22.5}}, "test")
    nccl = parse_profile(GOOD, "p.yaml", rules).check("nccl_busbw_gbs")
    assert nccl is not None and nccl.thresholds[-1].value == 22.5


def test_profiles_show_names_the_rule_of_each_threshold() -> None:
    text = describe_profile(load_profile_file(PROFILE))
    assert "warn_below: >= 21.65 GB/s (else DEGRADED), from NCCL_BUSBW_LOW.min_busbw_gbs" in text
    assert "fail_below: >= 4 lanes (else FAIL), from PCIE_LINK_DEGRADED.min_width" in text
    tightened = parse_profile(GOOD.replace(WARN, WARN + "      value: 22\n      source: site practice\n"), "p.yaml")
    assert "warn_below: >= 22 GB/s (else DEGRADED), tightened from NCCL_BUSBW_LOW.min_busbw_gbs (21.65 GB/s)" \
        in describe_profile(tightened)
    assert "source: site practice" in describe_profile(tightened)


def test_a_tighter_cable_list_is_allowed() -> None:
    text = GOOD.replace(CABLE, CABLE + "      value: [NJAAKK-N911]\n      source: site stock\n")
    check = parse_profile(text, "p.yaml").check("cable_part_number")
    assert check is not None and check.thresholds[0].value == ("NJAAKK-N911",) and check.thresholds[0].tightened


def test_a_tightened_threshold_is_judged_by_its_value() -> None:
    outcome = diagnose_bundle(ROOT / "fixtures" / "healthy")
    text = GOOD.replace("      threshold: PCIE_LINK_DEGRADED.min_speed_gts\n      unit: GT/s\n",
                        "      threshold: PCIE_LINK_DEGRADED.min_speed_gts\n      unit: GT/s\n      value: 64\n"
                        "      source: a Gen6 site\n")
    check = parse_profile(text, "p.yaml").check("pcie_speed_gts")
    assert check is not None
    results = judge_check(check, outcome.link, 1)
    assert results and all(r.status is AcceptVerdict.FAIL for r in results)


BAD = {
    "looser warn line": (GOOD.replace(WARN, WARN + "      value: 20\n      source: x\n"), "value: 20",
                         "nccl_busbw_gbs.warn_below: 20 GB/s is looser than NCCL_BUSBW_LOW.min_busbw_gbs (21.65 GB/s)"),
    "looser cable list": (GOOD.replace(CABLE, CABLE + "      value: [NJAAKK-N911, ANY-CABLE]\n      source: x\n"),
                          "value: [NJAAKK-N911, ANY-CABLE]", "is looser than CABLE_NOT_APPROVED.approved_part_numbers"),
    "unknown rule": (GOOD.replace("threshold: NCCL_BUSBW_LOW.min_busbw_gbs",
                                  "threshold: NCCL_BUSBW_SLOW.min_busbw_gbs"),
                     "NCCL_BUSBW_SLOW", "no rule NCCL_BUSBW_SLOW"),
    "unknown threshold": (GOOD.replace("threshold: NCCL_BUSBW_LOW.min_busbw_gbs", "threshold: NCCL_BUSBW_LOW.min_gbs"),
                          "NCCL_BUSBW_LOW.min_gbs", "rule NCCL_BUSBW_LOW has no threshold 'min_gbs'"),
    "not a reference": (GOOD.replace("threshold: NCCL_BUSBW_LOW.min_busbw_gbs", "threshold: 21.65"),
                        "threshold: 21.65", "must name a rule's threshold as RULE_ID.name"),
    "a second source": (GOOD.replace(WARN, WARN + "      source: my own\n"), "source: my own",
                        "'source' goes only with a tighter 'value'"),
    "tighter without source": (GOOD.replace(WARN, WARN + "      value: 22\n"), "value: 22", "needs its own 'source'"),
    "no unit": (GOOD.replace(WARN, "      threshold: NCCL_BUSBW_LOW.min_busbw_gbs\n"), "threshold: NCCL_BUSBW_LOW.min",
                "needs unit"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_reference_is_one_line_with_file_and_line(case: str, tmp_path: Path) -> None:
    text, needle, message = BAD[case]
    assert text != GOOD, "the test's edit did not apply"
    path = tmp_path / "site.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ProfileError) as raised:
        load_profile_file(path)
    assert message in str(raised.value), str(raised.value)
    assert raised.value.line == _line(text, needle), (str(raised.value), _line(text, needle))
    if case == "looser warn line":
        proc = run_cli("profiles", "validate", str(path), timeout=60)
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        assert proc.returncode == 4 and len(lines) == 1 and f"site.yaml:{raised.value.line}:" in lines[0], proc.stderr


def test_a_band_is_judged_by_the_rule_engines_comparison() -> None:
    """Each band carries the rule language's operator and is compared as a `when:` condition compares a fact:
    a non-finite rate, which no rule takes as a number, never passes a floor."""
    from linkcheck.accept.judge import Measured, _numeric, _textual
    from linkcheck.diagnose.conditions import compare

    profile = load_profile_file(PROFILE)
    ops = {c.id: [t.op for t in c.thresholds] for c in profile.checks}
    assert ops["nccl_busbw_gbs"] == ["ge", "ge"] and ops["nccl_wrong"] == ["le"] and ops["cable_part_number"] == ["in"]
    alone = profile.check("rdma_alone_gbps")
    assert alone is not None
    assert _numeric(alone, Measured("p", (float("inf"),))).status is AcceptVerdict.FAIL
    assert _numeric(alone, Measured("p", (92.0,))).status is AcceptVerdict.PASS
    assert compare("ge", 92.0, 92) and not compare("ge", 91.99, 92)
    cable = profile.check("cable_part_number")
    assert cable is not None
    assert _textual(cable, Measured("node a", texts=("NJAAKK0006",))).status is AcceptVerdict.PASS
    assert _textual(cable, Measured("node a", texts=("OTHER",))).status is AcceptVerdict.FAIL


def test_a_required_rule_that_could_not_judge_is_inconclusive() -> None:
    """`require` overlays the rules: NM_PROFILE_RUNTIME_ONLY is optional for `check`, and its skip on a bundle
    without the NetworkManager capture leaves an acceptance that requires it inconclusive."""
    from linkcheck.accept.judge import judge

    outcome = diagnose_bundle(ROOT / "fixtures" / "real-healthy-gx10")
    skipped = [f for f in outcome.diagnosis.findings if f.rule_id == "NM_PROFILE_RUNTIME_ONLY"]
    assert skipped and all(f.status.value == "skip" and not f.required for f in skipped)
    plain = judge(outcome.link, outcome.diagnosis, parse_profile(GOOD, "p.yaml"), 1)
    required = judge(outcome.link, outcome.diagnosis,
                     parse_profile(GOOD.replace("require: [", "require: [NM_PROFILE_RUNTIME_ONLY, "), "p.yaml"), 1)
    assert required.verdict is AcceptVerdict.INCONCLUSIVE
    assert ("NM_PROFILE_RUNTIME_ONLY", "skip", skipped[0].subject) in required.findings
    assert not any(r == "NM_PROFILE_RUNTIME_ONLY" for r, _, _ in plain.findings)


def test_require_names_known_rules(tmp_path: Path) -> None:
    text = GOOD.replace("require: [", "require: [NO_SUCH_RULE, ")
    path = tmp_path / "site.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ProfileError, match="'require' names no rule NO_SUCH_RULE") as raised:
        load_profile_file(path)
    assert raised.value.line == _line(text, "require:")
    shown = describe_profile(load_profile_file(PROFILE))
    assert "required rules (a skip is INCONCLUSIVE): PCIE_LINK_DEGRADED, CABLE_NOT_APPROVED" in shown


@pytest.mark.parametrize(("test_section", "message"), [
    ("test: {rdma: {qps: 2, colour: 1}}",
     "unknown key 'colour' in 'test.rdma'; expected one of duration_s, qps, size_bytes"),
    ("test: {repetitions: true}", "'repetitions' must be an integer from 1 to 100, got True"),
    ("test: {nccl: {max_bytes: 2.5}}", "'max_bytes' must be an integer from 8 to 1099511627776, got 2.5"),
    ("test: [1]", "'test' must be a mapping"),
])
def test_the_profile_shape_is_a_msgspec_model(test_section: str, message: str, tmp_path: Path) -> None:
    """The profile's sections are msgspec models with forbid_unknown_fields; their errors name file:line."""
    from linkcheck.accept import profile as profile_module

    for name in ("_ProfileDoc", "_TestDoc", "_RdmaDoc", "_NcclDoc", "_BandDoc"):
        assert getattr(profile_module, name).__struct_config__.forbid_unknown_fields, name
    text = GOOD.replace("test:\n", test_section + "\nold_test:\n", 1).replace(
        "old_test:\n  repetitions: 3 ", "# repetitions: 3 ").replace("\n  rdma: {", "\n# rdma: {").replace(
        "\n  nccl: {", "\n# nccl: {")
    path = tmp_path / "site.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ProfileError) as raised:
        load_profile_file(path)
    assert message in str(raised.value) and raised.value.line == _line(text, test_section), str(raised.value)

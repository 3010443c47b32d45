"""`linkcheck accept` offline: the profile loader, the judging of repeated runs, the record in the bundle, reports.

Repeated runs are built from fixtures/healthy: each ib_write_bw client output copied once per repetition with
its own `round` meta and its result row rewritten to the rate the test wants, written with write_bundle.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from msgspec.structs import replace

from linkcheck.accept.judge import AcceptVerdict, judge
from linkcheck.accept.profile import BUILTIN_DIR, ProfileError, load_profile_file, parse_profile, resolve_profile
from linkcheck.app.offline import diagnose_bundle
from linkcheck.bundle.acceptance import ACCEPTANCE, PROFILE_COPY, write_acceptance
from linkcheck.bundle.format import Bundle, load_bundle, write_bundle
from linkcheck.bundle.verify import verify_bundle
from linkcheck.model import Capture
from linkcheck.outcome import Outcome
from tests.conftest import CliResult, run_cli

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
PROFILE = BUILTIN_DIR / "dgx-spark-pair.yaml"
ROW = re.compile(r"^(\s*1048576\s+\d+\s+[\d.]+\s+)([\d.]+)", re.MULTILINE)


def _cli(*args: str) -> CliResult:
    return run_cli(*args, cwd=ROOT, timeout=60)


# -- building repeated runs ----------------------------------------------------------------------------------


def _with_rate(cap: Capture, gbps: float) -> Capture:
    text, n = ROW.subn(lambda m: f"{m.group(1)}{gbps:.2f}", cap.stdout)
    assert n == 1, cap.stdout
    return replace(cap, stdout=text)


def _repeated(tmp: Path, rates: dict[tuple[str, int], float] | None = None, *, repetitions: int = 3,
              nccl_from: str | None = None, drop_nccl: bool = False, concurrent_gbps: float | None = None,
              name: str = "bundle") -> Path:
    """fixtures/healthy with its RDMA runs `repetitions` times; rates[(run label, n)] rewrites one run's row,
    where the label is `<mode>.<direction>.<device>` of the client."""
    source = load_bundle(FIXTURES / "healthy")
    rdma = [c for c in source.captures if c.meta.get("kind") == "rdma"]
    captures = [c for c in source.captures if c.meta.get("kind") not in ("rdma", "nccl")]
    for n in range(1, repetitions + 1):
        for cap in rdma:
            meta = cap.meta
            label = f"{meta['mode']}.{meta['direction']}.{meta['local_rdma_dev']}"
            rnd = f"{meta['mode']}-{meta['direction'].replace('->', '2')}-rep{n}"
            new = replace(cap, meta={**meta, "round": rnd})
            if meta["role"] == "client":
                if (label, n) in (rates or {}):
                    new = _with_rate(new, (rates or {})[(label, n)])
                elif concurrent_gbps is not None and meta["mode"] == "concurrent":
                    new = _with_rate(new, concurrent_gbps)
            captures.append(new)
    if not drop_nccl:
        nccl_bundle = load_bundle(FIXTURES / (nccl_from or "healthy"))
        captures += [c for c in nccl_bundle.captures if c.meta.get("kind") == "nccl"]
    target = tmp / name
    write_bundle(Bundle(captures=captures, nodes=source.nodes), target)
    return target


def _accept(bundle: Path, repetitions: int = 3, profile_text: str | None = None) -> tuple[Outcome, dict]:  # type: ignore[type-arg]
    outcome = diagnose_bundle(bundle)
    profile = parse_profile(profile_text, "site.yaml") if profile_text else load_profile_file(PROFILE)
    acceptance = judge(outcome.link, outcome.diagnosis, profile, repetitions)
    return outcome, acceptance.to_dict()


def _checks(doc: dict, check_id: str) -> list[dict]:  # type: ignore[type-arg]
    return [c for c in doc["checks"] if c["id"] == check_id]


# -- the shipped profile ----------------------------------------------------------------------------------------


def test_shipped_profile_states_value_unit_and_source_of_every_threshold() -> None:
    profile = resolve_profile("dgx-spark-pair")
    assert profile.test.repetitions == 3 and profile.source == "built-in (dgx-spark-pair.yaml)"
    want = {"rdma_alone_gbps": 92, "rdma_concurrent_gbps": 90, "rdma_concurrent_total_gbps": 185,
            "nccl_busbw_gbs": 21.65, "nccl_wrong": 0, "pcie_speed_gts": 32, "pcie_width": 4}
    for check_id, value in want.items():
        check = profile.check(check_id)
        assert check is not None and check.thresholds[-1].value == value, check_id
    for check in profile.checks:
        for t in check.thresholds:
            assert t.unit == check.spec.unit and "spark-link s." in t.source, (check.id, t)
    nccl = profile.check("nccl_busbw_gbs")
    assert nccl is not None and [t.band for t in nccl.thresholds] == ["fail_below", "warn_below"]
    assert nccl.thresholds[0].value < nccl.thresholds[1].value


def test_profiles_commands() -> None:
    listed = _cli("profiles", "list")
    assert listed.returncode == 0 and listed.stdout.startswith("built-in acceptance profiles"), listed.stderr
    assert "\ndgx-spark-pair\n  Two GB10 nodes" in listed.stdout
    shown = _cli("profiles", "show", "dgx-spark-pair")
    assert shown.returncode == 0 and "warn_below: >= 21.65 GB/s (else DEGRADED)" in shown.stdout
    ok = _cli("profiles", "validate", str(PROFILE))
    assert ok.returncode == 0 and ok.stdout.startswith("ok: profile dgx-spark-pair, 10 checks"), ok.stderr
    unknown = _cli("profiles", "show", "no-such-profile")
    assert unknown.returncode == 4 and "no profile 'no-such-profile'" in unknown.stderr


# -- bad profiles: one line naming file:line, exit 4 ------------------------------------------------------------

GOOD = PROFILE.read_text(encoding="utf-8")
# The profile takes the NCCL warn line from the rule (declared once, in playbooks/nccl.yaml); a site tightens it.
_BUSBW_WARN = "      threshold: NCCL_BUSBW_LOW.min_busbw_gbs\n      unit: GB/s\n"


def _line_of(text: str, needle: str, nth: int = 0) -> int:
    lines = [i for i, ln in enumerate(text.splitlines(), 1) if needle in ln]
    return lines[nth]


BAD = {
    "unknown top key": (GOOD.replace("version: 1\n", "version: 1\ncolour: red\n"), "colour: red",
                        "unknown key 'colour'"),
    "unknown check": (GOOD.replace("  rdma_alone_gbps:\n", "  rdma_alone_gbits:\n"), "rdma_alone_gbits:",
                      "unknown check 'rdma_alone_gbits'"),
    "unknown threshold key": (GOOD.replace("      value: 92\n", "      value: 92\n      colour: red\n"),
                              "colour: red", "unknown key 'colour'"),
    "wrong type": (GOOD.replace("      value: 92\n", "      value: fast\n"), "value: fast", "must be a number"),
    "wrong unit": (GOOD.replace("      value: 185\n      unit: Gb/s\n", "      value: 185\n      unit: GB/s\n"),
                   "unit: GB/s", "unit must be 'Gb/s'"),
    "no source": (GOOD.replace("      value: 0\n      unit: errors\n      source:",
                               "      value: 0\n      unit: errors\n      comment:"), "comment:",
                  "unknown key 'comment'"),
    "impossible floor": (GOOD.replace("      value: 185\n", "      value: 250\n"), "value: 250",
                         "can never be measured"),
    "negative": (GOOD.replace("      value: 0\n      unit: errors", "      value: -1\n      unit: errors"),
                 "value: -1", "is impossible"),
    "warn floor under fail floor": (GOOD.replace(_BUSBW_WARN, _BUSBW_WARN + "      value: 5\n      source: x\n"),
                                    "warn_below:",
                                    "warn_below 5 is under fail_below 8"),
    "two paths over the cage": (GOOD.replace("      value: 90\n", "      value: 120\n"), "rdma_concurrent_gbps:",
                                "exceed the cage's 200 Gb/s"),
    "repetitions": (GOOD.replace("repetitions: 3 ", "repetitions: 0 "), "repetitions: 0",
                    "'repetitions' must be an integer from 1 to 100"),
    "same must be true": (GOOD.replace("      value: true\n      unit: serial",
                                       "      value: false\n      unit: serial"), "value: false", "must be true"),
    "version": (GOOD.replace("version: 1\n", "version: 2\n"), "version: 2", "'version' must be 1"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_profile_is_one_line_with_file_and_line(case: str, tmp_path: Path) -> None:
    text, needle, message = BAD[case]
    assert text != GOOD, "the test's edit did not apply"
    path = tmp_path / "site.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ProfileError) as raised:
        load_profile_file(path)
    assert message in str(raised.value), str(raised.value)
    assert raised.value.line == _line_of(text, needle), (str(raised.value), _line_of(text, needle))
    proc = _cli("profiles", "validate", str(path))
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 4 and len(lines) == 1 and f"site.yaml:{raised.value.line}:" in lines[0], proc.stderr


def test_bad_profile_stops_accept_before_any_work(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(BAD["warn floor under fail floor"][0], encoding="utf-8")
    proc = _cli("accept", "--profile", str(path), "--node", "a=nobody@192.0.2.1", "--node", "b=nobody@192.0.2.2",
                "--save", str(tmp_path / "saved"))
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 4 and len(lines) == 1 and "bad.yaml:" in lines[0], proc.stderr
    assert not (tmp_path / "saved").exists()


def test_yaml_anchor_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "alias.yaml"
    text = GOOD.replace("    fail_below:\n      value: 92", "    fail_below: &x\n      value: 92", 1)
    text = text.replace("  rdma_concurrent_gbps:\n    fail_below:\n      value: 90\n      unit: Gb/s\n",
                        "  rdma_concurrent_gbps:\n    fail_below: *x\n    _:\n      value: 90\n      unit: Gb/s\n")
    assert text.count("*x") == 1
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ProfileError, match="anchors and aliases"):
        load_profile_file(path)


# -- judging ------------------------------------------------------------------------------------------------------


def test_three_healthy_repetitions_pass_with_min_median_max(tmp_path: Path) -> None:
    rates = {("alone.a->b.rocep1s0f1", 1): 108.0, ("alone.a->b.rocep1s0f1", 3): 110.5}
    outcome, doc = _accept(_repeated(tmp_path, rates))
    assert doc["verdict"] == "PASS" and doc["exit_code"] == 0, json.dumps(doc["checks"], indent=1)
    [alone] = [c for c in _checks(doc, "rdma_alone_gbps") if c["subject"] == "enp1s0f1np1<->enp1s0f1np1 a->b"]
    assert alone["measured"] == {"unit": "Gb/s", "samples": 3, "min": 108.0, "median": 109.29, "max": 110.5,
                                 "values": [108.0, 109.29, 110.5]}
    assert alone["threshold"]["operator"] == ">=" and alone["threshold"]["value"] == 92
    assert alone["margin"] == pytest.approx(16.0)
    assert len(_checks(doc, "rdma_alone_gbps")) == 4 and len(_checks(doc, "rdma_concurrent_total_gbps")) == 2
    assert all(c["measured"]["samples"] == 3 for c in _checks(doc, "rdma_concurrent_gbps"))
    assert doc["profile"]["sha256"] == load_profile_file(PROFILE).sha256


def test_the_minimum_decides(tmp_path: Path) -> None:
    """One repetition of one path below the floor fails it, although its median and the others pass."""
    rates = {("concurrent.b->a.roceP2p1s0f1", 2): 70.0}
    _, doc = _accept(_repeated(tmp_path, rates))
    assert doc["verdict"] == "FAIL" and doc["exit_code"] == 2
    bad = [c for c in doc["checks"] if c["status"] != "PASS"]
    assert {(c["id"], c["subject"]) for c in bad} == {
        ("rdma_concurrent_gbps", "enP2p1s0f1np1<->enP2p1s0f1np1 b->a"),
        ("rdma_concurrent_total_gbps", "both paths b->a")}
    per_path = next(c for c in bad if c["id"] == "rdma_concurrent_gbps")
    assert per_path["measured"]["min"] == 70.0 and per_path["measured"]["median"] > 90
    assert per_path["margin"] == pytest.approx(-20.0)
    total = next(c for c in bad if c["id"] == "rdma_concurrent_total_gbps")
    assert total["measured"]["min"] == pytest.approx(70.0 + 98.03, abs=0.1) and total["measured"]["samples"] == 3


def test_missing_nccl_is_inconclusive_never_pass(tmp_path: Path) -> None:
    _, doc = _accept(_repeated(tmp_path, drop_nccl=True))
    assert doc["verdict"] == "INCONCLUSIVE" and doc["exit_code"] == 3
    assert {c["id"] for c in doc["checks"] if c["status"] != "PASS"} == {"nccl_busbw_gbs", "nccl_wrong"}
    assert all("no NCCL" in c["reason"] for c in _checks(doc, "nccl_busbw_gbs"))


def test_fewer_repetitions_than_asked_are_inconclusive(tmp_path: Path) -> None:
    _, doc = _accept(_repeated(tmp_path, repetitions=2), repetitions=3)
    assert doc["verdict"] == "INCONCLUSIVE"
    alone = _checks(doc, "rdma_alone_gbps")[0]
    assert alone["status"] == "INCONCLUSIVE" and "1 of 3 repetitions have no run" in alone["reason"]
    _, fine = _accept(_repeated(tmp_path, repetitions=2, name="two"), repetitions=2)
    assert fine["verdict"] == "PASS"


def test_a_failing_sample_outranks_a_missing_one(tmp_path: Path) -> None:
    rates = {("alone.a->b.rocep1s0f1", 1): 13.3}
    _, doc = _accept(_repeated(tmp_path, rates, repetitions=2), repetitions=3)
    [alone] = [c for c in _checks(doc, "rdma_alone_gbps") if c["subject"] == "enp1s0f1np1<->enp1s0f1np1 a->b"]
    assert alone["status"] == "FAIL" and doc["verdict"] == "FAIL"


def test_published_healthy_gx10_figures_pass(tmp_path: Path) -> None:
    """spark-link s.8: 98.01 + 98.01 Gb/s both paths at once and all_gather 21.78 GB/s, zero #wrong."""
    _, doc = _accept(_repeated(tmp_path, concurrent_gbps=98.01, nccl_from="real-healthy-gx10"))
    assert doc["verdict"] == "PASS", [c for c in doc["checks"] if c["status"] != "PASS"]
    [busbw] = _checks(doc, "nccl_busbw_gbs")
    assert busbw["measured"]["min"] == pytest.approx(21.78) and busbw["margin"] == pytest.approx(0.13)
    assert all(c["measured"]["min"] == pytest.approx(196.02) for c in _checks(doc, "rdma_concurrent_total_gbps"))
    assert _checks(doc, "nccl_wrong")[0]["measured"]["max"] == 0


def test_busbw_in_the_warn_band_is_degraded(tmp_path: Path) -> None:
    """A site profile that asks 22 GB/s: the published 21.78 is then DEGRADED (exit 1), not FAIL."""
    site = GOOD.replace(_BUSBW_WARN, _BUSBW_WARN + "      value: 22\n      source: site practice\n")
    _, doc = _accept(_repeated(tmp_path, concurrent_gbps=98.01, nccl_from="real-healthy-gx10"), profile_text=site)
    assert doc["verdict"] == "DEGRADED" and doc["exit_code"] == 1
    [busbw] = _checks(doc, "nccl_busbw_gbs")
    assert busbw["status"] == "DEGRADED" and busbw["margin"] == pytest.approx(-0.22)


@pytest.mark.parametrize(("fixture", "check_id", "rule"), [
    ("unapproved-cable", "cable_part_number", "CABLE_NOT_APPROVED"),
    ("real-gx10-pcie-x2", "pcie_width", "PCIE_LINK_DEGRADED"),
    ("hotplug-degraded", "rdma_alone_gbps", "LINK_HOTPLUG_DEGRADED"),
    ("single-pcie-path", "rdma_concurrent_total_gbps", "SINGLE_PCIE_PATH"),
])
def test_trap_fixtures_fail_their_check(fixture: str, check_id: str, rule: str) -> None:
    outcome = diagnose_bundle(FIXTURES / fixture)
    doc = judge(outcome.link, outcome.diagnosis, load_profile_file(PROFILE), 1).to_dict()
    assert doc["verdict"] == "FAIL"
    assert any(c["status"] == "FAIL" for c in _checks(doc, check_id)), _checks(doc, check_id)
    if rule != "CABLE_NOT_APPROVED":  # a warning there: the acceptance check is what fails it
        assert any(f["id"] == rule and f["status"] == "fail" for f in doc["diagnosis"]["findings"])


def test_the_real_gx10_fixture_is_inconclusive_without_alone_runs() -> None:
    outcome = diagnose_bundle(FIXTURES / "real-healthy-gx10")
    doc = judge(outcome.link, outcome.diagnosis, load_profile_file(PROFILE), 1).to_dict()
    assert doc["verdict"] == "INCONCLUSIVE"
    assert {c["status"] for c in doc["checks"] if c["measured"].get("min") is not None} == {"PASS"}


def test_different_firmware_fails() -> None:
    outcome = diagnose_bundle(FIXTURES / "nodes-differ")
    doc = judge(outcome.link, outcome.diagnosis, load_profile_file(PROFILE), 1).to_dict()
    [fw] = _checks(doc, "firmware_same")
    assert fw["status"] == "FAIL" and "2 different values" in fw["reason"], fw


def test_a_failing_finding_fails_the_acceptance(tmp_path: Path) -> None:
    """The checks pass; a playbook rule that fails still fails the acceptance."""
    outcome = diagnose_bundle(_repeated(tmp_path))
    failing = next(f for f in outcome.diagnosis.findings if f.status.value == "pass")
    from linkcheck.model import Status, Verdict

    broken = replace(outcome.diagnosis, findings=(replace(failing, status=Status.FAIL),), verdict=Verdict.FAIL)
    acceptance = judge(outcome.link, broken, load_profile_file(PROFILE), 3)
    assert acceptance.verdict is AcceptVerdict.FAIL
    assert all(c.status is AcceptVerdict.PASS for c in acceptance.checks)
    assert acceptance.to_dict()["diagnosis"]["findings"] == [
        {"id": failing.rule_id, "status": "fail", "subject": failing.subject}]


# -- the record in the bundle, and the reports -------------------------------------------------------------------


def test_acceptance_joins_the_bundle_and_verifies(tmp_path: Path) -> None:
    bundle = _repeated(tmp_path)
    _, doc = _accept(bundle)
    write_acceptance(bundle, doc, GOOD)
    result = verify_bundle(bundle)
    assert result.ok, result.problems
    check = subprocess.run(["sha256sum", "-c", "--quiet", "SHA256SUMS"], cwd=bundle, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    assert (bundle / PROFILE_COPY).read_text(encoding="utf-8") == GOOD
    report = _cli("report", str(bundle), "--format", "json")
    assert report.returncode == 0, report.stderr
    saved = json.loads(report.stdout)["acceptance"]
    assert saved["verdict"] == "PASS" and saved["checks"] == doc["checks"]
    markdown = _cli("report", str(bundle), "--format", "markdown").stdout
    assert "## Acceptance" in markdown and "acceptance: PASS exit 0 (profile dgx-spark-pair" in markdown
    assert "| PASS | rdma\\_alone\\_gbps |" in markdown
    html = _cli("report", str(bundle), "--format", "html")
    assert html.returncode == 0 and "<script" not in html.stdout


def test_a_changed_acceptance_is_named_and_not_shown(tmp_path: Path) -> None:
    bundle = _repeated(tmp_path)
    _, doc = _accept(bundle)
    write_acceptance(bundle, doc, GOOD)
    path = bundle / ACCEPTANCE
    path.write_text(path.read_text(encoding="utf-8").replace('"FAIL"', '"PASS"').replace(
        '"verdict": "PASS"', '"verdict": "PAS5"'), encoding="utf-8")
    verify = _cli("verify", str(bundle))
    assert verify.returncode == 2 and f"changed: {ACCEPTANCE}" in verify.stdout
    refused = _cli("report", str(bundle), "--format", "json")
    assert refused.returncode == 4 and "does not verify" in refused.stderr and not refused.stdout
    report = json.loads(_cli("report", str(bundle), "--format", "json", "--allow-unverified").stdout)
    problem = report["acceptance"]["problem"]
    assert set(report["acceptance"]) == {"problem"} and ACCEPTANCE in problem and "not shown" in problem


def test_reports_without_acceptance_have_none() -> None:
    report = json.loads(_cli("report", str(FIXTURES / "healthy"), "--format", "json").stdout)
    assert report["acceptance"] is None
    assert "## Acceptance" not in _cli("report", str(FIXTURES / "healthy"), "--format", "markdown").stdout


# -- time budgets ---------------------------------------------------------------------------------------------------


def test_planned_wall_time_follows_rounds_durations_and_repetitions() -> None:
    from linkcheck.accept.budget import (
        HANDOVER_OVERHEAD_S,
        ROUND_OVERHEAD_S,
        nccl_seconds,
        plan_line,
        planned_seconds,
        rdma_rounds,
    )

    assert rdma_rounds(2) == 6 and rdma_rounds(1) == 2  # each path alone, both at once, per direction
    inspection = planned_seconds()
    once = planned_seconds(duration_s=10) - inspection
    # the first round starts from nothing; each later one is handed over during the one before (-D 10: margin 2 s)
    assert once == pytest.approx(6 * 10 + ROUND_OVERHEAD_S + 5 * HANDOVER_OVERHEAD_S)
    assert planned_seconds(duration_s=10, repetitions=3) - inspection == pytest.approx(3 * once)
    assert planned_seconds(paths=1, duration_s=10) - inspection == pytest.approx(2 * 10 + ROUND_OVERHEAD_S
                                                                                 + HANDOVER_OVERHEAD_S)
    # -D 2 leaves no margin (2 // 4 == 0): no hand-over, every round pays its own start
    assert planned_seconds(duration_s=2) - inspection == pytest.approx(6 * (2 + ROUND_OVERHEAD_S))
    assert nccl_seconds(1 << 34) > nccl_seconds(1 << 30) > 0
    line = plan_line("accept", duration_s=10, repetitions=3, nccl_max_bytes=1 << 34)
    assert line.startswith("linkcheck accept: planned wall time ~")
    assert "6 ib_write_bw rounds of 10 s x 3 repetitions" in line and "all_gather_perf up to 16 GiB" in line
    assert plan_line("check") == f"linkcheck check: planned wall time ~{inspection:.0f} s (inspection)"


def test_quick_tier_plans_its_concurrent_rounds_within_15_s() -> None:
    from linkcheck.accept.budget import measured_window_s, plan_line, planned_seconds, rdma_rounds
    from linkcheck.bench.plan import QUICK_DURATION_S, quick_options

    options = quick_options()
    assert options.duration_s == QUICK_DURATION_S and options.adaptive
    assert options.directions == ("a->b", "b->a") and options.modes == ("alone", "concurrent")
    assert rdma_rounds(2, adaptive=True) == 2 and rdma_rounds(1, adaptive=True) == 2  # one path: alone rounds
    assert planned_seconds(duration_s=QUICK_DURATION_S, adaptive=True) <= 15
    assert measured_window_s(QUICK_DURATION_S) == 2 and measured_window_s(10) == 6  # perftest: margin = D // 4
    assert measured_window_s(3) == 3  # no margin at all: why the quick tier stays at -D 4
    line = plan_line("check --quick", duration_s=QUICK_DURATION_S, traffic_total=True, adaptive=True)
    assert "2 ib_write_bw rounds of 4 s with all paths at once (8 s of traffic, 2 s measured per run)" in line, line
    assert "each path alone only where one is low: up to 4 rounds more" in line, line


@pytest.mark.parametrize("argv", [("--quick", "--bench"), ("--quick", "--duration", "5"), ("--nccl",),
                                  ("--bench", "--nccl")])
def test_quick_with_other_traffic_options_is_refused_before_any_work(argv: tuple[str, ...], tmp_path: Path) -> None:
    proc = _cli("check", *argv, "--node", "a=nobody@192.0.2.1", "--node", "b=nobody@192.0.2.2",
                "--save", str(tmp_path / "saved"))
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 4 and len(lines) == 1 and "--quick" in lines[0], proc.stderr
    assert not (tmp_path / "saved").exists()


def test_the_console_record_names_who_was_tested() -> None:
    from linkcheck.accept.text import acceptance_text

    doc = {"verdict": "PASS", "exit_code": 0, "profile": {"name": "p", "sha256": "ab" * 32}, "test": {},
           "checks": [], "evidence": {
               "nodes": {"a": {"hostname": "spark-a", "vendor": "NVIDIA", "product": "DGX Spark", "serial": "1234",
                               "bios_version": "5.36", "os": "Ubuntu 24.04.3 LTS", "kernel": "6.11.0-1016-nvidia",
                               "cx7": [{"firmware": "28.45.1020", "psid": "NVD0000000087"}]},
                         "b": {"hostname": "spark-b", "cx7": []}},
               "cable": [{"node": "a", "netdev": "enp1s0f1np1", "vendor": "NVIDIA", "part_number": "MCP1650-V00AE30",
                          "serial": "MT2412VS01234"}, {"node": "b", "netdev": None, "problem": "sudo refused"}]}}
    text = acceptance_text(doc)
    assert ("node a: spark-a, NVIDIA DGX Spark, serial 1234, BIOS 5.36, Ubuntu 24.04.3 LTS, kernel "
            "6.11.0-1016-nvidia, CX-7 firmware 28.45.1020 (NVD0000000087)") in text
    assert "node b: spark-b, ?, serial ?, BIOS ?, ?, kernel ?, CX-7 firmware ?" in text
    assert "cable seen from a (enp1s0f1np1): NVIDIA MCP1650-V00AE30, serial MT2412VS01234" in text
    assert "cable seen from b: not read (sudo refused)" in text


def test_the_markdown_report_lists_who_was_tested(monkeypatch: pytest.MonkeyPatch) -> None:
    from linkcheck.app.offline import diagnose_bundle
    from linkcheck.report import markdown
    from linkcheck.report.markdown import render_markdown

    doc = {"verdict": "PASS", "exit_code": 0, "profile": {"name": "p", "sha256": "ab" * 32}, "test": {},
           "checks": [], "evidence": {"nodes": {"a": {"hostname": "spark-a", "serial": "1234", "cx7": []}},
                                      "cable": []}}
    monkeypatch.setattr(markdown.acc, "acceptance", lambda outcome: doc)
    text = render_markdown(diagnose_bundle(Path(__file__).resolve().parents[2] / "fixtures" / "healthy"))
    assert "Tested:" in text and "- node a: spark-a, ?, serial 1234" in text

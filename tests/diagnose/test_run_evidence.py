"""Throughput evidence names each run: with repetitions, the same mode and direction ran more than once, and a list
of identical-looking lines would not say which value came from which run."""

from __future__ import annotations

from pathlib import Path

from linkcheck.app.offline import diagnose_bundle
from linkcheck.diagnose.checks.bench import run_evidence
from linkcheck.facts.model import RdmaRun

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _run(mode: str, direction: str, gbps: float) -> RdmaRun:
    return RdmaRun("p", mode, direction, gbps, "a", "rocep1s0f1")


def test_a_single_run_keeps_its_plain_name() -> None:
    [line] = run_evidence([_run("alone", "a->b", 98.1)])
    assert (line.fact, line.value, line.source) == ("ib_write_bw alone a->b", 98.1, "Gb/s")


def test_repeated_runs_say_which_run_each_is() -> None:
    lines = run_evidence([_run("alone", "a->b", 98.1), _run("concurrent", "a->b", 97.0),
                          _run("alone", "a->b", 96.5), _run("alone", "b->a", 98.0)])
    assert [e.fact for e in lines] == ["ib_write_bw alone a->b (run 1 of 2)", "ib_write_bw concurrent a->b",
                                       "ib_write_bw alone a->b (run 2 of 2)", "ib_write_bw alone b->a"]
    assert [e.value for e in lines] == [98.1, 97.0, 96.5, 98.0]


def test_an_accept_bundle_s_hot_plug_evidence_has_no_two_lines_alike() -> None:
    outcome = diagnose_bundle(FIXTURES / "accept-fail")
    fired = [f for f in outcome.diagnosis.findings if f.rule_id == "LINK_HOTPLUG_DEGRADED" and f.status.value == "fail"]
    assert fired
    for finding in fired:
        facts = [e.fact for e in finding.evidence if e.fact.startswith("ib_write_bw")]
        assert len(facts) == 8 and len(set(facts)) == len(facts), facts

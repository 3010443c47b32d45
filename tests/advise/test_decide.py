"""The advice for each acceptance case and at its boundaries, on the shipped fixtures; every figure labelled."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from linkcheck.advise.decide import MIN_TP_SPEEDUP, advise
from linkcheck.advise.model import KINDS, Advice, Workload
from linkcheck.advise.published import FIGURES
from linkcheck.app.offline import diagnose_bundle
from linkcheck.errors import UsageError
from linkcheck.outcome import Outcome

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
_CACHE: dict[str, Outcome] = {}


def outcome(name: str) -> Outcome:
    if name not in _CACHE:
        _CACHE[name] = diagnose_bundle(FIXTURES / name)
    return _CACHE[name]


def advice(name: str, **workload: object) -> Advice:
    o = outcome(name)
    return advise(o.link, o.diagnosis.findings, Workload(**workload))  # type: ignore[arg-type]


def test_fits_one_node_with_64_users_gets_two_residents() -> None:
    # kubis.ai: two solo replicas served more than vLLM TP=2 at 64 users.
    a = advice("healthy-latency", model_gib=60, concurrency=64)
    assert (a.choice, a.link_state, a.latency_measured, a.fix_first) == ("two-residents", "healthy", True, ())


def test_does_not_fit_at_batch_128_gets_pipeline_parallel() -> None:
    for moe in (True, False):
        assert advice("healthy-latency", model_gib=180, concurrency=128, moe=moe).choice == "pipeline-parallel"


def test_does_not_fit_at_batch_1_gets_tensor_parallel() -> None:
    for moe in (True, False):
        assert advice("healthy-latency", model_gib=180, concurrency=1, moe=moe).choice == "tensor-parallel"


def test_hotplug_fixture_gets_fix_the_link_first_with_what_to_fix() -> None:
    for w in ({"model_gib": 60, "concurrency": 16}, {"model_gib": 180, "concurrency": 1},
              {"model_gib": 60, "concurrency": 1}):
        a = advice("hotplug-degraded", **w)
        assert a.choice == "fix-link-first" and a.link_state == "degraded"
        assert {f.rule_id for f in a.fix_first} == {"LINK_HOTPLUG_DEGRADED"}
        assert all(f.fix and "reboot" in f.fix for f in a.fix_first)
    a = advice("hotplug-degraded", model_gib=180, concurrency=1)
    assert (a.once_fixed, a.interim) == ("tensor-parallel", None)
    assert advice("hotplug-degraded", model_gib=60, concurrency=16).interim == "two-residents"


def test_latency_findings_are_listed_under_their_cause_not_twice() -> None:
    a = advice("hotplug-latency", model_gib=180, concurrency=1)
    assert a.choice == "fix-link-first" and {f.rule_id for f in a.fix_first} == {"LINK_HOTPLUG_DEGRADED"}


def test_replica_crossover_boundary() -> None:
    # kubis.ai: vLLM TP=2 ahead of two solo replicas from 1 to 32 users, the replicas ahead at 64; unsloth's
    # 1.30/1.75/1.91x compare two llama.cpp replicas with ONE node, so they set no crossover against a split.
    assert advice("healthy-latency", model_gib=60, concurrency=16).choice == "tensor-parallel"
    assert advice("healthy-latency", model_gib=60, concurrency=32).choice == "tensor-parallel"
    between = advice("healthy-latency", model_gib=60, concurrency=33)
    assert between.choice == "two-residents" and any("nothing was measured" in r for r in between.reasons)
    at64 = advice("healthy-latency", model_gib=60, concurrency=64)
    assert not any("nothing was measured" in r for r in at64.reasons)
    gain = next(f for f in at64.figures if f.value == 1.91)
    assert "against ONE node (not a split)" in gain.name


def test_dense_tensor_parallel_up_to_batch_32_moe_below_8() -> None:
    assert advice("healthy-latency", model_gib=180, concurrency=32).choice == "tensor-parallel"
    assert advice("healthy-latency", model_gib=180, concurrency=33).choice == "pipeline-parallel"
    assert advice("healthy-latency", model_gib=180, concurrency=7, moe=True).choice == "tensor-parallel"
    assert advice("healthy-latency", model_gib=180, concurrency=8, moe=True).choice == "pipeline-parallel"


def test_context_can_push_a_model_off_one_node() -> None:
    assert advice("healthy-latency", model_gib=90, concurrency=4).choice == "tensor-parallel"
    a = advice("healthy-latency", model_gib=90, concurrency=4, context_tokens=131072, kv_kib_per_token=64)
    assert a.choice == "tensor-parallel" and any("does not fit one node" in r for r in a.reasons)
    kv = next(f for f in a.figures if f.name == "KV cache of every request's context")
    assert kv.value == pytest.approx(32.0) and kv.kind == "estimate"


def test_a_small_model_for_one_user_is_enough_on_one_node() -> None:
    a = advice("healthy-latency", model_gib=4, concurrency=1)
    assert a.choice == "one-node"
    share = next(f for f in a.figures if f.name == "collective share of a tensor-parallel decode step")
    assert share.kind == "estimate" and "all-reduces of a decode step" in share.source


def test_tensor_parallel_line_is_the_estimated_speedup() -> None:
    # 100 all-reduces at 58.5 us = 5.85 ms; x = 1.25 where one_ms / (one_ms / 2 + 5.85) = 1.25.
    one_ms = 2 * MIN_TP_SPEEDUP * 5.85 / (2 - MIN_TP_SPEEDUP)
    gib = one_ms / 1e3 * 273e9 / (1 << 30)
    assert advice("healthy-latency", model_gib=gib * 1.01, concurrency=1).choice == "tensor-parallel"
    assert advice("healthy-latency", model_gib=gib * 0.99, concurrency=1).choice == "one-node"


def test_decode_speed_is_in_tokens_per_second_at_273_gbs_and_moe_reads_its_active_weights() -> None:
    a = advice("healthy-latency", model_gib=4, concurrency=1)
    one = next(f for f in a.figures if f.name == "decode speed on one node")
    # 4 GiB read per token at 273 GB/s: 273e9 / (4 * 2**30) = 63.6 tok/s.
    assert one.unit == "tok/s" and one.value == pytest.approx(273e9 / (4 * (1 << 30)))
    assert "273 GB/s" in one.source and any("tok/s (estimate) on one node" in r for r in a.reasons)
    moe = advice("healthy-latency", model_gib=60, concurrency=1, moe=True, active_gib=3)
    assert next(f for f in moe.figures if f.name == "decode speed on one node").value == pytest.approx(
        273e9 / (3 * (1 << 30)))


def test_a_model_that_needs_both_compares_tensor_with_pipeline_parallel_not_one_node() -> None:
    a = advice("healthy-latency", model_gib=180, concurrency=1)
    assert a.choice == "tensor-parallel"
    names = {f.name for f in a.figures}
    assert {"decode speed across both, tensor parallel", "decode speed across both, pipeline parallel"} <= names
    assert "decode speed on one node" not in names
    assert any("with pipeline parallel" in r for r in a.reasons)
    assert not any("on one node and" in r for r in a.reasons)


def test_too_big_for_the_pair() -> None:
    a = advice("healthy-latency", model_gib=230, concurrency=1)
    assert a.choice == "does-not-fit" and any("8.17 tok/s (published)" in r for r in a.reasons)


def test_without_latency_runs_the_published_figures_stand_in_and_say_so() -> None:
    a = advice("healthy", model_gib=60, concurrency=1)
    assert not a.latency_measured and any("latency is not measured" in n for n in a.notes)
    coll = next(f for f in a.figures if f.name == "all-reduces of a decode step")
    # The pair's own published figure (68 us at 64 KiB), not the four-Spark 54-64 us.
    assert "published 68 us of a GB10 pair at 64 KiB (not measured" in coll.source
    assert "four Sparks" in coll.source  # the ~100 per step: where it comes from
    assert not [f for f in a.figures if f.kind == "measured" and "all_reduce" in f.name]


def test_inspection_only_bundle_says_the_link_is_not_measured() -> None:
    a = advice("fec-off", model_gib=180, concurrency=1)
    assert a.link_state == "degraded"  # FEC_NOT_RS warns: a split waits for it
    a = advice("nccl-hca-reversed", model_gib=180, concurrency=1)
    assert a.link_state == "not measured" and any("no traffic test" in n for n in a.notes)


def test_measured_latency_is_quoted_from_the_bundle() -> None:
    a = advice("healthy-latency", model_gib=60, concurrency=1)
    lat = {f.name: f for f in a.figures if f.name.startswith("ib_write_lat 48 KiB on")}
    assert {f.value for f in lat.values()} == {8.8, 8.84} and {f.kind for f in lat.values()} == {"measured"}
    reduce48 = next(f for f in a.figures if f.name == "all_reduce 48 KiB")
    assert reduce48.kind == "estimate" and "interpolated between the measured 32768 B" in reduce48.source


NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:x|%)?(?: (?:GiB|GB/s|Gb/s|GB|KiB|KB|ms|us|tok/s|users))? \((\w+)\)")


@pytest.mark.parametrize("fixture,workload", [
    ("healthy-latency", {"model_gib": 60, "concurrency": 16}),
    ("healthy-latency", {"model_gib": 180, "concurrency": 1}),
    ("healthy-latency", {"model_gib": 4, "concurrency": 1, "context_tokens": 8192}),
    ("hotplug-degraded", {"model_gib": 180, "concurrency": 128}), ("healthy", {"model_gib": 60, "concurrency": 2})])
def test_every_figure_says_what_kind_it_is(fixture: str, workload: dict[str, object]) -> None:
    a = advice(fixture, **workload)
    assert {f.kind for f in a.figures} <= set(KINDS)
    assert all(f.source for f in a.figures)
    for reason in a.reasons:
        for m in NUMBER.finditer(reason):
            assert m.group(1) in KINDS, (m.group(0), reason)


def test_published_figures_name_their_source() -> None:
    assert all(f.source and f.what for f in FIGURES)
    assert len({f.key for f in FIGURES}) == len(FIGURES)


@pytest.mark.parametrize("bad", [{"model_gib": -1.0}, {"model_gib": float("nan")}, {"model_gib": float("inf")},
                                 {"concurrency": 0}, {"context_tokens": -5}, {"kv_kib_per_token": 0.0},
                                 {"layers": 0}, {"active_gib": 500.0}])
def test_bad_workloads_are_refused(bad: dict[str, object]) -> None:
    w = {"model_gib": 60.0, "concurrency": 4, "moe": True, **bad}
    with pytest.raises(UsageError):
        Workload(**w).check()  # type: ignore[arg-type]


@settings(max_examples=60, deadline=None)
@given(st.floats(0.1, 400), st.integers(1, 512), st.booleans(), st.integers(0, 1 << 20))
def test_any_sane_workload_gets_one_choice(model: float, users: int, moe: bool, context: int) -> None:
    a = advice("healthy-latency", model_gib=model, concurrency=users, moe=moe, context_tokens=context)
    assert a.choice in ("two-residents", "tensor-parallel", "pipeline-parallel", "one-node", "does-not-fit")
    if a.choice == "two-residents":
        assert users >= 2


def test_the_lab_made_bundle_is_advised_on_its_own_measurements() -> None:
    """fixtures/healthy-latency-lab is what `check --quick --latency` wrote against the lab: the link measured
    healthy, every latency figure measured, none of them an estimate posing as a measurement."""
    a = advice("healthy-latency-lab", model_gib=60, concurrency=64)
    assert a.choice == "two-residents" and a.latency_measured and a.link_state == "healthy", a
    lat = [f for f in a.figures if f.name.startswith("ib_write_lat ") and f.kind == "measured"]
    assert len(lat) == 4 and all(f.source.startswith("this bundle") for f in lat), lat
    small = advice("healthy-latency-lab", model_gib=60, concurrency=2)
    assert small.choice == "tensor-parallel", small.headline

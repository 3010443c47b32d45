"""JUnit testcases carry the seconds their measurement ran, from the durations the bundle recorded; a NON-STANDARD
acceptance is never an all-green JUnit."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from linkcheck.app.offline import diagnose_bundle
from linkcheck.report.junit import render_junit

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _client_seconds(bundle: Path, **want: str) -> list[float]:
    """The manifest's duration_s of each ib_write_bw client capture matching `want` (read here, not by linkcheck)."""
    captures = json.loads((bundle / "manifest.json").read_text())["captures"]
    return [c["duration_s"] for c in captures if c["meta"].get("kind") == "rdma" and c["meta"].get("role") == "client"
            and all(c["meta"].get(k) == v for k, v in want.items())]


def test_each_case_carries_its_runs_seconds_and_the_suites_their_sum() -> None:
    bundle = FIXTURES / "accept-fail"
    root = ET.fromstring(render_junit(diagnose_bundle(bundle)))
    accept = root.find("testsuite[@name='linkcheck.acceptance']")
    assert accept is not None
    cases = {c.get("name"): float(c.get("time") or "nan") for c in accept.iter("testcase")}
    path = "enp1s0f1np1<->enp1s0f1np1"
    alone = _client_seconds(bundle, mode="alone", direction="a->b", path=path)
    assert len([s for s in alone if s > 0]) == 2  # two repetitions, each with its JSON capture at 0 s
    assert cases[f"rdma_alone_gbps {path} a->b"] == round(sum(alone), 3) > 10
    # Both paths ran at once: a round lasts as long as its longest run.
    rounds: dict[str, float] = {}
    captures = json.loads((bundle / "manifest.json").read_text())["captures"]
    for c in captures:
        meta = c["meta"]
        if meta.get("kind") == "rdma" and meta.get("role") == "client" and meta.get("mode") == "concurrent" \
                and meta.get("direction") == "b->a":
            rounds[meta["round"]] = max(rounds.get(meta["round"], 0.0), c["duration_s"])
    assert cases["rdma_concurrent_total_gbps both paths b->a"] == round(sum(rounds.values()), 3)
    nccl = sum(c["duration_s"] for c in captures if c["meta"].get("kind") == "nccl")
    assert cases["nccl_busbw_gbs all_gather"] == round(nccl, 3) > 0
    assert cases["cable_part_number node a"] == 0  # read from a file, not measured
    assert float(accept.get("time") or "nan") == round(sum(cases.values()), 3)

    diagnosis = root.find("testsuite[@name='linkcheck']")
    assert diagnosis is not None
    found = {c.get("name"): float(c.get("time") or "nan") for c in diagnosis.iter("testcase")}
    assert found[f"LINK_HOTPLUG_DEGRADED {path}"] == round(sum(_client_seconds(bundle, path=path)), 3)
    assert found[f"MTU_MISMATCH {path}"] == 0  # a path's rule that reads the MTU took no traffic time


def test_a_non_standard_acceptance_that_passes_is_never_all_green() -> None:
    root = ET.fromstring(render_junit(diagnose_bundle(FIXTURES / "accept-pass")))
    accept = root.find("testsuite[@name='linkcheck.acceptance']")
    assert accept is not None and accept.get("failures") == "0"
    standard = accept.find("testcase[@name='standard']")
    assert standard is not None and standard.find("skipped") is not None
    assert accept.get("skipped") == "1" and root.get("skipped") != "0"

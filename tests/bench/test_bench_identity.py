"""A traffic run is identified by the documented meta fields (node, device, mode, direction, round when present)."""

from __future__ import annotations

from pathlib import Path

from msgspec.structs import replace

from linkcheck.app.offline import diagnose_bundle
from linkcheck.bundle.format import load_bundle
from linkcheck.facts.bench_facts import build_bench_facts
from linkcheck.facts.pair import build_link_facts
from linkcheck.model import Capture

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"

ROW = """---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]
 1048576    {iters}          0.00               {gbps:.2f}  \t\t     0.011685
---------------------------------------------------------------------------------------
"""
JSON = ('{{"test_info": {{"test": "RDMA_Write_BW_Test", "Device": "{dev}"}}, '
        '"results": {{"MsgSize": 1048576, "n_iterations": 70000, "BW_peak": 0.00, "BW_average": {gbps:.2f}, '
        '"MsgRate": 0.011685}}}}')


def _client(dev: str, mode: str, direction: str, gbps: float, *, round_id: str | None = None,
            fmt: str | None = None) -> Capture:
    node = direction[0]
    meta = {"kind": "rdma", "mode": mode, "direction": direction, "role": "client", "local_rdma_dev": dev,
            "local_netdev": "enp1s0f1np1" if dev == "rocep1s0f1" else "enP2p1s0f1np1",
            "peer_netdev": "enp1s0f1np1" if dev == "rocep1s0f1" else "enP2p1s0f1np1", "report_gbits": "true"}
    if round_id is not None:
        meta["round"] = round_id
    if fmt:
        meta["format"] = fmt
    text = JSON.format(dev=dev, gbps=gbps) if fmt == "json" else ROW.format(iters=70000, gbps=gbps)
    return Capture(node=node, spec="ib_write_bw", command="ib_write_bw ...", stdout=text, meta=meta)


def test_alone_and_concurrent_runs_of_one_device_stay_apart_without_a_round() -> None:
    caps = [_client("rocep1s0f1", "alone", "a->b", 109.3), _client("rocep1s0f1", "concurrent", "a->b", 98.01),
            _client("roceP2p1s0f1", "alone", "a->b", 108.9), _client("roceP2p1s0f1", "concurrent", "a->b", 98.01)]
    bench, _ = build_bench_facts(caps, ())
    assert sorted((r.device, r.mode, r.gbps) for r in bench.rdma) == [
        ("roceP2p1s0f1", "alone", 108.9), ("roceP2p1s0f1", "concurrent", 98.01),
        ("rocep1s0f1", "alone", 109.3), ("rocep1s0f1", "concurrent", 98.01)]
    assert bench.totals("concurrent") == {"a->b": 196.02}


def test_a_json_report_joins_its_text_output_instead_of_counting_twice() -> None:
    caps = [_client("rocep1s0f1", "concurrent", "a->b", 98.0), _client("rocep1s0f1", "concurrent", "a->b", 98.0,
                                                                        fmt="json")]
    bench, _ = build_bench_facts(caps, ())
    assert [(r.mode, r.gbps) for r in bench.rdma] == [("concurrent", 98.0)]


def test_repetitions_without_a_round_pair_up_and_the_lowest_total_counts() -> None:
    caps = [_client("rocep1s0f1", "concurrent", "b->a", g) for g in (98.0, 97.0)]
    caps += [_client("roceP2p1s0f1", "concurrent", "b->a", g) for g in (98.0, 90.0)]
    bench, _ = build_bench_facts(caps, ())
    assert len(bench.rdma) == 4
    assert bench.totals("concurrent") == {"b->a": 187.0}


def test_rounds_are_kept_apart_when_recorded() -> None:
    caps = [_client("rocep1s0f1", "concurrent", "a->b", 98.0, round_id="concurrent-a2b-1"),
            _client("rocep1s0f1", "concurrent", "a->b", 60.0, round_id="concurrent-a2b-2")]
    bench, _ = build_bench_facts(caps, ())
    assert sorted(r.gbps or 0 for r in bench.rdma) == [60.0, 98.0]


def test_healthy_fixture_lists_every_run_with_its_totals() -> None:
    link = build_link_facts(load_bundle(FIXTURES / "healthy").captures)
    assert len(link.bench.rdma) == 8
    assert {(r.mode, r.direction) for r in link.bench.rdma} == {
        ("alone", "a->b"), ("alone", "b->a"), ("concurrent", "a->b"), ("concurrent", "b->a")}
    totals = link.bench.totals("concurrent")
    assert set(totals) == {"a->b", "b->a"} and all(t is not None and 190 < t < 200 for t in totals.values())


def test_console_shows_the_concurrent_rows_and_totals() -> None:
    from io import StringIO

    from rich.console import Console

    from linkcheck.report.console import print_report

    out = StringIO()
    print_report(diagnose_bundle(FIXTURES / "healthy"), Console(file=out, width=100, color_system=None))
    text = out.getvalue()
    assert text.count("concurrent") >= 2 and "both paths at once" in text
    totals = diagnose_bundle(FIXTURES / "healthy").link.bench.totals("concurrent")
    assert f"{totals['a->b']:.2f}" in text and f"{totals['b->a']:.2f}" in text


def test_runs_match_their_path_by_rdma_device_when_netdevs_are_not_recorded() -> None:
    link = build_link_facts(load_bundle(FIXTURES / "healthy").captures)
    keep = ("kind", "mode", "role", "local_rdma_dev", "report_gbits")
    caps = [replace(c, meta={k: v for k, v in c.meta.items() if k in keep}) for c in
            load_bundle(FIXTURES / "healthy").captures if c.meta.get("kind") == "rdma"]
    bench, _ = build_bench_facts(caps, link.paths)
    assert {r.path_key for r in bench.rdma} == {p.key for p in link.paths}
    assert {(r.client_node, r.direction) for r in bench.rdma} == {("a", "a->b"), ("b", "b->a")}
    assert bench.totals("concurrent") == link.bench.totals("concurrent")

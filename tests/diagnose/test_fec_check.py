"""FEC_NOT_RS's named check on built facts, and the FEC evidence beside the bandwidth findings."""

from __future__ import annotations

import dataclasses

from msgspec.structs import replace

from linkcheck.diagnose.checks.bench import below_nominal, hotplug_degraded
from linkcheck.diagnose.checks.fec import fec_not_rs
from linkcheck.facts.model import BenchFacts, DataPath, Function, LinkFacts, NodeFacts, RdmaRun
from linkcheck.report.console import node_table

P1 = "enp1s0f1np1"


def _fn(node: str, fec: tuple[str, ...] | None = ("RS",), speed: int | None = 200_000,
        carrier: bool = True) -> Function:
    return Function(node=node, netdev=P1, bdf="0000:01:00.1", cage="p1", rdma_dev="rocep1s0f1", carrier=carrier,
                    ipv4=(f"192.168.100.{10 if node == 'a' else 11}/24",), speed_mbps=speed, pcie_speed_gts=32.0,
                    pcie_width=4, fec_active=fec, fec_configured=("Auto",))


def _link(a: Function, b: Function, bench: BenchFacts | None = None) -> LinkFacts:
    return LinkFacts(a=NodeFacts(name="a", functions=(a,)), b=NodeFacts(name="b", functions=(b,)),
                     paths=(DataPath(a, b, "192.168.100.0/24"),), bench=bench or BenchFacts())


def _one(link: LinkFacts) -> tuple[bool, str | None, dict[str, object]]:
    (obs,) = fec_not_rs(link, {})
    return obs.fired, obs.skip, obs.value_map()


def test_rs_on_both_ends_passes() -> None:
    fired, skip, _ = _one(_link(_fn("a"), _fn("b")))
    assert not fired and skip is None


def test_no_fec_on_one_end_at_200g_fires_and_names_that_end() -> None:
    fired, _, values = _one(_link(_fn("a"), _fn("b", ("None",))))
    assert fired
    assert (values["node"], values["netdev"], values["fec_a"], values["fec_b"]) == ("b", P1, "RS", "None")
    assert "b:enp1s0f1np1 runs FEC None at 200G" in str(values["what"])


def test_baser_on_both_ends_at_200g_fires() -> None:
    fired, _, values = _one(_link(_fn("a", ("BaseR",)), _fn("b", ("BaseR",))))
    assert fired and "a:enp1s0f1np1" in str(values["what"]) and "b:enp1s0f1np1" in str(values["what"])


def test_below_200g_only_a_difference_fires() -> None:
    same, _, _ = _one(_link(_fn("a", ("BaseR",), 100_000), _fn("b", ("BaseR",), 100_000)))
    differ, _, values = _one(_link(_fn("a", ("RS",), 100_000), _fn("b", ("BaseR",), 100_000)))
    assert not same and differ
    assert "differ" in str(values["what"]) and values["node"] == "b"


def test_unknown_fec_skips_the_path_and_a_down_end_is_not_judged() -> None:
    fired, skip, _ = _one(_link(_fn("a"), _fn("b", None)))
    assert not fired and skip is not None and "b:enp1s0f1np1" in skip
    (obs,) = fec_not_rs(_link(_fn("a"), _fn("b", ("None",), None, carrier=False)), {})
    assert obs.subject == "pair" and not obs.fired and obs.skip is None


def _runs(gbps: float) -> BenchFacts:
    key = f"{P1}<->{P1}"
    return BenchFacts(rdma=(RdmaRun(key, "alone", "a->b", gbps, "a", "rocep1s0f1"),
                            RdmaRun(key, "alone", "b->a", gbps, "b", "rocep1s0f1")))


def test_bandwidth_findings_carry_the_fec_as_evidence_only() -> None:
    thresholds = {"degraded_min_gbps": 8, "degraded_max_gbps": 25, "late_plug_after_boot_s": 60,
                  "nominal_min_gbps": 85}
    link = _link(_fn("a"), _fn("b", ("None",)), _runs(13.3))
    (hot,) = hotplug_degraded(link, thresholds)
    assert hot.fired
    pairs = [(e.fact, e.value) for e in hot.evidence]
    assert ("active FEC of a:enp1s0f1np1", "RS") in pairs and ("active FEC of b:enp1s0f1np1", "None") in pairs
    assert "FEC" not in " ".join(str(v) for v in hot.value_map().values())  # the message never blames FEC
    (low,) = below_nominal(replace(link, bench=_runs(60.0)), thresholds)
    assert low.fired and ("active FEC of b:enp1s0f1np1", "None") in [(e.fact, e.value) for e in low.evidence]


def test_node_table_shows_the_active_fec() -> None:
    from rich.console import Console

    console = Console(width=200, record=True)
    link = _link(_fn("a"), _fn("b", ("None",)))
    console.print(node_table((link.a, link.b)))
    text = console.export_text()
    assert "FEC RS" in text and "FEC None" in text


def test_single_pcie_path_carries_the_paths_fec_as_evidence() -> None:
    from linkcheck.diagnose.checks.path import single_pcie_path

    key = f"{P1}<->{P1}"
    bench = BenchFacts(rdma=(RdmaRun(key, "concurrent", "a->b", 48.0, "a", "rocep1s0f1"),
                             RdmaRun("other", "concurrent", "a->b", 47.0, "a", "roceP2p1s0f1")))
    found = single_pcie_path(_link(_fn("a"), _fn("b"), bench), {
        "single_path_total_min_gbps": 80, "single_path_total_max_gbps": 125, "idle_path_max_gbps": 5,
        "idle_counter_share": 0.05})
    fired = [o for o in found if o.fired]
    assert fired and all(("active FEC of a:enp1s0f1np1", "RS") in [(e.fact, e.value) for e in o.evidence]
                         for o in fired)
    assert all("FEC" not in str(o.value_map().get("what")) for o in fired)


def test_emulated_show_fec_in_each_form_parses_back() -> None:
    from linkcheck.parsers.ethtool import parse_ethtool_fec
    from tests.emulators.cli import run_ethtool
    from tests.emulators.scenarios import SCENARIOS

    healthy, off = SCENARIOS["healthy"].node_b, SCENARIOS["fec-off"].node_b
    text, _, rc = run_ethtool(healthy, ["--show-fec", P1])
    assert rc == 0 and text.splitlines()[1] == "Supported/Configured FEC encodings: Auto"
    assert parse_ethtool_fec(text).active == ("RS",)
    assert parse_ethtool_fec(run_ethtool(healthy, ["--show-fec", "enp1s0f0np0"])[0]).active == ("None",)  # no carrier
    js = parse_ethtool_fec(run_ethtool(healthy, ["--json", "-I", "--show-fec", P1])[0])
    assert js.form == "json" and (js.corrected_blocks, js.uncorrectable_blocks) == (0, 0)
    stats_off = parse_ethtool_fec(run_ethtool(off, ["-I", "--show-fec", P1])[0])
    assert stats_off.active == ("None",) and stats_off.statistics == ()  # mlx5: no FEC counters while FEC is off
    old = dataclasses.replace(healthy, versions={**healthy.versions, "ethtool": "5.16"})
    assert "\nConfigured FEC encodings: Auto\n" in run_ethtool(old, ["--show-fec", P1])[0]
    assert run_ethtool(healthy, ["--show-fec", "nosuch0"])[2] != 0

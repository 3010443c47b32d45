"""`linkcheck advise` over a cluster's bundle: the same command for N nodes (the pair is its one-cable case). A failing
cable voids every split (exit 2, as on a pair); a healthy ring gets advice for three nodes with its reasons: tensor
parallel across all three only where the heads divide by three, the slowest cable named as what bounds a ring
collective, NVIDIA's ring figure with its source."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from tests.fixture_bundles import FIXTURE_DIR

if TYPE_CHECKING:
    from tests.conftest import InProcessCli

HEALTHY = str(FIXTURE_DIR / "cluster-ring3-healthy")
HOTPLUG = str(FIXTURE_DIR / "cluster-ring3-hotplug")
WIDE = {"COLUMNS": "400"}  # one reason a line


def _advice(cli: InProcessCli, bundle: str, *args: str) -> dict[str, object]:
    run = cli("advise", bundle, *args, "-f", "json")
    assert run.returncode in (0, 2), run.stderr
    data = json.loads(run.stdout)
    assert isinstance(data, dict)
    data["exit"] = run.returncode
    return data


def test_a_failing_cable_says_fix_it_first_and_exits_2(cli: InProcessCli) -> None:
    run = cli("advise", HOTPLUG, "--model-gib", "180", "--concurrency", "1", "--heads", "48", env=WIDE)
    assert run.returncode == 2, run.stderr
    assert run.stdout.splitlines()[:3] == ["ADVICE: fix the link first",
                                          "once the link is healthy: one model across all 3, tensor parallel",
                                          "until then: nothing: the model needs several nodes"]
    assert "fix first: LINK_HOTPLUG_DEGRADED (enP2p1s0f0np0<->enP2p1s0f1np1 (cable a:p0<->b:p1), fail)" in run.stdout


def test_tensor_parallel_across_three_only_where_the_heads_divide_by_three(cli: InProcessCli) -> None:
    divides = _advice(cli, HEALTHY, "--model-gib", "180", "--concurrency", "1", "--heads", "48")
    assert (divides["exit"], divides["choice"], divides["headline"], divides["nodes"]) == (
        0, "tensor-parallel", "one model across all 3, tensor parallel", 3)
    assert divides["link_state"] == "healthy"
    odd = _advice(cli, HEALTHY, "--model-gib", "180", "--concurrency", "1", "--heads", "64")
    assert (odd["choice"], odd["headline"]) == ("pipeline-parallel", "one model across all 3, pipeline parallel")
    assert any("64 attention heads do not divide by 3" in str(r) for r in odd["reasons"])  # type: ignore[union-attr]
    unknown = _advice(cli, HEALTHY, "--model-gib", "180", "--concurrency", "1")
    assert unknown["choice"] == "pipeline-parallel"
    assert any("--heads" in str(r) for r in unknown["reasons"])  # type: ignore[union-attr]


def test_a_model_that_fits_one_node_runs_a_resident_per_node_for_many_users(cli: InProcessCli) -> None:
    many = _advice(cli, HEALTHY, "--model-gib", "60", "--concurrency", "64", "--heads", "48")
    assert (many["choice"], many["headline"]) == ("residents", "one resident per node")
    one = _advice(cli, HEALTHY, "--model-gib", "60", "--concurrency", "1", "--heads", "64")
    assert one["choice"] == "one-node"


def test_the_slowest_cable_and_nvidias_ring_figure_are_reasons(cli: InProcessCli) -> None:
    data = _advice(cli, HEALTHY, "--model-gib", "180", "--concurrency", "1", "--heads", "48")
    figures = {f["name"]: f for f in data["figures"]}  # type: ignore[union-attr]
    cables = {n: f["value"] for n, f in figures.items() if n.startswith("cable ")}
    assert set(cables) == {f"cable {c} both paths at once" for c in ("a:p0<->b:p1", "b:p0<->c:p1", "a:p1<->c:p0")}
    assert all(v > 190 for v in cables.values()) and all(figures[n]["kind"] == "measured" for n in cables)
    ring = next(f for f in figures.values() if f["value"] == 10 and f["unit"] == "GB/s")
    assert ring["kind"] == "published" and "spark_cluster_setup.py" in ring["source"]
    assert any("the slowest cable" in str(r) and "on a ring" in str(r) for r in data["reasons"])  # type: ignore[union-attr]


def test_html_is_a_full_page_in_the_reports_style(cli: InProcessCli) -> None:
    run = cli("advise", HEALTHY, "--model-gib", "180", "--concurrency", "1", "--heads", "48", "-f", "html")
    assert run.returncode == 0
    assert run.stdout.startswith("<!DOCTYPE html>") and run.stdout.rstrip().endswith("</html>")
    assert "<h1>linkcheck advice for 3 nodes</h1>" in run.stdout and ".verdict{" in run.stdout  # the report's CSS
    assert "<strong>ADVICE: one model across all 3, tensor parallel</strong>" in run.stdout


def test_bad_heads_are_one_line_and_exit_4(cli: InProcessCli) -> None:
    run = cli("advise", HEALTHY, "--model-gib", "180", "--concurrency", "1", "--heads", "0")
    assert run.returncode == 4 and run.stderr.count("\n") == 1 and "heads" in run.stderr, run.stderr

"""`linkcheck fix BUNDLE`: the plan printed (console, `-f json` exactly {"steps": [...]}), saved only where `-o` names
(the bundle is never changed); a plan a live `fix` added to its own bundle is covered by `verify` and shown by every
report format; bad input is one line and a documented exit code."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from linkcheck.app.fix import ApplyResult, fix_bundle
from linkcheck.app.offline import diagnose_bundle
from linkcheck.repair.record import write_repair
from linkcheck.repair.saved import plan_for

if TYPE_CHECKING:
    from tests.conftest import InProcessCli

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
STEP_KEYS = ["node", "finding", "runtime", "persistent", "verify", "touches"]


def _copy(tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    shutil.copytree(FIXTURES / name, target)
    return target


def test_json_plan_is_exactly_steps(cli: InProcessCli, tmp_path: Path) -> None:
    bundle = _copy(tmp_path, "mtu-mismatch")
    result = cli("fix", str(bundle), "-f", "json")
    assert result.returncode == 2, result.stderr  # the diagnosis' verdict: a failure
    doc = json.loads(result.stdout)
    assert list(doc) == ["steps"]
    (step,) = doc["steps"]
    assert list(step) == STEP_KEYS
    assert step["runtime"] == ["sudo ip link set dev enP2p1s0f1np1 mtu 9000"]
    assert step["persistent"]["mode"] == "600" and "+      mtu: 9000" in step["persistent"]["diff"]
    assert "saved" not in result.stderr and not (bundle / "repair.json").exists()


def test_healthy_pair_prints_empty_steps(cli: InProcessCli, tmp_path: Path) -> None:
    bundle = _copy(tmp_path, "healthy")
    result = cli("fix", str(bundle), "-f", "json")
    assert (result.returncode, json.loads(result.stdout)) == (0, {"steps": []})
    console = cli("fix", str(bundle))
    assert console.stdout.strip() == "Nothing to repair."


def _plan_saved_as_live_fix_does(bundle: Path) -> None:
    """repair.json added to the bundle as a live `fix` adds it to the bundle it made."""
    write_repair(bundle, plan_for(diagnose_bundle(bundle)))


def test_fix_of_a_bundle_leaves_it_byte_identical_and_saves_only_where_asked(cli: InProcessCli,
                                                                             tmp_path: Path) -> None:
    bundle = _copy(tmp_path, "mtu-mismatch")
    before = {p: p.read_bytes() for p in bundle.rglob("*") if p.is_file()}
    out = tmp_path / "plan.json"
    result = cli("fix", str(bundle), "-o", str(out))
    assert result.returncode == 2 and f"repair plan saved to {out}" in result.stderr
    assert {p: p.read_bytes() for p in bundle.rglob("*") if p.is_file()} == before
    assert cli("verify", str(bundle)).returncode == 0
    doc = json.loads(out.read_text())
    assert doc["schema"] == "linkcheck-repair" and doc["plan"]["steps"][0]["node"] == "b"


def test_saved_plan_verifies_and_every_report_shows_it(cli: InProcessCli, tmp_path: Path) -> None:
    bundle = _copy(tmp_path, "twins-same-subnet")
    _plan_saved_as_live_fix_does(bundle)
    assert cli("verify", str(bundle)).returncode == 0
    doc = json.loads(cli("report", str(bundle), "-f", "json").stdout)
    assert [s["node"] for s in doc["repair"]["steps"]] == ["a", "b"]
    assert doc["repair"]["not_planned"] == []
    markdown = cli("report", str(bundle), "-f", "markdown").stdout
    assert "## Repair plan" in markdown and "sudo ip addr add 192.168.101.15/24 dev enP2p1s0f1np1" in markdown
    html = cli("report", str(bundle), "-f", "html").stdout
    assert "<h2>Repair plan</h2>" in html and "+        - 192.168.101.14/24" in html
    junit = cli("report", str(bundle), "-f", "junit").stdout
    assert 'name="linkcheck.repair"' in junit and "planned, not applied" in junit
    prom = cli("report", str(bundle), "-f", "prometheus").stdout
    assert 'linkcheck_repair_steps{node="a"} 1' in prom and 'linkcheck_repair_steps{node="b"} 1' in prom
    console = cli("diagnose", str(bundle)).stdout
    assert "repair plan:" in console and "sudo ip addr del 192.168.100.14/24 dev enP2p1s0f1np1" in console


def test_an_edited_plan_is_not_shown(cli: InProcessCli, tmp_path: Path) -> None:
    bundle = _copy(tmp_path, "mtu-mismatch")
    _plan_saved_as_live_fix_does(bundle)
    path = bundle / "repair.json"
    path.write_text(path.read_text().replace("mtu 9000", "mtu 1500"))
    result = cli("report", str(bundle), "-f", "json", "--allow-unverified")
    repair = json.loads(result.stdout)["repair"]
    assert list(repair) == ["problem"] and "unverified" in repair["problem"]


def test_a_report_without_a_plan_has_none(cli: InProcessCli) -> None:
    doc = json.loads(cli("report", str(FIXTURES / "healthy"), "-f", "json").stdout)
    assert doc["repair"] is None


@pytest.mark.parametrize(("args", "needle"), [
    (("fix", "/nonexistent/bundle"), "/nonexistent/bundle"),
    (("fix", str(FIXTURES / "healthy"), "--node", "a=x@y"), "--node and --save are for a live plan"),
    (("fix", str(FIXTURES / "healthy"), "-o", str(FIXTURES)), "names a folder"),
    (("fix", "--restore", "-o", "x.json"), "--output goes with a plan"),
    (("fix", str(FIXTURES / "healthy"), "-f", "yaml"), "yaml"),
])
def test_bad_input_is_one_line_exit_4(cli: InProcessCli, args: tuple[str, ...], needle: str) -> None:
    result = cli(*args)
    assert result.returncode == 4 and "Traceback" not in result.stderr
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert needle in result.stderr, result.stderr
    assert len(lines) <= 3  # typer's usage error box is the only multi-line one (an unknown choice)


def test_a_tampered_bundle_is_refused(cli: InProcessCli, tmp_path: Path) -> None:
    bundle = _copy(tmp_path, "mtu-mismatch")
    stdout = next(bundle.glob("b/netplan_files.stdout"))
    stdout.write_text(stdout.read_text() + "\n")
    result = cli("fix", str(bundle))
    assert result.returncode == 4 and "does not verify" in result.stderr
    assert not (bundle / "repair.json").exists()


@pytest.mark.parametrize("fresh, bundle, expected", [
    ("healthy", None, 0),  # no bundle given: the fresh inspection's code
    ("healthy", 2, 2),  # a bundle failed on a measured rate, its reboot left to --allow-reboot: still a failure
    ("healthy", 1, 1),
    ("mtu-mismatch", 1, 2),  # the worse of the two, by verdict
    ("healthy", 3, 3),
    ("mtu-mismatch", 3, 2),
])
def test_nothing_applied_never_exits_better_than_the_bundle_the_plan_came_from(fresh: str, bundle: int | None,
                                                                             expected: int) -> None:
    inspected = fix_bundle(FIXTURES / fresh, None, None)
    assert ApplyResult(inspected, nothing_to_do=True, bundle_exit_code=bundle).unapplied_exit_code == expected

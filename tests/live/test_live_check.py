"""`linkcheck check` over real SSH against a two-node lab finds what `diagnose` finds in that scenario's fixture.

Each scenario's lab runs the same node models as its offline fixture (tests/emulators/scenarios.py), so a
live check must raise the same warnings, failures and skips, and reach the same verdict, except for what
only a traffic test can show: the lab bundle has no bench captures, so rules fed by them are left out of
the comparison. The saved bundle must then re-diagnose offline to the very same JSON findings.

healthy is set up the way a user would: `linkcheck init` with node aliases from ~/.ssh/config, then `check`
and `collect --save` reading the ./linkcheck.yaml it wrote. The other scenarios use
`check --node a=root@<ip> --node b=root@<ip> --config <yaml>` (the CLI has no option for another SSH config
or known_hosts file; linkcheck.yaml's `ssh:` section names the lab's).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.lab import Lab, map_text

pytestmark = pytest.mark.lab  # builds the two-node lab

if TYPE_CHECKING:
    from tests.live.conftest import CliRun, Live

REPO = Path(__file__).resolve().parents[2]
SCENARIOS = ("healthy", "gid-stale", "mtu-mismatch", "twins-same-subnet", "unapproved-cable", "degraded-collection",
             "single-pcie-path")
# Rules judged only from traffic-test (bench) captures; a check without --bench cannot raise them.
BENCH_RULES = frozenset({"LINK_HOTPLUG_DEGRADED", "LINK_BELOW_NOMINAL", "NCCL_SOCKET_FALLBACK", "NCCL_BUSBW_LOW"})
EXIT_OF_VERDICT = {"pass": 0, "warn": 1, "fail": 2, "inconclusive": 3}
LAB_GAPS: dict[str, str] = {}  # scenario -> why its lab cannot show what its fixture shows (strict xfail)

Finding = tuple[str, str, str]


@dataclass
class ScenarioRun:
    """Everything one scenario's lab produced; the lab itself is torn down as soon as the runs are done."""

    name: str
    check: CliRun
    rediagnosed: CliRun
    fixture: CliRun
    strays: dict[str, list[str]]
    saved: Path
    init: CliRun | None = None
    config_text: str = ""
    cabled: tuple[str, ...] = ()
    collect: CliRun | None = None
    collected: CliRun | None = None
    baseline_saved: CliRun | None = None
    against: CliRun | None = None


def _ip_ssh_config(lab: Lab, path: Path) -> Path:
    """The lab's ssh_config plus the key for its management IPs, so `--node a=root@<ip>` authenticates."""
    ips = " ".join(lab.node(n).mgmt_ip for n in sorted(lab.nodes))
    path.write_text(f"Host {ips}\n    IdentityFile {lab.client_key}\n    IdentitiesOnly yes\n\n"
                    + lab.ssh_config.read_text(encoding="utf-8"), encoding="utf-8")
    return path


def _check_by_ip(lab: Lab, live: Live, work: Path, saved: Path) -> CliRun:
    cfg = live.lab_config(lab, work / "lab.yaml", ssh_config=_ip_ssh_config(lab, work / "ssh_config"))
    nodes = [f"--node={n}=root@{lab.node(n).mgmt_ip}" for n in ("a", "b")]
    return live.run("check", *nodes, "--config", str(cfg), "--save", str(saved), "-f", "json")


def _user_home(lab: Lab, home: Path) -> Path:
    """A HOME whose ~/.ssh holds the lab's ssh_config (aliases a and b) and known_hosts, as a user's would."""
    (home / ".ssh").mkdir(parents=True, mode=0o700)
    shutil.copy(lab.ssh_config, home / ".ssh" / "config")
    shutil.copy(lab.known_hosts, home / ".ssh" / "known_hosts")
    return home


def _run_via_init(lab: Lab, live: Live, work: Path, run: dict[str, Any]) -> None:
    """init (aliases from ~/.ssh/config) -> check and collect reading the ./linkcheck.yaml init wrote."""
    home, cwd = _user_home(lab, work / "home"), work / "cwd"
    cwd.mkdir()
    run["cabled"] = tuple(sorted(link.ifname for link in lab.node("a").spec.links if link.peer))
    run["init"] = live.run("init", "--node", "a=a", "--node", "b=b", cwd=cwd, home=home)
    config = cwd / "linkcheck.yaml"
    run["config_text"] = config.read_text(encoding="utf-8") if config.is_file() else ""
    run["check"] = live.run("check", "--save", str(run["saved"]), "-f", "json", cwd=cwd, home=home)
    # The pair's known-good state, then a check against it: the drift rules speak in its one diagnosis.
    run["baseline_saved"] = live.run("baseline", "save", "lab-good", str(run["saved"]), cwd=cwd, home=home)
    run["against"] = live.run("check", "--baseline", "lab-good", "--save", str(work / "against"), "-f", "json",
                              cwd=cwd, home=home)
    run["collect"] = live.run("collect", "--save", str(work / "collected"), cwd=cwd, home=home)
    # Offline, the same config applies (diagnose finds ./linkcheck.yaml as check does).
    run["collected"] = live.run("diagnose", str(work / "collected"), "-f", "json", cwd=cwd)


def _run_scenario(name: str, make_lab: Callable[..., Lab], live: Live, work: Path) -> ScenarioRun:
    lab = make_lab(name)
    try:
        before = live.node_pids(lab)
        run: dict[str, Any] = {"saved": work / "saved"}
        if name == "healthy":
            _run_via_init(lab, live, work, run)
            config = work / "cwd" / "linkcheck.yaml"
        else:
            run["check"] = _check_by_ip(lab, live, work, run["saved"])
            config = work / "lab.yaml"
        run["strays"] = live.strays(lab, before)
    finally:
        lab.down()  # one lab at a time; the module fixture's own teardown is then a no-op
    # The same bundle and config give the same findings offline as live.
    run["rediagnosed"] = live.run("diagnose", str(run["saved"]), "-f", "json", "--config", str(config))
    run["fixture"] = live.run("diagnose", str(REPO / "fixtures" / name), "-f", "json")
    return ScenarioRun(name=name, **run)


@pytest.fixture(scope="module")
def scenario_run(module_lab_factory: Callable[..., Lab], live: Live,
                 tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], ScenarioRun]]:
    """The runs of one scenario's lab, made on first use and shared by every test of this module."""
    runs: dict[str, ScenarioRun] = {}

    def get(name: str) -> ScenarioRun:
        if name not in runs:
            runs[name] = _run_scenario(name, module_lab_factory, live, tmp_path_factory.mktemp(name))
        return runs[name]

    yield get


def _bench_derived(finding: Finding) -> bool:
    rule, _, subject = finding
    return rule in BENCH_RULES or (rule == "SINGLE_PCIE_PATH" and subject.startswith("rdma "))


def _comparable(run: CliRun, *, lab_addresses: bool) -> set[Finding]:
    """Warn, fail and skip findings not fed by traffic tests; fixture subjects mapped to lab addresses."""
    found = {f for f in run.findings(("warn", "fail", "skip")) if not _bench_derived(f)}
    return {(rule, status, map_text(subject)) for rule, status, subject in found} if lab_addresses else found


def _expected_verdict(fixture: CliRun, expected: set[Finding]) -> str:
    """The fixture's verdict; for a fixture with traffic tests, the verdict its non-bench findings give."""
    report = fixture.report
    if not report["bench"]["rdma"] and report["bench"]["nccl"] is None:
        return str(report["verdict"])
    statuses = {status for _, status, _ in expected}
    for status, verdict in (("fail", "fail"), ("skip", "inconclusive"), ("warn", "warn")):
        if status in statuses:
            return verdict
    return "pass"


def _group(name: str) -> pytest.MarkDecorator:
    """The tests reading one scenario's runs go to one worker (`--dist loadgroup`), which makes them once; the
    scenarios spread over the workers."""
    return pytest.mark.xdist_group(f"live-check-{name}")


def _scenario_params(*, gaps: bool = False) -> list[Any]:
    return [pytest.param(n, marks=[_group(n), *([pytest.mark.xfail(strict=True, reason=LAB_GAPS[n])]
                                                if gaps and n in LAB_GAPS else [])])
            for n in SCENARIOS]


@pytest.mark.parametrize("name", _scenario_params(gaps=True))
def test_check_finds_what_the_fixture_diagnosis_finds(scenario_run: Callable[[str], ScenarioRun], name: str) -> None:
    run = scenario_run(name)
    assert run.fixture.returncode == run.fixture.report["exit_code"], run.fixture.describe()
    expected = _comparable(run.fixture, lab_addresses=True)
    got = _comparable(run.check, lab_addresses=False)
    assert got == expected, f"live only: {sorted(got - expected)}; fixture only: {sorted(expected - got)}"
    verdict = _expected_verdict(run.fixture, expected)
    assert run.check.report["verdict"] == verdict
    assert run.check.returncode == EXIT_OF_VERDICT[verdict] == run.check.report["exit_code"], run.check.describe()


@pytest.mark.parametrize("name", _scenario_params())
def test_saved_bundle_rediagnoses_to_the_same_findings(scenario_run: Callable[[str], ScenarioRun], name: str) -> None:
    run = scenario_run(name)
    assert run.check.saved_to() == run.saved, run.check.describe()
    assert (run.saved / "manifest.json").is_file()
    live_report, offline = dict(run.check.report), dict(run.rediagnosed.report)
    assert live_report["findings"] == offline["findings"]
    for report in (live_report, offline):
        report.pop("bundle")  # the folder, as each command was given it
        report.pop("created")  # when each report was made
    assert live_report == offline
    assert run.rediagnosed.returncode == run.check.returncode


@pytest.mark.parametrize("name", _scenario_params())
def test_check_ends_cleanly(scenario_run: Callable[[str], ScenarioRun], name: str) -> None:
    run = scenario_run(name)
    assert "Traceback" not in run.check.stderr and "internal error" not in run.check.stderr, run.check.describe()
    assert all(line.startswith("linkcheck: node ") for line in run.check.error_lines()), run.check.describe()
    manifest = json.loads((run.saved / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["collection_errors"] == {}
    assert {c["node"] for c in manifest["captures"]} == {"a", "b"}
    assert run.strays == {}, f"processes of ours left on the nodes: {run.strays}"


@_group("healthy")
def test_init_writes_a_config_that_check_then_uses(scenario_run: Callable[[str], ScenarioRun]) -> None:
    from linkcheck.config import load_config

    run = scenario_run("healthy")
    assert run.init is not None
    assert run.init.returncode == 0, run.init.describe()
    assert run.cabled, "the healthy lab has cabled data links"
    paths = "; ".join(f"{n}<->{n}" for n in run.cabled)
    assert run.init.stdout.strip() == f"wrote linkcheck.yaml: cage p1, {len(run.cabled)} path(s): {paths}"
    config_file = run.saved.parent / "cwd" / "linkcheck.yaml"
    config = load_config(config_file)  # what init wrote is valid linkcheck.yaml
    assert {n: str(t) for n, t in config.nodes.items()} == {"a": "a", "b": "b"}
    assert sorted(config.expected_paths) == [(n, n) for n in run.cabled]
    assert "cage: p1" in run.config_text
    # check found the nodes through that file alone (no --node, no --config), with ~/.ssh for the rest
    assert run.check.returncode == 0, run.check.describe()
    assert {n: v["hostname"] for n, v in run.check.report["nodes"].items()} == {"a": "dgx-spark-1", "b": "dgx-spark-2"}


@_group("healthy")
def test_collect_saves_a_bundle_that_diagnoses_like_check(scenario_run: Callable[[str], ScenarioRun]) -> None:
    from linkcheck.collect.specs import SPECS

    run = scenario_run("healthy")
    assert run.collect is not None and run.collected is not None
    assert run.collect.returncode == 0 and run.collect.error_lines() == [], run.collect.describe()
    saved = run.collect.saved_to()
    assert saved is not None and saved.name == "collected"
    manifest = json.loads((saved / "manifest.json").read_text(encoding="utf-8"))
    for node in ("a", "b"):
        specs = {c["spec"] for c in manifest["captures"] if c["node"] == node and not c["skipped"]}
        # Not the per-container specs (no --container named) and not gpu_state (no nvidia-smi on a lab node).
        wanted = {s.id for s in SPECS if not s.per_container} - {"gpu_state"}
        assert specs >= wanted, f"node {node} lacks {sorted(wanted - specs)}"
    assert run.collected.returncode == run.check.returncode
    every = ("pass", "warn", "fail", "skip")
    assert run.collected.findings(every) == run.check.findings(every)


@_group("healthy")
def test_check_against_a_baseline_judges_drift(scenario_run: Callable[[str], ScenarioRun]) -> None:
    """`check --baseline` on the lab a moment after its known-good state was saved: the drift rules are judged
    (none without a baseline) and find nothing, so the verdict is the plain check's."""
    run = scenario_run("healthy")
    assert run.baseline_saved is not None and run.against is not None
    assert run.baseline_saved.returncode == 0, run.baseline_saved.stderr
    assert run.against.returncode == run.check.returncode, run.against.describe()
    drift = {(f["id"], f["status"]) for f in run.against.report["findings"] if f["id"].startswith("DRIFT_")}
    assert {"DRIFT_IDENTITY", "DRIFT_GID_INDEX"} <= {rule for rule, _ in drift}, drift
    assert {status for _, status in drift} <= {"pass", "skip"}, drift
    assert not [f for f in run.check.report["findings"] if f["id"].startswith("DRIFT_")]

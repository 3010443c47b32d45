"""Short and custom acceptance: a run weaker than the built-in profile (shorter -D, fewer repetitions, a looser
profile) is NON-STANDARD in acceptance.json with each difference, and every report format says so; `profiles show
--yaml` prints a file that `profiles validate` accepts; `accept --duration` sets the run's -D."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from msgspec.structs import replace
from prometheus_client.parser import text_string_to_metric_families
from rich.console import Console

from linkcheck.accept.profile import parse_profile, resolve_profile
from linkcheck.accept.standard import differences
from linkcheck.app.offline import diagnose_bundle
from linkcheck.bundle.acceptance import write_acceptance
from linkcheck.report.console import acceptance_view
from linkcheck.report.formats import renderer
from tests.accept.test_accept import FIXTURES, GOOD, PROFILE, _accept, _repeated
from tests.conftest import InProcessCli

SHORT = "ib_write_bw -D 4 s (standard 10 s)"
ONE = "1 repetition (standard 3)"


def _profile(text: str) -> Any:
    return parse_profile(text, "site.yaml")


def _with_test(profile: Any, **test: int) -> Any:
    return replace(profile, test=replace(profile.test, **test))


def test_the_built_in_run_is_the_standard() -> None:
    builtin = resolve_profile("dgx-spark-pair")
    assert differences(builtin, 3) == ()
    assert differences(_profile(GOOD), 3) == ()  # a copy of the file is the standard, whatever its source
    stronger = _with_test(builtin, duration_s=15, nccl_max_bytes=1 << 35)
    assert differences(stronger, 5) == ()


def test_shorter_rounds_and_fewer_repetitions_are_named() -> None:
    short = _with_test(resolve_profile("dgx-spark-pair"), duration_s=4)
    assert differences(short, 1) == (SHORT, ONE)
    assert differences(_with_test(short, qps=4, size_bytes=65536, nccl_max_bytes=1 << 30), 3) == (
        SHORT, "ib_write_bw -s 64 KiB (standard 1 MiB)", "ib_write_bw -q 4 (standard 1)",
        "all_gather_perf up to 1 GiB (standard 16 GiB)")


def test_a_looser_profile_is_named_check_by_check() -> None:
    looser = GOOD.replace("    fail_below:\n      value: 92", "    fail_below:\n      value: 80", 1)
    assert differences(_profile(looser), 3) == ("rdma_alone_gbps fail_below >= 80 Gb/s (standard >= 92 Gb/s)",)
    tighter = GOOD.replace("    fail_below:\n      value: 92", "    fail_below:\n      value: 95", 1)
    assert differences(_profile(tighter), 3) == ()
    start = GOOD.index("  nccl_wrong:")
    without = GOOD[:start] + GOOD[GOOD.index("  cable_part_number:"):]
    assert differences(_profile(without), 3) == ("nccl_wrong not judged (standard <= 0 errors)",)
    warn = "    warn_below:\n      threshold: NCCL_BUSBW_LOW.min_busbw_gbs\n      unit: GB/s\n"
    assert warn in GOOD
    assert differences(_profile(GOOD.replace(warn, "")), 3) == (
        "nccl_busbw_gbs warn_below not judged (standard >= 21.65 GB/s)",)
    unrequired = GOOD.replace("require: [PCIE_LINK_DEGRADED, CABLE_NOT_APPROVED]", "require: [CABLE_NOT_APPROVED]")
    assert differences(_profile(unrequired), 3) == ("PCIE_LINK_DEGRADED not required (standard requires it)",)


def test_the_record_says_whether_the_run_is_standard(tmp_path: Path) -> None:
    _, doc = _accept(_repeated(tmp_path))
    assert doc["standard"] == {"profile": "dgx-spark-pair", "sha256": resolve_profile("dgx-spark-pair").sha256,
                               "non_standard": False, "differences": []}
    _, short = _accept(_repeated(tmp_path, repetitions=1, name="one"), repetitions=1)
    assert short["standard"]["non_standard"] is True and short["standard"]["differences"] == [ONE]
    assert short["verdict"] == "PASS"  # weaker is said, the verdict is the judgement's


@pytest.fixture(scope="module")
def weaker(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    bundle = _repeated(tmp_path_factory.mktemp("weaker"), repetitions=1)
    _, doc = _accept(bundle, repetitions=1)
    write_acceptance(bundle, doc, GOOD)
    return bundle, doc


def test_every_format_says_non_standard(weaker: tuple[Path, dict[str, Any]]) -> None:
    bundle, doc = weaker
    outcome = diagnose_bundle(bundle)
    markdown = renderer("markdown")(outcome)
    assert "NON-STANDARD" in markdown and ONE in markdown
    page = renderer("html")(outcome)
    section = page[page.index("<h2>Acceptance</h2>"):page.index("<h2>Nodes</h2>")]
    assert ">NON-STANDARD</span>" in section and ONE in section
    suite = next(s for s in ET.fromstring(renderer("junit")(outcome)).iter("testsuite")
                 if s.get("name") == "linkcheck.acceptance")
    props = [(p.get("name"), p.get("value")) for p in suite.iter("property") if p.get("name", "").startswith("non_")]
    assert props == [("non_standard", "yes"), ("non_standard_difference", ONE)]
    assert "NON-STANDARD" in (suite.findtext("system-out") or "")
    metrics = {f.name: f.samples for f in text_string_to_metric_families(renderer("prometheus")(outcome))}
    assert [s.value for s in metrics["linkcheck_acceptance_non_standard"]] == [1]
    report = json.loads(renderer("json")(outcome))
    assert report["acceptance"]["standard"]["differences"] == [ONE]
    console = Console(width=80, record=True)
    console.print(acceptance_view(doc))
    shown = " ".join(console.export_text().split())
    assert shown.index("NON-STANDARD") < shown.index("NON-STANDARD (weaker") < shown.index("status check")
    assert ONE in shown


def test_a_standard_run_says_nothing_of_it(tmp_path: Path) -> None:
    bundle = _repeated(tmp_path)
    _, doc = _accept(bundle)
    write_acceptance(bundle, doc, GOOD)
    outcome = diagnose_bundle(bundle)
    for fmt in ("markdown", "html", "junit"):
        assert "NON-STANDARD" not in renderer(fmt)(outcome), fmt
    metrics = {f.name: f.samples for f in text_string_to_metric_families(renderer("prometheus")(outcome))}
    assert [s.value for s in metrics["linkcheck_acceptance_non_standard"]] == [0]


def test_profiles_show_yaml_round_trips(cli: InProcessCli, tmp_path: Path) -> None:
    shown = cli("profiles", "show", "dgx-spark-pair", "--yaml")
    assert shown.returncode == 0 and shown.stdout == PROFILE.read_text(encoding="utf-8"), shown.stderr
    copy = tmp_path / "site.yaml"
    copy.write_text(shown.stdout.replace("profile: dgx-spark-pair", "profile: site-pair"), encoding="utf-8")
    validated = cli("profiles", "validate", str(copy))
    assert validated.returncode == 0 and validated.stdout.startswith("ok: profile site-pair, 10 checks"), validated
    again = cli("profiles", "show", str(copy), "--yaml")
    assert again.stdout == copy.read_text(encoding="utf-8")


def test_accept_duration_sets_the_runs_ib_write_bw_d(cli: InProcessCli, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """--duration reaches the run the inspection plans (its traffic and its profile's test), and the record says the
    run is weaker than the standard one. The live check stands in for a pair's inspection with its saved bundle."""
    import shutil

    from linkcheck.app import accept as accept_app
    from linkcheck.app.offline import cluster_bundle, pair_record

    sent = []

    def check_cluster(hosts: Any, ssh: Any, rules: Any, traffic: Any, *args: Any, save: Path, **kw: Any) -> Any:
        shutil.copytree(FIXTURES / "healthy", save)
        check = cluster_bundle(save, rules)
        sent.append(traffic(check.facts))  # the plan, chosen once the inspection showed two nodes direct
        return check, check.bundle, pair_record(check.bundle)[1]

    monkeypatch.setattr(accept_app, "check_cluster", check_cluster)
    proc = cli("accept", "--duration", "4", "--repetitions", "1", "--node", "a=root@198.18.0.1",
               "--node", "b=root@198.18.0.3", "--save", str(tmp_path / "saved"), "-f", "json")
    [request] = sent
    assert request.rdma.duration_s == 4 and request.repetitions == 1 and request.command == "accept"
    record = json.loads((tmp_path / "saved" / "acceptance.json").read_text(encoding="utf-8"))
    assert record["test"]["rdma"]["duration_s"] == 4 and record["test"]["repetitions"] == 1
    assert record["standard"]["non_standard"] and {SHORT, ONE} <= set(record["standard"]["differences"]), record
    assert proc.returncode == record["exit_code"], proc.stderr
    assert json.loads(proc.stdout)["acceptance"]["verdict"] == record["verdict"]
    refused = cli("accept", "--duration", "0", "--node", "a=root@198.18.0.1", "--node", "b=root@198.18.0.3")
    assert refused.returncode == 4

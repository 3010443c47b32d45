"""`diagnose --config` applies linkcheck.yaml as `check` does: playbooks, thresholds and the recorded link."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from linkcheck.diagnose.rule import Rule
from tests.conftest import run_cli

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"

SITE_RULE = """playbook: site
rules:
  - id: SITE_MTU_JUMBO
    title: A used twin is below the site's MTU
    severity: warning
    scope: function
    where: {fact: used, eq: true}
    when: {fact: mtu, lt: $jumbo}
    thresholds: {jumbo: 9000}
    needs: [addresses]
    message: "{label} has MTU {mtu}, site policy is {thresholds.jumbo}"
"""


def _config(tmp: Path, link: str, thresholds: str = "{}") -> Path:
    (tmp / "site.yaml").write_text(SITE_RULE)
    path = tmp / "linkcheck.yaml"
    path.write_text(f"""version: 1
nodes:
  a: {{target: nvidia@spark-a}}
  b: {{target: nvidia@spark-b}}
link:
{link}
playbooks: [site.yaml]
thresholds: {thresholds}
""")
    return path


def _diagnose(*args: str, cwd: Path | None = None) -> tuple[int, dict[str, object]]:
    proc = run_cli("diagnose", *args, "-f", "json", cwd=cwd, timeout=60)
    return proc.returncode, json.loads(proc.stdout)


def _fired(doc: dict[str, object]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in doc["findings"]:  # type: ignore[attr-defined]
        if f["status"] in ("warn", "fail"):
            out.setdefault(f["id"], []).append(f["subject"])
    return out


RECORDED = """  cage: p1
  paths:
    - {a: enp1s0f1np1, b: enp1s0f1np1, subnet: 192.168.100.0/24}
    - {a: enP2p1s0f1np1, b: enP2p1s0f1np1, subnet: 192.168.101.0/24}"""


def test_the_recorded_link_matches_and_site_rules_and_thresholds_apply(tmp_path: Path) -> None:
    config = _config(tmp_path, RECORDED, "{SITE_MTU_JUMBO: {jumbo: 9216}, NCCL_BUSBW_LOW: {min_busbw_gbs: 23.9}}")
    code, doc = _diagnose(str(FIXTURES / "healthy"), "--config", str(config))
    fired = _fired(doc)
    assert "LINK_CHANGED" not in fired
    assert sorted(fired["SITE_MTU_JUMBO"]) == ["a:enP2p1s0f1np1", "a:enp1s0f1np1", "b:enP2p1s0f1np1",
                                               "b:enp1s0f1np1"]
    assert fired["NCCL_BUSBW_LOW"] == ["nccl"]  # 23.79 GB/s below the site's 23.9
    assert code == 1


def test_a_moved_link_is_named(tmp_path: Path) -> None:
    moved = """  cage: p0
  paths:
    - {a: enp1s0f0np0, b: enp1s0f0np0, subnet: 192.168.100.0/24}
    - {a: enP2p1s0f1np1, b: enP2p1s0f1np1, subnet: 192.168.200.0/24}"""
    code, doc = _diagnose(str(FIXTURES / "healthy"), "--config", str(_config(tmp_path, moved)))
    (finding,) = [f for f in doc["findings"] if f["id"] == "LINK_CHANGED"]  # type: ignore[attr-defined]
    assert finding["status"] == "warn"
    for part in ("cabled cage on node a is p1, recorded p0", "a:enp1s0f0np0 <-> b:enp1s0f0np0 is gone",
                 "new path a:enp1s0f1np1 <-> b:enp1s0f1np1", "moved from 192.168.200.0/24 to 192.168.101.0/24"):
        assert part in finding["message"]


def test_linkcheck_yaml_in_the_working_directory_is_found_as_check_finds_it(tmp_path: Path) -> None:
    _config(tmp_path, RECORDED, "{SITE_MTU_JUMBO: {jumbo: 9216}}")
    _, doc = _diagnose(str(FIXTURES / "healthy"), cwd=tmp_path)
    assert "SITE_MTU_JUMBO" in _fired(doc)
    _, plain = _diagnose(str(FIXTURES / "healthy"))
    assert "SITE_MTU_JUMBO" not in _fired(plain)


def test_live_and_offline_use_the_same_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`check` judges with linkcheck.yaml's playbooks and thresholds, as `diagnose` of the same bundle does."""
    from linkcheck.app import offline
    from linkcheck.app.offline import configured_rules
    from linkcheck.config import load_config
    from tests.app.stand_in import answer_with, inspection

    path = _config(tmp_path, RECORDED, "{NCCL_BUSBW_LOW: {min_busbw_gbs: 22.5}}")
    used: list[list[Rule]] = []
    real_diagnose = offline.diagnose_facts

    def spy(bundle: Any, link: Any, rules: list[Rule], baseline: Any = None) -> Any:
        used.append(rules)
        return real_diagnose(bundle, link, rules, baseline)

    answer_with(monkeypatch, inspection(FIXTURES / "healthy"))
    monkeypatch.setattr(offline, "diagnose_facts", spy)
    run = run_cli("check", "-c", str(path), "--save", str(tmp_path / "saved"), "-f", "json")
    assert run.returncode == 0, run.stderr
    offline_rules = configured_rules([], load_config(path))
    assert [(r.id, r.thresholds) for r in used[0]] == [(r.id, r.thresholds) for r in offline_rules]
    assert dict(next(r for r in used[0] if r.id == "NCCL_BUSBW_LOW").thresholds)["min_busbw_gbs"] == 22.5

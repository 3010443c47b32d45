"""`linkcheck anonymize` of a cluster's bundle, offline: every node renamed (n1, n2, ...), every hostname, address,
MAC and serial replaced consistently across the nodes, cluster.json with the same fakes, and the copy judged as the
original was (the same layout, verdict and findings, on the renamed cables and nodes)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.fixture_bundles import FIXTURE_DIR

if TYPE_CHECKING:
    from tests.conftest import InProcessCli

MAC = re.compile(r"(?<![0-9a-f:])[0-9a-f]{2}(?::[0-9a-f]{2}){5}(?![0-9a-f:])", re.IGNORECASE)
V4 = re.compile(r"(?<![0-9.])(?:198\.1[89]|192\.168|10)\.\d{1,3}\.\d{1,3}(?![0-9])")
SERIAL = re.compile(r"(?:Vendor SN|Serial Number)\s*:\s*(\S+)")


def _texts(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): p.read_text(encoding="utf-8", errors="replace")
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _judged(cli: InProcessCli, bundle: Path) -> dict[str, object]:
    run = cli("diagnose", str(bundle), "-f", "json")
    data = json.loads(run.stdout)
    return {"exit": run.returncode, "verdict": data["verdict"], "layout": data["layout"],
            "fired": sorted((f["id"], f["subject"]) for f in data["findings"] if f["status"] in ("warn", "fail")),
            "tests": [(t["label"], t["state"]) for t in data["tests"]]}


@pytest.mark.parametrize("name", ["cluster-ring3-hotplug", "cluster-switch4-slow-node"])
def test_a_cluster_bundle_is_anonymised_and_judged_as_the_original(name: str, cli: InProcessCli,
                                                                    tmp_path: Path) -> None:
    source = FIXTURE_DIR / name
    out = tmp_path / "anon"
    run = cli("anonymize", str(source), str(out))
    assert run.returncode == 0, run.stderr
    assert cli("verify", str(out)).returncode == 0
    doc = json.loads((out / "cluster.json").read_text(encoding="utf-8"))
    names = [h["name"] for h in doc["hosts"]]
    assert names == [f"n{i}" for i in range(1, len(names) + 1)]
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == names
    assert all(h["target"] == f"node-{h['name']}" for h in doc["hosts"])
    # Judged as the original, its nodes renamed in order (a -> n1, b -> n2, ...).
    rename = dict(zip("abcd", names, strict=False))

    def renamed(text: str) -> str:
        return re.sub(r"(?<![\w-])([a-d])(?=:p\d|<->|$)", lambda m: rename[m.group(1)], text)

    before, after = _judged(cli, source), _judged(cli, out)
    assert (after["exit"], after["verdict"], after["layout"]) == (before["exit"], before["verdict"], before["layout"])
    assert after["tests"] == [(renamed(label), state) for label, state in before["tests"]]  # type: ignore[union-attr]
    assert after["fired"] == sorted((rule, f"node {rename[subject[5:]]}" if subject.startswith("node ") else
                                     renamed(subject)) for rule, subject in before["fired"])  # type: ignore[union-attr]


def test_no_hostname_address_mac_or_serial_of_any_node_is_left(cli: InProcessCli, tmp_path: Path) -> None:
    source = FIXTURE_DIR / "cluster-ring3-hotplug"
    original = _texts(source)
    hostnames = {original[f"{n}/hostname.stdout"].strip() for n in "abc"}
    assert hostnames == {"spark-a", "spark-b", "spark-c"}
    secrets = set(hostnames)
    for text in original.values():
        secrets |= {m.lower() for m in MAC.findall(text)} | set(V4.findall(text)) | set(SERIAL.findall(text))
    secrets -= {"00:00:00:00:00:00", "ff:ff:ff:ff:ff:ff"}  # loopback's and broadcast: no identity, kept as they are
    assert len(secrets) > 20  # the fixture holds every kind: a test that finds nothing proves nothing
    out = tmp_path / "anon"
    assert cli("anonymize", str(source), str(out)).returncode == 0
    copy = "\n".join(_texts(out).values()).lower()
    left = sorted(s for s in secrets if s.lower() in copy)
    assert not left, left

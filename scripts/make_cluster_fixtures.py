"""Regenerate the cluster fixtures: `linkcheck check --quick` run against the lab's clusters of two, three and four
nodes.

Each fixture is the bundle `check --node=a --node=b ... --quick` saved against a cluster scenario of
tests/lab/cluster.py (real sshd per node in its own network namespace, the emulated ib_write_bw running its -D 4
between the namespaces in the schedule's rounds), plus expected.yaml and PROVENANCE.md. A pair is the cluster of its
one cable when a hostfile names its two nodes (`--hostfile`: two --node are the pair's own check), run against the
pair scenario of tests/emulators/scenarios.py:

    cluster-pair-hotplug           lab scenario `hotplug-degraded`   verdict fail, exit 2: the one cable at the
                                                                     hot-plug rate (LINK_HOTPLUG_DEGRADED)

    cluster-ring3-healthy          lab scenario `ring3`              verdict pass, exit 0
    cluster-ring3-hotplug          lab scenario `ring3-hotplug`      verdict fail, exit 2: cable a:p0<->b:p1 at the
                                                                     hot-plug rate (LINK_HOTPLUG_DEGRADED)
    cluster-switch4-slow-node      lab scenario `switch4-slow-node`  verdict fail, exit 2: node c slow with every
                                                                     partner (NODE_SLOW_WITH_EVERY_PARTNER)

The verdict, layout and the key rule ids below are stated here, not read from the run: a run that disagrees
writes nothing and says what differed. Building a lab needs root, so run it as root, from the repository root
(the lab serialises its address allocation with other labs itself):

    .venv/bin/python scripts/make_cluster_fixtures.py [NAME ...]

The bundle holds what `check` saves and nothing of the lab's own files: no host key, client key, ssh_config or
known_hosts (checked after the run). Addresses are the lab's (198.18.0.0/15), names the scenario model's.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from make_accept_fixtures import _linkcheck, check_filed, replace_fixture  # noqa: E402

from tests.fixture_bundles import cluster_fired  # noqa: E402
from tests.lab import Lab  # noqa: E402
from tests.lab.scenario import specs_for_scenario  # noqa: E402

ARGS = ("check", "--quick")
# Per fixture: the lab scenario, its nodes, and what the run must say: exit, verdict, layout, and the rules that name
# the trap with their status and every subject they name (as the pair fixtures' expected.yaml states them). Rules
# not stated may fire too (on a slow node's tests, the per-cable hot-plug rule): the key finding is what a fixture
# stands for, so its expectation does not move with the cluster's other rules.
FIXTURES: dict[str, dict[str, Any]] = {
    "cluster-pair-hotplug": {
        "scenario": "hotplug-degraded", "nodes": "ab", "exit": 2, "verdict": "fail", "layout": "pair",
        "findings": {"LINK_HOTPLUG_DEGRADED": "fail"}, "subjects": {"LINK_HOTPLUG_DEGRADED": [
            "a:p1<->b:p1", "enP2p1s0f1np1<->enP2p1s0f1np1", "enp1s0f1np1<->enp1s0f1np1"]},
        "description": "Two nodes named by a hostfile, checked as the cluster of their one cable and judged as the "
                       "pair they are: node a's NIC came up through the hot-plug path, so both paths of the cable "
                       "run ~13 Gb/s (the pair's own fixture: hotplug-degraded)."},
    "cluster-ring3-healthy": {
        "scenario": "ring3", "nodes": "abc", "exit": 0, "verdict": "pass", "layout": "ring3",
        "findings": {}, "subjects": {},
        "description": "A ring of three cabled as NVIDIA's ring (each node's p0 to the next node's p1), every "
                       "cable healthy: each measured at ~196 Gb/s with both twins at once."},
    "cluster-ring3-hotplug": {
        "scenario": "ring3-hotplug", "nodes": "abc", "exit": 2, "verdict": "fail", "layout": "ring3",
        "findings": {"LINK_HOTPLUG_DEGRADED": "fail"}, "subjects": {"LINK_HOTPLUG_DEGRADED": ["a:p0<->b:p1"]},
        "description": "A ring of three whose cable a:p0<->b:p1 was plugged in after boot (cx7-pcie-hotplug): "
                       "everything reads healthy but that cable's paths run ~13 Gb/s; the other two pass."},
    "cluster-switch4-slow-node": {
        "scenario": "switch4-slow-node", "nodes": "abcd", "exit": 2, "verdict": "fail", "layout": "switch",
        "findings": {"NODE_SLOW_WITH_EVERY_PARTNER": "fail"},
        "subjects": {"NODE_SLOW_WITH_EVERY_PARTNER": ["node c"]},
        "description": "Four nodes on one switch by cage p1; node c's port runs ~13 Gb/s, so it is slow with every "
                       "partner, and the second pass measures it again with a good node."},
}


def _config(lab: Lab, work: Path) -> Path:
    config = work / "linkcheck.yaml"
    config.write_text(f"ssh: {{config: {json.dumps(str(lab.ssh_config))}, "
                      f"known_hosts: {json.dumps(str(lab.known_hosts))}}}\n", encoding="utf-8")
    return config


HOSTFILE = "hosts"  # a pair's two nodes, one per line, in the run's folder: `--node` twice is the pair's own check


def _command(name: str, hostfile: str = HOSTFILE) -> list[str]:
    nodes = FIXTURES[name]["nodes"]
    return [*ARGS, f"--hostfile={hostfile}"] if len(nodes) == 2 else [*ARGS, *(f"--node={n}" for n in nodes)]


def _run(name: str, work: Path) -> Path:
    want = FIXTURES[name]
    saved = work / "saved"
    (work / HOSTFILE).write_text("".join(f"{n}\n" for n in want["nodes"]), encoding="utf-8")
    with Lab(specs_for_scenario(want["scenario"], work / "models"), work / "lab") as lab:
        proc = _linkcheck(*_command(name, str(work / HOSTFILE)), "-c", str(_config(lab, work)), "--save", str(saved),
                          "-f", "json")
    if proc.returncode != want["exit"]:
        raise SystemExit(f"{name}: check exit {proc.returncode}, expected {want['exit']}\n{proc.stderr}")
    return saved


def _check(name: str, bundle: Path) -> None:
    """The run is what FIXTURES says, verifies, and holds nothing of the lab's keys and SSH files."""
    want = FIXTURES[name]
    report = json.loads(_linkcheck("diagnose", str(bundle), "-f", "json").stdout)
    status, subjects = cluster_fired(report)
    got = (report["verdict"], report["layout"], {k: status.get(k) for k in want["findings"]},
           {k: subjects.get(k) for k in want["subjects"]})
    if got != (want["verdict"], want["layout"], want["findings"], want["subjects"]):
        raise SystemExit(f"{name}: the run's diagnosis {got} is not the stated one")
    check_filed(name, bundle)


def _scenario(name: str) -> str:
    """Where the fixture's lab scenario is defined: a pair's among the emulator's, a cluster's in the lab's."""
    want = FIXTURES[name]
    if len(want["nodes"]) == 2:
        return f"pair scenario `{want['scenario']}` of tests/emulators/scenarios.py"
    return f"cluster scenario `{want['scenario']}` of tests/lab/cluster.py"


def expected_yaml(name: str) -> str:
    """expected.yaml in the pair fixtures' form, plus the layout: what tests/scenarios judges the bundle by."""
    want = FIXTURES[name]
    expected = {
        "scenario": name, "origin": "synthetic", "layout": want["layout"],
        "description": f"`linkcheck {' '.join(_command(name))}` against the lab's {_scenario(name)} (emulated "
                       f"tools, not hardware). {want['description']}",
        "verdict": want["verdict"], "findings": want["findings"], "subjects": want["subjects"],
    }
    return yaml.safe_dump(expected, sort_keys=False, width=100)


def _write(name: str, saved: Path) -> Path:
    target = replace_fixture(name, saved)
    command = " ".join(_command(name))
    (target / "expected.yaml").write_text(expected_yaml(name))
    manifest = json.loads((target / "manifest.json").read_text(encoding="utf-8"))
    (target / "PROVENANCE.md").write_text(
        f"# {name}: provenance\n\n"
        "**Recorded on the lab from emulated tool outputs, not on real hardware.**\n\n"
        f"Made by `scripts/make_cluster_fixtures.py {name}` on {dt.date.today().isoformat()} (bundle created "
        f"{manifest.get('created')}, linkcheck {manifest.get('tool_version')}): "
        f"`linkcheck {command} -c linkcheck.yaml --save BUNDLE -f json` against the lab (tests/lab) built from the "
        f"{_scenario(name)}, the linkcheck.yaml naming the lab's "
        "ssh_config and known_hosts, saved as `check` saves it. Each node is a network namespace with its own real "
        "sshd, kernel network stack and sysfs tree from the GB10 emulator's model; the tools that need the hardware "
        "are the emulators of tests/emulators: ib_write_bw runs its -D 4 seconds for real between the nodes' "
        "namespaces in the schedule's rounds, at the model's rates (a hot-plugged or slow port at 13.3 Gb/s per "
        "path). Hostnames, MACs, serials and the rest of the node model are the scenario's; addresses are mapped "
        "into 198.18.0.0/15 (tests/lab/README.md). What the model leaves to the machine that ran the lab is that "
        "machine's: the kernel release and os-release. Nothing is anonymised: no name or address here belongs to a "
        "deployed cluster, and the bundle holds none of the lab's keys or SSH files (the script checks).\n",
        encoding="utf-8")
    return target


def main() -> None:
    if os.geteuid() != 0:
        raise SystemExit("the lab needs root")
    names = sys.argv[1:] or sorted(FIXTURES)
    unknown = [n for n in names if n not in FIXTURES]
    if unknown:
        raise SystemExit(f"unknown fixture {unknown[0]!r}; one of {', '.join(sorted(FIXTURES))}")
    for name in names:
        with tempfile.TemporaryDirectory(prefix=f"lc-{name}-") as tmp:
            saved = _run(name, Path(tmp))
            _check(name, saved)
            print(f"{name}: {_write(name, saved)}")


if __name__ == "__main__":
    main()

"""`linkcheck topology` without nodes to reach: every bad source is one line and exit 4, never a traceback; the
views render what a topology holds (the live runs are in tests/live/test_cluster_lab.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from linkcheck.cluster.facts import ClusterFacts
from linkcheck.cluster.hosts import parse_node_values
from linkcheck.cluster.schedule import schedule
from linkcheck.cluster.topology import infer_topology
from linkcheck.diagnose.engine import diagnose
from linkcheck.diagnose.playbook import load_playbooks
from linkcheck.errors import ExitCode
from linkcheck.outcome import ClusterView
from linkcheck.report.topology import view_json, view_text
from tests.cluster.spark_facts import ring

if TYPE_CHECKING:
    from tests.conftest import InProcessCli


@pytest.mark.parametrize(("args", "env", "says"), [
    ((), {"SLURM_JOB_NODELIST": None}, "linkcheck: --node: no nodes given (fix: name them with --node"),
    ((), {"SLURM_JOB_NODELIST": "spark[01-"}, "$SLURM_JOB_NODELIST: a '[' that is never closed"),
    (("--hostfile", "HOSTFILE"), {}, "HOSTFILE:2: unknown hostfile keyword 'gpus'"),
    (("--inventory", "MISSING"), {}, "MISSING: cannot read"),
    (("--node", "a=h1", "--hostfile", "HOSTFILE"), {}, "one way, not --node and --hostfile"),
    (("--node", "a=h1", "--node", "a=h2"), {}, "node a is named twice"),
    (("--node", "a=h1", "--group", "g"), {}, "give --inventory too"),
])
def test_bad_sources_are_one_line_and_exit_4(cli: InProcessCli, tmp_path: Path, args: tuple[str, ...],
                                             env: dict[str, str | None], says: str) -> None:
    hostfile = tmp_path / "hosts"
    hostfile.write_text("s1 slots=1\ns2 gpus=2\n")
    args = tuple(str(hostfile) if a == "HOSTFILE" else str(tmp_path / "missing") if a == "MISSING" else a
                 for a in args)
    says = says.replace("HOSTFILE", str(hostfile)).replace("MISSING", str(tmp_path / "missing"))
    result = cli("topology", *args, env=env)
    assert result.returncode == ExitCode.BAD_INPUT
    (line,) = result.stderr.splitlines()
    assert line.startswith("linkcheck: ") and says in line
    assert "Traceback" not in result.stderr and result.stdout == ""


def _view() -> ClusterView:
    nodes = ring(("a", "b", "c"), same_port=(0,))
    topo = infer_topology(nodes)
    diagnosis = diagnose(ClusterFacts(nodes=nodes, topology=topo), load_playbooks(kind="cluster"))
    return ClusterView(hosts=parse_node_values(["a=h1", "b=h2", "c=h3"]), topology=topo, schedule=schedule(topo),
                       diagnosis=diagnosis)


def test_the_console_view() -> None:
    text = view_text(_view())
    lines = text.splitlines()
    assert lines[0] == "layout: ring3 (3 nodes; a layout NVIDIA documents)"
    assert "cable a:p0<->b:p0" in lines
    assert "  a:enp1s0f0np0<->b:enp1s0f0np0  192.168.10.0/24  (neighbour MAC confirmed)" in lines
    assert sum(line.startswith("ring_same_port: ring cable") for line in lines) == 2
    assert [line.split(":")[0] for line in lines if line.startswith("round")] == ["round 1", "round 2", "round 3"]
    # The two cables cabled p0 to p0 (and p1 to p1) are warnings with their fix (an NCCL run first, then the
    # recabling): what NCCL does with them is assumed from a field report, not derived from its code.
    assert any(line.startswith("  fix: run NCCL across the ring") and "recable: node a p0 to node b p1" in line
               for line in lines)
    assert _view().exit_code != ExitCode.FAIL


def test_the_json_view() -> None:
    data = json.loads(view_json(_view()))
    assert [n["name"] for n in data["nodes"]] == ["a", "b", "c"] and data["nodes"][0]["target"] == "h1"
    assert data["layout"] == "ring3" and data["supported"] is True
    assert [c["key"] for c in data["cables"]] == ["a:p0<->b:p0", "a:p1<->c:p0", "b:p1<->c:p1"]
    assert data["cables"][0]["paths"][0]["a"]["label"] == "a:enp1s0f0np0"
    assert {f["kind"] for f in data["flags"]} == {"ring_same_port"}
    assert data["schedule"]["method"] == "colouring" and len(data["schedule"]["rounds"]) == 3
    assert not [f for f in data["findings"] if f["status"] == "fail"]
    same_port = [f for f in data["findings"] if f["id"] == "RING_SAME_PORT" and f["status"] == "warn"]
    assert {(f["id"], f["subject"]) for f in same_port} == {
        ("RING_SAME_PORT", "cable a:p0<->b:p0"), ("RING_SAME_PORT", "cable b:p1<->c:p1")}



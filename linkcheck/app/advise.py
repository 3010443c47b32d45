"""`linkcheck advise`: a saved bundle (a pair's or a cluster's) and a workload in, the advice out (the bundle read as
`diagnose` reads it)."""

from __future__ import annotations

from pathlib import Path

from msgspec.structs import replace

from linkcheck.advise.decide import Nodes, advise, advise_cluster
from linkcheck.advise.model import Advice, Workload
from linkcheck.app.offline import judge_bundle
from linkcheck.cluster.cables import FIRST_PASS
from linkcheck.config import Config
from linkcheck.errors import ExitCode, InputFileError
from linkcheck.model import Finding
from linkcheck.outcome import ClusterCheck, Outcome
from linkcheck.schema import YamlFile
from linkcheck.yamlfile import parse_yaml_text, read_yaml_text

__all__ = ["Workload", "WorkloadFileError", "advice_exit_code", "advise_bundle", "load_workload"]


class WorkloadFileError(InputFileError):
    """A workload file is unreadable or does not describe a workload."""


def load_workload(path: Path) -> Workload:
    """A workload file (YAML: model_gib, concurrency, moe, context_tokens, kv_kib_per_token, layers, active_gib,
    heads),
    refused at file:line when malformed, and checked as the options are."""
    text = read_yaml_text(path, WorkloadFileError)
    data = parse_yaml_text(text, str(path), WorkloadFileError)
    if not isinstance(data, dict):
        raise WorkloadFileError(str(path), "a workload file is a mapping (model_gib: 70, concurrency: 16, ...)")
    workload = YamlFile(str(path), data, WorkloadFileError).decode(Workload)
    return workload.check()


def advise_bundle(path: Path, workload: Workload, *, playbooks: list[Path] | None = None,
                  config: Config | None = None) -> tuple[Outcome | ClusterCheck, Advice]:
    """Diagnose the bundle (a bundle that `verify` rejects is refused, as for `diagnose`), then advise: a pair's
    on its link, a cluster's on its N nodes and every cable (each cable's findings named with its label)."""
    workload = workload.check()  # bad numbers are refused before the bundle is read
    judged = judge_bundle(path, playbooks, config)
    if isinstance(judged, ClusterCheck):
        return judged, advise_cluster(cluster_nodes(judged), cluster_findings(judged), workload)
    return judged, advise(judged.link, judged.diagnosis.findings, workload)


def cluster_nodes(check: ClusterCheck) -> Nodes:
    """The cluster as its advice reads it: its nodes, its layout, each first-pass test's rate with both twins at
    once (the slower direction; None where not measured), and its latency test."""
    cables, latency = [], []
    allreduce = None
    for result in check.cables:
        if result.test.pass_no != FIRST_PASS:
            continue
        totals = [t for t in result.link.bench.totals("concurrent").values() if t is not None]
        cables.append((result.test.label, min(totals) if totals else None))
        latency += [(result.test.label, run) for run in result.link.bench.latency]
        allreduce = allreduce or result.link.bench.allreduce  # one run across every node, which each cable carries
    return Nodes(len(check.view.hosts), check.view.topology.layout, tuple(cables), tuple(latency), allreduce)


def cluster_findings(check: ClusterCheck) -> list[Finding]:
    """The cluster's findings and every test's, a test's subject named with its label (two cables share path
    keys)."""
    tests = [replace(f, subject=f"{f.subject} (cable {r.test.label})") for r in check.cables for f in r.findings]
    return [*check.view.diagnosis.findings, *tests]


def advice_exit_code(advice: Advice) -> ExitCode:
    """0 with advice to act on; with the link to fix first, 2 when a finding fails, else 1 (warnings)."""
    if advice.choice != "fix-link-first":
        return ExitCode.PASS
    return ExitCode.FAIL if any(f.status == "fail" for f in advice.fix_first) else ExitCode.WARN

"""A cluster check as a node_exporter textfile: the verdict, each test's rate per direction and its state, each
node's findings, so a dashboard draws the N x N matrix and alerts on the cable or node that went slow.

The pair's metric names (report/prometheus.py, a pair being a cluster of one cable): `linkcheck_verdict`,
`linkcheck_rdma_bandwidth_bytes_per_second{cable,node,hca,direction,mode}`, `linkcheck_finding{rule,severity}` with
`cable` or `node` where the finding is a test's or a node's, ...; a test is named by its `cable` label (a switch's
second pass meeting two nodes again: `a<->c pass 2`), a direction by its nodes (`a->c`). The cluster's names of the
release before (`linkcheck_cluster_*`) are written beside them as aliases for one release (ALIASES), with their old
labels. The pair's conventions (report/exposition.py): gauges, base units (bytes per second), no timestamp, no IP
address or GID as a label, node text escaped.
"""

from __future__ import annotations

from pathlib import Path

from linkcheck import __version__
from linkcheck.cluster.cables import FIRST_PASS
from linkcheck.model import Verdict
from linkcheck.outcome import CableResult, ClusterCheck
from linkcheck.report import acceptance as acc
from linkcheck.report import prometheus as pair
from linkcheck.report.cluster import named_direction
from linkcheck.report.exposition import Labels, Metrics, bytes_per_second
from linkcheck.report.writer import write_output
from linkcheck.values import yes_no

_DIRECTIONS = ("a->b", "b->a")


# The cluster's names of the release before and the names that replace them (docs/reports.md): still written, with
# their old labels, until the next release.
ALIASES = {
    "linkcheck_cluster_info": "linkcheck_info",
    "linkcheck_cluster_verdict": "linkcheck_verdict",
    "linkcheck_cluster_exit_code": "linkcheck_exit_code",
    "linkcheck_cluster_check_verdict": "linkcheck_diagnosis_verdict",
    "linkcheck_cluster_node_inspected": "linkcheck_node_inspected",
    "linkcheck_cluster_test_bandwidth_bytes_per_second": "linkcheck_rdma_concurrent_total_bytes_per_second",
    "linkcheck_cluster_path_bandwidth_bytes_per_second": "linkcheck_rdma_bandwidth_bytes_per_second",
    "linkcheck_cluster_test_state": "linkcheck_cable_state",
    "linkcheck_cluster_test_finding": "linkcheck_finding",
    "linkcheck_cluster_node_finding": "linkcheck_finding",
    "linkcheck_cluster_finding": "linkcheck_finding",
}


def _alias(old: str) -> str:
    return f"Deprecated alias of {ALIASES[old]}, written until the next release: "


def cable_label(result: CableResult) -> str:
    """A test's `cable` label: its label, and its pass where a switch's second pass met the two nodes again."""
    return result.test.label if result.test.pass_no == FIRST_PASS else f"{result.test.label} pass {result.test.pass_no}"


def _cable_totals(check: ClusterCheck) -> list[tuple[Labels, float]]:
    """Per test and direction (named by its nodes), both twins at once: the lowest round's sum of the paths'
    rates."""
    return _lowest([({"cable": cable_label(r), "direction": named_direction(r, d)}, bytes_per_second(total))
                    for r in check.cables for d, total in r.link.bench.totals("concurrent").items()
                    if total is not None and d in _DIRECTIONS])


def _cable_paths(check: ClusterCheck) -> list[tuple[Labels, float]]:
    """Per test, sending node, HCA, direction and mode, the lowest repetition (the pair's labels and `cable`)."""
    return _lowest([({"cable": cable_label(r), "node": _ends(r, run.direction)["from"],
                      "hca": run.device or run.path_key, "direction": named_direction(r, run.direction),
                      "mode": run.mode}, bytes_per_second(run.gbps))
                    for r in check.cables for run in r.link.bench.rdma
                    if run.gbps is not None and run.direction in _DIRECTIONS])


def _cable_states(check: ClusterCheck) -> list[tuple[Labels, float]]:
    """Each test's state, once (the same test twice, an unreached node's stand-in: the first is the one shown)."""
    seen: set[str] = set()
    out: list[tuple[Labels, float]] = []
    for r in check.cables:
        if (cable := cable_label(r)) not in seen:
            seen.add(cable)
            out += pair.cable_state_samples(cable, r.test.a, r.test.b, r.verdict, r.link)
    return out


def _all_findings(check: ClusterCheck, nodes: dict[str, str]) -> list[tuple[Labels, float]]:
    """Per rule and severity, the subjects that warn or fail: a test's named by `cable`, a node's by `node`, the
    cluster's own with neither (as a pair's)."""
    tests = [({"rule": f.rule_id, "severity": f.severity.value, "cable": cable_label(r)}, f)
             for r in check.cables for f in r.findings]
    view = [({"rule": f.rule_id, "severity": f.severity.value,
              **({"node": nodes[f.subject]} if f.subject in nodes else {})}, f) for f in check.view.diagnosis.findings]
    return pair.finding_counts(tests + view)


def _test_labels(result: CableResult) -> Labels:
    return {"test": result.test.label, "pass": str(result.test.pass_no)}


def _ends(result: CableResult, direction: str) -> Labels:
    src, dst = named_direction(result, direction).split("->", 1)
    return {"from": src, "to": dst}


def _lowest(samples: list[tuple[Labels, float]]) -> list[tuple[Labels, float]]:
    """One sample per label set, the lowest (as an acceptance judges repetitions): a series is never written twice."""
    out: dict[tuple[tuple[str, str], ...], tuple[Labels, float]] = {}
    for labels, value in samples:
        key = tuple(labels.items())
        if key not in out or value < out[key][1]:
            out[key] = (labels, value)
    return list(out.values())


def _totals(check: ClusterCheck) -> list[tuple[Labels, float]]:
    """Per test and direction, both twins at once: the lowest round's sum of the paths' rates."""
    return _lowest([({**_test_labels(r), **_ends(r, d), "mode": "concurrent"}, bytes_per_second(total))
                    for r in check.cables for d, total in r.link.bench.totals("concurrent").items()
                    if total is not None and d in _DIRECTIONS])


def _paths(check: ClusterCheck) -> list[tuple[Labels, float]]:
    """Per test, direction, HCA of the sending node and mode, the lowest repetition."""
    return _lowest([({**_test_labels(r), **_ends(r, run.direction), "hca": run.device or run.path_key,
                      "mode": run.mode}, bytes_per_second(run.gbps))
                    for r in check.cables for run in r.link.bench.rdma
                    if run.gbps is not None and run.direction in _DIRECTIONS])


def _states(check: ClusterCheck) -> list[tuple[Labels, float]]:
    seen: set[tuple[str, str]] = set()
    out: list[tuple[Labels, float]] = []
    for r in check.cables:
        key = (r.test.label, str(r.test.pass_no))
        if key in seen:  # the same test twice (an unreached node's stand-in): the first is the one shown
            continue
        seen.add(key)
        out += [({**_test_labels(r), "a": r.test.a, "b": r.test.b, "state": s}, 1 if r.state == s else 0)
                for s in pair.CABLE_STATES]
    return out


def check_prometheus(check: ClusterCheck) -> str:
    """The cluster check as a node_exporter textfile (ends with a newline): the pair's names, then the aliases."""
    view, m = check.view, Metrics()
    topo = view.topology
    nodes = {f"node {n}": n for n in topo.nodes}
    info = [({"layout": topo.layout, "supported": yes_no(topo.supported), "tool_version": __version__}, 1.0)]  # alias
    decided = acc.cluster_verdict(check)  # the acceptance's, where the bundle holds one
    verdict = [({"verdict": v.value}, 1.0 if decided.verdict is v else 0.0) for v in Verdict]
    own = [({"verdict": v.value}, 1.0 if check.verdict is v else 0.0) for v in Verdict]
    inspected = [({"node": n}, 0.0 if n in view.errors else 1.0) for n in topo.nodes]
    pair.run_families(m, topo, check.facts.nodes, check.created)
    m.family("linkcheck_verdict", "The bundle's verdict (that of its `linkcheck accept` run where it holds one, "
             "DEGRADED as warn), one-hot over pass, warn, fail and inconclusive.", verdict)
    m.family("linkcheck_exit_code", "The exit code linkcheck returned for this run.", [({}, decided.exit_code)])
    m.family("linkcheck_diagnosis_verdict", "The diagnosis's own verdict, one-hot over pass, warn, fail and "
             "inconclusive (the same as linkcheck_verdict without an accept run).", own)
    m.family("linkcheck_node_inspected", "1 when the node answered the inspection, 0 when it could not be read "
             "(its tests are inconclusive).", inspected)
    m.family("linkcheck_rdma_bandwidth_bytes_per_second", "ib_write_bw rate per cable, sending node, HCA, direction "
             "and mode (alone or concurrent), lowest repetition.", _cable_paths(check))
    m.family("linkcheck_rdma_concurrent_total_bytes_per_second", "Both paths at once: the sum of the paths' rates "
             "per cable and direction, lowest round.", _cable_totals(check))
    m.family("linkcheck_cable_state", "Each cable's test state, one-hot over pass, slow and inconclusive.",
             _cable_states(check))
    pair.nccl_family(m, check.facts.nccl.busbw_gbs if check.facts.nccl is not None else None)
    m.family("linkcheck_finding", "Subjects on which the rule warns or fails (0: judged clean); a test's rule per "
             "cable, a node's per node.", _all_findings(check, nodes))
    acceptance = check.acceptance  # the pair's families, a check named by its test and pass too
    if acceptance is not None and "problem" in acceptance:
        m.comment(f"acceptance not shown: {acceptance['problem']}")
    pair.acceptance_families(m, acceptance)
    _aliases(m, check, nodes, info, verdict, own, inspected, decided.exit_code)
    return m.text()


def _aliases(m: Metrics, check: ClusterCheck, nodes: dict[str, str], info: list[tuple[Labels, float]],
             verdict: list[tuple[Labels, float]], own: list[tuple[Labels, float]],
             inspected: list[tuple[Labels, float]], exit_code: int) -> None:
    """The cluster's names of the release before, each with its old labels (ALIASES)."""
    m.family("linkcheck_cluster_info", _alias("linkcheck_cluster_info") + "the layout and version.", info)
    m.family("linkcheck_cluster_verdict", _alias("linkcheck_cluster_verdict") + "the bundle's verdict.", verdict)
    m.family("linkcheck_cluster_exit_code", _alias("linkcheck_cluster_exit_code") + "the exit code.",
             [({}, exit_code)])
    m.family("linkcheck_cluster_check_verdict", _alias("linkcheck_cluster_check_verdict") + "the check's own "
             "verdict.", own)
    m.family("linkcheck_cluster_node_inspected", _alias("linkcheck_cluster_node_inspected") + "1 when the node "
             "answered.", inspected)
    m.family("linkcheck_cluster_test_bandwidth_bytes_per_second",
             _alias("linkcheck_cluster_test_bandwidth_bytes_per_second") + "per test and direction, both twins at "
             "once.", _totals(check))
    m.family("linkcheck_cluster_path_bandwidth_bytes_per_second",
             _alias("linkcheck_cluster_path_bandwidth_bytes_per_second") + "per test, direction, HCA and mode.",
             _paths(check))
    m.family("linkcheck_cluster_test_state", _alias("linkcheck_cluster_test_state") + "each test's state.",
             _states(check))
    m.family("linkcheck_cluster_test_finding", _alias("linkcheck_cluster_test_finding") + "per test.",
             pair.finding_counts([({**_test_labels(r), "rule": f.rule_id}, f)
                                  for r in check.cables for f in r.findings]))
    m.family("linkcheck_cluster_node_finding", _alias("linkcheck_cluster_node_finding") + "per node.",
             pair.finding_counts([({"node": nodes[f.subject], "rule": f.rule_id}, f)
                      for f in check.view.diagnosis.findings if f.subject in nodes]))
    m.family("linkcheck_cluster_finding", _alias("linkcheck_cluster_finding") + "per cluster-wide rule.",
             pair.finding_counts([({"rule": f.rule_id, "severity": f.severity.value}, f)
                                  for f in check.view.diagnosis.findings if f.subject not in nodes]))


def write_cluster_textfile(path: Path, check: ClusterCheck) -> None:
    """The cluster's textfile written as the pair's is (`write_textfile`): a regular file atomically, a FIFO or a
    device straight, `-` to standard output."""
    write_output(path, check_prometheus(check), "--prometheus-textfile", "textfile")

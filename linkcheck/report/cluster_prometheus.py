"""A cluster check as a node_exporter textfile: the verdict, each test's rate per direction and its state, each
node's findings, so a dashboard draws the N x N matrix and alerts on the cable or node that went slow.

The pair's conventions (report/prometheus.py, through report/exposition.py): gauges, base units (bytes per second),
no timestamp, no IP address or GID as a label, node text escaped. A test is named by its label and its pass (a
switch's second pass may meet the same two nodes again); `from` and `to` are the direction's nodes.
"""

from __future__ import annotations

from pathlib import Path

from linkcheck import __version__
from linkcheck.cluster_outcome import CableResult, ClusterCheck
from linkcheck.model import Finding, Status, Verdict
from linkcheck.report import acceptance as acc
from linkcheck.report.cluster import named_direction
from linkcheck.report.exposition import Labels, Metrics, bytes_per_second
from linkcheck.report.prometheus import acceptance_families
from linkcheck.report.writer import write_output
from linkcheck.values import yes_no

_STATES = ("pass", "slow", "inconclusive")
_DIRECTIONS = ("a->b", "b->a")


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
                for s in _STATES]
    return out


def _counts(findings: list[tuple[Labels, Finding]]) -> list[tuple[Labels, float]]:
    """Per label set, how many subjects warn or fail (0 for a rule that judged its subjects clean)."""
    counts: dict[tuple[tuple[str, str], ...], tuple[Labels, int]] = {}
    for labels, f in findings:
        if f.status is Status.SKIP:
            continue
        key = tuple(labels.items())
        n = counts.get(key, (labels, 0))[1]
        counts[key] = (labels, n + (1 if f.status in (Status.FAIL, Status.WARN) else 0))
    return [(labels, n) for labels, n in counts.values()]


def check_prometheus(check: ClusterCheck) -> str:
    """The cluster check as a node_exporter textfile (ends with a newline)."""
    view, m = check.view, Metrics()
    topo = view.topology
    nodes = {f"node {n}": n for n in topo.nodes}
    m.family("linkcheck_cluster_info", "The checked cluster's layout and the linkcheck version (value 1).",
             [({"layout": topo.layout, "supported": yes_no(topo.supported), "tool_version": __version__},
               1)])
    decided = acc.cluster_verdict(check)  # the acceptance's, where the bundle holds one
    m.family("linkcheck_cluster_verdict", "The cluster bundle's verdict (that of its `linkcheck accept` run where "
             "it holds one, DEGRADED as warn), one-hot over pass, warn, fail and inconclusive.",
             [({"verdict": v.value}, 1 if decided.verdict is v else 0) for v in Verdict])
    m.family("linkcheck_cluster_exit_code", "The exit code linkcheck returned for this cluster check.",
             [({}, decided.exit_code)])
    m.family("linkcheck_cluster_check_verdict", "The cluster check's own verdict, one-hot over pass, warn, fail and "
             "inconclusive (the same as linkcheck_cluster_verdict without an accept run).",
             [({"verdict": v.value}, 1 if check.verdict is v else 0) for v in Verdict])
    m.family("linkcheck_cluster_node_inspected", "1 when the node answered the inspection, 0 when it could not be "
             "read (its tests are inconclusive).", [({"node": n}, 0 if n in view.errors else 1) for n in topo.nodes])
    m.family("linkcheck_cluster_test_bandwidth_bytes_per_second",
             "ib_write_bw per test and direction with both twins at once: the sum of the paths' rates, lowest round.",
             _totals(check))
    m.family("linkcheck_cluster_path_bandwidth_bytes_per_second",
             "ib_write_bw per test, direction, sending HCA and mode (alone or concurrent), lowest repetition.",
             _paths(check))
    m.family("linkcheck_cluster_test_state", "Each test's state, one-hot over pass, slow and inconclusive.",
             _states(check))
    m.family("linkcheck_cluster_test_finding", "Per test, the subjects on which a throughput rule warns or fails "
             "(0: judged clean).", _counts([({**_test_labels(r), "rule": f.rule_id}, f) for r in check.cables
                                            for f in r.findings]))
    m.family("linkcheck_cluster_node_finding", "Per node, whether a cluster rule of the node warns or fails on it "
             "(0: judged clean).", _counts([({"node": nodes[f.subject], "rule": f.rule_id}, f)
                                           for f in view.diagnosis.findings if f.subject in nodes]))
    m.family("linkcheck_cluster_finding", "Per cluster-wide rule, the subjects (cables, ports, the layout) on which it "
             "warns or fails (0: judged clean).",
             _counts([({"rule": f.rule_id, "severity": f.severity.value}, f) for f in view.diagnosis.findings
                      if f.subject not in nodes]))
    acceptance = check.acceptance  # the pair's families, a check named by its test and pass too
    if acceptance is not None and "problem" in acceptance:
        m.comment(f"acceptance not shown: {acceptance['problem']}")
    acceptance_families(m, acceptance)
    return m.text()


def write_cluster_textfile(path: Path, check: ClusterCheck) -> None:
    """The cluster's textfile written as the pair's is (`write_textfile`): a regular file atomically, a FIFO or a
    device straight, `-` to standard output."""
    write_output(path, check_prometheus(check), "--prometheus-textfile", "textfile")

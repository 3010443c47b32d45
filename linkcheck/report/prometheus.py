"""The node_exporter textfile format: the verdict, each run's bandwidth and the findings as Prometheus gauges, for
a pair (a cluster of one cable) and a cluster with the same names: a cable's series carry its `cable` label, a
direction is named by its nodes, a node's finding by `node`, so a dashboard draws the N x N matrix and alerts on the
cable or node that went slow. A cluster's names of the release before (`linkcheck_cluster_*`) are written beside them
as aliases for one release (ALIASES), with their old labels.

Names and units follow Prometheus conventions (base units: bytes per second, seconds; `_info` for identity,
`_ratio` for ratios). No IP address or GID is ever a label. The textfile collector does not accept timestamps,
so none are written; it adds `node_textfile_mtime_seconds` itself, which serves staleness alerts.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from linkcheck import __version__
from linkcheck.accept.text import check_tests, deciding_margin, non_standard
from linkcheck.cluster.cables import FIRST_PASS, cable_tests
from linkcheck.cluster.schedule import schedule
from linkcheck.cluster.topology import Topology
from linkcheck.facts.drift import comparable_ratios
from linkcheck.facts.model import LinkFacts, NodeFacts
from linkcheck.model import Finding, Status, Verdict
from linkcheck.outcome import CableResult, ClusterCheck, Outcome, cable_state
from linkcheck.report import acceptance as acc
from linkcheck.report.exposition import Labels, Metrics, bytes_per_second, scaled
from linkcheck.report.judged import Judged
from linkcheck.report.repair import repair_plan
from linkcheck.report.tables import DIRECTIONS, named_direction
from linkcheck.report.topology import pair_cable, pair_topology
from linkcheck.report.verdict import BundleVerdict
from linkcheck.report.writer import check_output_path, write_output
from linkcheck.values import yes_no

CABLE_STATES = ("pass", "slow", "inconclusive")


def _timestamp(created: str) -> float:
    try:
        stamp = dt.datetime.fromisoformat(created)
    except ValueError:
        return dt.datetime.now(dt.timezone.utc).timestamp()
    return (stamp if stamp.tzinfo else stamp.replace(tzinfo=dt.timezone.utc)).timestamp()


def run_families(m: Metrics, topology: Topology, nodes: Mapping[str, NodeFacts], created: str,
                 deprecated: Labels | None = None) -> None:
    """What a pair's and a cluster's textfile both open with: `linkcheck_info` (the layout, whether NVIDIA documents
    it, the nodes' hostnames in order, the version; `deprecated` labels after them) and
    `linkcheck_last_run_timestamp_seconds`, when the bundle was collected (now where it does not say)."""
    names = ",".join(nodes[n].hostname or n if n in nodes else n for n in topology.nodes)
    m.family("linkcheck_info", "The checked nodes' layout, their hostnames and the linkcheck version (value 1).",
             [({"layout": topology.layout, "supported": yes_no(topology.supported), "nodes": names,
                "tool_version": __version__, **(deprecated or {})}, 1)])
    m.family("linkcheck_last_run_timestamp_seconds", "When the diagnosed bundle was collected (Unix time).",
             [({}, _timestamp(created))])


def nccl_family(m: Metrics, busbw_gbs: float | None) -> None:
    """The NCCL run across the nodes (a pair's two, a cluster's all), where it gave a bus bandwidth."""
    m.family("linkcheck_nccl_busbw_bytes_per_second", "nccl-tests all_gather bus bandwidth at the largest messages.",
             [({}, scaled(busbw_gbs, 1_000_000_000))] if busbw_gbs is not None else [])


def cable_state_samples(cable: str, a: str, b: str, verdict: Verdict, link: LinkFacts) -> list[tuple[Labels, float]]:
    """A test's state (outcome.cable_state), one-hot over pass, slow and inconclusive."""
    state = cable_state(verdict, link)
    return [({"cable": cable, "a": a, "b": b, "state": s}, 1 if state == s else 0) for s in CABLE_STATES]


def finding_counts(findings: list[tuple[Labels, Finding]]) -> list[tuple[Labels, float]]:
    """Per label set, how many subjects warn or fail (0 for a rule that judged its subjects clean; a rule that
    judged none is not written)."""
    counts: dict[tuple[tuple[str, str], ...], tuple[Labels, int]] = {}
    for labels, f in findings:
        if f.status is Status.SKIP:
            continue
        key = tuple(labels.items())
        n = counts.get(key, (labels, 0))[1]
        counts[key] = (labels, n + (1 if f.status in (Status.FAIL, Status.WARN) else 0))
    return [(labels, n) for labels, n in counts.values()]


def _rdma(outcome: Outcome, cable: str) -> list[tuple[Labels, float]]:
    """Per client node, HCA, direction and mode, the lowest rate of the repetitions (as an acceptance judges)."""
    lowest: dict[tuple[str, str, str, str], float] = {}
    for run in outcome.link.bench.rdma:
        if run.gbps is not None:
            key = (run.client_node, run.device or run.path_key, run.direction, run.mode)
            lowest[key] = min(run.gbps, lowest.get(key, run.gbps))
    return [({"cable": cable, "node": n, "hca": h, "direction": d, "mode": m}, bytes_per_second(gbps))
            for (n, h, d, m), gbps in sorted(lowest.items())]


def _findings(outcome: Outcome, cable: str) -> list[tuple[Labels, float]]:
    """Per rule, how many subjects of the pair's one cable warn or fail, as a cluster's test's rules are counted."""
    ordered = sorted(outcome.diagnosis.findings, key=lambda f: (f.rule_id, f.severity.value))
    return finding_counts([({"rule": f.rule_id, "severity": f.severity.value, "cable": cable}, f) for f in ordered])


def _baseline_ratios(outcome: Outcome) -> list[tuple[Labels, float]]:
    facts = outcome.link.baseline
    if facts is None:
        return []
    return [({"baseline": facts.baseline.name, "metric": r.metric, "subject": r.subject}, round(r.ratio, 6))
            for r in comparable_ratios(facts.baseline, facts.current) if r.ratio is not None]


def _check_labels(doc: dict[str, Any], check: dict[str, Any], test: dict[str, Any] | None,
                  cable: str | None) -> Labels:
    """An acceptance check's `test` and `pass`: a cluster's test's (acc.series_labels); a pair's check is its one
    cable's, first pass, as a cluster's test's check is; the NCCL run's, of every node, neither (empty), as a
    cluster's."""
    if cable is None:
        return acc.series_labels(doc, test)
    whole = str(check.get("id", "")).startswith("nccl_")
    return {"test": "" if whole else cable, "pass": "" if whole else "1"}


def acceptance_families(m: Metrics, doc: dict[str, Any] | None, cable: str | None = None) -> None:
    """The bundle's acceptance (a pair's, `cable` its one cable, or a cluster's): its verdict and profile, each
    check's status (one-hot) and margin, each check named by its test and pass too. Nothing when the record is not
    shown or there is none."""
    if doc is None or "problem" in doc:
        return
    profile = doc.get("profile") or {}
    m.family("linkcheck_acceptance_info", "The acceptance profile the pair was judged against (value 1).",
             [({"profile": str(profile.get("name") or "unknown"), "sha256": str(profile.get("sha256") or "")}, 1)])
    m.family("linkcheck_acceptance_verdict", "The acceptance verdict, one-hot over pass, degraded, fail and "
             "inconclusive.", [({"verdict": v.lower()}, 1 if doc.get("verdict") == v else 0) for v in acc.STATUSES])
    if isinstance(doc.get("standard"), dict):  # a record older than the comparison does not say
        m.family("linkcheck_acceptance_non_standard", "1 when the run was weaker than the standard acceptance (shorter "
                 "-D, fewer repetitions, a looser profile than the built-in one), else 0.",
                 [({}, 1 if non_standard(doc) is not None else 0)])
    named = [(c, {"check": str(c.get("id")), "subject": str(c.get("subject")), **_check_labels(doc, c, t, cable)})
             for c, t in zip(acc.checks(doc), check_tests(doc), strict=True)]
    m.family("linkcheck_acceptance_check_status", "Each acceptance check's status, one-hot over pass, degraded, "
             "fail and inconclusive.",
             [({**labels, "status": v.lower()}, 1 if c.get("status") == v else 0)
              for c, labels in named for v in acc.STATUSES])
    m.family("linkcheck_acceptance_check_margin", "How far each check's lowest (or highest) measured value is inside "
             "the line that decides its status, in the check's unit (negative: outside).",
             [({**labels, "unit": acc.unit(c)}, margin) for c, labels in named
              if (margin := deciding_margin(c)) is not None])


def _repair(m: Metrics, outcome: Outcome) -> None:
    """The bundle's repair plan (`linkcheck fix`): how many steps it plans per node (0: nothing to repair)."""
    plan, _ = repair_plan(outcome)
    if plan is None:
        return
    m.family("linkcheck_repair_steps", "Steps the bundle's repair plan (linkcheck fix) holds per node.",
             [({"node": node}, len(plan.for_node(node))) for node in (outcome.link.a.name, outcome.link.b.name)])


def render_prometheus(judged: Judged) -> str:
    """A pair's or a cluster's report as a node_exporter textfile (ends with a newline)."""
    m = Metrics()
    if isinstance(judged, ClusterCheck):
        _cluster(m, judged)
    else:
        _pair(m, judged)
    return m.text()


def _one_hot(chosen: Verdict) -> list[tuple[Labels, float]]:
    return [({"verdict": v.value}, 1 if chosen is v else 0) for v in Verdict]


# One HELP per family that a pair's and a cluster's textfiles share: node_exporter's textfile collector gathers every
# file of its folder into one registry, which refuses a family whose HELP differs between two files.
HELP = {
    "linkcheck_node_inspected": "1 when the node answered the inspection, 0 when it could not be read (its tests are "
                                "inconclusive).",
    "linkcheck_rdma_bandwidth_bytes_per_second": "ib_write_bw rate per cable, sending node (the ib_write_bw client), "
                                                 "HCA, direction and mode (alone or concurrent), lowest repetition.",
    "linkcheck_rdma_concurrent_total_bytes_per_second": "Both paths at once: the sum of the paths' rates per cable and "
                                                        "direction, lowest round.",
    "linkcheck_cable_state": "Each cable's test state, one-hot over pass, slow and inconclusive.",
    "linkcheck_finding": "Subjects on which the rule warns or fails (0: judged clean); a test's rule per cable, a "
                         "node's per node.",
}


def _verdict_families(m: Metrics, decided: BundleVerdict, own: Verdict) -> None:
    """The bundle's verdict (an acceptance's where it holds one) and exit code, and the diagnosis's own verdict (a
    pair's, or a cluster's check's)."""
    m.family("linkcheck_verdict", "The bundle's verdict (that of its `linkcheck accept` run where it holds one, "
             "DEGRADED as warn), one-hot over pass, warn, fail and inconclusive.", _one_hot(decided.verdict))
    m.family("linkcheck_exit_code", "The exit code linkcheck returned for this run.", [({}, decided.exit_code)])
    m.family("linkcheck_diagnosis_verdict", "The diagnosis's own verdict, one-hot over pass, warn, fail and "
             "inconclusive (the same as linkcheck_verdict without an accept run).", _one_hot(own))


def _pair(m: Metrics, outcome: Outcome) -> None:
    """The pair's families, its one cable labelled as a cluster's cables are."""
    link, diagnosis = outcome.link, outcome.diagnosis
    topology = pair_topology(outcome)
    # node_a and node_b: the pair's labels of the release before, deprecated (docs/reports.md), until the next.
    names = (link.a.name, link.b.name)  # as the pair names its nodes (a and b, or any two names)
    run_families(m, topology, {link.a.name: link.a, link.b.name: link.b}, outcome.bundle.created,
                 {"node_a": link.a.hostname or "unknown", "node_b": link.b.hostname or "unknown"})
    _verdict_families(m, acc.bundle_verdict(outcome), diagnosis.verdict)
    cable = pair_cable(outcome, topology)  # the labels a cluster's series carry
    m.family("linkcheck_node_inspected", HELP["linkcheck_node_inspected"],
             [({"node": n}, 0 if n in outcome.bundle.collection_errors else 1) for n in names])
    m.family("linkcheck_rdma_bandwidth_bytes_per_second", HELP["linkcheck_rdma_bandwidth_bytes_per_second"],
             _rdma(outcome, cable))
    m.family("linkcheck_rdma_concurrent_total_bytes_per_second",
             HELP["linkcheck_rdma_concurrent_total_bytes_per_second"],
             [({"cable": cable, "direction": d}, bytes_per_second(t))
              for d, t in link.bench.totals("concurrent").items() if t is not None])
    nccl = link.bench.nccl
    nccl_family(m, nccl.busbw_gbs if nccl is not None else None)
    m.family("linkcheck_cable_state", HELP["linkcheck_cable_state"],
             cable_state_samples(cable, *names, diagnosis.verdict, link))
    m.family("linkcheck_baseline_ratio", "A traffic figure now divided by the same figure in the pair's baseline.",
             _baseline_ratios(outcome))
    m.family("linkcheck_finding", HELP["linkcheck_finding"], _findings(outcome, cable))
    acceptance_families(m, acc.acceptance(outcome), cable)
    _repair(m, outcome)


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
                    if total is not None and d in DIRECTIONS])


def _cable_paths(check: ClusterCheck) -> list[tuple[Labels, float]]:
    """Per test, sending node, HCA, direction and mode, the lowest repetition (the pair's labels and `cable`)."""
    return _lowest([({"cable": cable_label(r), "node": _ends(r, run.direction)["from"],
                      "hca": run.device or run.path_key, "direction": named_direction(r, run.direction),
                      "mode": run.mode}, bytes_per_second(run.gbps))
                    for r in check.cables for run in r.link.bench.rdma
                    if run.gbps is not None and run.direction in DIRECTIONS])


def _cable_states(check: ClusterCheck) -> list[tuple[Labels, float]]:
    """Each test's state, once (the same test twice, an unreached node's stand-in: the first is the one shown)."""
    seen: set[str] = set()
    out: list[tuple[Labels, float]] = []
    for r in check.cables:
        if (cable := cable_label(r)) not in seen:
            seen.add(cable)
            out += cable_state_samples(cable, r.test.a, r.test.b, r.verdict, r.link)
    return out


def _all_findings(check: ClusterCheck, nodes: dict[str, str]) -> list[tuple[Labels, float]]:
    """Per rule and severity, the subjects that warn or fail: a test's named by `cable`, a node's by `node`, the
    cluster's own with neither (as a pair's)."""
    tests = [({"rule": f.rule_id, "severity": f.severity.value, "cable": cable_label(r)}, f)
             for r in check.cables for f in r.findings]
    cables = {t.label for t in cable_tests(check.facts, schedule(check.view.topology))}
    view = [({"rule": f.rule_id, "severity": f.severity.value, **_where(f.subject, nodes, cables)}, f)
            for f in check.view.diagnosis.findings]
    return finding_counts(tests + view)


def _where(subject: str, nodes: dict[str, str], cables: set[str]) -> Labels:
    """A cluster finding's place: its `node` (`node c`, or a device of it, `c:roceP2p1s0f0`), or the `cable` a pair's
    rule judged it on (`b:p0<->c:p1: enp1s0f0np0<->enp1s0f1np1`); none for the cluster's own."""
    if subject in nodes:
        return {"node": nodes[subject]}
    label, sep, _ = subject.partition(": ")
    if sep and label in cables:
        return {"cable": label}
    head, sep, _ = subject.partition(":")
    return {"node": head} if sep and f"node {head}" in nodes and "<->" not in subject else {}


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
                    if total is not None and d in DIRECTIONS])


def _paths(check: ClusterCheck) -> list[tuple[Labels, float]]:
    """Per test, direction, HCA of the sending node and mode, the lowest repetition."""
    return _lowest([({**_test_labels(r), **_ends(r, run.direction), "hca": run.device or run.path_key,
                      "mode": run.mode}, bytes_per_second(run.gbps))
                    for r in check.cables for run in r.link.bench.rdma
                    if run.gbps is not None and run.direction in DIRECTIONS])


def _states(check: ClusterCheck) -> list[tuple[Labels, float]]:
    seen: set[tuple[str, str]] = set()
    out: list[tuple[Labels, float]] = []
    for r in check.cables:
        key = (r.test.label, str(r.test.pass_no))
        if key in seen:  # the same test twice (an unreached node's stand-in): the first is the one shown
            continue
        seen.add(key)
        out += [({**_test_labels(r), "a": r.test.a, "b": r.test.b, "state": s}, 1 if r.state == s else 0)
                for s in CABLE_STATES]
    return out


def _cluster(m: Metrics, check: ClusterCheck) -> None:
    """The cluster check's families: the pair's names (a test's series named by its `cable`, a node's by `node`),
    then the aliases."""
    view = check.view
    topo = view.topology
    nodes = {f"node {n}": n for n in topo.nodes}
    info = [({"layout": topo.layout, "supported": yes_no(topo.supported), "tool_version": __version__}, 1.0)]  # alias
    decided = acc.cluster_verdict(check)  # the acceptance's, where the bundle holds one
    inspected = [({"node": n}, 0.0 if n in view.errors else 1.0) for n in topo.nodes]
    run_families(m, topo, check.facts.nodes, check.created)
    _verdict_families(m, decided, check.verdict)
    m.family("linkcheck_node_inspected", HELP["linkcheck_node_inspected"], inspected)
    m.family("linkcheck_rdma_bandwidth_bytes_per_second", HELP["linkcheck_rdma_bandwidth_bytes_per_second"],
             _cable_paths(check))
    m.family("linkcheck_rdma_concurrent_total_bytes_per_second",
             HELP["linkcheck_rdma_concurrent_total_bytes_per_second"], _cable_totals(check))
    m.family("linkcheck_cable_state", HELP["linkcheck_cable_state"], _cable_states(check))
    nccl_family(m, check.facts.nccl.busbw_gbs if check.facts.nccl is not None else None)
    m.family("linkcheck_finding", HELP["linkcheck_finding"], _all_findings(check, nodes))
    acceptance = check.acceptance  # the pair's families, a check named by its test and pass too
    if acceptance is not None and "problem" in acceptance:
        m.comment(f"acceptance not shown: {acceptance['problem']}")
    acceptance_families(m, acceptance)
    _aliases(m, check, nodes, info, _one_hot(decided.verdict), _one_hot(check.verdict), inspected,
             decided.exit_code)


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
             finding_counts([({**_test_labels(r), "rule": f.rule_id}, f)
                                  for r in check.cables for f in r.findings]))
    m.family("linkcheck_cluster_node_finding", _alias("linkcheck_cluster_node_finding") + "per node.",
             finding_counts([({"node": nodes[f.subject], "rule": f.rule_id}, f)
                      for f in check.view.diagnosis.findings if f.subject in nodes]))
    m.family("linkcheck_cluster_finding", _alias("linkcheck_cluster_finding") + "per cluster-wide rule.",
             finding_counts([({"rule": f.rule_id, "severity": f.severity.value}, f)
                                  for f in check.view.diagnosis.findings if f.subject not in nodes]))


def check_textfile_path(path: Path) -> Path:
    """Refuse, before any work, a textfile whose folder is missing or not writable (exit 4)."""
    return check_output_path(path, "--prometheus-textfile")


def write_textfile(path: Path, judged: Judged) -> None:
    """Write a pair's or a cluster's textfile as `write_output` writes every output: a regular file atomically (a
    temporary file in the same folder, then a rename over it), a FIFO or a device straight, `-` to standard
    output."""
    write_output(path, render_prometheus(judged), "--prometheus-textfile", "textfile")

"""The node_exporter textfile format: the verdict, each run's bandwidth and the findings as Prometheus gauges.

Names and units follow Prometheus conventions (base units: bytes per second, seconds; `_info` for identity,
`_ratio` for ratios). No IP address or GID is ever a label. The textfile collector does not accept timestamps,
so none are written; it adds `node_textfile_mtime_seconds` itself, which serves staleness alerts.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from linkcheck import __version__
from linkcheck.accept.text import check_tests, deciding_margin, non_standard
from linkcheck.cluster.topology import Topology, infer_topology
from linkcheck.facts.drift import comparable_ratios
from linkcheck.facts.model import LinkFacts, NodeFacts
from linkcheck.model import Finding, Status, Verdict
from linkcheck.outcome import cable_state
from linkcheck.report import acceptance as acc
from linkcheck.report.exposition import Labels, Metrics, bytes_per_second, scaled
from linkcheck.report.repair import repair_plan
from linkcheck.report.writer import check_output_path, write_output
from linkcheck.values import yes_no

if TYPE_CHECKING:
    from linkcheck.outcome import Outcome

CABLE_STATES = ("pass", "slow", "inconclusive")


def _timestamp(created: str) -> float:
    try:
        stamp = dt.datetime.fromisoformat(created)
    except ValueError:
        return dt.datetime.now(dt.timezone.utc).timestamp()
    return (stamp if stamp.tzinfo else stamp.replace(tzinfo=dt.timezone.utc)).timestamp()


def pair_topology(outcome: Outcome) -> Topology:
    """The pair as a cluster of its two nodes sees it (cluster/topology.py): its layout, its cable."""
    return infer_topology({"a": outcome.link.a, "b": outcome.link.b})


def pair_cable(outcome: Outcome, topology: Topology | None = None) -> str:
    """The pair's one cable as a cluster names it (`a:p1<->b:p1`, cluster/topology.py), so that a pair's series and
    a cluster's carry the same `cable` label; `a<->b` where the facts show no one cable."""
    cables = (topology or pair_topology(outcome)).cables
    return cables[0].key if len(cables) == 1 else "a<->b"


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
             [({"node": node}, len(plan.for_node(node))) for node in ("a", "b")])


def render_prometheus(outcome: Outcome) -> str:
    """The outcome as a node_exporter textfile (ends with a newline)."""
    link, diagnosis, m = outcome.link, outcome.diagnosis, Metrics()
    topology = pair_topology(outcome)
    # node_a and node_b: the pair's labels of the release before, deprecated (docs/reports.md), until the next.
    run_families(m, topology, {"a": link.a, "b": link.b}, outcome.bundle.created,
                 {"node_a": link.a.hostname or "unknown", "node_b": link.b.hostname or "unknown"})
    decided = acc.bundle_verdict(outcome)  # the acceptance's, where the bundle holds one
    m.family("linkcheck_verdict", "The bundle's verdict (that of its `linkcheck accept` run where it holds one, "
             "DEGRADED as warn), one-hot over pass, warn, fail and inconclusive.",
             [({"verdict": v.value}, 1 if decided.verdict is v else 0) for v in Verdict])
    m.family("linkcheck_exit_code", "The exit code linkcheck returned for this run.", [({}, decided.exit_code)])
    m.family("linkcheck_diagnosis_verdict", "The diagnosis's own verdict, one-hot over pass, warn, fail and "
             "inconclusive (the same as linkcheck_verdict without an accept run).",
             [({"verdict": v.value}, 1 if diagnosis.verdict is v else 0) for v in Verdict])
    cable = pair_cable(outcome, topology)  # the labels a cluster's series carry (report/cluster_prometheus.py)
    m.family("linkcheck_node_inspected", "1 when the node answered the inspection, 0 when it could not be read.",
             [({"node": n}, 0 if n in outcome.bundle.collection_errors else 1) for n in ("a", "b")])
    m.family("linkcheck_rdma_bandwidth_bytes_per_second",
             "ib_write_bw rate per cable, client node, HCA, direction and mode (alone or concurrent), lowest "
             "repetition.", _rdma(outcome, cable))
    m.family("linkcheck_rdma_concurrent_total_bytes_per_second",
             "Both paths at once: the sum of the paths' rates per cable and direction.",
             [({"cable": cable, "direction": d}, bytes_per_second(t))
              for d, t in link.bench.totals("concurrent").items() if t is not None])
    nccl = link.bench.nccl
    nccl_family(m, nccl.busbw_gbs if nccl is not None else None)
    m.family("linkcheck_cable_state", "Each cable's test state, one-hot over pass, slow and inconclusive.",
             cable_state_samples(cable, "a", "b", diagnosis.verdict, link))
    m.family("linkcheck_baseline_ratio", "A traffic figure now divided by the same figure in the pair's baseline.",
             _baseline_ratios(outcome))
    m.family("linkcheck_finding", "Subjects on which the rule warns or fails (0: judged clean).",
             _findings(outcome, cable))
    acceptance_families(m, acc.acceptance(outcome), cable)
    _repair(m, outcome)
    return m.text()


def check_textfile_path(path: Path) -> Path:
    """Refuse, before any work, a textfile whose folder is missing or not writable (exit 4)."""
    return check_output_path(path, "--prometheus-textfile")


def write_textfile(path: Path, outcome: Outcome) -> None:
    """Write the textfile as `write_output` writes every output: a regular file atomically (a temporary file in
    the same folder, then a rename over it), a FIFO or a device straight, `-` to standard output."""

    write_output(path, render_prometheus(outcome), "--prometheus-textfile", "textfile")

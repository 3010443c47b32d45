"""The bundle's acceptance (`linkcheck accept`) for the file reports: each check's measured min / median / max, its
threshold, margin and source as text, and a test parameters line. Markdown and the console use accept/text.py's
table; JUnit, Prometheus and HTML take their parts from here."""

from __future__ import annotations

from typing import Any

from msgspec.structs import replace

from linkcheck.accept.record import bundle_acceptance
from linkcheck.accept.text import LATENCY_TEST, check_tests, margin_cell, threshold_cell
from linkcheck.accept.text import runs as runs  # the statistics' cells, for the writers that take their parts here
from linkcheck.accept.text import statistic as statistic
from linkcheck.accept.text import unit as unit
from linkcheck.model import Status
from linkcheck.outcome import ClusterCheck, Outcome
from linkcheck.report.judged import Judged
from linkcheck.report.summary import Summary, summarize
from linkcheck.report.tables import diagnosis_line, verdict_line
from linkcheck.report.verdict import BundleVerdict, decide
from linkcheck.values import byte_size

STATUSES = ("PASS", "DEGRADED", "FAIL", "INCONCLUSIVE")


def acceptance(outcome: Outcome) -> dict[str, Any] | None:
    """The acceptance document, {"problem": ...} when the one there is not shown, None when there is none."""
    return bundle_acceptance(outcome.bundle.path, outcome.bundle.unverified)


def bundle_verdict(outcome: Outcome) -> BundleVerdict:
    """A pair's bundle's one verdict: its acceptance's where it holds one, else its diagnosis's."""
    diagnosis = outcome.diagnosis
    return decide(diagnosis.verdict, int(diagnosis.exit_code), verdict_line(outcome), acceptance(outcome))


def cluster_verdict(check: ClusterCheck) -> BundleVerdict:
    """A cluster's bundle's one verdict: its acceptance's where it holds one, else its check's."""
    return decide(check.verdict, int(check.exit_code), f"verdict: {check.verdict.value}", check.acceptance)


def judged_verdict(judged: Judged) -> BundleVerdict:
    """A bundle's one verdict, whatever its layout: its line for -q, its exit code (the acceptance's, where it holds
    one)."""
    return cluster_verdict(judged) if isinstance(judged, ClusterCheck) else bundle_verdict(judged)


def pair_summary(outcome: Outcome) -> Summary:
    """What a pair's report starts with (report/summary.py)."""
    diagnosis = outcome.diagnosis
    return summarize(diagnosis.findings, bundle_verdict(outcome), diagnosis_line(outcome), acceptance(outcome))


def cluster_summary(check: ClusterCheck) -> Summary:
    """What a cluster's report starts with: the cluster's findings and each test's, a test's named by its label (a
    test's findings that a node slow with every partner explains sit under that node's finding)."""
    findings = list(check.view.diagnosis.findings)
    for result in check.cables:
        cause = check.node_cause(result)
        label = result.test.label
        for f in result.findings:
            explained = f.explained_by
            if explained:
                rule, _, subject = explained.partition(":")
                explained = f"{rule}:{label}: {subject}"
            elif cause is not None and f.status in (Status.FAIL, Status.WARN):
                explained = cause.finding_id
            findings.append(replace(f, subject=f"{label}: {f.subject}", explained_by=explained))
    counts = {s: sum(1 for f in findings if f.status is s) for s in Status}
    line = f"check: {check.verdict.value.upper()} (" + ", ".join(f"{n} {s.value}" for s, n in counts.items() if n) + ")"
    return summarize(findings, cluster_verdict(check), line, check.acceptance)


def checks(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in doc.get("checks", []) if isinstance(c, dict)]


def margin(check: dict[str, Any]) -> str:
    cell = margin_cell(check)
    return f"{cell} {unit(check)}".strip() if cell else ""


def threshold(check: dict[str, Any]) -> str:
    return threshold_cell(check)


def sources(check: dict[str, Any]) -> list[str]:
    return [str(t.get("source")) for t in check.get("thresholds", []) if t.get("source")]


def summary(check: dict[str, Any]) -> str:
    """One line for a CI failure: the measured values, the threshold, the margin and why."""
    measured = check.get("measured") or {}
    if "min" in measured:
        got = (f"measured min {statistic(check, 'min')}, median {statistic(check, 'median')}, "
               f"max {statistic(check, 'max')} (n={measured.get('samples', len(measured.get('values', [])))})")
    else:
        got = f"measured {statistic(check, 'min')}"
    parts = [got, f"threshold {threshold(check)}"]
    if margin(check):
        parts.append(f"margin {margin(check)}")
    if check.get("reason"):
        parts.append(str(check["reason"]))
    return "; ".join(parts)


def parameters(doc: dict[str, Any], largest_bytes: int | None = None) -> str:
    """How the pair (or the cluster) was tested: repetitions, ib_write_bw's -D, -s and -q, all_gather_perf's largest
    message: the one the sweep reached (the record's, or `largest_bytes` from the bundle's own run for a record
    written before it kept it) where it differs from the profile's; the latency test where it ran."""
    test = doc.get("test") or {}
    rdma, nccl = test.get("rdma") or {}, test.get("nccl") or {}
    parts = [f"{test.get('repetitions', '?')} repetitions"]
    if rdma:
        size = rdma.get("size_bytes")
        parts.append(f"ib_write_bw -D {rdma.get('duration_s', '?')} -s "
                     f"{byte_size(size) if isinstance(size, int) else '?'} -q {rdma.get('qps', '?')}")
    if nccl.get("max_bytes"):
        asked, reached = int(nccl["max_bytes"]), nccl.get("largest_bytes", largest_bytes)
        if isinstance(reached, int) and reached != asked:
            parts.append(f"all_gather_perf up to {byte_size(reached)} (the profile asks {byte_size(asked)}; the "
                         "smaller node's free memory allowed no more)" if reached < asked else
                         f"all_gather_perf up to {byte_size(reached)} (the profile asks {byte_size(asked)})")
        else:
            parts.append(f"all_gather_perf up to {byte_size(asked)}")
    if test.get("latency") is True:
        parts.append(LATENCY_TEST)
    return ", ".join(parts)


def tested(outcome: Outcome, doc: dict[str, Any]) -> str:
    """`parameters`, with the largest message of the bundle's own NCCL sweep for a record that does not keep it."""
    nccl = outcome.link.bench.nccl
    return parameters(doc, nccl.largest_bytes if nccl is not None else None)


def series_labels(doc: dict[str, Any], test: dict[str, Any] | None) -> dict[str, str]:
    """A cluster's check named by its test as the cluster's series are: `test` (its label) and `pass` (1, or 2 for a
    switch's second pass, which may meet the same two nodes again); both empty for the NCCL run's; none for a pair."""
    if not isinstance(doc.get("cluster"), dict):
        return {}
    return {"test": str(test.get("test")), "pass": str(test.get("pass", 1))} if test else {"test": "", "pass": ""}


def case_names(doc: dict[str, Any]) -> list[str]:
    """`CHECK subject` per check (a cluster's second pass says so), made unique (`#2`, ...)."""
    seen: dict[str, int] = {}
    out = []
    for check, test in zip(checks(doc), check_tests(doc), strict=True):
        again = " (second pass)" if test and test.get("pass") == 2 else ""
        base = f"{check.get('id')} {check.get('subject')}{again}"
        seen[base] = seen.get(base, 0) + 1
        out.append(base if seen[base] == 1 else f"{base} #{seen[base]}")
    return out

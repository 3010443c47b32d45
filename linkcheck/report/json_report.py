"""The machine-readable report: a JSON document with the verdict, facts and every finding; a pair's versioned, a
cluster's with the topology view's keys, every test (cable) and the N x N matrix."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from linkcheck import __version__
from linkcheck.facts.model import Function, LinkFacts, NodeFacts
from linkcheck.outcome import ClusterCheck, Outcome
from linkcheck.records import plain
from linkcheck.report.acceptance import acceptance, cluster_summary, pair_summary
from linkcheck.report.judged import Judged
from linkcheck.report.repair import repair_document
from linkcheck.report.summary import summary_document
from linkcheck.report.tables import DIRECTIONS, direction_gbps, matrix, named_direction
from linkcheck.report.topology import view_json
from linkcheck.strict_json import dumps, finite_only

SCHEMA = "linkcheck-report"
SCHEMA_VERSION = 1


def _function(fn: Function) -> dict[str, Any]:
    data: dict[str, Any] = plain(fn)
    data.update(domain=fn.domain, subnets=list(fn.subnets))  # the properties; `plain` made the tuples lists
    return data


def _node(node: NodeFacts) -> dict[str, Any]:
    return {
        "hostname": node.hostname,
        "cabled_cages": list(node.cabled_cages),
        "functions": [_function(f) for f in node.functions],
        "nccl": node.nccl,
        "nccl_sources": node.nccl_sources,
        "identity": plain(node.identity),
        "kernel_release": node.kernel_release,
        "os_name": node.os_name,
        "nm_runtime_profiles": plain(node.nm_runtime),
        # The NCCL a job loads on the node and in each container read (--container), and the GPUs' state now.
        "nccl_views": [{**plain(v), "where": v.where} for v in node.nccl_views],
        "gpus": plain(node.gpus),
        "uptime_s": node.uptime_s,
        "mem_available_kib": node.mem_available_kib,
        "unavailable": node.unavailable,
    }


def _bench(link: LinkFacts) -> dict[str, Any]:
    return {
        "rdma": plain(link.bench.rdma),
        # Per direction, both paths at once (the lowest round when the run was repeated).
        "rdma_concurrent_total_gbps": link.bench.totals("concurrent"),
        "nccl": plain(link.bench.nccl),
        "flapped": list(link.bench.flapped),
        "not_run": plain(link.bench.not_run),  # runs the plan left out on purpose (the quick tier's)
    }


def report_document(outcome: Outcome) -> dict[str, Any]:
    diagnosis = outcome.diagnosis
    summary = pair_summary(outcome)
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "tool_version": __version__,
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "bundle": str(outcome.bundle.path) if outcome.bundle.path else None,
        "bundle_created": outcome.bundle.created or None,
        "summary": summary_document(summary),  # the answer first: the bundle's verdict, causes, what was not judged
        "verdict": diagnosis.verdict.value,  # the diagnosis's; the bundle's (an acceptance's) is summary.verdict
        "exit_code": int(diagnosis.exit_code),
        "nodes": {"a": _node(outcome.link.a), "b": _node(outcome.link.b)},
        "paths": [{"key": p.key, "subnet": p.subnet, "a": p.a.netdev, "b": p.b.netdev} for p in outcome.link.paths],
        "bench": _bench(outcome.link),
        "findings": [f.to_dict() for f in diagnosis.findings],
        "notes": list(diagnosis.notes),
        "acceptance": acceptance(outcome),
        "repair": repair_document(outcome),  # the bundle's `linkcheck fix` plan, when it holds one
    }


def render_json(judged: Judged) -> str:
    """A pair's or a cluster's report as strict JSON: a non-finite number (a rate of `nan`) is null (a pair's
    document notes where)."""
    if isinstance(judged, ClusterCheck):
        return _cluster(judged)
    document, spots = finite_only(report_document(judged))
    document["notes"] += [f"{spot}: not a finite number, written as null" for spot in spots]
    return json.dumps(document, indent=2, default=str, allow_nan=False)


def _cluster(check: ClusterCheck) -> str:
    """The cluster check as one JSON document: the topology view's keys, then `tests` (each test's nodes, round,
    pass, state, per-direction totals, every run and finding), `matrix` and the overall verdict."""
    data = json.loads(view_json(check.view))
    data["cluster_verdict"] = data.pop("verdict")
    data["tests"] = [{
        "label": r.test.label, "a": r.test.a, "b": r.test.b, "round": r.test.round, "pass": r.test.pass_no,
        "switched": r.test.switched, "state": r.state, "verdict": r.verdict.value, "problem": r.problem,
        "lowest_gbps": r.lowest_gbps,
        "totals_gbps": {named_direction(r, d): direction_gbps(r, d) for d in DIRECTIONS},
        "runs": [{**plain(run), "direction": named_direction(r, run.direction)} for run in r.link.bench.rdma],
        "not_run": [plain(n) for n in r.link.bench.not_run],
        "findings": [f.to_dict() for f in r.findings]} for r in check.cables]
    data["matrix"] = matrix(check)
    data["nccl"] = plain(check.facts.nccl, properties=True) if check.facts.nccl is not None else None
    data["traffic_error"] = check.traffic_error
    data["verdict"] = check.verdict.value
    data["acceptance"] = check.acceptance  # the bundle's acceptance.json, {"problem": ...} when not shown, or None
    data["summary"] = summary_document(cluster_summary(check))  # the bundle's verdict, causes, not judged
    return dumps(data, indent=2)

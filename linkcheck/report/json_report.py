"""The machine-readable report: one JSON document for every layout, a pair being the cluster of its one cable. The
same envelope (schema, version, the bundle, layout, summary, verdict, exit code), every node by name with its facts,
every test (a pair's one cable, a cluster's cables) with its runs and findings, the N x N matrix, every finding, the
acceptance and the repair plan; a pair adds its paths and traffic facts, a cluster the topology view's keys."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from linkcheck import __version__
from linkcheck.facts.model import Function, LinkFacts, NodeFacts
from linkcheck.outcome import CableResult, ClusterCheck, Outcome
from linkcheck.records import plain
from linkcheck.report.acceptance import acceptance, cluster_summary, pair_summary
from linkcheck.report.judged import Judged
from linkcheck.report.repair import repair_document
from linkcheck.report.summary import summary_document
from linkcheck.report.tables import DIRECTIONS, direction_gbps, matrix, named_direction, pair_test, test_matrix
from linkcheck.report.topology import pair_topology, view_json
from linkcheck.strict_json import finite_only

SCHEMA = "linkcheck-report"
SCHEMA_VERSION = 2  # 2: one document for every layout (docs/reports.md)


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


def _envelope(judged: Judged, layout: str, verdict: str, exit_code: int) -> dict[str, Any]:
    """What every report opens with, whatever the layout: the schema, who wrote it and when, the bundle, the answer."""
    bundle = judged.bundle
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "tool_version": __version__,
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "bundle": str(bundle.path) if bundle is not None and bundle.path else None,
        "bundle_created": bundle.created or None if bundle is not None else None,
        "layout": layout,
        # The answer first: the bundle's verdict (an acceptance's where it holds one), its causes, what was not judged.
        "summary": summary_document(pair_summary(judged) if isinstance(judged, Outcome) else cluster_summary(judged)),
        "verdict": verdict,  # the diagnosis's; the bundle's (an acceptance's) is summary.verdict
        "exit_code": exit_code,
    }


def _test(result: CableResult) -> dict[str, Any]:
    """One test (a cable, or two nodes through the switch; a pair's one cable) as measured and judged."""
    return {
        "label": result.test.label, "a": result.test.a, "b": result.test.b, "round": result.test.round,
        "pass": result.test.pass_no, "switched": result.test.switched, "state": result.state,
        "verdict": result.verdict.value, "problem": result.problem, "lowest_gbps": result.lowest_gbps,
        "totals_gbps": {named_direction(result, d): direction_gbps(result, d) for d in DIRECTIONS},
        "runs": [{**plain(run), "direction": named_direction(result, run.direction)} for run in result.link.bench.rdma],
        "not_run": [plain(n) for n in result.link.bench.not_run],
        "findings": [f.to_dict() for f in result.findings]}


def _node_entry(node: NodeFacts, target: str | None, origin: str | None, error: str | None) -> dict[str, Any]:
    """A node as every layout names it: how linkcheck reached it (`target`, `origin`, the `error` that stopped its
    inspection), then its facts."""
    return {"target": target, "origin": origin, "error": error, **_node(node)}


def report_document(outcome: Outcome) -> dict[str, Any]:
    """A pair's report: the envelope, both nodes, the pair's paths and traffic, its one cable as a test (as a
    cluster's tests are), every finding."""
    diagnosis = outcome.diagnosis
    bundle = outcome.bundle
    topology = pair_topology(outcome)
    cables = [t for t in (pair_test(outcome, topology),) if t is not None]
    names = (outcome.link.a.name, outcome.link.b.name)  # as the pair names its nodes (a and b, or any two names)

    def entry(name: str) -> dict[str, Any]:
        target = (bundle.nodes.get(name) or {}).get("target")
        return _node_entry(outcome.link.node(name), str(target) if target is not None else None, None,
                           bundle.collection_errors.get(name))

    return {
        **_envelope(outcome, topology.layout, diagnosis.verdict.value, int(diagnosis.exit_code)),
        "nodes": {name: entry(name) for name in names},
        "paths": [{"key": p.key, "subnet": p.subnet, "a": p.a.netdev, "b": p.b.netdev} for p in outcome.link.paths],
        "bench": _bench(outcome.link),
        "tests": [_test(t) for t in cables],
        "matrix": test_matrix(names, cables),
        "findings": [f.to_dict() for f in diagnosis.findings],
        "notes": list(diagnosis.notes),
        "acceptance": acceptance(outcome),
        "repair": repair_document(outcome),  # the bundle's `linkcheck fix` plan, when it holds one
    }


def cluster_document(check: ClusterCheck) -> dict[str, Any]:
    """A cluster's report: the envelope, every node (how it was reached, its facts), the topology view's keys (layout,
    cables, segments, flags, schedule), the cluster rules' findings and own verdict, every test (each run and
    finding), the N x N matrix, NCCL across the nodes, the acceptance and the repair plan the bundle holds."""
    view = json.loads(view_json(check.view))
    hosts = {h["name"]: h for h in view.pop("nodes")}
    data = _envelope(check, check.view.topology.layout, check.verdict.value, int(check.exit_code))
    data["nodes"] = {name: _node_entry(check.facts.nodes[name], h["target"], h["origin"], h["error"])
                     for name, h in hosts.items() if name in check.facts.nodes}
    view.pop("layout")
    data["cluster_verdict"] = view.pop("verdict")  # the cluster rules' own
    data.update(view)
    data["tests"] = [_test(r) for r in check.cables]
    data["matrix"] = matrix(check)
    data["nccl"] = plain(check.facts.nccl, properties=True) if check.facts.nccl is not None else None
    data["traffic_error"] = check.traffic_error
    data["notes"] = list(check.view.diagnosis.notes)
    data["acceptance"] = check.acceptance  # the bundle's acceptance.json, {"problem": ...} when not shown, or None
    data["repair"] = repair_document(check)
    return data


def render_json(judged: Judged) -> str:
    """A pair's or a cluster's report as one strict JSON document of one shape (docs/reports.md): a number that is
    not finite is null, and `notes` says where."""
    document = report_document(judged) if isinstance(judged, Outcome) else cluster_document(judged)
    document, spots = finite_only(document)
    document["notes"] += [f"{spot}: not a finite number, written as null" for spot in spots]
    return json.dumps(document, indent=2, default=str, allow_nan=False)

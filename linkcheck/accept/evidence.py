"""What an acceptance record holds besides the verdict: who was tested with what, and how.

Both nodes' identity (DMI, BIOS, OS, kernel, boot id, CX-7 firmware, PSID and driver per used function), the tool
versions (perftest, NCCL and nccl-tests as the inspection found them, and as the traffic test's own output states
them), the cable's EEPROM identity at each end, and the exact command line of every traffic run, as the bundle
recorded them. Everything comes from the bundle's facts and captures, so a saved bundle gives the same record.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from linkcheck.errors import ParseError
from linkcheck.facts.bench_facts import JOB_KINDS
from linkcheck.outcome import Outcome, judged_view
from linkcheck.parsers.identity import nccl_version_code, parse_perftest_version
from linkcheck.parsers.nccl_log import parse_nccl_log
from linkcheck.parsers.nccl_tests import parse_nccl_tests
from linkcheck.records import plain

if TYPE_CHECKING:
    from linkcheck.facts.model import Function, LinkFacts, NodeFacts
    from linkcheck.model import Capture
    from linkcheck.outcome import ClusterCheck


def _used(node: NodeFacts, link: LinkFacts) -> list[Function]:
    ends = {fn.netdev for p in link.paths for fn in (p.a, p.b) if fn.node == node.name}
    return [f for f in node.functions if f.netdev in ends] or list(node.used_functions)


def _node(node: NodeFacts, link: LinkFacts) -> dict[str, Any]:
    return {
        "hostname": node.hostname,
        **plain(node.identity),
        "os": node.os_name, "kernel": node.kernel_release, "uptime_s": node.uptime_s,
        "cx7": [{"netdev": f.netdev, "rdma_dev": f.rdma_dev, "bdf": f.bdf, "cage": f.cage, "mac": f.mac,
                 "firmware": f.firmware, "psid": f.psid, "driver": f.driver} for f in _used(node, link)],
    }


def _cable_ends(link: LinkFacts) -> list[dict[str, Any]]:
    """The module EEPROM as each node reads it, one entry per end of the cabled cage (first twin with a read)."""
    out: list[dict[str, Any]] = []
    for node in (link.a, link.b):
        fn = next((f for f in _used(node, link) if f.cable), None)
        fn = fn or next((f for f in node.functions if f.cable and f.cage in node.cabled_cages), None)
        if fn is None or fn.cable is None:
            out.append({"node": node.name, "netdev": None, "problem": node.unavailable.get("cable", "not read")})
            continue
        c = fn.cable
        out.append({"node": node.name, "netdev": fn.netdev, "cage": fn.cage, "identifier": c.identifier,
                    "vendor": c.vendor_name, "vendor_oui": c.vendor_oui, "part_number": c.vendor_pn,
                    "revision": c.vendor_rev, "serial": c.vendor_sn, "date_code": c.date_code,
                    "length_m": c.length_m, "memory_map": c.memory_map})
    return out


def _runs(captures: list[Capture]) -> list[dict[str, Any]]:
    """Every traffic process as it was started: node, tool, role, round and the exact command line; the latency
    test's too (each ib_write_lat run, its round `lat-<n>-<size>`, and the small all_reduce), where it ran."""
    out = []
    for cap in captures:
        kind = cap.meta.get("kind")
        traffic = kind in ("rdma", *JOB_KINDS, "latency")
        if not traffic or cap.meta.get("format") == "json" or cap.spec == "nccl_log":
            continue  # the JSON reports are read back with `cat`; the NCCL log is the table's own run
        out.append({"node": cap.node, "tool": cap.spec, "role": cap.meta.get("role"), "mode": cap.meta.get("mode"),
                    "direction": cap.meta.get("direction"), "round": cap.meta.get("round"),
                    "device": cap.meta.get("local_rdma_dev"), "command": cap.command,
                    "exit_status": cap.exit_status})
    return out


def _traffic_versions(captures: list[Capture]) -> dict[str, Any]:
    """What the traffic test's outputs say of their own versions: perftest per node (`ib_write_bw -V`: the
    inspection's, which the rounds rely on, or one the traffic test ran itself, which wins), nccl-tests and the
    NCCL it loaded (rank 0's first line), NCCL's own banner in the debug log."""
    out: dict[str, Any] = {"perftest": {}, "nccl_tests": None, "nccl_library": None, "nccl_log": None}
    for cap in captures:
        try:
            if cap.spec == "perftest_version" and (cap.meta or cap.node not in out["perftest"]):
                out["perftest"][cap.node] = parse_perftest_version(cap.stdout + cap.stderr).version
            elif cap.spec in ("all_gather_perf", "all_reduce_perf") and cap.meta.get("format") != "json":
                table = parse_nccl_tests(cap.stdout)
                out["nccl_tests"] = out["nccl_tests"] or table.version
                out["nccl_library"] = out["nccl_library"] or nccl_version_code(table.nccl_version)
            elif cap.spec == "nccl_log":
                out["nccl_log"] = out["nccl_log"] or parse_nccl_log(cap.stdout).nccl_version
        except ParseError:
            continue  # the diagnosis names what did not parse; the record keeps what did
    return out


def acceptance_evidence(outcome: Outcome) -> dict[str, Any]:
    """The `evidence` object of acceptance.json."""
    link, captures = outcome.link, outcome.bundle.captures
    return {
        "nodes": {n.name: _node(n, link) for n in (link.a, link.b)},
        "traffic_versions": _traffic_versions(captures),
        "cable": _cable_ends(link),
        "runs": _runs(captures),
        "bundle": {"created": outcome.bundle.created, "tool_version": outcome.bundle.tool_version},
    }


def cluster_evidence(check: ClusterCheck, captures: list[Capture], created: str | None,
                     tool_version: str | None) -> dict[str, Any]:
    """The `evidence` of a cluster's acceptance: every node's identity (its functions on every tested cable), each
    tested cable's ends (`test` names the test), the traffic versions and every traffic run."""
    nodes: dict[str, dict[str, Any]] = {}
    cables: list[dict[str, Any]] = []
    for result in check.cables:
        link = result.link
        for node in (link.a, link.b):
            if node.name not in check.facts.nodes:
                continue
            entry = _node(node, link)
            if node.name in nodes:  # the node's functions on every cable it was tested on, once each
                seen = {f["netdev"] for f in nodes[node.name]["cx7"]}
                nodes[node.name]["cx7"] += [f for f in entry["cx7"] if f["netdev"] not in seen]
            else:
                nodes[node.name] = entry
        if result.test.pass_no == 1 and not result.test.switched:
            cables += [{"test": result.test.label, **end} for end in _cable_ends(link)]
    for name, node in check.facts.nodes.items():
        nodes.setdefault(name, {"hostname": node.hostname, **plain(node.identity), "os": node.os_name,
                                "kernel": node.kernel_release, "uptime_s": node.uptime_s, "cx7": []})
    return {"nodes": nodes, "traffic_versions": _traffic_versions(captures), "cable": cables,
            "runs": _runs(captures), "bundle": {"created": created, "tool_version": tool_version}}


def check_evidence(check: ClusterCheck) -> dict[str, Any]:
    """The `evidence` of a live check's acceptance, whatever its layout: a pair's (its one cable's) as
    `acceptance_evidence` gives it, any other cluster's as `cluster_evidence` does, from the bundle it was judged
    from."""
    judged = judged_view(check)
    if isinstance(judged, Outcome):
        return acceptance_evidence(judged)
    bundle = check.bundle
    return cluster_evidence(check, list(bundle.captures) if bundle else [], bundle.created if bundle else None,
                            bundle.tool_version if bundle else None)

"""Plain-text views of an outcome that the file reports share: stages, thresholds, node and traffic tables, and
where there is more than one cable the per-cable table and the N x N matrix.

Everything here is text as it came from the nodes (passed through `shown`, so no control characters);
each renderer escapes it for its own format (XML, Markdown, HTML).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from linkcheck.accept.text import margin_cell, missed, threshold_cell
from linkcheck.advise.published import published
from linkcheck.cluster.cables import CableTest
from linkcheck.cluster.topology import Topology
from linkcheck.diagnose.engine import CABLE_RULES, verdict_of
from linkcheck.facts.model import Function, LinkFacts, NodeFacts, RdmaRun
from linkcheck.model import Finding, Status, Verdict
from linkcheck.outcome import CableResult, ClusterCheck, Outcome
from linkcheck.report.safe_text import shown
from linkcheck.report.topology import pair_cable
from linkcheck.values import byte_size, evidence_line, gbps, number, pcie, plain_number, signed


def stages(outcome: Outcome) -> dict[str, str]:
    """Rule id -> its stage: the playbook file it comes from (link-state, gid-index, throughput, nccl, ...)."""
    return {rule.id: Path(rule.source.rsplit(":", 1)[0]).stem or "rules" for rule in outcome.rules}


def threshold(outcome: Outcome, rule_id: str, name: str) -> float | None:
    rule = next((r for r in outcome.rules if r.id == rule_id), None)
    value = rule.thresholds.get(name) if rule else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def unique(names: Sequence[str]) -> list[str]:
    """Each name once (`#2`, ...): GitLab drops a JUnit testcase whose name repeats."""
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name} #{seen[name]}")
    return out


def case_names(findings: tuple[Finding, ...]) -> list[str]:
    """`RULE subject` per finding, made unique (`#2`, ...) where one rule judged a subject twice."""
    return unique([shown(f"{finding.rule_id} {finding.subject}") for finding in findings])


def counts(findings: tuple[Finding, ...]) -> dict[Status, int]:
    return {s: sum(1 for f in findings if f.status is s) for s in Status}


def verdict_line(outcome: Outcome) -> str:
    diagnosis = outcome.diagnosis
    summary = ", ".join(f"{n} {s.value}" for s, n in counts(diagnosis.findings).items() if n)
    return f"verdict: {diagnosis.verdict.value.upper()} ({summary}) exit {int(diagnosis.exit_code)}"


def diagnosis_line(outcome: Outcome) -> str:
    """`diagnosis: FAIL (40 pass, 3 fail)`: the diagnosis beside a verdict that may be the acceptance's."""
    diagnosis = outcome.diagnosis
    summary = ", ".join(f"{n} {s.value}" for s, n in counts(diagnosis.findings).items() if n)
    return f"diagnosis: {diagnosis.verdict.value.upper()} ({summary})"


def evidence_lines(finding: Finding) -> list[str]:
    return [shown(evidence_line(ev)) for ev in finding.evidence]


def _cell(fn: Function | None, node: NodeFacts) -> list[str]:
    if fn is None:
        return ["-"]
    pin = node.nccl.get("NCCL_IB_GID_INDEX")
    state = "up" if fn.carrier else "down" if fn.carrier is False else "?"
    speed = f"{fn.speed_mbps // 1000}G" if fn.speed_mbps else "?"
    gid = "-" if fn.gid_index is None else str(fn.gid_index)
    fec = " ".join(fn.fec_active) if fn.fec_active else "?"
    return [shown(line) for line in (
        f"{fn.netdev} / {fn.rdma_dev or '?'}",
        f"{state} {speed}, {pcie(fn.pcie_speed_gts, fn.pcie_width)}, FEC {fec}",
        f"{', '.join(fn.ipv4) or 'no IPv4'} mtu {fn.mtu or '?'}", f"GID {gid} (pin {pin_text(pin)})")]


def pin_text(pin: str | None) -> str:
    """NCCL_IB_GID_INDEX as set: its value, `""` when set empty, `unset`."""
    return "unset" if pin is None else pin or '""'


def identity_lines(node: NodeFacts) -> list[str]:
    """The node's identity for the node table: DMI product and serial, BIOS, OS and kernel, CX-7 firmware and PSID,
    tool versions, boot id; '?' where the node could not tell."""
    ident = node.identity
    cx7 = [f for f in node.functions if f.cage in node.cabled_cages] or list(node.functions)
    firmware = ", ".join(sorted({f.firmware for f in cx7 if f.firmware})) or "?"
    psid = ", ".join(sorted({f.psid for f in cx7 if f.psid})) or "?"
    product = " ".join(p for p in (ident.vendor, ident.product) if p) or "?"
    board = f" ({ident.board_name})" if ident.board_name else ""
    return [shown(line) for line in (
        f"{product}{board} SN {ident.serial or '?'}",
        f"BIOS {ident.bios_version or '?'} ({ident.bios_date or '?'})",
        f"{node.os_name or '?'}, kernel {node.kernel_release or '?'}",
        f"CX-7 fw {firmware} PSID {psid}",
        f"perftest {ident.perftest_version or '-'}, NCCL {ident.nccl_version or '-'}",
        f"boot id {ident.boot_id or '?'}")]


def _slot(fn: Function) -> tuple[str, str]:
    return (fn.cage or "?", fn.domain or "?")


def _cables(node: NodeFacts) -> list[str]:
    """The cable in each cabled cage of the node (its module's EEPROM), named by its cage where there are two (a
    ring's node, or a pair cabled twice)."""
    found = {f.cage: f.cable for f in node.functions if f.cable and f.cage in node.cabled_cages}
    if not found:
        return [shown(node.unavailable.get("cable", "-"))]
    named = len(found) > 1
    return [shown(f"{f'{cage}: ' if named else ''}{c.vendor_name or '?'} {c.vendor_pn or '?'} SN {c.vendor_sn or '?'}")
            for cage, c in found.items()]


NodeRow = tuple[str, list[list[str]]]  # the row's name, then each node's lines


def node_rows(nodes: Sequence[NodeFacts]) -> tuple[list[str], list[NodeRow]]:
    """(column heads, rows) of the nodes table, one column per node (a pair's two, a cluster's N): one row per twin
    slot (cage / PCI domain), then the cable in each node's cabled cage and its NCCL_IB_HCA."""
    heads = [shown(f"{n.name}: {n.hostname or '?'}") for n in nodes]
    rows: list[NodeRow] = [("node", [identity_lines(n) for n in nodes])]
    for slot in sorted({_slot(f) for n in nodes for f in n.functions}):
        rows.append((shown(f"{slot[0]} / {slot[1]}"),
                     [_cell(next((f for f in n.functions if _slot(f) == slot), None), n) for n in nodes]))
    rows.append(("cable", [_cables(node) for node in nodes]))
    rows.append(("NCCL_IB_HCA", [[shown(n.nccl.get("NCCL_IB_HCA", "(unset)"))] for n in nodes]))
    return heads, rows


class TrafficRow(msgspec.Struct, frozen=True):
    """One path, mode and direction of ib_write_bw (or both paths' total): its repetitions as min / median / max
    and their count, the threshold it is judged against beside them, the margin against the line that decides the
    status, which statistic missed that line (to be marked; None when none did) and where the threshold comes
    from."""

    path: str
    mode: str
    direction: str
    low: str
    median: str
    high: str
    runs: str
    threshold: str
    margin: str
    missed: str | None
    sources: tuple[str, ...]

    def cells(self) -> list[str]:
        return [self.path, self.mode, self.direction, self.low, self.median, self.high, self.runs, self.threshold,
                self.margin]


TRAFFIC_HEADER = ("path", "mode", "direction", "min", "median", "max", "runs", "threshold", "margin")
_MODES = ("alone", "concurrent")
_NOMINAL_RULE, _NOMINAL = "LINK_BELOW_NOMINAL", "nominal_min_gbps"


def _run_count(rates: list[float | None], problems: Sequence[str] = ()) -> str:
    """`3`, or `3 (1 no number: why)` where a run gave none."""
    missing = sum(1 for r in rates if r is None)
    why = f": {'; '.join(dict.fromkeys(problems))}" if problems else ""
    return f"{len(rates)} ({missing} no number{why})" if missing else str(len(rates))


def _statistics(rates: list[float | None]) -> tuple[str, str, str]:
    numbers = [r for r in rates if r is not None]
    if not numbers:
        return "-", "-", "-"
    return number(min(numbers)), number(statistics.median(numbers)), number(max(numbers))


def _judged_by_check(check: dict[str, Any]) -> tuple[str, str, str | None, tuple[str, ...]]:
    """(threshold, margin, missed statistic, sources) from an acceptance check (accept/text.py)."""
    cell = margin_cell(check)
    sources = tuple(str(t["source"]) for t in check.get("thresholds") or [] if isinstance(t, dict) and t.get("source"))
    return threshold_cell(check), cell, missed(check), sources


def _judged_by_rule(outcome: Outcome, rates: list[float | None]) -> tuple[str, str, str | None, tuple[str, ...]]:
    """(threshold, margin, missed statistic, sources) from LINK_BELOW_NOMINAL, which judges a path's best rate
    (playbooks/throughput.yaml): the line a bundle without an acceptance is read against."""
    line = threshold(outcome, _NOMINAL_RULE, _NOMINAL)
    numbers = [r for r in rates if r is not None]
    if line is None:
        return "-", "", None, ()
    rule = next(r for r in outcome.rules if r.id == _NOMINAL_RULE)
    # The rule is named with its source under the table, which keeps the cell short enough for a terminal.
    source = f"{_NOMINAL_RULE}: {rule.threshold_sources.get(_NOMINAL) or '; '.join(rule.references)}"
    said = f"best >= {plain_number(line)} Gb/s"
    if not numbers or None in rates:
        return said, "", None, (source,) if source else ()
    best = max(numbers)
    return (said, signed(round(best - line, 3)), "max" if best < line else None,
            (source,) if source else ())


def _row(path: str, mode: str, direction: str, rates: list[float | None], count: str,
         judged: tuple[str, str, str | None, tuple[str, ...]]) -> TrafficRow:
    low, median, high = _statistics(rates)
    line, margin, missed_by, sources = judged
    return TrafficRow(shown(path), shown(mode), shown(direction), low, median, high, count, line, margin, missed_by,
                      sources)


def traffic_rows(outcome: Outcome, doc: dict[str, Any] | None) -> list[TrafficRow]:
    """ib_write_bw grouped: one row per path, mode and direction over its repetitions, then both paths' total per
    direction; paths in the order the node table lists their slots (cage, then PCI domain of node a's twin), never
    by interface name; alone before concurrent, a->b before b->a. Each row is judged as the acceptance `doc` judged
    it (its check of that path, mode and direction), else against LINK_BELOW_NOMINAL's floor for a path's best
    rate."""
    link = outcome.link
    by_id = {(str(c.get("id")), str(c.get("subject"))): c for c in (doc or {}).get("checks", []) if isinstance(c, dict)}
    order = {path.key: _slot(path.a) for path in link.paths}  # the node table's order: by cage, then PCI domain
    grouped: dict[tuple[str, str, str], list[RdmaRun]] = {}
    for run in link.bench.rdma:
        grouped.setdefault((run.path_key, run.mode, run.direction), []).append(run)

    def place(key: tuple[str, str, str]) -> tuple[tuple[str, str], str, int, str, str]:
        path, mode, direction = key
        at = _MODES.index(mode) if mode in _MODES else len(_MODES)
        return (order.get(path, ("~", "~")), path, at, mode, direction)  # a path no node lists: after theirs

    out = []
    for key in sorted(grouped, key=place):
        path, mode, direction = key
        rates = [run.gbps for run in grouped[key]]
        problems = [run.problem for run in grouped[key] if run.gbps is None and run.problem]
        check = by_id.get((f"rdma_{mode}_gbps", f"{path} {direction}"))
        judged = _judged_by_check(check) if check else _judged_by_rule(outcome, rates)
        out.append(_row(path, mode, direction, rates, shown(_run_count(rates, problems)), judged))
    for direction, rates in link.bench.round_totals("concurrent").items():
        check = by_id.get(("rdma_concurrent_total_gbps", f"both paths {direction}"))
        judged = _judged_by_check(check) if check else ("-", "", None, ())
        out.append(_row("both paths at once", "total", direction, rates, _run_count(rates), judged))
    return out


def source_numbers(rows: list[TrafficRow]) -> dict[str, int]:
    """Each threshold source once, numbered in the order the rows first cite it."""
    numbers: dict[str, int] = {}
    for row in rows:
        for source in row.sources:
            numbers.setdefault(source, len(numbers) + 1)
    return numbers


def cited(row: TrafficRow, numbers: dict[str, int]) -> list[int]:
    return [numbers[s] for s in dict.fromkeys(row.sources)]


def not_run_lines(link: LinkFacts) -> list[str]:
    """The runs the plan left out, one line per reason: `not run: alone p1 a->b, alone p1 b->a: <why>`."""
    by_reason: dict[str, list[str]] = {}
    for item in link.bench.not_run:
        why = item.reason.removeprefix("not run: ")
        by_reason.setdefault(why, []).append(f"{item.mode} {item.path_key} {item.direction}")
    return [shown(f"not run: {', '.join(runs)}: {why}") for why, runs in by_reason.items()]


def nccl_text(link: LinkFacts) -> str | None:
    nccl = link.bench.nccl
    if nccl is None:
        return None
    if nccl.busbw_gbs is None:
        return shown(f"all_gather_perf: no number: {nccl.problem}")
    avg = "?" if nccl.avg_busbw_gbs is None else f"{nccl.avg_busbw_gbs:.2f} GB/s"
    return shown(f"all_gather_perf: {nccl.busbw_gbs:.2f} GB/s peak bus bandwidth (average over sizes {avg}), "
                 f"#wrong {nccl.wrong}, over {nccl.network or '?'} ({', '.join(nccl.ib_devices) or '?'})")


# The latency test (`check --latency`): each figure says it was measured in this bundle, beside the published
# figure for a healthy GB10 pair it is judged against; `linkcheck advise` turns them into advice.
LATENCY_HEADER = ("measurement", "value", "kind", "healthy pair (published)")
ADVISE_HINT = ("`linkcheck advise BUNDLE --model-gib G --concurrency N` turns these measured figures into advice: "
               "two residents, one model across both, or fix the link first.")


def _us(value: float | None) -> str:
    return "-" if value is None else f"{plain_number(round(value, 2))} us"


def _published_us(key: str) -> str:
    fig = published(key)
    return f"{plain_number(fig.value)} us ({fig.source})"


LatencyRow = tuple[str, str, str, str]


def latency_rows(link: LinkFacts) -> list[LatencyRow]:
    """(measurement, value, kind, the published healthy figure) per ib_write_lat run and all_reduce size; empty
    when the bundle has no latency test."""
    return _lat_rows(link) + _allreduce_rows(link)


def cluster_latency_rows(check: ClusterCheck) -> list[LatencyRow]:
    """A cluster's latency test as `latency_rows` says a pair's: every first-pass test's ib_write_lat runs (each
    path names its cable's nodes), then the one all_reduce across every node, which every such test carries."""
    first = [r.link for r in check.cables if r.test.pass_no == 1]
    rows = [row for link in first for row in _lat_rows(link)]
    reduce = next((link for link in first if link.bench.allreduce is not None), None)
    return rows + (_allreduce_rows(reduce) if reduce is not None else [])


def _lat_rows(link: LinkFacts) -> list[LatencyRow]:
    rows = []
    for run in link.bench.latency:
        what = f"ib_write_lat {byte_size(run.size_bytes)}, {run.path_key} (client {run.client_node})"
        ref = _published_us("ib_write_lat_2b_us") if run.size_bytes <= 64 else \
            _published_us("ib_write_lat_48k_us") if 32768 <= run.size_bytes <= 65536 else "-"
        if run.typical_us is None:
            rows.append((what, f"no number: {run.problem or 'no result'}", "-", ref))
        else:
            p99 = f" (99%: {_us(run.p99_us)})" if run.p99_us is not None else ""
            rows.append((what, _us(run.typical_us) + p99, "measured: this bundle, t_typical", ref))
    return rows


def _allreduce_rows(link: LinkFacts) -> list[LatencyRow]:
    rows: list[LatencyRow] = []
    reduce = link.bench.allreduce
    if reduce is not None:
        transport = f", transport {reduce.network}" if reduce.network else ""
        for row in reduce.rows:
            ref = _published_us("allreduce_64k_us") if row.size_bytes == 65536 else "-"
            rows.append((f"all_reduce_perf {row.size_bytes} B across the nodes", _us(row.time_us),
                         f"measured: this bundle, out-of-place{transport}", ref))
        if reduce.problem:
            rows.append(("all_reduce_perf across the nodes", f"no number: {reduce.problem}", "-", "-"))
    return rows


# A test's two directions as its pair view names them: a is the first node of the test's label.
DIRECTIONS = ("a->b", "b->a")


def named_direction(result: CableResult, direction: str) -> str:
    """A test's direction named by its nodes: `a->b` of the pair view is `spark-1->spark-2` here."""
    a, b = result.test.a, result.test.b
    return f"{a}->{b}" if direction == "a->b" else f"{b}->{a}"


def direction_gbps(result: CableResult, direction: str) -> float | None:
    """Gb/s one direction of a test carried: both twins at once when it ran them so, else its best path alone."""
    bench = result.link.bench
    both = bench.totals("concurrent").get(direction)
    if both is not None:
        return both
    alone = [r.gbps for r in bench.rdma if r.direction == direction and r.gbps is not None]
    return max(alone) if alone else None


def named_rules(result: CableResult) -> str:
    """The rules that warned or failed on a test, each once, in the order they fired."""
    return ", ".join(dict.fromkeys(f.rule_id for f in result.findings if f.status in (Status.FAIL, Status.WARN)))


def matrix(check: ClusterCheck) -> dict[str, dict[str, float | None]]:
    """From node -> to node -> Gb/s of the first pass's test between them in that direction (both twins at once,
    else the best path alone); absent where no test joined them. The second pass's rates are in its tests."""
    return test_matrix(check.view.topology.nodes, check.cables)


def test_matrix(nodes: Sequence[str], results: Sequence[CableResult]) -> dict[str, dict[str, float | None]]:
    """`matrix` of these nodes and tests (a pair's: its two nodes and its one cable)."""
    out: dict[str, dict[str, float | None]] = {n: {} for n in nodes}
    for result in results:
        if result.test.pass_no != 1 or result.problem is not None and not result.link.bench.rdma:
            continue
        for direction in DIRECTIONS:
            src, dst = named_direction(result, direction).split("->", 1)
            out.setdefault(src, {})[dst] = direction_gbps(result, direction)
    return out


# The per-test table's columns, in every format: a test's directions are named by the order of its label's nodes
# (a ring's `b:p0<->c:p1`: first b, second c), never by the pair view's roles a and b, which read as node names.
CABLE_HEADER = ("test", "round", "first->second", "second->first", "lowest run", "result", "named")


def cable_rows(check: ClusterCheck) -> list[list[str]]:
    """The per-cable table: each test's label, round (and pass), Gb/s each way, lowest run, state and what it named
    (or why it is inconclusive)."""
    return [[r.test.label, str(r.test.round) + (" (2nd pass)" if r.test.pass_no == 2 else ""),
             *(gbps(direction_gbps(r, d)) for d in DIRECTIONS), gbps(r.lowest_gbps), r.state,
             named_rules(r) or (r.problem or "")] for r in check.cables]


def shows_matrix(check: ClusterCheck) -> bool:
    """Whether a report draws the N x N matrix (the heatmap): between three nodes or more. Between two it would only
    repeat their one test's two directions, which the per-test table already gives (a pair is one cable)."""
    return len(check.view.topology.nodes) > 2


def matrix_rows(check: ClusterCheck) -> tuple[list[str], list[list[str]]]:
    """The N x N matrix as text: its header (`from \\ to`, then each node) and a row per node, `-` on the diagonal,
    empty where no test joined the two."""
    nodes = list(check.view.topology.nodes)
    cells = matrix(check)
    rows = [[src, *("-" if src == dst else gbps(cells[src][dst]) if dst in cells.get(src, {}) else ""
                    for dst in nodes)] for src in nodes]
    return ["from \\ to", *nodes], rows


def cable_finding_lines(check: ClusterCheck, show_all: bool = False) -> list[str]:
    """Per test, each rule that fired once: the paths it fired on, its first message, each path's evidence, and its
    fix, or the cluster finding that explains it (a node slow with every partner: the fix is the node's); with
    `show_all`, each rule that passed there too."""
    lines = []
    for r in check.cables:
        fired: dict[str, list[Finding]] = {}
        for f in r.findings:
            if f.status in (Status.FAIL, Status.WARN):
                fired.setdefault(f.rule_id, []).append(f)
        if show_all:
            passed = dict.fromkeys(f.rule_id for f in r.findings if f.status is Status.PASS and f.rule_id not in fired)
            lines += [f"PASS {rule_id} ({r.test.label})" for rule_id in passed]
        cause = check.node_cause(r)
        for rule_id, findings in fired.items():
            first = findings[0]
            where = ", ".join(f.subject for f in findings)
            lines.append(f"{first.status.value.upper()} {rule_id} ({r.test.label}: {where}): {first.message}")
            for f in findings:  # the evidence of each subject, as a pair's report gives it
                said = f" ({f.subject})" if len(findings) > 1 else ""
                lines += [f"  evidence{said}: {line}" for line in evidence_lines(f)]
            lines += ([f"  explained by {cause.rule_id} ({cause.subject})"] if cause
                      else [f"  fix: {step}" for step in first.fix])
        if r.problem:
            lines.append(f"INCONCLUSIVE {r.test.label}: {r.problem}")
    return lines


def cluster_nccl_text(check: ClusterCheck) -> str | None:
    """The NCCL run across every node in one line: bus bandwidth at the largest size, and each rank's transport."""
    run = check.facts.nccl
    if run is None:
        return None
    proven = [r.node for r in run.ranks if r.ib_proven]
    what = ("the transport proof, bandwidth not judged" if run.transport_only else
            f"bus bandwidth {number(run.busbw_gbs)} GB/s" if run.busbw_gbs is not None else "no bus bandwidth")
    size = f" up to {byte_size(run.largest_bytes)}" if run.largest_bytes else ""
    ranks = (f"NET/IB proven on {len(proven)} of {len(run.ranks)} ranks"
             + (f"; fell back to sockets: {', '.join(run.fell_back)}" if run.fell_back else ""))
    return (f"all_gather_perf across {len(run.ranks)} nodes{size}: {what}; {ranks}"
            + (f" ({run.problem})" if run.problem else ""))


def pair_test(outcome: Outcome, topology: Topology | None = None) -> CableResult | None:
    """The pair's one cable as a cluster's test of it would be: labelled as a cluster names the cable, round 1, the
    pair's traffic, the findings of the rules a cluster judges per test (CABLE_RULES) and their verdict (inconclusive
    with the traffic test's error, as a cluster's test is). None without traffic: a cluster's inspection alone has no
    test either."""
    link = outcome.link
    if not link.bench_present & {"rdma", "latency"}:
        return None
    findings = tuple(f for f in outcome.diagnosis.findings if f.rule_id in CABLE_RULES)
    error = outcome.bundle.collection_errors.get("bench")
    verdict = verdict_of(list(findings), error is not None)
    test = CableTest(pair_cable(outcome, topology), 1, link.a.name, link.b.name, link)
    return CableResult(test, link, verdict, findings, error if verdict is Verdict.INCONCLUSIVE else None)

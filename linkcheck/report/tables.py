"""Plain-text views of an outcome that the file reports share: stages, thresholds, node and traffic tables.

Everything here is text as it came from the nodes (passed through `shown`, so no control characters);
each renderer escapes it for its own format (XML, Markdown, HTML).
"""

from __future__ import annotations

from pathlib import Path

from linkcheck.advise.published import published
from linkcheck.facts.model import Function, LinkFacts, NodeFacts, RdmaRun
from linkcheck.model import Finding, Status
from linkcheck.outcome import Outcome
from linkcheck.report.safe_text import shown
from linkcheck.values import byte_size, evidence_line, number, pcie, plain_number


def stages(outcome: Outcome) -> dict[str, str]:
    """Rule id -> its stage: the playbook file it comes from (link-state, gid-index, throughput, nccl, ...)."""
    return {rule.id: Path(rule.source.rsplit(":", 1)[0]).stem or "rules" for rule in outcome.rules}


def threshold(outcome: Outcome, rule_id: str, name: str) -> float | None:
    rule = next((r for r in outcome.rules if r.id == rule_id), None)
    value = rule.thresholds.get(name) if rule else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def case_names(findings: tuple[Finding, ...]) -> list[str]:
    """`RULE subject` per finding, made unique (`#2`, ...) where one rule judged a subject twice."""
    seen: dict[str, int] = {}
    names = []
    for finding in findings:
        base = shown(f"{finding.rule_id} {finding.subject}")
        seen[base] = seen.get(base, 0) + 1
        names.append(base if seen[base] == 1 else f"{base} #{seen[base]}")
    return names


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


def node_rows(link: LinkFacts) -> tuple[list[str], list[tuple[str, list[str], list[str]]]]:
    """(column heads, rows): one row per twin slot (cage / PCI domain), then cable and NCCL_IB_HCA."""
    heads = [shown(f"{n.name}: {n.hostname or '?'}") for n in (link.a, link.b)]
    rows: list[tuple[str, list[str], list[str]]] = [("node", identity_lines(link.a), identity_lines(link.b))]
    for slot in sorted({_slot(f) for n in (link.a, link.b) for f in n.functions}):
        a, b = (_cell(next((f for f in n.functions if _slot(f) == slot), None), n) for n in (link.a, link.b))
        rows.append((shown(f"{slot[0]} / {slot[1]}"), a, b))
    cables = []
    for node in (link.a, link.b):
        cable = next((f.cable for f in node.functions if f.cable and f.cage in node.cabled_cages), None)
        cables.append([shown(f"{cable.vendor_name or '?'} {cable.vendor_pn or '?'} SN {cable.vendor_sn or '?'}"
                             if cable else node.unavailable.get("cable", "-"))])
    rows.append(("cable", cables[0], cables[1]))
    hca = [[shown(n.nccl.get("NCCL_IB_HCA", "(unset)"))] for n in (link.a, link.b)]
    rows.append(("NCCL_IB_HCA", hca[0], hca[1]))
    return heads, rows


def rate(run: RdmaRun | None) -> str:
    if run is None:
        return "-"
    return number(run.gbps) if run.gbps is not None else shown(f"no number: {run.problem}")


def rdma_rows(link: LinkFacts) -> list[tuple[str, str, RdmaRun | None, RdmaRun | None]]:
    """(path, mode, a->b run, b->a run): alone before concurrent, repeated rounds apart."""
    order = {"alone": 0, "concurrent": 1}
    grouped: dict[tuple[int, str, str, str], dict[str, RdmaRun]] = {}
    for run in link.bench.rdma:
        grouped.setdefault((order.get(run.mode, 2), run.mode, run.round_id, run.path_key), {})[run.direction] = run
    rows = []
    for (_, mode, round_id, path_key), by_direction in sorted(grouped.items()):
        label = f"{mode} {round_id}" if round_id.startswith("#") else mode
        rows.append((shown(path_key), shown(label), by_direction.get("a->b"), by_direction.get("b->a")))
    return rows


def not_run_lines(link: LinkFacts) -> list[str]:
    """The runs the plan left out, one line per reason: `not run: alone p1 a->b, alone p1 b->a: <why>`."""
    by_reason: dict[str, list[str]] = {}
    for item in link.bench.not_run:
        why = item.reason.removeprefix("not run: ")
        by_reason.setdefault(why, []).append(f"{item.mode} {item.path_key} {item.direction}")
    return [shown(f"not run: {', '.join(runs)}: {why}") for why, runs in by_reason.items()]


def total_cells(link: LinkFacts) -> list[str] | None:
    totals = link.bench.totals("concurrent")
    if not totals:
        return None
    cells = []
    for direction in ("a->b", "b->a"):
        total = totals.get(direction)
        cells.append("-" if direction not in totals else "no total" if total is None else number(total))
    return cells


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


def latency_rows(link: LinkFacts) -> list[tuple[str, str, str, str]]:
    """(measurement, value, kind, the published healthy figure) per ib_write_lat run and all_reduce size; empty
    when the bundle has no latency test."""
    bench = link.bench
    rows = []
    for run in bench.latency:
        what = f"ib_write_lat {byte_size(run.size_bytes)}, {run.path_key} (client {run.client_node})"
        ref = _published_us("ib_write_lat_2b_us") if run.size_bytes <= 64 else \
            _published_us("ib_write_lat_48k_us") if 32768 <= run.size_bytes <= 65536 else "-"
        if run.typical_us is None:
            rows.append((what, f"no number: {run.problem or 'no result'}", "-", ref))
        else:
            p99 = f" (99%: {_us(run.p99_us)})" if run.p99_us is not None else ""
            rows.append((what, _us(run.typical_us) + p99, "measured: this bundle, t_typical", ref))
    reduce = bench.allreduce
    if reduce is not None:
        transport = f", transport {reduce.network}" if reduce.network else ""
        for row in reduce.rows:
            ref = _published_us("allreduce_64k_us") if row.size_bytes == 65536 else "-"
            rows.append((f"all_reduce_perf {row.size_bytes} B across the nodes", _us(row.time_us),
                         f"measured: this bundle, out-of-place{transport}", ref))
        if reduce.problem:
            rows.append(("all_reduce_perf across the nodes", f"no number: {reduce.problem}", "-", "-"))
    return rows

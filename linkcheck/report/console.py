"""The console report: both nodes side by side, the traffic results, then findings with evidence and fix."""

from __future__ import annotations

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from linkcheck.facts.model import Function, LinkFacts, NodeFacts
from linkcheck.model import Finding, Status, Verdict
from linkcheck.pipeline import Outcome

STYLE = {Status.PASS: "green", Status.WARN: "yellow", Status.FAIL: "bold red", Status.SKIP: "cyan"}
VERDICT_STYLE = {Verdict.PASS: "bold green", Verdict.WARN: "bold yellow", Verdict.FAIL: "bold red",
                 Verdict.INCONCLUSIVE: "bold cyan"}


def _cell(fn: Function | None, node: NodeFacts) -> str:
    if fn is None:
        return "-"
    pin = node.nccl.get("NCCL_IB_GID_INDEX")
    state = "up" if fn.carrier else "down" if fn.carrier is False else "?"
    speed = f"{fn.speed_mbps // 1000}G" if fn.speed_mbps else "?"
    pcie = f"{fn.pcie_speed_gts:g}GT/s x{fn.pcie_width}" if fn.pcie_speed_gts and fn.pcie_width else "PCIe ?"
    gid = "-" if fn.gid_index is None else str(fn.gid_index)
    lines = [
        f"{fn.netdev} / {fn.rdma_dev or '?'}",
        f"{state} {speed}, {pcie}",
        f"{', '.join(fn.ipv4) or 'no IPv4'}  mtu {fn.mtu or '?'}",
        f"GID {gid} (pin {'-' if pin is None else repr(pin)})",
    ]
    return "\n".join(lines)


def _slot(fn: Function) -> tuple[str, str]:
    return (fn.cage or "?", fn.domain or "?")


def node_table(link: LinkFacts) -> Table:
    """One row per twin slot (cage, PCI domain); one column per node."""
    table = Table(title="Nodes", show_lines=True)
    table.add_column("cage / domain")
    for node in (link.a, link.b):
        table.add_column(f"{node.name}: {node.hostname or '?'}")
    slots = sorted({_slot(f) for n in (link.a, link.b) for f in n.functions})
    for slot in slots:
        cells = [_cell(next((f for f in n.functions if _slot(f) == slot), None), n) for n in (link.a, link.b)]
        table.add_row(f"{slot[0]} / {slot[1]}", *cells)
    cables = []
    for node in (link.a, link.b):
        cable = next((f.cable for f in node.functions if f.cable and f.cage in node.cabled_cages), None)
        cables.append(f"{cable.vendor_name or '?'} {cable.vendor_pn or '?'} SN {cable.vendor_sn or '?'}"
                      if cable else node.unavailable.get("cable", "-"))
    table.add_row("cable", *cables)
    table.add_row("NCCL_IB_HCA", *[n.nccl.get("NCCL_IB_HCA", "(unset)") for n in (link.a, link.b)])
    return table


def bench_table(link: LinkFacts) -> Table | None:
    if not link.bench.rdma and link.bench.nccl is None:
        return None
    table = Table(title="Traffic")
    for col in ("test", "path", "mode", "direction", "result"):
        table.add_column(col)
    for run in link.bench.rdma:
        result = f"{run.gbps:.2f} Gb/s" if run.gbps is not None else f"no number: {run.problem}"
        table.add_row("ib_write_bw", run.path_key, run.mode, run.direction, result)
    nccl = link.bench.nccl
    if nccl is not None:
        busbw = f"{nccl.busbw_gbs:.2f} GB/s busbw" if nccl.busbw_gbs is not None else f"no number: {nccl.problem}"
        table.add_row("all_gather_perf", f"via {nccl.network or '?'} {','.join(nccl.ib_devices)}", "", "", busbw)
    return table


def _finding_panel(finding: Finding) -> Panel:
    body: list[Text] = [Text(finding.message)]
    for ev in finding.evidence:
        body.append(Text(f"  evidence: {ev.fact} = {ev.value!r}" + (f"  [{ev.source}]" if ev.source else ""),
                         style="dim"))
    for step in finding.fix:
        body.append(Text(f"  fix: {step}", style="bold"))
    title = f"[{STYLE[finding.status]}]{finding.status.value.upper()}[/] {finding.rule_id}  {finding.subject}"
    return Panel(Group(*body), title=title, title_align="left", expand=True)


def print_report(outcome: Outcome, console: Console, *, show_all: bool = False) -> None:
    link, diagnosis = outcome.link, outcome.diagnosis
    console.print(node_table(link))
    bench = bench_table(link)
    if bench is not None:
        console.print(bench)
    shown = [f for f in diagnosis.findings if show_all or f.status in (Status.FAIL, Status.WARN)]
    for finding in shown:
        console.print(_finding_panel(finding))
    skips = [f for f in diagnosis.findings if f.status is Status.SKIP]
    if skips and not show_all:
        console.print(Text("Not judged:", style="cyan"))
        for f in skips:
            console.print(Text(f"  {f.rule_id} ({f.subject}): {f.skip_reason}", style="cyan"))
    for note in diagnosis.notes:
        console.print(Text(f"note: {note}", style="cyan"))
    counts = {s: sum(1 for f in diagnosis.findings if f.status is s) for s in Status}
    summary = ", ".join(f"{n} {s.value}" for s, n in counts.items() if n)
    console.print(Text(f"verdict: {diagnosis.verdict.value.upper()} ({summary}) exit {int(diagnosis.exit_code)}",
                       style=VERDICT_STYLE[diagnosis.verdict]))

"""`linkcheck init`: inspect both nodes once and write a commented linkcheck.yaml describing the link."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from linkcheck.app.live import collect_bundle
from linkcheck.config import Config
from linkcheck.errors import ConfigError, NodeError, UnreachableError
from linkcheck.facts.model import LinkFacts
from linkcheck.facts.pair import build_link_facts
from linkcheck.report.writer import check_output_path, write_output


def render_config(config: Config, link: LinkFacts) -> str:
    """The YAML text, with comments that say what each part is for."""
    today = dt.date.today().isoformat()
    lines = [
        f"# linkcheck configuration, written by `linkcheck init` on {today}.",
        "# Every command reads ./linkcheck.yaml (or --config PATH); --node a=... --node b=... override the nodes.",
        "version: 1",
        "nodes:  # SSH targets: [user@]host[:port]; names from ~/.ssh/config work",
    ]
    for name in ("a", "b"):
        target = config.nodes[name]
        lines.append(f"  {name}:")
        lines.append(f"    target: {target}  # hostname: {link.node(name).hostname or '?'}")
        if target.identity_file:
            lines.append(f"    identity_file: {target.identity_file}")
    lines += [
        "ssh:",
        "  connect_timeout_s: 10      # connect, banner and auth each",
        "  command_timeout_s: 20      # each inspection command, enforced on the node with `timeout`",
        "  inspection_timeout_s: 90   # the whole inspection of one node",
        "  accept_new_host_keys: false  # strict host keys; add keys with ssh-keyscan instead",
        "link:  # what init found; check reports when the live link differs",
        f"  cage: {','.join(link.a.cabled_cages) or 'none'}  # p0 = left cage (next to RJ45), p1 = right",
        "  paths:  # twin on node a facing its twin on node b (same subnet)",
    ]
    for path in link.paths:
        lines.append(f"    - {{a: {path.a.netdev}, b: {path.b.netdev}, subnet: {path.subnet}}}")
    if not link.paths:
        lines.append("    []  # no addressed twin pair found: configure netplan first")
    lines += [
        "playbooks: []  # extra playbook files or folders, relative to this file",
        "thresholds: {}  # per-rule overrides, e.g. {NCCL_BUSBW_LOW: {min_busbw_gbs: 22.5}}",
        "",
    ]
    return "\n".join(lines)


def write_initial_config(config: Config, output: Path, *, force: bool) -> LinkFacts:
    """Inspect both nodes and write `output`; refuses to overwrite unless forced."""
    if output.exists() and not force and not _is_stream(output):
        raise ConfigError(str(output), "already exists", fix="pass --force to overwrite, or --output another path")
    _check_output(output)
    bundle = collect_bundle(config)
    if bundle.collection_errors:
        raise UnreachableError(bundle.collection_errors)
    link = build_link_facts(bundle.captures)
    _require_cabled_cx7(link)
    write_output(output, render_config(config, link), "-o", "config")
    return link


def _is_stream(output: Path) -> bool:
    """`-`, a FIFO or a device: written straight, so never "already exists"."""
    return str(output) == "-" or output.is_fifo() or output.is_char_device()


def _check_output(output: Path) -> None:
    """Refuse, before connecting, an --output that cannot be written: a folder, a socket, a link to nothing, a
    missing or read-only parent (exit 4)."""
    check_output_path(output, "-o")


def _require_cabled_cx7(link: LinkFacts) -> None:
    """A config describing no link would only mislead every later check: say what is missing instead."""
    for node in (link.a, link.b):
        if not node.functions:
            raise NodeError(node.name, "no ConnectX-7 function found (no mlx5 netdev); nothing to configure",
                            fix="check `lspci | grep -i mellanox` and that the mlx5_core driver is loaded")
        if not node.cabled_cages:
            raise NodeError(node.name, "no cabled cage: no ConnectX-7 port has a link",
                            fix="seat the QSFP cable in the same cage on both nodes, then re-run init")

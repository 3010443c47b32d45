"""`linkcheck init`: inspect both nodes once and write a commented linkcheck.yaml describing the link."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from linkcheck.config import Config
from linkcheck.errors import ConfigError, NodeError
from linkcheck.facts.model import LinkFacts
from linkcheck.facts.pair import build_link_facts


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
    from linkcheck.live import collect_bundle

    if output.exists() and not force:
        raise ConfigError(str(output), "already exists", fix="pass --force to overwrite, or --output another path")
    bundle = collect_bundle(config)
    for name, error in bundle.collection_errors.items():
        raise NodeError(name, error.removeprefix(f"node {name}: "))
    link = build_link_facts(bundle.captures)
    output.write_text(render_config(config, link), encoding="utf-8")
    return link

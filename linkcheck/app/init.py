"""`linkcheck init`: inspect both nodes once and write a commented linkcheck.yaml describing the link."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from linkcheck.app.live import collect_bundle
from linkcheck.config import Config
from linkcheck.errors import ConfigError, NodeError, UnreachableError
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
    if output.exists() and not force:
        raise ConfigError(str(output), "already exists", fix="pass --force to overwrite, or --output another path")
    _check_output(output)
    bundle = collect_bundle(config)
    if bundle.collection_errors:
        raise UnreachableError(bundle.collection_errors)
    link = build_link_facts(bundle.captures)
    _require_cabled_cx7(link)
    try:
        output.write_text(render_config(config, link), encoding="utf-8")
    except OSError as exc:
        raise ConfigError(str(output), f"cannot write: {exc.strerror or exc}") from None
    return link


def _check_output(output: Path) -> None:
    """Refuse, before connecting, an --output that cannot be written: a folder, or a missing or read-only parent."""
    parent = output.parent if str(output.parent) else Path(".")
    if output.is_dir():
        raise ConfigError(str(output), "is a folder", fix="give a file name, e.g. -o linkcheck.yaml")
    if not parent.is_dir():
        raise ConfigError(str(output), f"folder {parent} does not exist", fix=f"create it first: mkdir -p {parent}")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ConfigError(str(output), f"folder {parent} is not writable by this user")


def _require_cabled_cx7(link: LinkFacts) -> None:
    """A config describing no link would only mislead every later check: say what is missing instead."""
    for node in (link.a, link.b):
        if not node.functions:
            raise NodeError(node.name, "no ConnectX-7 function found (no mlx5 netdev); nothing to configure",
                            fix="check `lspci | grep -i mellanox` and that the mlx5_core driver is loaded")
        if not node.cabled_cages:
            raise NodeError(node.name, "no cabled cage: no ConnectX-7 port has a link",
                            fix="seat the QSFP cable in the same cage on both nodes, then re-run init")

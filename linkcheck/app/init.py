"""`linkcheck init`: inspect both nodes once and write a commented linkcheck.yaml describing the link."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from pathlib import Path

from linkcheck.app.live import collect_bundle
from linkcheck.app.topology import cluster_facts, inspect_cluster, open_cluster
from linkcheck.cluster.facts import ClusterFacts
from linkcheck.cluster.hosts import ClusterHost
from linkcheck.collect.collector import close_transports
from linkcheck.config import Config, SshOptions
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


def _yaml_text(value: str) -> str:
    """A node-given or user-given word as a YAML scalar that stays text (JSON's quoting is valid YAML)."""
    return json.dumps(value, ensure_ascii=True)


def render_cluster_config(hosts: Sequence[ClusterHost], ssh: SshOptions, facts: ClusterFacts) -> str:
    """linkcheck.yaml for a cluster: the SSH settings in use, the nodes in their order, the cabling found (each
    direct cable cage to cage, the nodes on the switch), with comments that say what each part is for."""
    today = dt.date.today().isoformat()
    topo = facts.topology
    lines = [f"# linkcheck configuration, written by `linkcheck init` on {today} for a cluster of {len(hosts)} nodes.",
             "# topology and check read ./linkcheck.yaml (or --config PATH); --node, --hostfile or --inventory "
             "override the nodes.",
             "version: 1",
             "ssh:",
             *([f"  known_hosts: {_yaml_text(str(ssh.known_hosts))}"] if ssh.known_hosts else []),
             *([f"  config: {_yaml_text(str(ssh.config))}"] if ssh.config else []),
             f"  connect_timeout_s: {ssh.connect_timeout_s:g}",
             f"  command_timeout_s: {ssh.command_timeout_s}",
             f"  inspection_timeout_s: {ssh.inspection_timeout_s:g}",
             "  accept_new_host_keys: false  # strict host keys; add keys with ssh-keyscan instead",
             f"cluster:  # what init found (layout {topo.layout}); topology and check report when the live cabling "
             "differs",
             "  nodes:  # SSH targets: [user@]host[:port]"]
    hostnames = {n: f.hostname for n, f in facts.nodes.items()}
    for host in hosts:
        target = _yaml_text(str(host.target))
        if host.target.identity_file:  # an inventory's key file (ansible_ssh_private_key_file) is kept
            target = f"{{target: {target}, identity_file: {_yaml_text(host.target.identity_file)}}}"
        lines.append(f"    {_yaml_text(host.name)}: {target}  # hostname: {_comment(hostnames.get(host.name))}")
    lines.append("  cables:  # direct cables, cage to cage (node:cage<->node:cage)")
    lines += [f"    - {_yaml_text(c.key)}" for c in topo.cables] or ["    []"]
    switched = [n for n in topo.nodes if any(n in s.nodes for s in topo.segments)]
    lines.append("  switch: [" + ", ".join(_yaml_text(n) for n in switched) + "]  # the nodes on the switch")
    lines += ["playbooks: []  # extra playbook files or folders, relative to this file",
              "thresholds: {}  # per-rule overrides, e.g. {NCCL_BUSBW_LOW: {min_busbw_gbs: 22.5}}", ""]
    return "\n".join(lines)


def _comment(text: str | None) -> str:
    """Text from a node inside a YAML comment: one line, printable, no more than 64 characters."""
    shown = "".join(ch if ch.isprintable() else "?" for ch in (text or "?"))
    return shown[:64]


def write_cluster_config(hosts: Sequence[ClusterHost], ssh: SshOptions, output: Path, *, force: bool) -> ClusterFacts:
    """Inspect every node and write `output` with the cabling found; refuses to overwrite unless forced, and when a
    node could not be inspected (the cabling would be recorded without it)."""
    if output.exists() and not force and not _is_stream(output):
        raise ConfigError(str(output), "already exists", fix="pass --force to overwrite, or --output another path")
    _check_output(output)
    transports = open_cluster(hosts, ssh)
    try:
        captures, errors = inspect_cluster(transports, ssh, hosts)
    finally:
        close_transports(transports)
    if errors:
        raise UnreachableError(errors)
    facts = cluster_facts([h.name for h in hosts], captures, errors)
    if not facts.topology.cables and not facts.topology.segments:
        raise ConfigError(str(output), "no cable and no switch segment found between the nodes; nothing recorded",
                          fix="address the CX-7 ports (one /24 per cable and twin), then run init again")
    write_output(output, render_cluster_config(hosts, ssh, facts), "-o", "config")
    return facts

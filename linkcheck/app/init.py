"""`linkcheck init`: inspect every node once and write a commented linkcheck.yaml describing what was found: a
pair's link, or a cluster's nodes and cabling."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from pathlib import Path

from linkcheck.app.topology import cluster_facts, inspect_cluster, open_cluster
from linkcheck.cluster.facts import ClusterFacts
from linkcheck.cluster.hosts import PAIR_NODES, ClusterHost
from linkcheck.cluster.topology import one_cable
from linkcheck.collect.collector import close_transports
from linkcheck.config import SshOptions
from linkcheck.errors import ConfigError, NodeError, UnreachableError
from linkcheck.facts.model import LinkFacts
from linkcheck.facts.pair import pair_link
from linkcheck.report.writer import check_output_path, write_output


def _ssh_lines(ssh: SshOptions) -> list[str]:
    """The SSH settings in use, each with what it is for."""
    return ["ssh:",
            *([f"  known_hosts: {_yaml_text(str(ssh.known_hosts))}"] if ssh.known_hosts else []),
            *([f"  config: {_yaml_text(str(ssh.config))}"] if ssh.config else []),
            f"  connect_timeout_s: {ssh.connect_timeout_s:g}  # connect, banner and auth each",
            f"  command_timeout_s: {ssh.command_timeout_s}  # each inspection command, enforced on the node with "
            "`timeout`",
            f"  inspection_timeout_s: {ssh.inspection_timeout_s:g}  # the whole inspection of one node",
            "  accept_new_host_keys: false  # strict host keys; add keys with ssh-keyscan instead"]


def _target(host: ClusterHost) -> str:
    """A node's SSH target as YAML: the target, with its key file where one was given (an inventory's
    ansible_ssh_private_key_file, linkcheck.yaml's identity_file)."""
    target = _yaml_text(str(host.target))
    if host.target.identity_file:
        return f"{{target: {target}, identity_file: {_yaml_text(host.target.identity_file)}}}"
    return target


_TAIL = ["playbooks: []  # extra playbook files or folders, relative to this file",
         "thresholds: {}  # per-rule overrides, e.g. {NCCL_BUSBW_LOW: {min_busbw_gbs: 22.5}}", ""]


def render_config(hosts: Sequence[ClusterHost], ssh: SshOptions, link: LinkFacts) -> str:
    """linkcheck.yaml for a pair (two nodes named a and b on one cable): its nodes, the SSH settings in use and the
    link found (the cabled cage, each twin facing its twin), with comments that say what each part is for."""
    today = dt.date.today().isoformat()
    lines = [
        f"# linkcheck configuration, written by `linkcheck init` on {today}.",
        "# Every command reads ./linkcheck.yaml (or --config PATH); --node a=... --node b=... override the nodes.",
        "version: 1",
        "nodes:  # SSH targets: [user@]host[:port]; names from ~/.ssh/config work",
    ]
    for host in hosts:
        lines.append(f"  {host.name}: {_target(host)}  # hostname: {_comment(link.node(host.name).hostname)}")
    lines += [
        *_ssh_lines(ssh),
        "link:  # what init found; check reports when the live link differs",
        f"  cage: {','.join(link.a.cabled_cages) or 'none'}  # p0 = left cage (next to RJ45), p1 = right",
        "  paths:  # twin on node a facing its twin on node b (same subnet)",
    ]
    for path in link.paths:
        lines.append(f"    - {{a: {path.a.netdev}, b: {path.b.netdev}, subnet: {path.subnet}}}")
    if not link.paths:
        lines.append("    []  # no addressed twin pair found: configure netplan first")
    return "\n".join([*lines, *_TAIL])


def write_config(hosts: Sequence[ClusterHost], ssh: SshOptions, output: Path, *, force: bool) -> str:
    """Inspect every node once and write `output` with what was found; the line that says what was written. Two
    nodes named a and b on one cable (topology.py `one_cable`) are written as a pair (`nodes:` and `link:`, the form
    `--node a=... --node b=...` overrides); any other nodes as a cluster (`cluster:` with its nodes and cabling).
    Refuses to overwrite unless forced, and when a node could not be inspected (the cabling would be recorded
    without it)."""
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
    topo = facts.topology
    if one_cable(topo) and tuple(h.name for h in hosts) == PAIR_NODES:
        a, b = (facts.nodes[n] for n in PAIR_NODES)
        link = pair_link(a, b)
        _require_cabled_cx7(link)
        write_output(output, render_config(hosts, ssh, link), "-o", "config")
        return (f"wrote {output}: cage {','.join(link.a.cabled_cages) or 'none'}, {len(link.paths)} path(s): "
                + "; ".join(p.key for p in link.paths))
    if not topo.cables and not topo.segments:
        raise ConfigError(str(output), "no cable and no switch segment found between the nodes; nothing recorded",
                          fix="address the CX-7 ports (one /24 per cable and twin), then run init again")
    write_output(output, render_cluster_config(hosts, ssh, facts), "-o", "config")
    switched = {n for segment in topo.segments for n in segment.nodes}
    return (f"wrote {output}: {len(hosts)} nodes, layout {topo.layout}, {len(topo.cables)} cable(s), "
            f"{len(switched)} node(s) on the switch")


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
             *_ssh_lines(ssh),
             f"cluster:  # what init found (layout {topo.layout}); topology and check report when the live cabling "
             "differs",
             "  nodes:  # SSH targets: [user@]host[:port]"]
    hostnames = {n: f.hostname for n, f in facts.nodes.items()}
    for host in hosts:
        lines.append(f"    {_yaml_text(host.name)}: {_target(host)}  # hostname: {_comment(hostnames.get(host.name))}")
    lines.append("  cables:  # direct cables, cage to cage (node:cage<->node:cage)")
    lines += [f"    - {_yaml_text(c.key)}" for c in topo.cables] or ["    []"]
    switched = [n for n in topo.nodes if any(n in s.nodes for s in topo.segments)]
    lines.append("  switch: [" + ", ".join(_yaml_text(n) for n in switched) + "]  # the nodes on the switch")
    return "\n".join([*lines, *_TAIL])


def _comment(text: str | None) -> str:
    """Text from a node inside a YAML comment: one line, printable, no more than 64 characters."""
    shown = "".join(ch if ch.isprintable() else "?" for ch in (text or "?"))
    return shown[:64]

"""What a node's firewall shows: `iptables -S CHAIN` from the model's tables."""

from __future__ import annotations

from tests.emulators.node import Node

Output = tuple[str, str, int]


def render_iptables(node: Node, chain: str) -> Output:
    """`sudo -n iptables -S CHAIN` as the model's tables print it; a chain the model lacks is iptables' own
    refusal; a model without iptables is sudo's "command not found"."""
    if node.iptables is None:
        return "", "sudo: iptables: command not found\n", 1
    if chain not in node.iptables:
        return "", "iptables: No chain/target/match by that name.\n", 1
    return node.iptables[chain], "", 0

"""What decides whether a node carries traffic between two others, as facts: IPv4 forwarding, whether its routes
were read, and the firewall's FORWARD chain with DOCKER-USER where FORWARD jumps to it; and how that chain treats new
traffic between the node's CX-7 netdevs. One node's captures each; the cluster's view over them (which nodes are
transit nodes, which routes are missing) is linkcheck.cluster.facts.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from typing import Literal

import msgspec

from linkcheck.facts.model import NodeFacts
from linkcheck.facts.sources import NodeSources
from linkcheck.model import Capture
from linkcheck.parsers.netfilter import IptablesChains, IptRule

# Fact groups only a cluster's inspection gathers (the pair's NODE_GROUPS are unchanged).
CLUSTER_GROUPS = frozenset({"forwarding", "routes", "firewall"})
NO_CHAIN = "No chain/target/match by that name"
DOCKER_USER = "DOCKER-USER"


class Forwarding(msgspec.Struct, frozen=True):
    """One node's forwarding state. None: unknown (the reason is in `unavailable`)."""

    ip_forward: bool | None = None
    forward_policy: str | None = None  # the FORWARD chain's policy: ACCEPT or DROP
    forward_rules: tuple[IptRule, ...] = ()  # FORWARD's and DOCKER-USER's rules
    docker_user: bool | None = None  # the DOCKER-USER chain exists
    unavailable: Mapping[str, str] = {}


def _iptables(src: NodeSources, spec: Literal["iptables_forward", "iptables_docker_user"]
              ) -> tuple[IptablesChains | None, bool | None, str | None]:
    """The chain's dump, whether the chain exists (None: unknown), and why it is unknown."""
    cap = src.capture(spec)
    if cap is not None and not cap.skipped and cap.exit_status != 0 and NO_CHAIN in cap.stderr:
        return None, False, None
    parsed = src.iptables(spec)
    return (parsed, True, None) if parsed is not None else (None, None, src.reason(spec))


def forwarding(name: str, captures: Sequence[Capture]) -> Forwarding:
    """The node's forwarding state from the cluster specs' captures (linkcheck.collect.specs.CLUSTER_SPECS).

    DOCKER-USER matters only when FORWARD jumps to it: then it must be readable for the firewall to be known. Where
    FORWARD does not jump to it, its state (absent, or iptables 1.8.9's `chain ... is incompatible` for a chain
    that is not there) changes nothing."""
    src = NodeSources(name, list(captures))
    missing: dict[str, str] = {}
    ip_forward = src.ip_forward()
    if ip_forward is None:
        missing["forwarding"] = src.reason("ip_forward")
    if src.ip_route() is None:
        missing["routes"] = src.reason("ip_route")
    forward, _, why = _iptables(src, "iptables_forward")
    docker, docker_exists, docker_why = _iptables(src, "iptables_docker_user")
    jumps = forward is not None and any(r.chain == "FORWARD" and r.target == DOCKER_USER for r in forward.rules)
    if forward is None:
        missing["firewall"] = why or "iptables_forward: not collected"
    elif jumps and docker_exists is None:
        missing["firewall"] = docker_why or "iptables_docker_user: not collected"
    rules = (forward.rules if forward else ()) + (docker.rules if docker and jumps else ())
    return Forwarding(ip_forward=ip_forward, forward_policy=forward.policies.get("FORWARD") if forward else None,
                      forward_rules=tuple(r for r in rules if r.chain in ("FORWARD", DOCKER_USER)),
                      docker_user=docker_exists, unavailable=missing)


def _matches(pattern: str, netdev: str) -> bool:
    """iptables' interface match: a trailing `+` matches any name that starts with what precedes it."""
    return netdev.startswith(pattern[:-1]) if pattern.endswith("+") else netdev == pattern


def _end_matches(value: str | None, negated: bool, netdevs: Sequence[str]) -> bool:
    """A rule's `-i`/`-o` lets some CX-7 netdev through: none named, one named, or (`! -i docker0`) one not named."""
    if value is None:
        return True
    return any(_matches(value, n) != negated for n in netdevs)


# Options that make a rule match only some of the traffic (a protocol, ports, addresses, a mark...): such a rule
# decides nothing for RoCE (UDP 4791) and NCCL's TCP alike, so it neither accepts nor drops "the traffic".
_PARTIAL = ("-p", "--protocol", "--dport", "--sport", "--dports", "--sports", "-s", "--source", "-d", "--destination",
            "--mark", "--match-set", "--uid-owner", "--icmp-type")
_DECIDING = {"ACCEPT": "ACCEPT", "DROP": "DROP", "REJECT": "DROP"}


def _new_traffic(rule: IptRule, netdevs: Sequence[str]) -> bool:
    """The rule matches new traffic between the CX-7 netdevs: no partial match, no state limit without NEW, and
    interfaces it names (or, `! -i docker0`, does not) that are CX-7 netdevs."""
    if any(rule.option(o)[0] is not None for o in _PARTIAL):
        return False
    state, _ = rule.option("--ctstate", "--state")
    if state is not None and "NEW" not in state.split(","):
        return False
    ends = [rule.option(o, long) for o, long in (("-i", "--in-interface"), ("-o", "--out-interface"))]
    return all(_end_matches(value, negated, netdevs) for value, negated in ends)


def _walk(rules: Sequence[IptRule], chain: str, netdevs: Sequence[str]) -> IptRule | None:
    """The first rule of `chain`, in order, that decides new traffic between the CX-7 netdevs (ACCEPT, DROP,
    REJECT), following a jump to DOCKER-USER; a RETURN there goes back. Jumps to chains not read (Docker's own,
    a VPN's) decide nothing here."""
    for rule in (r for r in rules if r.chain == chain):
        if not _new_traffic(rule, netdevs):
            continue
        if rule.target == DOCKER_USER and chain == "FORWARD":
            decided = _walk(rules, DOCKER_USER, netdevs)
            if decided is not None:
                return decided
        elif rule.target == "RETURN":
            return None
        elif rule.target in _DECIDING:
            return rule
    return None


def forward_decision(fwd: Forwarding, netdevs: Sequence[str]) -> tuple[str, str] | None:
    """What the FORWARD chain does with new traffic between the CX-7 netdevs: (ACCEPT or DROP, the rule or policy
    that decides it); None when the policy is not known."""
    rule = _walk(fwd.forward_rules, "FORWARD", netdevs)
    if rule is not None:
        return _DECIDING[rule.target or ""], " ".join(("-A", rule.chain, *rule.words))
    if fwd.forward_policy is None:
        return None
    return ("ACCEPT" if fwd.forward_policy == "ACCEPT" else "DROP"), f"-P FORWARD {fwd.forward_policy}"


def accepts_forwarded(fwd: Forwarding, netdevs: Sequence[str]) -> bool:
    """New traffic between the CX-7 netdevs passes the FORWARD chain: its rules in order (DOCKER-USER where FORWARD
    jumps to it), then its policy. Rules limited to established connections, a protocol or ports do not count:
    Docker's own rules for docker0 look like that."""
    decision = forward_decision(fwd, netdevs)
    return decision is not None and decision[0] == "ACCEPT"


def forward_ports(node: NodeFacts) -> list[str]:
    """The node's addressed CX-7 netdevs (a link-local address alone does not count), sorted: what it routes between
    as a transit node. DOCKER_FORWARD_DROP's fix and its repair accept each ordered pair of them in DOCKER-USER, by
    interface: an accept by address decides only part of the traffic here (_PARTIAL)."""
    return sorted(f.netdev for f in node.functions
                  if any(not ipaddress.ip_interface(c).ip.is_link_local for c in f.ipv4))


def docker_user_accept(verb: str, dev_in: str, dev_out: str) -> str:
    """`sudo iptables VERB DOCKER-USER -i IN -o OUT -j ACCEPT` (-I inserts it, -C checks it); the interfaces are
    shell words, quoted by the caller."""
    return f"sudo iptables {verb} {DOCKER_USER} -i {dev_in} -o {dev_out} -j ACCEPT"

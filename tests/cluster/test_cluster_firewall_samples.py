"""The firewall facts over real `iptables -S` outputs that users pasted (tests/samples/netfilter/real/, sources in
PROVENANCE.md): what the parser reads, and whether traffic a node routes between its CX-7 interfaces would be
accepted, as a person reading the output would judge it.

A node answers `sudo -n iptables -S FORWARD` and `sudo -n iptables -S DOCKER-USER` (linkcheck.collect.specs
CLUSTER_SPECS); a pasted `iptables -S` of the whole table is what those two print together.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from linkcheck.facts.forwarding_facts import accepts_forwarded, forward_decision, forwarding
from linkcheck.model import Capture
from linkcheck.parsers.netfilter import parse_iptables_s

REAL = Path(__file__).resolve().parents[1] / "samples" / "netfilter" / "real"
CX7 = ("enp1s0f0np0", "enp1s0f1np1", "enP2p1s0f0np0", "enP2p1s0f1np1")


def real(name: str) -> str:
    return (REAL / name).read_text()


def _cap(spec: str, stdout: str = "", stderr: str = "", exit_status: int = 0) -> Capture:
    return Capture(node="n1", spec=spec, command=f"sudo -n iptables -S {spec}", stdout=stdout, stderr=stderr,
                   exit_status=exit_status)


def _chain(dump: str, chain: str) -> str:
    """What `iptables -S CHAIN` prints of a whole-table `iptables -S`: the policy (a built-in chain) or the -N line
    (a user chain), then the chain's own rules in order."""
    heads = (f"-P {chain} ", f"-N {chain}")
    return "".join(line + "\n" for line in dump.splitlines()
                   if line.startswith(f"-A {chain} ") or any(line == h.strip() or line.startswith(h) for h in heads))


NO_DOCKER_USER = real("stderr_missing_chain_nft1811_with_legacy_warning.txt")


# ------------------------------------------------------------------------------------------- what the parser reads

@pytest.mark.parametrize(("name", "policies", "chains", "rules"), [
    ("forward_docker19_kali_user_bridge.txt", {"FORWARD": "DROP"}, (), 10),
    ("forward_awall_router_wildcards.txt", {"FORWARD": "DROP"}, (), 18),
    ("forward_docker28_tailscale_veths.txt", {"FORWARD": "DROP"}, (), 7),
    ("forward_policy_only_hostap2018.txt", {"FORWARD": "DROP"}, (), 0),
    ("forward_hostap2018_wlan_to_eth.txt", {"FORWARD": "DROP"}, (), 2),
    ("docker_user_return_only.txt", {}, ("DOCKER-USER",), 1),
    ("s_docker27_without_docker_user_excerpt.txt", {"INPUT": "ACCEPT", "FORWARD": "ACCEPT", "OUTPUT": "ACCEPT"},
     ("DOCKER", "DOCKER-ISOLATION-STAGE-1", "DOCKER-ISOLATION-STAGE-2"), 8),
    ("s_nft_with_legacy_warning_terminal.txt", {"INPUT": "ACCEPT", "FORWARD": "ACCEPT", "OUTPUT": "ACCEPT"}, (), 0),
    ("rules_v4_forward_negated_excerpt.txt", {}, (), 6),
])
def test_real_outputs_parse_whole(name: str, policies: dict[str, str], chains: tuple[str, ...], rules: int) -> None:
    dump = parse_iptables_s(real(name))
    assert dump.policies == policies and dump.chains == chains and len(dump.rules) == rules


def test_real_rules_keep_their_words_negations_and_jumps() -> None:
    dump = parse_iptables_s(real("forward_docker19_kali_user_bridge.txt"))
    assert [r.target for r in dump.rules[:2]] == ["DOCKER-USER", "DOCKER-ISOLATION-STAGE-1"]
    bridge_out = dump.rules[4]  # -A FORWARD -i br-891816429ee8 ! -o br-891816429ee8 -j ACCEPT
    assert bridge_out.option("-i") == ("br-891816429ee8", False)
    assert bridge_out.option("-o") == ("br-891816429ee8", True)
    assert dump.rules[2].option("--ctstate") == ("RELATED,ESTABLISHED", False)
    assert dump.rules[-1].target == "DROP"
    tailscale = parse_iptables_s(real("forward_docker28_tailscale_veths.txt"))
    assert [r.target for r in tailscale.rules[:3]] == ["ts-forward", "DOCKER-USER", "DOCKER-FORWARD"]
    assert tailscale.rules[3].option("--state") == ("RELATED,ESTABLISHED", False)


# ------------------------------------------------------------------------------ what a node's captures amount to

def test_dockers_drop_with_only_its_bridges_accepted_drops_the_cx7_traffic() -> None:
    # Docker 19 with one user network: DROP, and every ACCEPT names a Docker bridge on the way in or out.
    fwd = forwarding("n1", [_cap("iptables_forward", real("forward_docker19_kali_user_bridge.txt")),
                            _cap("iptables_docker_user", real("docker_user_return_only.txt"))])
    assert fwd.forward_policy == "DROP" and fwd.docker_user is True and "firewall" not in fwd.unavailable
    assert [r.chain for r in fwd.forward_rules].count("DOCKER-USER") == 1
    assert accepts_forwarded(fwd, CX7) is False
    # The same rules do accept what leaves a Docker bridge for another interface: docker0 -> a CX-7 port.
    assert accepts_forwarded(fwd, ("docker0", "enp1s0f0np0")) is True


def test_docker28_with_tailscale_accepts_only_its_veths() -> None:
    fwd = forwarding("n1", [_cap("iptables_forward", real("forward_docker28_tailscale_veths.txt")),
                            _cap("iptables_docker_user", real("docker_user_return_only.txt"))])
    assert fwd.forward_policy == "DROP" and fwd.docker_user is True
    assert accepts_forwarded(fwd, CX7) is False
    # The accept on the way in is unconditional (the audit's point): from the veth to anywhere.
    assert accepts_forwarded(fwd, ("vh5cde1b791fe1", "enp1s0f0np0")) is True


def test_a_router_that_accepts_by_interface_name_and_wildcard() -> None:
    # No Docker: DOCKER-USER does not exist, which is an answer, not a gap.
    fwd = forwarding("n1", [_cap("iptables_forward", real("forward_awall_router_wildcards.txt")),
                            _cap("iptables_docker_user", stderr=NO_DOCKER_USER, exit_status=1)])
    assert fwd.forward_policy == "DROP" and fwd.docker_user is False and "firewall" not in fwd.unavailable
    assert accepts_forwarded(fwd, CX7) is False
    assert accepts_forwarded(fwd, ("wg0", "wg1")) is True  # `-i wg+` matches any wg interface
    assert accepts_forwarded(fwd, ("ppp0", "ppp1")) is False  # those go to logdrop-0, never ACCEPT


def test_a_drop_policy_with_no_rules_accepts_nothing() -> None:
    fwd = forwarding("n1", [_cap("iptables_forward", real("forward_policy_only_hostap2018.txt")),
                            _cap("iptables_docker_user", stderr=NO_DOCKER_USER, exit_status=1)])
    assert (fwd.forward_policy, fwd.forward_rules, fwd.docker_user) == ("DROP", (), False)
    assert accepts_forwarded(fwd, CX7) is False


def test_an_established_only_accept_does_not_open_new_traffic() -> None:
    fwd = forwarding("n1", [_cap("iptables_forward", real("forward_hostap2018_wlan_to_eth.txt"))])
    # eth0 -> wlan0 is RELATED,ESTABLISHED only; wlan0 -> eth0 is accepted outright.
    assert accepts_forwarded(fwd, ("wlan0", "eth0")) is True
    assert accepts_forwarded(fwd, ("eth0",)) is False
    assert accepts_forwarded(fwd, CX7) is False


def test_a_whole_table_dump_split_as_the_node_prints_it() -> None:
    # Docker 27.3 that made no DOCKER-USER: the policy is ACCEPT (nothing here drops CX-7 traffic).
    dump = real("s_docker27_without_docker_user_excerpt.txt")
    forward = _chain(dump, "FORWARD")
    assert forward.splitlines()[0] == "-P FORWARD ACCEPT" and len(forward.splitlines()) == 6
    fwd = forwarding("n1", [_cap("iptables_forward", forward),
                            _cap("iptables_docker_user", stderr=NO_DOCKER_USER, exit_status=1)])
    assert fwd.forward_policy == "ACCEPT" and fwd.docker_user is False and "firewall" not in fwd.unavailable
    assert {r.chain for r in fwd.forward_rules} == {"FORWARD"}
    # No rule decides new CX-7 traffic (Docker's jumps lead to chains not read): the ACCEPT policy does.
    assert accepts_forwarded(fwd, CX7) is True
    assert forward_decision(fwd, CX7) == ("ACCEPT", "-P FORWARD ACCEPT")


def test_iptables_189s_incompatible_chain_is_no_gap_where_forward_never_jumps_to_it() -> None:
    # 1.8.9 (nf_tables) words a DOCKER-USER that is not there as "incompatible"; FORWARD does not jump to it, so
    # what it holds decides nothing and the firewall is known.
    stderr = real("stderr_missing_chain_nft189_incompatible.txt")
    fwd = forwarding("n1", [_cap("iptables_forward", "-P FORWARD ACCEPT\n"),
                            _cap("iptables_docker_user", stderr=stderr, exit_status=1)])
    assert "firewall" not in fwd.unavailable and accepts_forwarded(fwd, CX7) is True
    # Where FORWARD does jump to it, an unreadable DOCKER-USER leaves the firewall unknown, in iptables' words.
    jumps = forwarding("n1", [_cap("iptables_forward", "-P FORWARD DROP\n-A FORWARD -j DOCKER-USER\n"),
                              _cap("iptables_docker_user", stderr=stderr, exit_status=1)])
    assert "is incompatible" in jumps.unavailable["firewall"]


@pytest.mark.parametrize(("forward", "docker_user", "accepted", "by"), [
    # A policy of ACCEPT, but the chain ends in a catch-all DROP or REJECT: dropped, by that rule.
    ("-P FORWARD ACCEPT\n-A FORWARD -i docker0 -j ACCEPT\n-A FORWARD -j REJECT --reject-with icmp-host-prohibited\n",
     None, False, "-A FORWARD -j REJECT --reject-with icmp-host-prohibited"),
    # DOCKER-USER's ACCEPT counts only where FORWARD jumps to it, before Docker's own chains.
    ("-P FORWARD DROP\n-A FORWARD -j DOCKER-USER\n-A FORWARD -j DOCKER-FORWARD\n",
     "-N DOCKER-USER\n-A DOCKER-USER -i enp1s0f+ -j ACCEPT\n-A DOCKER-USER -i enP2p1s0f+ -j ACCEPT\n"
     "-A DOCKER-USER -j RETURN\n", True, "-A DOCKER-USER -i enp1s0f+ -j ACCEPT"),
    ("-P FORWARD DROP\n-A FORWARD -j DOCKER-FORWARD\n",
     "-N DOCKER-USER\n-A DOCKER-USER -j ACCEPT\n", False, "-P FORWARD DROP"),
    # An ACCEPT for one protocol or port is not one for RoCE (UDP 4791) and NCCL's TCP alike.
    ("-P FORWARD DROP\n-A FORWARD -p tcp -m tcp --dport 443 -j ACCEPT\n", None, False, "-P FORWARD DROP"),
    # A DROP before the ACCEPT wins: rules run in order.
    ("-P FORWARD ACCEPT\n-A FORWARD -o enp1s0f0np0 -j DROP\n-A FORWARD -j ACCEPT\n", None, False,
     "-A FORWARD -o enp1s0f0np0 -j DROP"),
    # DOCKER-USER's RETURN goes back to FORWARD, whose later ACCEPT decides.
    ("-P FORWARD DROP\n-A FORWARD -j DOCKER-USER\n-A FORWARD -i enp1s0f+ -j ACCEPT\n",
     "-N DOCKER-USER\n-A DOCKER-USER -j RETURN\n", True, "-A FORWARD -i enp1s0f+ -j ACCEPT"),
])
def test_the_forward_chain_is_walked_in_order(forward: str, docker_user: str | None, accepted: bool, by: str) -> None:
    caps = [_cap("iptables_forward", forward)]
    caps.append(_cap("iptables_docker_user", docker_user) if docker_user is not None else
                _cap("iptables_docker_user", stderr=NO_DOCKER_USER, exit_status=1))
    fwd = forwarding("n1", caps)
    assert accepts_forwarded(fwd, CX7) is accepted
    decision = forward_decision(fwd, CX7)
    assert decision is not None and decision[1] == by


def test_the_legacy_warning_is_stderr_and_changes_nothing() -> None:
    pasted = real("s_nft_with_legacy_warning_terminal.txt")
    warning, stdout = pasted.split("\n", 1)
    assert parse_iptables_s(pasted) == parse_iptables_s(stdout)  # a terminal paste reads the same
    fwd = forwarding("n1", [_cap("iptables_forward", _chain(stdout, "FORWARD"), stderr=warning + "\n"),
                            _cap("iptables_docker_user", stderr=NO_DOCKER_USER, exit_status=1)])
    assert fwd.forward_policy == "ACCEPT" and fwd.docker_user is False and "firewall" not in fwd.unavailable


def test_a_capture_without_root_names_iptables_own_words() -> None:
    denied = real("stderr_not_root_nft184.txt")
    fwd = forwarding("n1", [_cap("iptables_forward", stderr=denied, exit_status=4),
                            _cap("iptables_docker_user", stderr=denied, exit_status=4)])
    assert fwd.forward_policy is None and fwd.docker_user is None
    assert "Could not fetch rule set generation id: Permission denied" in fwd.unavailable["firewall"]


def test_accept_everything_but_docker0_accepts_the_cx7_traffic() -> None:
    # `! -i docker0 ! -o docker0 -j ACCEPT`: everything that neither enters nor leaves by docker0.
    fwd = forwarding("n1", [_cap("iptables_forward", "-P FORWARD DROP\n" + _chain(
        real("rules_v4_forward_negated_excerpt.txt"), "FORWARD"))])
    assert accepts_forwarded(fwd, CX7) is True
    assert accepts_forwarded(fwd, ("docker0",)) is False


def test_an_error_after_the_legacy_warning_is_named_not_the_warning() -> None:
    # iptables-nft writes the legacy warning to stderr ahead of its error (the order of Q25-F102's paste), so the
    # first line of stderr is the warning: the reason a rule skips must be the error after it, whichever it is.
    stderr = NO_DOCKER_USER.splitlines()[0] + "\n" + real("stderr_not_root_nft184.txt")
    fwd = forwarding("n1", [_cap("iptables_forward", stderr=stderr, exit_status=4)])
    assert "Could not fetch rule set generation id" in fwd.unavailable["firewall"]
    assert "Warning" not in fwd.unavailable["firewall"]

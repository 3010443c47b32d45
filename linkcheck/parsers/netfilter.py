"""Parsers for what decides whether a node forwards between its cables: `/proc/sys/net/ipv4/ip_forward` and
`iptables -S CHAIN`.

`iptables -S` prints a chain as the commands that would rebuild it, one per line:

    -P FORWARD DROP
    -N DOCKER-USER
    -A FORWARD -j DOCKER-USER
    -A FORWARD -o docker0 -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT
    -A DOCKER-USER -i enp1s0f0np0 -j ACCEPT
    -A DOCKER-USER -m comment --comment "ring traffic" -j RETURN

Words follow the shell's quoting (a comment with spaces is quoted), so a line is split as a shell would.
"""

from __future__ import annotations

import shlex

import msgspec

from linkcheck.errors import ParseError
from linkcheck.parsers._text import require_text


class IptRule(msgspec.Struct, frozen=True):
    """One `-A CHAIN ...` line: its chain and its words after the chain name."""

    chain: str
    words: tuple[str, ...]

    def option(self, *names: str) -> tuple[str | None, bool]:
        """The value of the first of `names` (`-i`, `--in-interface`) and whether a `!` negates it."""
        for i, word in enumerate(self.words[:-1]):
            if word in names:
                return self.words[i + 1], i > 0 and self.words[i - 1] == "!"
        return None, False

    @property
    def target(self) -> str | None:
        return self.option("-j", "--jump")[0]


class IptablesChains(msgspec.Struct, frozen=True):
    """What `iptables -S` showed: built-in chains' policies, user chains, rules in order."""

    policies: dict[str, str]  # FORWARD -> DROP
    chains: tuple[str, ...]  # user-defined chains (-N)
    rules: tuple[IptRule, ...]


def parse_iptables_s(text: str) -> IptablesChains:
    """Parse `iptables -S [CHAIN]`.

    >>> dump = parse_iptables_s("-P FORWARD DROP\\n-A FORWARD -j DOCKER-USER\\n")
    >>> dump.policies["FORWARD"], dump.rules[0].target
    ('DROP', 'DOCKER-USER')
    """
    spec = "iptables"
    text = require_text(spec, text)
    policies: dict[str, str] = {}
    chains: list[str] = []
    rules: list[IptRule] = []
    for no, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        try:
            words = shlex.split(line)
        except ValueError as exc:
            raise ParseError(spec, f"unbalanced quoting ({exc})", no) from None
        if words[0] == "-P" and len(words) == 3:
            policies[words[1]] = words[2]
        elif words[0] == "-N" and len(words) == 2:
            chains.append(words[1])
        elif words[0] == "-A" and len(words) >= 2:
            rules.append(IptRule(words[1], tuple(words[2:])))
        else:
            raise ParseError(spec, f"not an iptables -S line: {line[:80]!r}", no)
    return IptablesChains(policies, tuple(chains), tuple(rules))


def parse_ip_forward(text: str) -> bool:
    """`/proc/sys/net/ipv4/ip_forward` (or `sysctl net.ipv4.ip_forward`): whether the node routes between its
    interfaces.

    >>> parse_ip_forward("1\\n"), parse_ip_forward("net.ipv4.ip_forward = 0\\n")
    (True, False)
    """
    spec = "ip_forward"
    value = require_text(spec, text).strip().rsplit("=", 1)[-1].strip()
    if value not in ("0", "1"):
        raise ParseError(spec, f"expected 0 or 1, got {value[:40]!r}")
    return value == "1"

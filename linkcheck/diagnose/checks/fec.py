"""FEC_NOT_RS: the active FEC of a path's ends, which 200G PAM4 needs to be RS(544,514) on both.

FEC is a warning and evidence, never the cause named for a bandwidth loss: a GB10 report with FEC None and
2.8 GB/s was the hot-plug state, which forcing RS did not cure and a reboot did (spark-link.md s.9).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from linkcheck.diagnose.observation import Observation
from linkcheck.facts.model import DataPath, Function, LinkFacts
from linkcheck.model import Evidence

RS = "RS"
PAM4_MIN_MBPS = 200_000  # 2 lanes x 100G PAM4 on the GB10's CX-7: RS(544,514) is mandatory


class FecValues(msgspec.Struct, frozen=True):
    """What is wrong with a path's FEC, the end to fix first and both ends' active FEC."""

    path: str
    what: str
    node: str
    netdev: str
    fec_a: str
    fec_b: str
    name_a: str  # the path's nodes by name: a pair's a and b, a cluster's cable's own
    name_b: str


def fec_text(modes: tuple[str, ...] | None) -> str:
    """An active or configured FEC as one word list ("RS", "None", "Auto RS"); "?" when unknown."""
    return " ".join(modes) if modes else "?"


def fec_evidence(path: DataPath) -> tuple[Evidence, ...]:
    """The active FEC of both ends of a path, as evidence for a bandwidth finding (never its cause)."""
    return tuple(Evidence(f"active FEC of {f.label}", fec_text(f.fec_active), "ethtool --show-fec")
                 for f in (path.a, path.b))


def _pam4(fn: Function) -> bool:
    return fn.speed_mbps is not None and fn.speed_mbps >= PAM4_MIN_MBPS


def _judge(path: DataPath) -> Observation | None:
    ends = (path.a, path.b)
    if not all(f.carrier for f in ends):
        return None  # a down end has no active FEC to judge; LINK_DOWN names it
    evidence = fec_evidence(path) + tuple(
        Evidence(f"configured FEC of {f.label}", fec_text(f.fec_configured), "ethtool --show-fec") for f in ends
    ) + (Evidence("link speed", [f.speed_mbps for f in ends], "ethtool Mb/s"),)
    unknown = [f for f in ends if f.fec_active is None]
    if unknown:
        return Observation(subject=path.key, fired=False, evidence=evidence,
                           skip=f"the active FEC of {', '.join(f.label for f in unknown)} is unknown")
    fec_a, fec_b = fec_text(path.a.fec_active), fec_text(path.b.fec_active)
    not_rs = [f for f in ends if _pam4(f) and f.fec_active != (RS,)]
    if not_rs:
        fn = not_rs[0]
        what = "; ".join(f"{f.label} runs FEC {fec_text(f.fec_active)} at {f.speed_mbps // 1000}G"
                         for f in not_rs if f.speed_mbps) + ", where 200G PAM4 needs RS(544,514)"
    elif path.a.fec_active != path.b.fec_active:
        fn = next(f for f in ends if f.fec_active != (RS,)) if (RS,) in (path.a.fec_active, path.b.fec_active) \
            else path.b
        what = f"the ends differ: {path.a.label} runs FEC {fec_a}, {path.b.label} runs FEC {fec_b}"
    else:
        return Observation(subject=path.key, fired=False, evidence=evidence,
                           values=FecValues(path=path.key, what="", node=path.a.node, netdev=path.a.netdev,
                                            fec_a=fec_a, fec_b=fec_b, name_a=path.a.node, name_b=path.b.node))
    return Observation(subject=path.key, fired=True, nodes=(path.a.node, path.b.node), evidence=evidence,
                       values=FecValues(path=path.key, what=what, node=fn.node, netdev=fn.netdev, fec_a=fec_a,
                                        fec_b=fec_b, name_a=path.a.node, name_b=path.b.node))


def fec_not_rs(link: LinkFacts, thresholds: Mapping[str, Any]) -> list[Observation]:
    """Per path with both ends up: fires when either end's active FEC is not RS at 200G, or the ends differ."""
    found = [o for o in (_judge(p) for p in link.paths) if o is not None]
    return found or [Observation(subject="pair", fired=False)]

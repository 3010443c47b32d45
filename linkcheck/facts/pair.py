"""The pair view: match twins across nodes by subnet into data paths, and attach traffic results."""

from __future__ import annotations

from msgspec.structs import replace

from linkcheck.facts.bench_facts import build_bench_facts
from linkcheck.facts.build import build_node_facts
from linkcheck.facts.model import NODE_GROUPS, DataPath, ExpectedLink, Function, LinkFacts, NodeFacts
from linkcheck.model import Capture


def _candidates(fn: Function, peers: tuple[Function, ...]) -> list[tuple[Function, str]]:
    return [(p, subnet) for p in peers for subnet in fn.subnets if subnet in p.subnets]


def match_paths(a: NodeFacts, b: NodeFacts) -> tuple[DataPath, ...]:
    """Each addressed twin on a faces the twin on b in its subnet; ties go to the same PCI domain."""
    paths: list[DataPath] = []
    taken: set[str] = set()
    for fn in a.used_functions:
        options = [(p, s) for p, s in _candidates(fn, b.used_functions) if p.netdev not in taken]
        if not options:
            continue
        # With both twins in one subnet the subnet cannot decide; NVIDIA's layouts pair domain with domain.
        options.sort(key=lambda o: (o[0].domain != fn.domain, o[0].cage != fn.cage, o[0].netdev))
        peer, subnet = options[0]
        taken.add(peer.netdev)
        paths.append(DataPath(a=fn, b=peer, subnet=subnet))
    return tuple(paths)


def _node(name: str, inspection: list[Capture], errors: dict[str, str]) -> NodeFacts:
    own = [c for c in inspection if c.node == name]
    facts = build_node_facts(name, own)
    if name in errors and not own:
        # Nothing came back from this node: every fact group is unknown, for the same reason.
        return replace(facts, unavailable={g: errors[name] for g in NODE_GROUPS})
    return facts


def pair_link(a: NodeFacts, b: NodeFacts, expected: ExpectedLink | None = None) -> LinkFacts:
    """Two nodes' facts as a pair: every data path between them (`match_paths`), against linkcheck.yaml's `link:`
    when one is given."""
    return LinkFacts(a=a, b=b, paths=match_paths(a, b), expected=expected)


def build_link_facts(captures: list[Capture], errors: dict[str, str] | None = None,
                     expected: ExpectedLink | None = None) -> LinkFacts:
    """Facts for both nodes ("a" and "b"), their data paths, any traffic results, and the link linkcheck.yaml
    recorded (`expected`), when a config is in use."""
    inspection = [c for c in captures if not c.meta]
    a = _node("a", inspection, errors or {})
    b = _node("b", inspection, errors or {})
    return with_traffic(pair_link(a, b, expected), captures)


def with_traffic(link: LinkFacts, captures: list[Capture]) -> LinkFacts:
    """The link facts with the traffic results among `captures`; the nodes' facts are reused as they are."""
    bench, present = build_bench_facts([c for c in captures if c.meta], link.paths)
    return replace(link, bench=bench, bench_present=present)

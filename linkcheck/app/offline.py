"""The pipeline's library entry points: bundle -> facts -> findings, shared by every CLI command.

A saved bundle is judged through one loader, `judge_bundle`, whatever its layout: the bundle says what it is (a
cluster's holds cluster.json), and gives a pair's Outcome or a cluster's ClusterCheck. A cluster is judged as its
live check judged it (`judge_cluster`, which the live run calls too): every planned test from its own captures by
the pair's traffic rules (CABLE_RULES), the tests a node that was not inspected would be in, then the cluster's
rules over all of it, against its baseline when one is given (attached to its facts before that one diagnosis, as a
pair's is)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from msgspec.structs import replace

from linkcheck.accept.record import bundle_acceptance
from linkcheck.app.topology import cluster_facts, judge_facts
from linkcheck.baseline.across_layouts import for_pair
from linkcheck.baseline.drift import attach_cluster_baseline
from linkcheck.baseline.store import ClusterBaseline, resolve_any
from linkcheck.bench.latency import KIND as LATENCY
from linkcheck.bench.rounds import Planned, captures_of, plan_test, run_key
from linkcheck.bundle.format import Bundle
from linkcheck.bundle.run_record import SCHEMA, SCHEMA_VERSION, ClusterDocument, HostEntry, saved_record
from linkcheck.bundle.verify import load_trusted
from linkcheck.cluster.cables import FIRST_PASS, CableTest, pair_view, test_subnets
from linkcheck.cluster.facts import ClusterFacts, ExpectedCluster, with_nccl
from linkcheck.cluster.hosts import ClusterHost, pair_names, recorded_hosts
from linkcheck.cluster.schedule import Match, schedule
from linkcheck.cluster.topology import one_cable
from linkcheck.diagnose.engine import CABLE_RULES, Diagnosis, diagnose
from linkcheck.diagnose.playbook import load_playbooks, of_kind, with_thresholds
from linkcheck.diagnose.rule import Rule
from linkcheck.facts.bench_facts import JOB_KINDS
from linkcheck.facts.drift import attach_baseline
from linkcheck.facts.model import ExpectedLink, LinkFacts
from linkcheck.facts.pair import pair_link, with_traffic
from linkcheck.facts.snapshot import pair_key
from linkcheck.model import Capture, Status, Verdict
from linkcheck.outcome import CableResult, ClusterCheck, ClusterView, Outcome, judged_view, pair_outcome, worst
from linkcheck.transport.base import NodeTarget

if TYPE_CHECKING:
    from linkcheck.config import Config
    from linkcheck.facts.snapshot_model import Baseline


def diagnose_captures(bundle: Bundle, rules: list[Rule], expected: ExpectedLink | None = None,
                      baseline: Baseline | ClusterBaseline | None = None) -> Outcome:
    """A pair's bundle judged as the cluster of its one cable (`judge_one_cable`), in the pair's look."""
    hosts, doc = pair_record(bundle)
    names = {h.name for h in hosts}
    errors = {n: e for n, e in bundle.collection_errors.items() if n in names}
    facts = cluster_facts([h.name for h in hosts], bundle.captures, errors)
    check = judge_one_cable(hosts, bundle, doc, facts, rules, expected, baseline)
    return pair_outcome(check.cables[0], check.bundle or bundle, check.rules)


def diagnose_facts(bundle: Bundle, link: LinkFacts, rules: list[Rule],
                   baseline: Baseline | ClusterBaseline | None = None) -> Outcome:
    """Diagnose a pair's facts built from `bundle` by the pair's rules, against `baseline` when one is given (a
    cluster's read for its cable between the pair's nodes): its drift rules then speak in this one diagnosis."""
    if baseline is not None:
        link = attach_baseline(bundle, link, for_pair(baseline, pair_key(link), (link.a.name, link.b.name)))
    problems = {f"bundle: {p}": p for p in bundle.problems}
    errors = {**bundle.collection_errors, **problems}
    return Outcome(bundle, link, diagnose(link, rules, collection_errors=errors), tuple(rules))


def configured_rules(playbooks: list[Path], config: Config | None,
                     kind: Literal["pair", "cluster", "all"] = "pair") -> list[Rule]:
    """Built-in rules, the given playbooks and the config's, with the config's threshold overrides: the same
    set for `check` and for `diagnose` of its bundle (`kind` pair), or for `topology` (cluster). The overrides
    are checked against every rule, so one linkcheck.yaml may tune both a pair's rules and a cluster's."""
    if config is None:
        return load_playbooks(playbooks, kind=kind)
    everything = with_thresholds(load_playbooks([*playbooks, *config.playbooks], kind="all"), config.thresholds,
                                 config.source or "linkcheck.yaml")
    return of_kind(everything, kind)


def diagnose_bundle(path: Path, playbooks: list[Path] | None = None, config: Config | None = None,
                    baseline: Baseline | ClusterBaseline | None = None, *, allow_unverified: bool = False,
                    warn: Callable[[str], None] | None = None, overridable: bool = True) -> Outcome:
    """Load a pair's saved bundle and judge it with the built-in playbooks plus the user's and the config's, and
    against `baseline` when one is given, as the cluster of its one cable. A bundle that `verify` rejects is refused
    (BundleError), or with `allow_unverified` diagnosed without its unverified files, each problem passed to `warn`;
    `overridable` as for `load_trusted`."""
    rules = configured_rules(list(playbooks or []), config)
    bundle = load_trusted(path, allow_unverified=allow_unverified, warn=warn, overridable=overridable)
    return diagnose_captures(bundle, rules, config.expected_link if config else None, baseline)


def judge_test(planned: Planned, captures: Sequence[Capture], rules: list[Rule], error: str | None,
               runs_expected: bool, latency: tuple[bool, str | None] = (False, None)) -> CableResult:
    """One test judged from its own captures. With traffic asked for (`runs_expected`), or the latency test
    (`latency`: asked for, and why it stopped) of a first-pass test, a test of which no run is there is
    INCONCLUSIVE, never passed on its inspection alone: a missing measurement is never a passing one. So is a
    first-pass test whose latency runs did not all answer (one failed, or a path has none): the test stopped there."""
    test = planned.test
    if planned.refused:
        return CableResult(test, test.link, Verdict.INCONCLUSIVE, problem=planned.refused)
    own = list(captures_of(planned, captures))
    if runs_expected and not any(c.meta.get("kind") == "rdma" for c in own):
        return CableResult(test, test.link, Verdict.INCONCLUSIVE,
                           problem=error or "planned with traffic, but no run of it is there")
    latency_asked, latency_error = latency
    if latency_asked and test.pass_no == FIRST_PASS and not any(c.spec == "ib_write_lat" for c in own):
        return CableResult(test, test.link, Verdict.INCONCLUSIVE,
                           problem=latency_error or "planned with the latency test, but no run of it is there")
    if latency_asked and test.pass_no == FIRST_PASS and not _latency_answered(planned, own):
        return CableResult(test, test.link, Verdict.INCONCLUSIVE,
                           problem=latency_error or "its latency test did not answer on every path")
    link = with_traffic(test.link, own)
    diagnosis = diagnose(link, rules, collection_errors={"bench": error} if error else None)
    problem = error if diagnosis.verdict is Verdict.INCONCLUSIVE else None
    return CableResult(test, link, diagnosis.verdict, diagnosis.findings, problem, tuple(own))


def _latency_answered(planned: Planned, own: Sequence[Capture]) -> bool:
    """Every path of the test has an ib_write_lat client run, and none of its runs failed."""
    runs = [c for c in own if c.spec == "ib_write_lat"]
    clients = {run_key(c, planned) for c in runs if c.meta.get("role") == "client"}
    return planned.keys <= clients and not any(c.skipped or c.exit_status != 0 for c in runs)


def plan_tests(tests: Sequence[CableTest], errors: dict[str, str]) -> list[Planned]:
    """Each test ready to run; one with a node that was not inspected is refused, naming the node and why."""
    out = []
    for test in tests:
        lost = next((n for n in test.nodes if n in errors), None)
        out.append(Planned(test, refused=f"node {lost} was not inspected: {errors[lost]}") if lost else plan_test(test))
    return out


def unreached(facts: ClusterFacts, errors: dict[str, str]) -> list[CableResult]:
    """The tests a node that could not be inspected would be in, each inconclusive: on a switch, that node with each
    switched node; on cables, each cage of an inspected node whose subnets no inspected node shares (its far end is
    most likely that node). Never a pass, never left out of the report."""
    lost = [n for n in facts.topology.nodes if n in errors]
    if not lost:
        return []
    why = "; ".join(f"node {n} was not inspected: {errors[n]}" for n in lost)
    out = []
    switched = sorted({n for s in facts.topology.segments for n in s.nodes}, key=facts.topology.nodes.index)
    for name in switched:
        for other in lost:
            test = CableTest(f"{name}<->{other}", 0, name, other, LinkFacts(a=facts.nodes[name], b=facts.nodes[other]),
                             True)
            out.append(CableResult(test, test.link, Verdict.INCONCLUSIVE, problem=why))
    cages: dict[tuple[str, str], None] = {}
    for flag in facts.topology.flagged("far_unknown"):
        name, _, netdev = flag.subject.partition(":")
        fn = next((f for f in facts.nodes[name].functions if f.netdev == netdev), None) if name in facts.nodes else None
        cages[(name, fn.cage if fn is not None and fn.cage else netdev)] = None
    for name, cage in cages:
        # The node's own end only: its functions of this cage (its other cage is another cable, judged on its own).
        near = facts.nodes[name]
        near = replace(near, functions=tuple(f for f in near.functions if (f.cage or f.netdev) == cage))
        test = CableTest(f"{name}:{cage}<->?", 0, name, "?", LinkFacts(a=near, b=facts.nodes[lost[0]]))
        out.append(CableResult(test, test.link, Verdict.INCONCLUSIVE,
                               problem=f"its far end is not known: {why}"))
    return out


def judge_cluster(hosts: Sequence[ClusterHost], captures: Sequence[Capture], errors: dict[str, str],
                  doc: ClusterDocument, rules: list[Rule], expected: ExpectedCluster | None = None,
                  baseline: Baseline | ClusterBaseline | None = None, *, expected_link: ExpectedLink | None = None,
                  bundle: Bundle | None = None) -> ClusterCheck:
    """A cluster judged from its captures and its record: the facts, every planned test's results from its own
    captures, the unreached tests, `baseline` attached when one is given, then the cluster's rules over all of it in
    one diagnosis (with the drift rules: CLUSTER_DRIFT_* over the nodes and the cabling, the pair's DRIFT_* on each
    cable). A cluster of one cable (two nodes, no switch seen between them) is the pair: `judge_one_cable`, against
    `expected_link`, its bundle's errors and problems read from `bundle` (the captures and `errors` alone when none
    is given). The live check and a saved bundle both come here, so a bundle gives the verdict its run showed. A
    baseline of another cluster, or a pair's whose nodes are not both in this one, is refused: BaselineError."""
    facts = cluster_facts([h.name for h in hosts], captures, errors, expected)
    if one_cable(facts.topology):
        given = bundle or Bundle(captures=list(captures), nodes={h.name: {"target": str(h.target)} for h in hosts},
                                 collection_errors=dict(errors))
        return judge_one_cable(hosts, given, doc, facts, rules, expected_link, baseline)
    cable_rules = [r for r in rules if r.id in CABLE_RULES]
    tests = []
    for t in doc.tests:
        subnets, _ = test_subnets(facts.topology, Match(t.a, t.b, t.label))
        tests.append(CableTest(t.label, t.round, t.a, t.b, pair_view(facts, t.a, t.b, subnets), t.switched, t.pass_no))
    results = [judge_test(p, captures, cable_rules, doc.traffic_error, doc.traffic, (doc.latency, doc.latency_error))
               for p in plan_tests(tests, errors)]
    if doc.traffic or doc.latency:
        results += unreached(facts, errors)
    facts = with_nccl(replace(facts, tests=tuple(r.outcome() for r in results)), captures)
    if baseline is not None:
        facts = attach_cluster_baseline(facts, results, errors, baseline, captures)
    # Every rule: the cluster's judge the cluster, and the pair's drift rules each cable that carries a baseline, with
    # the cable rules they name as causes (which explain a cable's drift; their findings are the test's).
    view = judge_facts(hosts, facts, errors, rules)
    nccl_error = doc.nccl_error and f"NCCL across the nodes: {doc.nccl_error}"
    latency_error = doc.latency_error and f"the latency test: {doc.latency_error}"
    traffic_error = "; ".join(e for e in (doc.traffic_error, nccl_error, latency_error) if e) or None
    return ClusterCheck(view, facts, tuple(results), traffic_error, doc.interrupted, nccl_error=nccl_error)


def judge_one_cable(hosts: Sequence[ClusterHost], bundle: Bundle, doc: ClusterDocument, facts: ClusterFacts,
                    rules: list[Rule], expected: ExpectedLink | None = None,
                    baseline: Baseline | ClusterBaseline | None = None) -> ClusterCheck:
    """The cluster of one cable, its two nodes a pair: the cable's one test is every data path between them (NVIDIA's
    layouts give a pair one cable; a pair cabled on both cages has both), judged by every rule of a pair's scopes
    with all its traffic (NCCL across its two ranks is the cable's own job), against linkcheck.yaml's `link:`
    (`expected`) and `baseline` (a pair's, or a cluster's read for this cable); the cluster's own rules have nothing
    to add on one cable, and each trap is said once. The traffic's first error is its `bench` error, as the pair's
    own bundle keeps it."""
    first, second = (facts.nodes[h.name] for h in hosts)
    link = pair_link(first, second, expected)
    link = with_traffic(link, [c for c in bundle.captures if c.meta])
    failed = next((e for e in (doc.traffic_error, doc.nccl_error, doc.latency_error) if e), None)
    if failed is not None and "bench" not in bundle.collection_errors:
        bundle = replace(bundle, collection_errors={**bundle.collection_errors, "bench": failed})
    pair = diagnose_facts(bundle, link, of_kind(rules, "pair"), baseline)
    if expected is None and facts.expected is not None:
        pair = replace(pair, diagnosis=_recorded_cabling(pair.diagnosis, facts, rules))
    a, b = first.name, second.name
    test = CableTest(doc.tests[0].label if doc.tests else f"{a}<->{b}", 1, a, b, pair.link)
    inconclusive = pair.verdict is Verdict.INCONCLUSIVE
    result = CableResult(test, pair.link, pair.verdict, pair.diagnosis.findings,
                         (failed or "; ".join(pair.node_problems()) or None) if inconclusive else None,
                         tuple(c for c in bundle.captures if c.meta), pair.diagnosis.notes)
    facts = with_nccl(replace(facts, tests=(result.outcome(),)), bundle.captures)
    errors = {n: e for n, e in bundle.collection_errors.items() if n in (a, b)}
    view = ClusterView(tuple(hosts), facts.topology, schedule(facts.topology), Diagnosis((), Verdict.PASS), errors)
    nccl_error = doc.nccl_error and f"NCCL across the nodes: {doc.nccl_error}"
    return ClusterCheck(view, facts, (result,), failed, doc.interrupted, nccl_error=nccl_error, bundle=bundle,
                        rules=tuple(rules))


def _recorded_cabling(diagnosis: Diagnosis, facts: ClusterFacts, rules: list[Rule]) -> Diagnosis:
    """Two nodes on one cable whose cabling `init` recorded as a cluster's (`cluster:`: two nodes named otherwise
    than a and b, which a pair's `nodes:` and `link:` cannot name): LINK_CHANGED compares the cable with the one
    recorded, as it does over any cluster, and a change joins the pair's findings (a warning)."""
    moved = [f for f in diagnose(facts, [r for r in of_kind(rules, "cluster") if r.id == "LINK_CHANGED"]).findings
             if f.status in (Status.WARN, Status.FAIL)]
    if not moved:
        return diagnosis
    verdict = worst([diagnosis.verdict, *(Verdict.FAIL if f.status is Status.FAIL else Verdict.WARN for f in moved)])
    return Diagnosis((*diagnosis.findings, *moved), verdict, diagnosis.notes)


def pair_record(bundle: Bundle) -> tuple[tuple[ClusterHost, ...], ClusterDocument]:
    """A pair's bundle (one without cluster.json) read as the record of the cluster of its one cable: its two nodes
    (the manifest's two when its captures are theirs, else a and b, as the pair's own run names them), and the
    traffic asked for as its captures show it (a pair's bundle keeps no record of what was asked: a run of a kind, or
    a line saying why it did not run, says it was). Its traffic's one error is the bundle's `bench` error, as the live
    run keeps it."""
    kinds = {c.meta.get("kind") for c in bundle.captures}
    names = pair_names(bundle.nodes, bundle.captures)
    hosts = tuple(ClusterHost(NodeTarget(name=name, host=name), "the bundle") for name in names)
    entries = tuple(HostEntry(name, name, "the bundle") for name in names)
    return hosts, ClusterDocument(SCHEMA, SCHEMA_VERSION, entries, traffic="rdma" in kinds,
                                  traffic_error=bundle.collection_errors.get("bench"),
                                  interrupted="interrupted" in bundle.collection_errors,
                                  nccl=bool(kinds & set(JOB_KINDS)), latency=LATENCY in kinds)


def cluster_bundle(path: Path, rules: list[Rule], *, allow_unverified: bool = False,
                   warn: Callable[[str], None] | None = None, expected: ExpectedCluster | None = None,
                   overridable: bool = True, baseline: Baseline | ClusterBaseline | None = None,
                   expected_link: ExpectedLink | None = None) -> ClusterCheck:
    """A saved bundle judged again (against `baseline` when one is given), whatever its layout: its record is its
    cluster.json, or a pair's bundle's own (`pair_record`). Refused (exit 4) when `verify` rejects it, unless
    `allow_unverified`."""
    bundle = load_trusted(path, allow_unverified=allow_unverified, warn=warn, overridable=overridable)
    doc = saved_record(path)
    hosts, doc = (recorded_hosts(doc), doc) if doc is not None else pair_record(bundle)
    names = {h.name for h in hosts}
    errors = {n: e for n, e in bundle.collection_errors.items() if n in names}
    check = judge_cluster(hosts, bundle.captures, errors, doc, rules, expected, baseline, expected_link=expected_link,
                          bundle=bundle)
    return replace(check, acceptance=bundle_acceptance(path, bundle.unverified), bundle=check.bundle or bundle)


def judge_bundle(path: Path, playbooks: list[Path] | None = None, config: Config | None = None,
                 baseline: str | None = None, *, allow_unverified: bool = False,
                 warn: Callable[[str], None] | None = None, overridable: bool = True) -> Outcome | ClusterCheck:
    """A saved bundle judged as its run judged it, whatever its layout, in the look its reports take
    (`judged_view`: a pair's Outcome for the cluster of one cable, a cluster's ClusterCheck). `baseline` names the
    baseline to compare with, read before the bundle: a pair's or a cluster's for either layout (a pair being the
    cluster of its one cable: see baseline/across_layouts.py `for_pair`, `for_cluster`). A bundle that `verify`
    rejects is refused (BundleError), or with `allow_unverified` judged without its unverified files, each problem
    passed to `warn`; `overridable` as for `load_trusted`."""
    against = resolve_any(baseline) if baseline is not None else None
    rules = configured_rules(list(playbooks or []), config, kind="all")
    return judged_view(cluster_bundle(path, rules, allow_unverified=allow_unverified, warn=warn,
                                      overridable=overridable, expected=config.expected_cluster if config else None,
                                      baseline=against, expected_link=config.expected_link if config else None))

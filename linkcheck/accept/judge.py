"""Judge a diagnosed run against an acceptance profile: each check's measurements, the worst of the repetitions
against its thresholds, and the regular findings; one verdict PASS / DEGRADED / FAIL / INCONCLUSIVE, and one mapping
from it to the exit code.

Missing is never passing: a check whose measurement is absent, or has fewer numbers than the repetitions asked
for (a round that failed, a flapped round, NCCL that did not run), is INCONCLUSIVE unless a number it does have
already fails. A failure outranks inconclusive, inconclusive outranks degraded, as for the findings.

A cluster's run is judged against a cluster profile (`layout: ring3`, `switch`, ...), one verdict for the cluster:
every test of the schedule (a cable of the ring, or two nodes through the switch, the second pass included) is judged
by the profile's per-cable checks on its own pair view, exactly as a pair is, together with the findings of the
pair's throughput rules on that test. The `nccl_*` checks judge the one all_gather_perf run across every node. The
cluster's own findings (its rules over the layout, the N-node traps, a node slow with every partner), a node that
could not be inspected and a traffic test that stopped count as they do for `check`. The verdict is the worst of all
of it.
"""

from __future__ import annotations

import datetime as dt
import enum
import statistics
from collections.abc import Iterable
from typing import Any, Protocol

import msgspec

from linkcheck.accept.profile import Profile, ProfileCheck, Threshold
from linkcheck.accept.standard import standard_record
from linkcheck.diagnose.conditions import compare
from linkcheck.diagnose.engine import Diagnosis
from linkcheck.errors import ExitCode
from linkcheck.facts.model import Function, LinkFacts
from linkcheck.model import Finding, Status, Verdict
from linkcheck.outcome import CableResult, ClusterCheck, Outcome, judged_view

SCHEMA = "linkcheck-acceptance"
SCHEMA_VERSION = 1
DIRECTIONS = ("a->b", "b->a")


class AcceptVerdict(str, enum.Enum):
    PASS = "PASS"
    DEGRADED = "DEGRADED"
    FAIL = "FAIL"
    INCONCLUSIVE = "INCONCLUSIVE"

    @property
    def exit_code(self) -> ExitCode:
        return {AcceptVerdict.PASS: ExitCode.PASS, AcceptVerdict.DEGRADED: ExitCode.WARN,
                AcceptVerdict.FAIL: ExitCode.FAIL, AcceptVerdict.INCONCLUSIVE: ExitCode.INCONCLUSIVE}[self]


_RANK = {AcceptVerdict.PASS: 0, AcceptVerdict.DEGRADED: 1, AcceptVerdict.INCONCLUSIVE: 2, AcceptVerdict.FAIL: 3}
FROM_DIAGNOSIS = {Verdict.PASS: AcceptVerdict.PASS, Verdict.WARN: AcceptVerdict.DEGRADED,
                   Verdict.FAIL: AcceptVerdict.FAIL, Verdict.INCONCLUSIVE: AcceptVerdict.INCONCLUSIVE}


def worst(verdicts: Iterable[AcceptVerdict]) -> AcceptVerdict:
    return max(verdicts, key=_RANK.__getitem__, default=AcceptVerdict.PASS)


class Measured(msgspec.Struct, frozen=True):
    """One subject's samples: the numbers (or texts) read, and why any expected sample has none."""

    subject: str
    values: tuple[float, ...] = ()
    texts: tuple[str, ...] = ()  # what was read, as shown in the record
    missing: tuple[str, ...] = ()
    compared: tuple[str, ...] = ()  # `same` checks: the values that must all be equal


class CheckResult(msgspec.Struct, frozen=True):
    check: ProfileCheck
    subject: str
    status: AcceptVerdict
    measured: Measured
    margin: float | None = None
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        spec, values = self.check.spec, self.measured.values
        measured: dict[str, Any] = {"unit": spec.unit, "samples": len(values) + len(self.measured.missing)}
        if spec.kind in ("min", "max"):
            measured.update(min=_r(min(values)) if values else None,
                            median=_r(statistics.median(values)) if values else None,
                            max=_r(max(values)) if values else None, values=[_r(v) for v in values])
        else:
            measured["values"] = list(self.measured.texts)
        if self.measured.missing:
            measured["missing"] = list(self.measured.missing)
        return {"id": self.check.id, "subject": self.subject, "what": spec.what, "status": self.status.value,
                "measured": measured, "threshold": _threshold(self.check.thresholds[-1]),
                "thresholds": [_threshold(t) for t in self.check.thresholds], "margin": self.margin,
                "reason": self.reason}


def _r(value: float) -> float:
    return round(value, 3)


def _threshold(t: Threshold) -> dict[str, Any]:
    value = list(t.value) if isinstance(t.value, tuple) else t.value
    out = {"band": t.band, "operator": t.operator, "value": value, "unit": t.unit, "source": t.source,
           "on_miss": "FAIL" if t.fails else "DEGRADED"}
    if t.rule:  # the rule threshold it takes (and the rule's own value, when the profile tightens it)
        out["rule"] = t.rule
        if t.tightened:
            out["rule_value"] = list(t.rule_value) if isinstance(t.rule_value, tuple) else t.rule_value
    return out


def record_head(p: Profile, repetitions: int, nccl_largest_bytes: int | None) -> dict[str, Any]:
    """acceptance.json's first keys, a pair's and a cluster's alike: what it is, when, the profile, the test as run
    and how it compares with the standard."""
    return {
        "schema": SCHEMA, "schema_version": SCHEMA_VERSION,
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "profile": {"name": p.name, "sha256": p.sha256, "source": p.source, "description": p.description},
        "test": {"repetitions": repetitions, "rdma": {"duration_s": p.test.duration_s,
                                                      "size_bytes": p.test.size_bytes, "qps": p.test.qps},
                 "nccl": {"max_bytes": p.test.nccl_max_bytes,
                          **({"largest_bytes": nccl_largest_bytes} if nccl_largest_bytes is not None else {})},
                 # said only when it ran, so the records of runs without it read as before
                 **({"latency": True} if p.test.latency else {})},
        "standard": standard_record(p, repetitions),
    }


class Acceptance(msgspec.Struct, frozen=True):
    profile: Profile
    repetitions: int
    verdict: AcceptVerdict
    checks: tuple[CheckResult, ...]
    diagnosis_verdict: Verdict
    findings: tuple[tuple[str, str, str], ...] = ()  # (rule, status, subject) of the findings that count
    notes: tuple[str, ...] = msgspec.field(default=())
    # The sweep's largest message as run: less than the profile's where the smaller node's free memory capped it.
    nccl_largest_bytes: int | None = None

    @property
    def exit_code(self) -> ExitCode:
        return self.verdict.exit_code

    def to_dict(self) -> dict[str, Any]:
        return {
            **record_head(self.profile, self.repetitions, self.nccl_largest_bytes),
            "verdict": self.verdict.value, "exit_code": int(self.exit_code),
            "diagnosis": {"verdict": self.diagnosis_verdict.value,
                          "findings": [{"id": r, "status": s, "subject": subj} for r, s, subj in self.findings]},
            "checks": [c.to_dict() for c in self.checks],
            "notes": list(self.notes),
        }


# -- what each check measures ------------------------------------------------------------------------------------


def _used(link: LinkFacts) -> list[Function]:
    """The functions that carry traffic: both ends of every data path (else each node's addressed twins)."""
    if link.paths:
        return [fn for p in link.paths for fn in (p.a, p.b)]
    return [*link.a.used_functions, *link.b.used_functions]


def _expect(values: list[float], missing: list[str], expected: int) -> tuple[str, ...]:
    short = expected - len(values) - len(missing)
    return (*missing, *([f"{short} of {expected} repetitions have no run"] if short > 0 else []))


def _towards(link: LinkFacts, direction: str) -> str:
    """The direction by node names: `a->b` on a pair; on a cluster's test, from its first node to its second."""
    first, second = (link.a.name, link.b.name) if direction == "a->b" else (link.b.name, link.a.name)
    return f"{first}->{second}"


def _rdma_path(link: LinkFacts, mode: str, expected: int) -> list[Measured]:
    out = []
    for path in link.paths:
        for direction in DIRECTIONS:
            runs = [r for r in link.bench.rdma
                    if r.path_key == path.key and r.mode == mode and r.direction == direction]
            values = [r.gbps for r in runs if r.gbps is not None]
            missing = [f"round {r.round_id or '?'}: {r.problem or 'no number'}" for r in runs if r.gbps is None]
            if not runs:
                missing = [f"no {mode} ib_write_bw run"]
            out.append(Measured(f"{path.key} {_towards(link, direction)}", tuple(values),
                                missing=_expect(values, missing, expected)))
    return out


def _rdma_total(link: LinkFacts, expected: int) -> list[Measured]:
    out = []
    for direction in DIRECTIONS:
        rounds: dict[str, list[float | None]] = {}
        for run in link.bench.rdma:
            if run.mode == "concurrent" and run.direction == direction:
                rounds.setdefault(run.round_id, []).append(run.gbps)
        values = [sum(r for r in rates if r is not None) for rates in rounds.values() if None not in rates]
        missing = [f"round {rid or '?'}: a path has no number" for rid, rates in rounds.items() if None in rates]
        if not rounds:
            missing = ["no concurrent ib_write_bw run"]
        elif len(link.paths) > 1 and any(len(rates) < len(link.paths) for rates in rounds.values()):
            missing.append("a concurrent round ran fewer paths than the link has")
        out.append(Measured(f"both paths {_towards(link, direction)}", tuple(values),
                            missing=_expect(values, missing, expected)))
    return out


class NcclResult(Protocol):
    """An all_gather_perf result as the checks read it: a pair's (facts NcclRun) or a cluster's (ClusterNccl)."""

    @property
    def busbw_gbs(self) -> float | None: ...
    @property
    def nvidia_busbw_gbs(self) -> float | None: ...
    @property
    def wrong(self) -> int: ...
    @property
    def problem(self) -> str | None: ...


def nccl_measured(nccl: NcclResult | None, what: str, subject: str = "all_gather") -> list[Measured]:
    """`busbw` (NVIDIA's statistic: the mean of out-of-place and in-place bus bandwidth at 16 GiB, else at the
    largest size >= 1 GiB, which NVIDIA's figure is judged with; the peak where a run has neither) or `wrong`
    (#wrong over every row) of a run."""
    if nccl is None:
        return [Measured(subject, missing=("no NCCL all_gather_perf run",))]
    busbw = nccl.nvidia_busbw_gbs if nccl.nvidia_busbw_gbs is not None else nccl.busbw_gbs
    value = busbw if what == "busbw" else (float(nccl.wrong) if nccl.busbw_gbs is not None else None)
    if value is None:
        return [Measured(subject, missing=(nccl.problem or "no result row at messages >= 1 GiB",))]
    return [Measured(subject, (value,))]


def _pcie(link: LinkFacts, attr: str) -> list[Measured]:
    out = []
    for fn in _used(link):
        value = getattr(fn, attr)
        out.append(Measured(fn.label, () if value is None else (float(value),),
                            missing=() if value is not None else ("not read (lspci/sysfs)",)))
    return out or [Measured("used functions", missing=("no used CX-7 function",))]


def _cable_part(link: LinkFacts) -> list[Measured]:
    out = []
    for node in (link.a, link.b):
        fns = [fn for fn in _used(link) if fn.node == node.name]
        pns = sorted({fn.cable.vendor_pn for fn in fns if fn.cable and fn.cable.vendor_pn})
        out.append(Measured(f"node {node.name}", texts=tuple(pns),
                            missing=() if pns else ("no cable part number read (sudo ethtool -m)",)))
    return out


def _serials(link: LinkFacts, node: str) -> list[str]:
    return sorted({fn.cable.vendor_sn for fn in _used(link) if fn.node == node and fn.cable and fn.cable.vendor_sn})


def _cable_serial(link: LinkFacts) -> list[Measured]:
    """The serials each end reads (a pair's nodes are a and b; a cluster test's, the nodes' own names)."""
    ends = [(node.name, _serials(link, node.name)) for node in (link.a, link.b)]
    missing = tuple(f"node {n}: no cable serial read (sudo ethtool -m)" for n, s in ends if not s)
    return [Measured("pair", texts=tuple(f"{n}: {', '.join(s) or '?'}" for n, s in ends), missing=missing,
                     compared=tuple(x for _, s in ends for x in s))]


def _firmware(link: LinkFacts) -> list[Measured]:
    fns = _used(link)
    unread = tuple(f"{fn.label}: firmware not read (ethtool -i)" for fn in fns if fn.firmware is None)
    by_version: dict[str, list[str]] = {}
    for fn in fns:
        if fn.firmware is not None:
            by_version.setdefault(fn.firmware, []).append(fn.label)
    texts = tuple(f"{v} on {', '.join(labels)}" if len(by_version) > 1 else f"{v} on all {len(labels)} functions"
                  for v, labels in sorted(by_version.items()))
    return [Measured("pair", texts=texts, missing=unread if fns else ("no used CX-7 function",),
                     compared=tuple(fn.firmware for fn in fns if fn.firmware is not None))]


def measure(link: LinkFacts, check_id: str, repetitions: int) -> list[Measured]:
    if check_id == "rdma_alone_gbps":
        found = _rdma_path(link, "alone", repetitions)
    elif check_id == "rdma_concurrent_gbps":
        found = _rdma_path(link, "concurrent", repetitions)
    elif check_id == "rdma_concurrent_total_gbps":
        found = _rdma_total(link, repetitions)
    elif check_id in ("nccl_busbw_gbs", "nccl_wrong"):
        found = nccl_measured(link.bench.nccl, "busbw" if check_id == "nccl_busbw_gbs" else "wrong")
    elif check_id in ("pcie_speed_gts", "pcie_width"):
        found = _pcie(link, check_id)
    elif check_id == "cable_part_number":
        found = _cable_part(link)
    elif check_id == "cable_serial_both_ends":
        found = _cable_serial(link)
    else:
        found = _firmware(link)
    return found or [Measured("link", missing=("no data path between the nodes",))]


# -- judging -----------------------------------------------------------------------------------------------------


def _meets(t: Threshold, value: Any) -> bool:
    """The measurement meets the band, compared as the rule engine compares a fact with a threshold."""
    try:
        return compare(t.op, value, list(t.value) if isinstance(t.value, tuple) else t.value)
    except ValueError:
        return False  # a non-finite rate never passes


def _numeric(check: ProfileCheck, m: Measured) -> CheckResult:
    kind = check.spec.kind
    if not m.values:
        return CheckResult(check, m.subject, AcceptVerdict.INCONCLUSIVE, m, reason="; ".join(m.missing))
    judged = min(m.values) if kind == "min" else max(m.values)

    def margin(t: Threshold) -> float:  # against the line that decides the status: the one missed, else the tightest
        return _r(judged - t.value if kind == "min" else t.value - judged)

    passing = check.thresholds[-1]
    which = "lowest" if kind == "min" else "highest"
    for t in check.thresholds:
        if t.fails and not _meets(t, judged):
            return CheckResult(check, m.subject, AcceptVerdict.FAIL, m, margin(t),
                               f"{which} {judged:g} {t.unit} is not {t.operator} {t.value:g}")
    if m.missing:
        return CheckResult(check, m.subject, AcceptVerdict.INCONCLUSIVE, m, margin(passing), "; ".join(m.missing))
    for t in check.thresholds:
        if not t.fails and not _meets(t, judged):
            return CheckResult(check, m.subject, AcceptVerdict.DEGRADED, m, margin(t),
                               f"{which} {judged:g} {t.unit} is not {t.operator} {t.value:g}")
    return CheckResult(check, m.subject, AcceptVerdict.PASS, m, margin(passing))


def _textual(check: ProfileCheck, m: Measured) -> CheckResult:
    if m.missing:
        return CheckResult(check, m.subject, AcceptVerdict.INCONCLUSIVE, m, reason="; ".join(m.missing))
    t = check.thresholds[0]
    if check.spec.kind == "in":
        bad = [v for v in m.texts if not _meets(t, v)]
        if bad:
            return CheckResult(check, m.subject, AcceptVerdict.FAIL, m, reason=f"{', '.join(bad)} not approved")
        return CheckResult(check, m.subject, AcceptVerdict.PASS, m)
    seen = set(m.compared)
    if len(seen) != 1:
        return CheckResult(check, m.subject, AcceptVerdict.FAIL, m, reason=f"{len(seen)} different values: "
                           f"{', '.join(sorted(seen))}")
    return CheckResult(check, m.subject, AcceptVerdict.PASS, m)


def judge_measured(check: ProfileCheck, measured: Iterable[Measured]) -> list[CheckResult]:
    judge = _numeric if check.spec.kind in ("min", "max") else _textual
    return [judge(check, m) for m in measured]


def judge_check(check: ProfileCheck, link: LinkFacts, repetitions: int) -> list[CheckResult]:
    return judge_measured(check, measure(link, check.id, repetitions))


FindingRef = tuple[str, str, str]  # (rule, status, subject)


def counted_findings(findings: Iterable[Finding], require: tuple[str, ...]) -> tuple[tuple[FindingRef, ...], bool]:
    """The findings that count (failed, warned, or a required rule that could not judge), and whether a rule the
    profile requires could not judge: `require` overlays the rules, so a listed rule that skipped leaves the
    acceptance inconclusive, even one that `check` treats as optional."""
    findings = tuple(findings)
    counted = tuple((f.rule_id, f.status.value, f.subject) for f in findings
                    if f.status in (Status.FAIL, Status.WARN) or (f.status is Status.SKIP and f.required))
    unjudged = tuple((f.rule_id, f.status.value, f.subject) for f in findings
                     if f.status is Status.SKIP and not f.required and f.rule_id in require)
    return counted + unjudged, bool(unjudged)


def findings_verdict(diagnosis: Diagnosis, require: tuple[str, ...]) -> tuple[tuple[FindingRef, ...], AcceptVerdict]:
    """The findings that count and the verdict they make (a pair's diagnosis or a cluster's): the diagnosis' own,
    inconclusive at least where a rule the profile requires could not judge."""
    counted, unjudged = counted_findings(diagnosis.findings, require)
    verdict = FROM_DIAGNOSIS[diagnosis.verdict]
    return counted, worst([verdict, AcceptVerdict.INCONCLUSIVE]) if unjudged else verdict


def judge(link: LinkFacts, diagnosis: Diagnosis, profile: Profile, repetitions: int | None = None) -> Acceptance:
    """The acceptance of a diagnosed run: every check of `profile` and the diagnosis' own verdict."""
    reps = repetitions if repetitions is not None else profile.test.repetitions
    results = tuple(r for check in profile.checks for r in judge_check(check, link, reps))
    counted, from_findings = findings_verdict(diagnosis, profile.require)
    verdict = worst([from_findings, *(r.status for r in results)])
    notes = [] if from_findings is AcceptVerdict.PASS else [
        f"the findings make it {from_findings.value} (verdict {diagnosis.verdict.value})"]
    largest = link.bench.nccl.largest_bytes if link.bench.nccl is not None else None
    return Acceptance(profile, reps, verdict, results, diagnosis.verdict, counted, tuple(notes), largest)


# -- a cluster's run -----------------------------------------------------------------------------------------------

# Judged once, on the NCCL run across every node; every other check is judged per test.
CLUSTER_CHECKS = ("nccl_busbw_gbs", "nccl_wrong")
INTERRUPTED = "interrupted (Ctrl-C): the run is partial"  # the note of a run Ctrl-C stopped, any layout's


class TestAcceptance(msgspec.Struct, frozen=True):
    """One test of the schedule as the profile judges it: its checks (subjects as on the pair), the findings of the
    pair's throughput rules on it, and why it was not measured when it was not."""

    label: str
    round: int
    a: str
    b: str
    verdict: AcceptVerdict
    checks: tuple[CheckResult, ...]
    findings: tuple[FindingRef, ...] = ()
    pass_no: int = 1
    switched: bool = False
    problem: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"test": self.label, "round": self.round, "a": self.a, "b": self.b, "pass": self.pass_no,
                "switched": self.switched, "verdict": self.verdict.value,
                "checks": len(self.checks), "problem": self.problem}


class ClusterAcceptance(msgspec.Struct, frozen=True):
    profile: Profile
    repetitions: int
    layout: str
    nodes: tuple[str, ...]
    verdict: AcceptVerdict
    tests: tuple[TestAcceptance, ...]
    checks: tuple[CheckResult, ...]  # the NCCL run's, judged once
    diagnosis_verdict: Verdict  # the cluster check's own verdict (its rules and every test's)
    findings: tuple[FindingRef, ...] = ()  # the cluster rules' findings that count
    notes: tuple[str, ...] = ()
    nccl_largest_bytes: int | None = None

    @property
    def exit_code(self) -> ExitCode:
        return self.verdict.exit_code

    def all_checks(self) -> list[tuple[str, CheckResult]]:
        """Every judged check with the test it belongs to ("" for the cluster's)."""
        return [(t.label, c) for t in self.tests for c in t.checks] + [("", c) for c in self.checks]

    def to_dict(self) -> dict[str, Any]:
        """acceptance.json as a pair's, with `cluster` (the layout, nodes and each test's verdict); each check's
        subject starts with its test's label, so every report that reads a pair's record reads this one."""
        checks = []
        for label, check in self.all_checks():
            row = check.to_dict()
            row["subject"] = f"{label} {row['subject']}" if label else row["subject"]
            checks.append(row)
        findings = [{"id": r, "status": s, "subject": subj} for r, s, subj in self.findings]
        findings += [{"id": r, "status": s, "subject": f"{t.label} {subj}"} for t in self.tests
                     for r, s, subj in t.findings]
        return {
            **record_head(self.profile, self.repetitions, self.nccl_largest_bytes),
            "verdict": self.verdict.value, "exit_code": int(self.exit_code),
            "cluster": {"layout": self.layout, "nodes": list(self.nodes), "tests": [t.to_dict() for t in self.tests]},
            "diagnosis": {"verdict": self.diagnosis_verdict.value, "findings": findings},
            "checks": checks,
            "notes": list(self.notes),
        }


def judge_test(result: CableResult, profile: Profile, repetitions: int) -> TestAcceptance:
    """One test by the per-cable checks of `profile` on its own pair view and runs, and its findings."""
    checks = tuple(r for check in profile.checks if check.id not in CLUSTER_CHECKS
                   for r in judge_check(check, result.link, repetitions))
    findings, _ = counted_findings(result.findings, ())
    verdicts = [FROM_DIAGNOSIS[result.verdict], *(c.status for c in checks)]
    if result.problem:  # not measured, or its run stopped: never a pass
        verdicts.append(AcceptVerdict.INCONCLUSIVE)
    test = result.test
    return TestAcceptance(test.label, test.round, test.a, test.b, worst(verdicts), checks, findings, test.pass_no,
                          test.switched, result.problem)


def judge_cluster(check: ClusterCheck, profile: Profile, repetitions: int | None = None) -> ClusterAcceptance:
    """The acceptance of a cluster's run: every test, the NCCL run across the nodes, the cluster's findings."""
    reps = repetitions if repetitions is not None else profile.test.repetitions
    tests = tuple(judge_test(r, profile, reps) for r in check.cables)
    nccl = check.facts.nccl
    subject = f"all_gather across {len(check.facts.topology.nodes)} nodes"
    measured = {what: nccl_measured(nccl, what, subject) for what in ("busbw", "wrong")}
    if nccl is None and check.nccl_error:  # say why it did not run
        measured = dict.fromkeys(measured, [Measured(subject, missing=(check.nccl_error,))])
    checks = tuple(r for c in profile.checks if c.id in CLUSTER_CHECKS
                   for r in judge_measured(c, measured["busbw" if c.id == "nccl_busbw_gbs" else "wrong"]))
    diagnosis = check.view.diagnosis
    findings, from_cluster = findings_verdict(diagnosis, profile.require)
    notes = []
    if from_cluster is not AcceptVerdict.PASS:
        notes.append(f"the cluster's findings make it {from_cluster.value} (verdict {diagnosis.verdict.value})")
    if check.view.topology.flags:
        notes.append("the cabling is flagged: " + "; ".join(f.message for f in check.view.topology.flags))
        from_cluster = worst([from_cluster, AcceptVerdict.DEGRADED])
    for node, why in check.view.errors.items():
        notes.append(f"node {node} was not inspected: {why}")
        from_cluster = worst([from_cluster, AcceptVerdict.INCONCLUSIVE])
    if check.traffic_error:
        notes.append(f"the traffic test stopped: {check.traffic_error}")
        from_cluster = worst([from_cluster, AcceptVerdict.INCONCLUSIVE])
    if not tests:
        notes.append("no test was measured")
        from_cluster = worst([from_cluster, AcceptVerdict.INCONCLUSIVE])
    verdict = worst([from_cluster, *(t.verdict for t in tests), *(c.status for c in checks)])
    if check.interrupted:
        verdict = AcceptVerdict.INCONCLUSIVE
        notes.append(INTERRUPTED)
    return ClusterAcceptance(profile, reps, check.facts.topology.layout, tuple(check.facts.topology.nodes), verdict,
                             tests, checks, check.verdict, findings, tuple(notes),
                             nccl.largest_bytes if nccl is not None else None)


def judge_check_run(check: ClusterCheck, profile: Profile, repetitions: int) -> Acceptance | ClusterAcceptance:
    """The acceptance of a live check, whatever its layout: a pair (the cluster of one cable, outcome.py
    `judged_view`) by the profile's checks on its one cable's facts and the pair's findings (`judge`), any other
    cluster by `judge_cluster`. A run that Ctrl-C stopped is never more than INCONCLUSIVE."""
    judged = judged_view(check)
    if not isinstance(judged, Outcome):
        return judge_cluster(check, profile, repetitions)
    acceptance = judge(judged.link, judged.diagnosis, profile, repetitions)
    if not check.interrupted:
        return acceptance
    return msgspec.structs.replace(acceptance, verdict=AcceptVerdict.INCONCLUSIVE,
                                   notes=(*acceptance.notes, INTERRUPTED))

"""`linkcheck accept`: a live run planned from the profile (inspection, the RDMA rounds repeated, NCCL once, the
latency test once where the profile asks for it), diagnosed with the configured playbooks, judged against the
profile, the acceptance saved into the bundle; one run (`run_accept`) for two to eight nodes, a pair being the
cluster of its one cable.

The profile is chosen once the inspection has shown the layout: the one given (`--profile`), which
must accept that layout, or the built-in profile of the layout. A profile for another layout is refused before any
traffic (exit 4): its thresholds were not written for that cabling. A node that could not be inspected leaves the
layout unsure: the given profile is still run where it can be (the acceptance is INCONCLUSIVE), and without one
nothing is sent."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec.structs import replace

from linkcheck.accept.evidence import check_evidence
from linkcheck.accept.judge import Acceptance, ClusterAcceptance, judge_check_run
from linkcheck.accept.profile import Profile, layout_profile, resolve_profile
from linkcheck.accept.record import bundle_acceptance
from linkcheck.app.live import TrafficRequest, check_cluster
from linkcheck.bench.latency import LatencyOptions
from linkcheck.bench.nccl import NcclOptions
from linkcheck.bench.plan import RdmaOptions
from linkcheck.bundle.acceptance import write_acceptance
from linkcheck.cluster.facts import ClusterFacts, ExpectedCluster
from linkcheck.cluster.hosts import ClusterHost
from linkcheck.cluster.topology import Topology
from linkcheck.config import SshOptions
from linkcheck.diagnose.rule import Rule
from linkcheck.errors import UsageError
from linkcheck.facts.model import ExpectedLink
from linkcheck.outcome import ClusterCheck

if TYPE_CHECKING:
    from linkcheck.bench.guard import Progress


def traffic_request(profile: Profile, repetitions: int) -> TrafficRequest:
    """What an acceptance sends, whatever the layout: the profile's RDMA rounds `repetitions` times, NCCL once, then
    (`latency: true`) the latency test once."""
    t = profile.test
    return TrafficRequest(rdma=RdmaOptions(duration_s=t.duration_s, size_bytes=t.size_bytes, qps=t.qps),
                          nccl=NcclOptions(max_bytes=t.nccl_max_bytes), repetitions=repetitions,
                          latency=LatencyOptions() if t.latency else None, command="accept")


LAYOUT_WORDS = {"pair": "two nodes direct", "switch": "nodes through a switch", "mixed": "some nodes direct and "
                "others switched", "unknown": "a cabling no layout describes"}


def layout_words(layout: str) -> str:
    if layout.startswith("ring"):
        return f"a ring of {layout.removeprefix('ring')}"
    return LAYOUT_WORDS.get(layout, layout)


class AcceptRun(msgspec.Struct, frozen=True):
    """An acceptance run: where its bundle was saved, the check (its `acceptance` the record as the bundle now
    holds it), the acceptance, and why none was judged."""

    saved: Path
    check: ClusterCheck
    acceptance: Acceptance | ClusterAcceptance | None  # None: no profile was chosen (`problem` says why), or Ctrl-C
    record: dict[str, Any] = {}  # acceptance.json as saved in the bundle
    problem: str | None = None


def refuse_unfit(profile: Profile | None, nodes: int) -> None:
    """A profile whose layout cannot hold this many nodes (a pair's two, a ring's N) is refused before any node is
    touched (UsageError, exit 4); whether the nodes show its layout is asked once they are inspected."""
    if profile is None:
        return
    layout = profile.layout
    needs = 2 if layout == "pair" else int(layout.removeprefix("ring")) if layout.startswith("ring") else None
    if needs is not None and needs != nodes:
        raise UsageError(f"profile {profile.name} accepts {layout_words(layout)} (layout: {layout}); these are "
                         f"{nodes} nodes", fix="--profile dgx-spark-pair, or none: the layout's" if nodes == 2 else
                         "--profile dgx-spark-ring3 or dgx-spark-switch, or none: the layout's")


def choose_profile(given: Profile | None, topology: Topology, uninspected: Sequence[str]) -> Profile | None:
    """The profile for the layout the nodes show; None when a node was not inspected and none was given (the
    layout cannot be told). UsageError for a profile of another layout, or a layout no built-in profile accepts."""
    layout = topology.layout
    if given is not None:
        if given.layout == layout or uninspected:
            return given
        builtin = layout_profile(layout)
        raise UsageError(f"profile {given.name} accepts {layout_words(given.layout)} (layout: {given.layout}); the "
                         f"nodes show {layout_words(layout)} (layout: {layout})",
                         fix=f"--profile {builtin}" if builtin else "a profile with `layout: " + layout + "`"
                         if layout not in ("mixed", "unknown") else "`linkcheck topology` says what the cabling is")
    if uninspected:
        return None
    builtin = layout_profile(layout)
    if builtin is None:
        if layout in ("mixed", "unknown"):
            raise UsageError(f"the nodes show {layout_words(layout)}: no profile accepts it",
                             fix="`linkcheck topology` says where the cabling departs from NVIDIA's layouts")
        raise UsageError(f"no built-in profile accepts {layout_words(layout)} (NVIDIA documents two nodes direct, "
                         "a ring of three and a switch)",
                         fix=f"copy dgx-spark-ring3, set `layout: {layout}`, and give it with --profile")
    return resolve_profile(builtin)


class _Choice(msgspec.Struct):
    """What the run was asked for, then the profile its plan chose once the nodes were inspected (or why none
    was), for the judging after the run."""

    given: Profile | None
    repetitions: int | None
    duration_s: int | None
    profile: Profile | None = None
    problem: str | None = None

    def plan(self, facts: ClusterFacts) -> TrafficRequest:
        lost = [f.subject for f in facts.topology.flagged("uninspected")]
        profile = choose_profile(self.given, facts.topology, lost)
        if profile is None:
            self.problem = (f"{', '.join(lost)} not inspected: the layout cannot be told, so no profile was chosen "
                            "and no traffic was sent; give --profile to run the tests that can run")
            return TrafficRequest()
        if self.duration_s is not None:  # the run's -D; the record's `standard` says whether it is weaker
            profile = replace(profile, test=replace(profile.test, duration_s=self.duration_s))
        self.profile = profile
        return traffic_request(profile, self.reps)

    @property
    def reps(self) -> int:
        return self.repetitions or (self.profile.test.repetitions if self.profile else 1)


def run_accept(hosts: Sequence[ClusterHost], ssh: SshOptions, rules: list[Rule], profile: Profile | None,
               repetitions: int | None, duration_s: int | None, save_dir: Path, progress: Progress | None = None,
               expected: ExpectedCluster | None = None, expected_link: ExpectedLink | None = None) -> AcceptRun:
    """Inspect any nodes (a pair's a and b are the cluster of its one cable), choose the profile, run the traffic,
    save the bundle, judge (`judge_check_run`); the acceptance joins the bundle, and the check carries it as read
    back, as `diagnose` of the bundle shows it."""
    choice = _Choice(profile, repetitions, duration_s)
    check, _, _ = check_cluster(hosts, ssh, rules, choice.plan, progress, expected, save=save_dir,
                                expected_link=expected_link)
    if choice.profile is None:
        return AcceptRun(save_dir, check, None, problem=choice.problem)
    acceptance = judge_check_run(check, choice.profile, choice.reps)
    record = {**acceptance.to_dict(), "evidence": check_evidence(check)}
    write_acceptance(save_dir, record, choice.profile.text)
    return AcceptRun(save_dir, replace(check, acceptance=bundle_acceptance(save_dir)), acceptance, record)

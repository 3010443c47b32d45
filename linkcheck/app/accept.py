"""`linkcheck accept`: a live run planned from the profile (inspection, the RDMA rounds repeated, NCCL once),
diagnosed with the configured playbooks, judged against the profile, the acceptance saved into the bundle."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import msgspec
from msgspec.structs import replace

from linkcheck.accept.evidence import acceptance_evidence
from linkcheck.accept.judge import Acceptance, AcceptVerdict, judge
from linkcheck.accept.profile import Profile
from linkcheck.app.live import TrafficRequest, run_live
from linkcheck.bench.latency import LatencyOptions
from linkcheck.bench.nccl import NcclOptions
from linkcheck.bench.plan import RdmaOptions
from linkcheck.bundle.acceptance import write_acceptance

if TYPE_CHECKING:
    from linkcheck.app.live import TrafficRequest
    from linkcheck.bench.guard import Progress
    from linkcheck.config import Config
    from linkcheck.outcome import Outcome


class AcceptRun(msgspec.Struct, frozen=True):
    saved: Path
    outcome: Outcome | None
    acceptance: Acceptance | None
    interrupted: bool = False


def traffic_request(profile: Profile, repetitions: int) -> TrafficRequest:
    t = profile.test
    return TrafficRequest(rdma=RdmaOptions(duration_s=t.duration_s, size_bytes=t.size_bytes, qps=t.qps),
                          nccl=NcclOptions(max_bytes=t.nccl_max_bytes), repetitions=repetitions,
                          latency=LatencyOptions() if t.latency else None)


def run_accept(config: Config, profile: Profile, repetitions: int, save_dir: Path,
               progress: Progress | None = None) -> AcceptRun:
    """Inspect, run the traffic tests, save, diagnose, judge; the acceptance joins the saved bundle."""
    result = run_live(config, save_dir, anonymize=False, diagnose=True,
                      traffic=traffic_request(profile, repetitions), progress=progress)
    if result.outcome is None:
        return AcceptRun(result.saved, None, None, result.interrupted)
    acceptance = accept_outcome(result.outcome, profile, repetitions)
    if result.interrupted:
        acceptance = replace(acceptance, verdict=AcceptVerdict.INCONCLUSIVE,
                             notes=(*acceptance.notes, "interrupted (Ctrl-C): the run is partial"))
    write_acceptance(result.saved, acceptance_record(result.outcome, acceptance), profile.text)
    return AcceptRun(result.saved, result.outcome, acceptance, result.interrupted)


def acceptance_record(outcome: Outcome, acceptance: Acceptance) -> dict[str, object]:
    """acceptance.json: the judged checks and the evidence of who was tested, with what and how."""
    return {**acceptance.to_dict(), "evidence": acceptance_evidence(outcome)}


def accept_outcome(outcome: Outcome, profile: Profile, repetitions: int | None = None) -> Acceptance:
    return judge(outcome.link, outcome.diagnosis, profile, repetitions)

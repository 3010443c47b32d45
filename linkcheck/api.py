"""The library face: diagnose a saved bundle (a pair's or a cluster's) or run a live check, then read the verdict
and the findings; plan its repairs, or advise a workload on it.

    from pathlib import Path
    from linkcheck import api

    outcome = api.diagnose_bundle(Path("fixtures/healthy"))
    outcome.diagnosis.verdict          # Verdict.PASS
    [f for f in outcome.diagnosis.findings if f.status is api.Status.FAIL]

A cluster's bundle (one with cluster.json) gives a ClusterCheck through the same function, a pair being the
cluster of one cable: `check.verdict`, `check.exit_code`, `check.view.diagnosis.findings` (the cluster's rules),
`check.cables` (each test's pair view, findings and verdict). `api.fix_bundle(path)` and
`api.advise_bundle(path, api.Workload(model_gib=70, concurrency=4))` take either bundle too.

The live check takes two to eight nodes: `api.check_cluster(["a=user@host-a", "b=user@host-b"])` inspects them
(with `rdma=api.RdmaOptions()` it measures every cable, with `nccl=api.NcclOptions()` runs NCCL across every node,
with `latency=api.LatencyOptions()` the latency test) and returns the ClusterCheck and where its bundle was saved;
`api.judged_view(check)` is what `diagnose` shows of it (two nodes on one cable: the pair's Outcome). `api.run_live`,
a pair's live run from a Config as earlier releases took it, runs the same check (kept for one release).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec

from linkcheck.advise.model import Advice, Workload
from linkcheck.app.advise import advise_bundle
from linkcheck.app.fix import FixResult, fix_bundle
from linkcheck.app.live import TrafficRequest, save_cluster
from linkcheck.app.live import check_cluster as _check_cluster
from linkcheck.app.offline import configured_rules, judge_bundle
from linkcheck.baseline.store import ClusterBaseline
from linkcheck.bench.guard import Progress
from linkcheck.bench.latency import LatencyOptions
from linkcheck.bench.nccl import NcclOptions
from linkcheck.bench.plan import RdmaOptions
from linkcheck.bundle.save_dir import default_save_dir
from linkcheck.cluster.hosts import PAIR_NODES, ClusterHost, cluster_hosts
from linkcheck.config import Config, SshOptions, load_config, resolve_config
from linkcheck.diagnose.engine import Diagnosis
from linkcheck.errors import ExitCode, LinkcheckError
from linkcheck.facts.snapshot_model import Baseline
from linkcheck.model import Finding, Severity, Status, Verdict
from linkcheck.outcome import ClusterCheck, Judged, Outcome, judged_view

__all__ = [
    "Advice", "ClusterCheck", "Config", "Diagnosis", "ExitCode", "Finding", "FixResult", "LatencyOptions",
    "LinkcheckError", "LiveResult", "NcclOptions", "Outcome", "RdmaOptions", "Severity", "SshOptions", "Status",
    "TrafficRequest", "Verdict", "Workload", "advise_bundle", "check_cluster", "diagnose_bundle", "fix_bundle",
    "judged_view", "load_config", "resolve_config", "run_live",
]


class LiveResult(msgspec.Struct, frozen=True):
    """What `run_live` returns: the saved bundle's folder, the judged check as `diagnose` shows it (None when not
    asked to diagnose), and whether Ctrl-C stopped it."""

    saved: Path
    outcome: Judged | None
    interrupted: bool = False


def diagnose_bundle(path: Path, playbooks: list[Path] | None = None, config: Config | None = None, *,
                    allow_unverified: bool = False, warn: Callable[[str], None] | None = None
                    ) -> Outcome | ClusterCheck:
    """A saved bundle diagnosed as `linkcheck diagnose` does: a pair's Outcome, or a cluster's ClusterCheck (judged
    with the pair's rules per cable and the cluster's over every node). A bundle that `verify` rejects raises
    BundleError (a LinkcheckError), unless `allow_unverified` (each problem passed to `warn`). Either record says
    its `verdict` and `exit_code`."""
    return judge_bundle(path, playbooks, config, allow_unverified=allow_unverified, warn=warn)


def check_cluster(nodes: Sequence[str], *, ssh: SshOptions | None = None, save_dir: Path | None = None,
                  rdma: RdmaOptions | None = None, nccl: NcclOptions | None = None,
                  playbooks: list[Path] | None = None, latency: LatencyOptions | None = None,
                  anonymize: bool = False) -> tuple[ClusterCheck, Path | None]:
    """Two to eight nodes (`name=[user@]host[:port]`, as `--node` takes them; more than eight, fewer than two and a
    node named twice are refused as the command line refuses them) inspected at once, every cable measured when
    `rdma` is given, NCCL run across every node when `nccl` is and the latency test when `latency` is, then judged;
    the bundle is saved in `save_dir` when one is given (anonymised with `anonymize`). Bad nodes raise a
    LinkcheckError (exit 4) before any node is contacted."""
    hosts = cluster_hosts(nodes=list(nodes))
    rules = configured_rules(list(playbooks or []), None, kind="all")
    traffic = TrafficRequest(rdma=rdma, nccl=nccl, latency=latency)
    check, bundle, doc = _check_cluster(hosts, ssh or SshOptions(), rules, traffic)
    if save_dir is not None:
        save_cluster(bundle, doc, save_dir, anonymize=anonymize)
    return check, save_dir


def run_live(config: Config, save_dir: Path | None, *, anonymize: bool, diagnose: bool,
             traffic: TrafficRequest | None = None, progress: Progress | None = None,
             baseline: Baseline | ClusterBaseline | None = None) -> LiveResult:
    """A pair's live run from its Config (nodes a and b, linkcheck.yaml's rules, `link:` and SSH settings), as
    earlier releases took it: the one live check (`check_cluster`) over the cluster of its one cable, saved to
    `save_dir` (a new folder when None), judged against `baseline` when one is given. Kept for one release."""
    rules = configured_rules([], config, kind="all") if diagnose else []
    hosts = tuple(ClusterHost(config.nodes[name], config.source or "linkcheck.yaml") for name in PAIR_NODES)
    saved = save_dir or default_save_dir()
    check, _, _ = _check_cluster(hosts, config.ssh, rules, traffic or TrafficRequest(), progress,
                                 baseline=baseline, save=saved, anonymize=anonymize,
                                 expected_link=config.expected_link)
    return LiveResult(saved, judged_view(check) if diagnose else None, check.interrupted)

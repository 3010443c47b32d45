"""The library face: diagnose a saved bundle or run a live check, then read the verdict and the findings.

    from pathlib import Path
    from linkcheck import api

    outcome = api.diagnose_bundle(Path("fixtures/healthy"))
    outcome.diagnosis.verdict          # Verdict.PASS
    [f for f in outcome.diagnosis.findings if f.status is api.Status.FAIL]

A live run takes a Config (`api.resolve_config(None, ["a=user@host-a", "b=user@host-b"])`, or
`api.load_config(path)`) and returns where the bundle was saved and its Outcome:
`api.run_live(config, None, anonymize=False, diagnose=True, traffic=api.TrafficRequest(rdma=api.RdmaOptions()))`.
"""

from __future__ import annotations

from linkcheck.app.live import LiveResult, TrafficRequest, run_live
from linkcheck.app.offline import diagnose_bundle
from linkcheck.bench.nccl import NcclOptions
from linkcheck.bench.plan import RdmaOptions
from linkcheck.config import Config, load_config, resolve_config
from linkcheck.diagnose.engine import Diagnosis
from linkcheck.errors import ExitCode, LinkcheckError
from linkcheck.model import Finding, Severity, Status, Verdict
from linkcheck.outcome import Outcome

__all__ = [
    "Config", "Diagnosis", "ExitCode", "Finding", "LinkcheckError", "LiveResult", "NcclOptions", "Outcome",
    "RdmaOptions", "Severity", "Status", "TrafficRequest", "Verdict", "diagnose_bundle", "load_config",
    "resolve_config", "run_live",
]

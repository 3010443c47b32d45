"""`linkcheck advise`: a saved bundle (a pair's or a cluster's) and a workload in, the advice out (the bundle read as
`diagnose` reads it)."""

from __future__ import annotations

from pathlib import Path

from linkcheck.advise.decide import advise_judged
from linkcheck.advise.model import Advice, Workload
from linkcheck.app.offline import judge_bundle
from linkcheck.config import Config
from linkcheck.errors import ExitCode, InputFileError
from linkcheck.outcome import Judged
from linkcheck.schema import YamlFile
from linkcheck.yamlfile import parse_yaml_text, read_yaml_text

__all__ = ["Workload", "WorkloadFileError", "advice_exit_code", "advise_bundle", "load_workload"]


class WorkloadFileError(InputFileError):
    """A workload file is unreadable or does not describe a workload."""


def load_workload(path: Path) -> Workload:
    """A workload file (YAML: model_gib, concurrency, moe, context_tokens, kv_kib_per_token, layers, active_gib,
    heads),
    refused at file:line when malformed, and checked as the options are."""
    text = read_yaml_text(path, WorkloadFileError)
    data = parse_yaml_text(text, str(path), WorkloadFileError)
    if not isinstance(data, dict):
        raise WorkloadFileError(str(path), "a workload file is a mapping (model_gib: 70, concurrency: 16, ...)")
    workload = YamlFile(str(path), data, WorkloadFileError).decode(Workload)
    return workload.check()


def advise_bundle(path: Path, workload: Workload, *, playbooks: list[Path] | None = None,
                  config: Config | None = None) -> tuple[Judged, Advice]:
    """Diagnose the bundle (a bundle that `verify` rejects is refused, as for `diagnose`), then advise: a pair's
    on its link, a cluster's on its N nodes and every cable (each cable's findings named with its label)."""
    workload = workload.check()  # bad numbers are refused before the bundle is read
    judged = judge_bundle(path, playbooks, config)
    return judged, advise_judged(judged, workload)


def advice_exit_code(advice: Advice) -> ExitCode:
    """0 with advice to act on; with the link to fix first, 2 when a finding fails, else 1 (warnings)."""
    if advice.choice != "fix-link-first":
        return ExitCode.PASS
    return ExitCode.FAIL if any(f.status == "fail" for f in advice.fix_first) else ExitCode.WARN

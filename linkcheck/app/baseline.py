"""What the `baseline` commands do, so that the CLI stays one call per command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from linkcheck.app.offline import judge_bundle
from linkcheck.baseline import store
from linkcheck.baseline.drift import baseline_of
from linkcheck.errors import BaselineError, UsageError

if TYPE_CHECKING:
    from linkcheck.config import Config


def newest_bundle(folder: Path) -> Path:
    """The newest `linkcheck-*` bundle folder (what `check` saves by default) in `folder`."""
    bundles = [p for p in folder.glob("linkcheck-*") if (p / "manifest.json").is_file()]
    if not bundles:
        raise UsageError(f"no bundle folder linkcheck-* in {folder.resolve()}; give the bundle: "
                         "linkcheck baseline save NAME BUNDLE")
    return max(bundles, key=lambda p: ((p / "manifest.json").stat().st_mtime, p.name))


def save_baseline(name: str, bundle: Path | None, *, force: bool, playbooks: list[Path] | None = None,
                  config: Config | None = None) -> tuple[Path, str]:
    """Judge the bundle and store its state as baseline `name`; only a passing run, unless `force`.

    Returns where it was stored and the run's verdict. A cluster's bundle gives a cluster's baseline."""
    store.check_name(name)
    path = bundle or newest_bundle(Path.cwd())
    judged = judge_bundle(path, playbooks, config, overridable=False)  # no --allow-unverified here
    verdict = judged.verdict.value
    if verdict != "pass" and not force:
        raise UsageError(f"{path}: the run's verdict is {verdict}, not pass; a baseline is the known-good state "
                         "(fix the findings first, or pass --force to record it anyway)")
    return store.save(baseline_of(name, judged, path), overwrite=force), verdict


def list_text() -> tuple[str, list[BaselineError]]:
    """The table of stored baselines, and the entries that could not be read (each its own one-line error)."""
    rows, problems = store.list_any()
    if not rows:
        return f"no {'readable ' if problems else ''}baselines in {store.baselines_dir()}", problems
    lines = [f"{'NAME':<24} {'PAIR':<40} {'CREATED':<26} {'VERDICT':<8} SOURCE"]
    for b in rows:
        pair = store.describe_nodes(b)
        verdict = b.snapshot.verdict + (" (forced)" if b.forced else "")
        lines.append(f"{b.name:<24} {pair:<40} {b.created:<26} {verdict:<8} {b.source_bundle}")
    return "\n".join(lines), problems


def show_text(name: str) -> str:
    baseline = store.resolve_any(name)
    doc = store.to_json(baseline)
    return f"# {baseline.path}\n" + json.dumps(doc, indent=2, sort_keys=True)

"""`--dist loadgroup` (pyproject's addopts) that keeps each `xdist_group` on one worker under pytest 9.

pytest-xdist 3.8 marks a grouped test by appending `@<group>` to `item._nodeid` on the worker, and its scheduler
reads the group back from that suffix; pytest 9 reads a node's id from `item._id` instead, so the suffix never
appears and every group is dealt out test by test, as under `--dist load` (seen here: a group's tests on both
workers, each building the module's labs). The lab tests depend on the grouping: tests that share a module-scoped
lab or run must run on one worker, or each worker makes them again.

So the workers also write each grouped test's group into a folder the controller names (an environment variable
that the workers inherit), and the controller's scheduler, xdist's own scope scheduler, takes a test's scope from
there (or from the suffix, where xdist still adds it); a test without a group is a scope of its own, as in xdist.
tests/conftest.py registers these hooks.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

ENV = "LINKCHECK_XDIST_GROUPS"


def _loadgroup(config: pytest.Config) -> bool:
    return bool(config.getoption("dist", "no") == "loadgroup" and config.getoption("numprocesses", None))


def configure(config: pytest.Config) -> None:
    """On the controller of a `-n N --dist loadgroup` run: the folder the workers write their groups to."""
    if hasattr(config, "workerinput") or not _loadgroup(config):
        return
    folder = tempfile.mkdtemp(prefix="linkcheck-xdist-groups-")
    os.environ[ENV] = folder
    config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))
    config.add_cleanup(_forget_folder)


def _forget_folder() -> None:
    os.environ.pop(ENV, None)


def record_groups(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On a worker: nodeid -> group of every collected test that has one."""
    workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
    folder = os.environ.get(ENV)
    if workerinput is None or not folder:
        return
    groups = {}
    for item in items:
        marks = item.iter_markers("xdist_group")
        names = {str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in marks}
        if names:
            groups[item.nodeid] = "_".join(sorted(names))
    path = Path(folder) / f"{workerinput['workerid']}.json"
    part = path.with_suffix(".part")
    part.write_text(json.dumps(groups), encoding="utf-8")
    part.replace(path)


def make_scheduler(config: pytest.Config, log: Any) -> Any:
    """xdist's scope scheduler with each test's group as its scope; None (xdist's own choice) unless loadgroup."""
    folder = os.environ.get(ENV)
    if not _loadgroup(config) or not folder:
        return None
    groups_dir = Path(folder)
    from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

    class GroupScheduling(LoadScopeScheduling):  # type: ignore[misc]  # xdist has no type information
        """Called once every worker has collected (and written its groups): the groups are read then."""

        _groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if "@" in nodeid:  # an xdist and pytest that still carry the group in the nodeid
                return nodeid.rsplit("@", 1)[-1]
            if self._groups is None:
                self._groups = {}
                for path in sorted(groups_dir.glob("*.json")):
                    self._groups.update(json.loads(path.read_text(encoding="utf-8")))
            return self._groups.get(nodeid, nodeid)

    return GroupScheduling(config, log)

"""pytest fixture `lab_factory`: build labs inside a test, tear them all down when the test ends.

Use it with `from tests.lab.pytest_plugin import lab_factory  # noqa: F401` in a test module, or
`-p tests.lab.pytest_plugin`. Tests skip with the reason when the machine cannot run a lab (not root,
iproute2 / util-linux / OpenSSH server missing, namespaces not permitted).
"""

from __future__ import annotations

import functools
import itertools
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.lab.errors import LabError
from tests.lab.lab import Lab
from tests.lab.spec import LabNodeSpec
from tests.lab.sshd import find_sshd

REQUIRED_TOOLS = ("ip", "unshare", "nsenter", "ssh-keygen", "ssh")


@functools.lru_cache(maxsize=1)
def lab_skip_reason() -> str | None:
    """Why a lab cannot run on this machine, or None when it can."""
    if os.geteuid() != 0:
        return "the lab needs root (network namespaces, mounts, sshd)"
    missing = [t for t in REQUIRED_TOOLS if shutil.which(t) is None]
    if find_sshd() is None:
        missing.append("sshd (openssh-server)")
    if missing:
        return "the lab needs " + ", ".join(missing)
    probe = subprocess.run(
        ["unshare", "--net", "--mount", "--uts", "true"], capture_output=True, text=True, check=False
    )
    if probe.returncode != 0:
        return f"namespaces are not permitted here: {probe.stderr.strip()}"
    return None


LabFactory = Callable[..., Lab]


def lab_pool(new_workdir: Callable[[], Path]) -> Iterator[LabFactory]:
    """Yield make(nodes_or_scenario, **lab_options) -> running Lab, each in a fresh work directory; when
    resumed, tear every lab down (one failure line naming what could not be ended)."""
    labs: list[Lab] = []

    def make(nodes: Sequence[LabNodeSpec] | str, **options: Any) -> Lab:
        workdir = new_workdir()
        if isinstance(nodes, str):
            from tests.lab.scenario import specs_for_scenario

            nodes = specs_for_scenario(nodes, workdir / "scenario")
        lab = Lab(nodes, workdir / "lab", **options)
        labs.append(lab)
        lab.up()
        return lab

    yield make
    problems = []
    for lab in reversed(labs):
        try:
            lab.down()
        except LabError as exc:
            problems.append(str(exc))
    if problems:
        pytest.fail("lab teardown incomplete: " + " | ".join(problems), pytrace=False)


@pytest.fixture
def lab_factory(tmp_path: Path) -> Iterator[LabFactory]:
    """Return make(nodes_or_scenario, **lab_options) -> running Lab; every lab is torn down at test end.

    `nodes_or_scenario` is a list of LabNodeSpec, or a scenario name of tests.emulators.scenarios
    (or "plain", a cabled pair without node models).
    """
    reason = lab_skip_reason()
    if reason:
        pytest.skip(reason)
    count = itertools.count()
    yield from lab_pool(lambda: tmp_path / f"lab{next(count)}")

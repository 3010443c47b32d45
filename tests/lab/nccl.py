"""The node model's NCCL settings in a lab node: /etc/nccl.conf, ~root/.nccl.conf and NCCL_* of SSH sessions.

NCCL reads its settings from the environment, then ~/.nccl.conf, then /etc/nccl.conf; linkcheck reads all
three (`env | grep ^NCCL_`, `cat "$HOME/.nccl.conf"`, `cat /etc/nccl.conf`) over SSH as root. The files are
staged from the (address-mapped) model and shown in the node's mount namespace only (tests.lab.nodefiles);
the variables go into the sshd_config's SetEnv beside PATH, and into `Lab.exec`'s environment.
A model's `None` file is absent in the node, even where the host has one.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.lab.errors import LabError
from tests.lab.nodefiles import NodeFile
from tests.lab.traffic import root_home

NCCL_CONF = "/etc/nccl.conf"
USER_CONF = ".nccl.conf"
_NAME_RE = re.compile(r"^NCCL_[A-Za-z0-9_]*$")
# What sshd_config's SetEnv can carry inside double quotes (no quote, backslash or control character).
_VALUE_RE = re.compile(r'^[^"\\\x00-\x1f\x7f]*$')


def _model(model_json: Path) -> dict[str, object]:
    data = json.loads(model_json.read_text(encoding="utf-8"))  # already mapped into the lab range
    return data if isinstance(data, dict) else {}


def stage_nccl_files(model_json: Path | None, stage: Path) -> list[NodeFile]:
    """/etc/nccl.conf and ~root/.nccl.conf as the model has them (text, or None: absent), staged under `stage`."""
    if model_json is None:
        return []  # a node without a model keeps the host's files, as it keeps the host's tools
    model = _model(model_json)
    out = stage / "nccl"
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for key, target, name in (
        ("nccl_conf", NCCL_CONF, "nccl.conf"),
        ("nccl_conf_user", str(root_home() / USER_CONF), "user-nccl.conf"),
    ):
        text = model.get(key)
        source = None
        if text is not None:
            source = out / name
            source.write_text(str(text), encoding="utf-8")
            source.chmod(0o644)
        files.append(NodeFile(target, source))
    return files


def session_env(model_json: Path | None) -> dict[str, str]:
    """The model's NCCL_* variables, checked to fit in an sshd_config SetEnv line."""
    if model_json is None:
        return {}
    raw = _model(model_json).get("nccl_env") or {}
    if not isinstance(raw, dict):
        raise LabError(f"{model_json}: nccl_env must be an object")
    env = {str(k): str(v) for k, v in raw.items()}
    for name, value in env.items():
        if not _NAME_RE.match(name) or not _VALUE_RE.match(value):
            raise LabError(f"{model_json}: nccl_env {name}={value!r} cannot be set in an SSH session")
    return env

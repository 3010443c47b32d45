"""The node model's NetworkManager keyfiles in a lab node: /etc/NetworkManager/system-connections (persistent
profiles) and /run/NetworkManager/system-connections (in-memory ones), shown in the node's mount namespace only
(tests.lab.nodefiles), so that `fix --apply` copies, journals and restores real files.

The real NetworkManager works on these directories (tests/lab/nm_daemon.py); where a test asks for it, or the
machine lacks NetworkManager, `nmcli` and the D-Bus checkpoint API are the stand-in of tests/lab/nm_standin.py.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path, PurePosixPath

from tests.lab.nodefiles import NodeFile

NM_DIRS = ("/etc/NetworkManager", "/run/NetworkManager")


def stage_nm_files(model_json: Path | None, stage: Path) -> list[NodeFile]:
    """Both NetworkManager folders with the model's keyfiles (mode 600, as NetworkManager writes them); none when
    the model has no keyfile (the node keeps the host's view, which has no NetworkManager)."""
    if not stage_needed(model_json):
        return []
    assert model_json is not None
    keyfiles = json.loads(model_json.read_text(encoding="utf-8"))["nm_connections"]  # already mapped
    files = []
    for top in NM_DIRS:
        root = stage / top.strip("/").replace("/", "-")
        (root / "system-connections").mkdir(parents=True, exist_ok=True)
        root.chmod(0o755)
        (root / "system-connections").chmod(0o700)
        for item in keyfiles:
            path = PurePosixPath(str(item.get("path", "")))
            if path.parent == PurePosixPath(top) / "system-connections" and path.name:
                out = root / "system-connections" / path.name
                out.write_text(str(item.get("text", "")), encoding="utf-8")
                out.chmod(0o600)
        files.append(NodeFile(top, root))
    return files


def standin_tools(model_json: Path | None) -> dict[str, str]:
    """`nmcli` and `busctl` of the NetworkManager stand-in (tests/lab/nm_standin.py) for a node whose model has
    keyfiles: NetworkManager manages its ports. Bodies for LabNodeSpec.extra_tools (the wrapper's environment,
    PYTHONPATH included, is put before them)."""
    if not stage_needed(model_json):
        return {}
    run = f"exec {shlex.quote(sys.executable)} -m tests.lab.nm_standin"
    return {tool: f'{run} {tool} "$@"\n' for tool in ("nmcli", "busctl")}


def stage_needed(model_json: Path | None) -> bool:
    if model_json is None:
        return False
    model = json.loads(model_json.read_text(encoding="utf-8"))
    return isinstance(model, dict) and bool(model.get("nm_connections"))

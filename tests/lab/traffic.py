"""Lab support for traffic tests: root's SSH client files in each node, shared state, fault files.

mpirun on node a starts the remote rank with `ssh <b's data IP> orted ...`, as root, with strict host
key checking; each node therefore sees its own `~root/.ssh` (config, the lab's client key, a
known_hosts naming every node by data IP, management IP, lab name and hostname), bind-mounted in its
mount namespace only. Emulated ib_write_bw and all_gather_perf processes coordinate through one
shared directory per lab (concurrency of flows, the NCCL rank rendezvous) and read per-node fault files
(see tests/lab/README.md, "Traffic").
"""

from __future__ import annotations

import os
import pwd
import shlex
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from tests.lab.errors import LabError
from tests.lab.nm_standin import NMCLI_FAULTS
from tests.lab.spec import TOOL_RE

if TYPE_CHECKING:
    from tests.lab.node import LabNode

SHARED_ENV = "LINKCHECK_LAB_SHARED"
FAULTS_ENV = "LINKCHECK_LAB_FAULTS"
SYSFS_ENV = "LINKCHECK_LAB_SYSFS"
STATE_ENV = "LINKCHECK_LAB_STATE"
ROOT_SSH = "root-ssh"
_SSH_CLIENT_CONFIG = """# linkcheck lab: root's SSH client inside a node (mpirun's remote launch); generated
Host *
    User root
    IdentityFile ~/.ssh/id_ed25519
    IdentitiesOnly yes
    UserKnownHostsFile ~/.ssh/known_hosts
    GlobalKnownHostsFile /dev/null
    StrictHostKeyChecking yes
    BatchMode yes
    ConnectTimeout 5
    LogLevel ERROR
"""


def emulator_env(shared: Path, faults: Path, state: Path) -> dict[str, str]:
    """Variables the tool wrappers export: where shared state and faults live, the sysfs to update, and the node's
    own emulator state (what `ethtool --set-fec` configured)."""
    return {SHARED_ENV: str(shared), FAULTS_ENV: str(faults), SYSFS_ENV: "/sys", STATE_ENV: str(state)}


def root_home() -> Path:
    """root's home directory as OpenSSH finds it (the passwd entry, not $HOME)."""
    return Path(pwd.getpwnam("root").pw_dir)


def ensure_host_ssh_dir() -> Path:
    """`~root/.ssh` must exist on the host as a mount point; created (empty, 0700) when missing."""
    path = root_home() / ".ssh"
    if not path.is_dir():
        path.mkdir(mode=0o700, exist_ok=True)
    return path


def root_ssh_mount_lines(node_dir: Path) -> list[str]:
    """boot.sh lines that show the node's own SSH client files as `~root/.ssh` inside the node."""
    src = node_dir / ROOT_SSH
    src.mkdir(mode=0o700, exist_ok=True)
    target = ensure_host_ssh_dir()
    return [f"mount --bind {shlex.quote(str(src))} {shlex.quote(str(target))}"]


def _names(node: LabNode) -> list[str]:
    names = [addr.split("/")[0] for link in node.spec.links for addr in link.lab_addresses()]
    names += [node.mgmt_ip, node.name, node.spec.host_name]
    return list(dict.fromkeys(names))


def write_root_ssh(nodes: Mapping[str, LabNode], client_key: Path) -> None:
    """Each node's ~/.ssh: config, id_ed25519 (the lab's client key, already authorised), known_hosts."""
    lines = []
    for node in nodes.values():
        keytype, key = node.host_pub.split()[:2]
        lines.append(f"{','.join(_names(node))} {keytype} {key}")
    known = "\n".join(lines) + "\n"
    for node in nodes.values():
        d = node.node_dir / ROOT_SSH
        d.mkdir(mode=0o700, exist_ok=True)
        shutil.copyfile(client_key, d / "id_ed25519")
        shutil.copyfile(client_key.with_name(client_key.name + ".pub"), d / "id_ed25519.pub")
        (d / "config").write_text(_SSH_CLIENT_CONFIG, encoding="ascii")
        (d / "known_hosts").write_text(known, encoding="ascii")
        for name in ("id_ed25519", "config", "known_hosts"):
            os.chmod(d / name, 0o600)


def known_faults() -> dict[str, tuple[str, ...]]:
    """The faults the emulators implement, per tool (none when tests.emulators is not importable)."""
    try:
        from tests.emulators.live_state import FAULTS
    except ImportError:
        return {"nmcli": NMCLI_FAULTS}
    return {**dict(FAULTS), "nmcli": NMCLI_FAULTS}


def write_fault(faults_dir: Path, tool: str, fault: str | None) -> None:
    """Arm (or, with None, clear) a fault for every later run of `tool` on one node."""
    if not TOOL_RE.match(tool):
        raise LabError(f"bad tool name {tool!r}")
    path = faults_dir / tool
    if fault is None:
        path.unlink(missing_ok=True)
        return
    known = known_faults().get(tool, ())
    if fault not in known:
        raise LabError(f"{tool} has no fault {fault!r}; known: {', '.join(known) or 'none'}")
    faults_dir.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{tool}.tmp")
    tmp.write_text(fault + "\n", encoding="ascii")
    tmp.replace(path)

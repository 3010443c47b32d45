"""The files a repair may write, one rule for the plan, `fix --apply` and the journal `fix --restore` reads.

A repair writes only these (repairs.md, "What each repair does"): a netplan file `/etc/netplan/NAME.yaml`, a
NetworkManager keyfile `/etc/NetworkManager/system-connections/NAME` (copied from the same name under
`/run/NetworkManager/system-connections/`), `/etc/nccl.conf`, the SSH user's `~/.nccl.conf` and, over a cluster,
linkcheck's own forwarding drop-in `/etc/sysctl.d/60-linkcheck-forward.conf`. A path is taken as written, never
resolved: a name with `..` or `.`, an empty or doubled `/`, a control character or a second
level of folders is refused, so `/etc/netplan/../../etc/cron.d/x.yaml` or `system-connections/..` never passes.
"""

from __future__ import annotations

import posixpath
import re

from linkcheck.repair.files import NCCL_CONF, NCCL_CONF_USER, ONLY_NETPLAN_FILE
from linkcheck.repair.model import FileChange

NETPLAN_DIR = "/etc/netplan"
NM_ETC = "/etc/NetworkManager/system-connections"
NM_RUN = "/run/NetworkManager/system-connections"
# The drop-in a transit node's forwarding persists in (systemd-sysctl reads /etc/sysctl.d/*.conf at boot, sysctl.d(5));
# the file name the rule's fix prints.
SYSCTL_FORWARD_CONF = "/etc/sysctl.d/60-linkcheck-forward.conf"
# One file name: printable, no `/`, not `.` or `..`, at most NAME_MAX bytes.
_NAME = re.compile(r"[^/\x00-\x1f\x7f]{1,255}")


def _name_in(path: str, folder: str) -> str | None:
    """The file name when `path` is exactly `folder/NAME`; None otherwise."""
    head, _, name = path.rpartition("/")
    if head != folder or not _NAME.fullmatch(name) or name in (".", ".."):
        return None
    return name


def _plain_absolute(path: str) -> bool:
    """An absolute path as written is its own normal form: no `.`/`..` part, no empty part, no control."""
    return (path.startswith("/") and posixpath.normpath(path) == path and "/./" not in path + "/"
            and not any(part in (".", "..") for part in path.split("/"))
            and not re.search(r"[\x00-\x1f\x7f]", path))


def repair_file_problem(path: str, manager: str | None = None, *, home: str | None = None) -> str | None:
    """Why a repair may not write `path`; None when it may. As a plan names it (`home` None: the user's file is
    `~/.nccl.conf`, the one netplan file the inspection saw unnamed `/etc/netplan/*.yaml`), or resolved on the node
    as the journal keeps it (`home`: the SSH user's home folder there). `manager`, when given, must be the one
    that reads that file."""
    kind = None
    user_conf = NCCL_CONF_USER if home is None else f"{home.rstrip('/')}/.nccl.conf"
    if (home is None and path == ONLY_NETPLAN_FILE) or (_name_in(path, NETPLAN_DIR) or "").endswith(".yaml"):
        kind = "netplan"
    elif _name_in(path, NM_ETC) is not None:
        kind = "NetworkManager"
    elif path == NCCL_CONF or (path == user_conf and (home is None or _plain_absolute(user_conf))):
        kind = "nccl"
    elif path == SYSCTL_FORWARD_CONF:
        kind = "sysctl"
    if kind is None:
        return (f"{ascii(path)} is not a file a repair may write ({NETPLAN_DIR}/NAME.yaml, {NM_ETC}/NAME, "
                f"{NCCL_CONF}, ~/.nccl.conf, {SYSCTL_FORWARD_CONF})")
    if manager is not None and manager != kind:
        return f"{ascii(path)} is read by {kind}, not by {ascii(manager)}"
    return None


def plan_path_problem(change: FileChange) -> str | None:
    """Why a plan's file change is not one a repair may make: its path, its manager, the file a copy reads."""
    why = repair_file_problem(change.path, change.manager)
    if why is not None:
        return why
    if change.edit.kind == "copy_from":
        source = _name_in(change.edit.old, NM_RUN)
        if source is None or change.manager != "NetworkManager" or change.path != f"{NM_ETC}/{source}":
            return (f"the copy of {ascii(change.edit.old)} to {ascii(change.path)} is not a runtime keyfile "
                    f"copied under its own name from {NM_RUN}")
    if not re.fullmatch(r"[0-7]{3,4}", change.mode):
        return f"mode {ascii(change.mode)} is not an octal file mode"
    return None

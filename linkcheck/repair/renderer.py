"""What a node's netplan and its renderers are, and the combinations a repair must not rely on or must refuse.

Read from the inspection: netplan's version from its package (`dpkg-query -W -f '${Version}' netplan.io`: netplan
prints no version of its own: it has no `--version`, and `netplan info` prints only its website and feature flags,
canonical/netplan netplan_cli/cli/commands/info.py), whether systemd-networkd is masked (its unit file a link to
/dev/null, as `systemctl mask` makes it),
and the renderer of each netplan-defined interface (its `renderer:`, else the file's global one, else networkd,
netplan(5)).

The combinations (measured with the real netplan 0.106 and NetworkManager 1.42 in
/work/shared/design/real-daemons.md, s.2-s.3):
- netplan before 1.2: `netplan try`'s own revert does not put the renderer's configuration back (canonical/netplan
  pull request #548, "Fix `netplan try` revert (LP: #2083029)": networkd ignores the restored files' ownership,
  and NetworkManager's netplan integration on Ubuntu >= 23.10 "reverts the revert"); 0.106's revert leaves a new
  MTU. linkcheck never relies on it: its own revert restores the files, undoes the live change and reads the state
  back (linkcheck.repair.restore.put_back_verified). Said in the plan.
- the NetworkManager renderer: `netplan apply` (and `try`, both ways) runs `nmcli device disconnect` and `ip addr
  flush` on every interface netplan defines for NetworkManager (netplan's apply.py): each lost its address for
  ~220-260 ms twice. When the management interface is one of them, `fix --apply` refuses a netplan change unless
  `--allow-nm-disconnect` is given.
- systemd-networkd masked with an NetworkManager-rendered `mtu:`: netplan writes a networkd `.link` file for the
  MTU even for NetworkManager, its apply then restarts the masked networkd and fails, leaving NetworkManager
  stopped and the address flushed (try and its revert alike). Refused, with the manual steps.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from linkcheck.errors import ParseError
from linkcheck.parsers.netplan import NetplanConfig, parse_netplan

NM = "NetworkManager"
NETWORKD = "networkd"
TRY_REVERT_FIXED = (1, 2)  # canonical/netplan#548 (LP: #2083029) is in netplan 1.2
_VERSION = re.compile(r"^(?:[0-9]+:)?([0-9]+(?:\.[0-9]+)*)")


def parse_netplan_version(text: str) -> tuple[int, ...] | None:
    """`dpkg-query -W -f '${Version}'`'s Debian version ([epoch:]upstream[-revision], e.g. `0.106-2+deb12u1`,
    `1.1.2-2~ubuntu24.04.1`) as its upstream numbers; None when it is not one."""
    match = _VERSION.match(text.strip())
    if match is None:
        return None
    parts = match.group(1).split(".")
    if any(len(p) > 6 for p in parts):
        return None
    return tuple(int(p) for p in parts)


def parse_is_enabled(text: str) -> str | None:
    """The networkd_masked capture's word (`masked`, `not-masked`), None when there is none."""
    word = text.strip().split("\n", 1)[0].strip()
    return word if re.fullmatch(r"[a-z-]{1,20}", word) else None


def interface_renderers(netplan_dump: str) -> dict[str, str]:
    """Interface -> the renderer of its netplan definition; {} when the files cannot be read as netplan."""
    try:
        config = parse_netplan(netplan_dump) if netplan_dump.strip() else NetplanConfig(None, (), ())
    except ParseError:
        return {}
    return {e.ifname: e.renderer or config.renderer or NETWORKD for e in config.ethernets}


def nm_mtu_interfaces(netplan_dump: str) -> list[str]:
    """The netplan-defined interfaces rendered by NetworkManager that set an `mtu:`."""
    try:
        config = parse_netplan(netplan_dump) if netplan_dump.strip() else NetplanConfig(None, (), ())
    except ParseError:
        return []
    return sorted(e.ifname for e in config.ethernets if (e.renderer or config.renderer) == NM and e.mtu is not None)


def version_text(version: tuple[int, ...] | None) -> str:
    return ".".join(str(v) for v in version) if version else "unknown"


def try_revert_note(node: str, version: tuple[int, ...] | None) -> str | None:
    """The plan's line for a node whose steps change netplan files, when its netplan's `try` revert is not one
    to rely on (before 1.2, or unknown)."""
    if version is not None and version >= TRY_REVERT_FIXED:
        return None
    return (f"node {node}: netplan {version_text(version)}: `netplan try` may not put the configuration back by "
            "itself (canonical/netplan#548, LP #2083029, fixed in 1.2; 0.106 leaves a new MTU): linkcheck restores "
            "the files and the live state itself and reads the state back")


def nm_disconnect_note(node: str, renderers: Mapping[str, str]) -> str | None:
    """The plan's line for a node whose netplan defines interfaces for NetworkManager."""
    names = sorted(i for i, r in renderers.items() if r == NM)
    if not names:
        return None
    return (f"node {node}: netplan renders {', '.join(names)} with NetworkManager: `netplan try` disconnects each "
            "of them (~250 ms, on apply and on revert); `fix --apply` refuses when the management interface is one "
            "of them, unless --allow-nm-disconnect")


def masked_networkd_refusal(networkd: str | None, nm_mtu: list[str]) -> str | None:
    """Why a netplan change is refused on a node with networkd masked and a NetworkManager-rendered `mtu:`."""
    if networkd != "masked" or not nm_mtu:
        return None
    return (f"systemd-networkd is masked and netplan renders an MTU for NetworkManager ({', '.join(nm_mtu)}): "
            "netplan writes a networkd .link file for it, so `netplan try`/`apply` restart the masked networkd, fail, "
            "and leave NetworkManager stopped and the address flushed; set the MTU in the NetworkManager profile "
            "instead (`nmcli connection modify ID ethernet.mtu M`, then `nmcli connection up ID`), or "
            "`systemctl unmask systemd-networkd` first")


def mgmt_disconnect_refusal(node: str, mgmt_dev: str | None, renderers: Mapping[str, str]) -> str | None:
    """Why a netplan change is refused when the management interface is netplan-defined for NetworkManager."""
    if mgmt_dev is None or renderers.get(mgmt_dev) != NM:
        return None
    return (f"node {node}: the management interface {mgmt_dev} is defined in netplan for NetworkManager: `netplan "
            "try` disconnects it (~250 ms, twice) while it changes the plan's files; refused, nothing changed")

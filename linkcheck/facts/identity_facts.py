"""A node's identity (DMI, BIOS, boot id, tool versions) and its NetworkManager profiles that a reboot loses."""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from typing import TYPE_CHECKING

from linkcheck.facts.model import Function, NetplanIntent, NmRuntimeProfile, NodeIdentity
from linkcheck.facts.sources import NodeSources
from linkcheck.parsers.identity import dmi_value

if TYPE_CHECKING:
    from linkcheck.parsers.networkmanager import NmProfile

DMI = "/sys/class/dmi/id/"
BOOT_ID = "/proc/sys/kernel/random/boot_id"


def node_identity(src: NodeSources) -> NodeIdentity:
    """What identifies the node; every field it could not read is None (the evidence says why)."""
    dump = src.sysfs("sysfs_dmi")
    dmi: dict[str, str | None] = {}
    if dump is not None:
        dmi = {e.path[len(DMI):]: dmi_value(e.value) for e in dump.under(DMI)}
    serial = src.dmi_serial()
    perftest = src.perftest_version()
    install = src.nccl_install()
    library = None
    if install is not None and install.nccl_version:
        library = next((p for p in install.libraries if p.endswith(f".so.{install.nccl_version}")), None)
    return NodeIdentity(
        vendor=dmi.get("sys_vendor"), product=dmi.get("product_name"), product_version=dmi.get("product_version"),
        board_vendor=dmi.get("board_vendor"), board_name=dmi.get("board_name"),
        serial=serial.serial if serial else None,
        bios_vendor=dmi.get("bios_vendor"), bios_version=dmi.get("bios_version"), bios_date=dmi.get("bios_date"),
        boot_id=(dump.value(BOOT_ID) or None) if dump is not None else None,
        perftest_version=perftest.version if perftest else None,
        nccl_version=install.nccl_version if install else None,
        nccl_library=library or (install.libraries[0] if install and install.libraries else None),
        nccl_tests_binary=install.tests_binaries[0] if install and install.tests_binaries else None,
    )


def _configures(profile: NmProfile, fn: Function) -> bool:
    if profile.interface_name:
        return profile.interface_name == fn.netdev
    return bool(profile.mac_address and fn.mac and profile.mac_address == fn.mac.lower())


def _assigns_live_address(profile: NmProfile, fn: Function) -> bool:
    """The profile is where the netdev's live addressing comes from: it sets one of its addresses (or DHCP)."""
    if profile.ipv4_method in ("auto", "dhcp"):
        return bool(fn.ipv4)
    live = set()
    for cidr in fn.ipv4:
        try:
            live.add(ipaddress.ip_interface(cidr))
        except ValueError:
            continue
    for cidr in profile.ipv4_addresses:
        try:
            if ipaddress.ip_interface(cidr) in live:
                return True
        except ValueError:
            continue
    return False


def nm_runtime_profiles(src: NodeSources, functions: dict[str, Function], netplan: tuple[NetplanIntent, ...],
                        missing: Callable[[str, str], None]) -> tuple[NmRuntimeProfile, ...]:
    """The CX-7 netdevs whose live IPv4 comes from a profile kept only under /run, with whether anything
    persistent (an /etc keyfile, a netplan definition) configures them as well."""
    profiles = src.nm_connections()
    if profiles is None:
        missing("nm_profiles", src.reason("nm_connections"))
        return ()
    persistent_nm = [p for p in profiles.profiles if not p.runtime_only]
    planned = {i.netdev for i in netplan}
    out = []
    for profile in profiles.profiles:
        if not profile.runtime_only:
            continue
        for fn in functions.values():
            if not _configures(profile, fn) or not _assigns_live_address(profile, fn):
                continue
            persistent = fn.netdev in planned or any(_configures(p, fn) for p in persistent_nm)
            out.append(NmRuntimeProfile(netdev=fn.netdev, profile_id=profile.id, path=profile.path,
                                        method=profile.ipv4_method, addresses=profile.ipv4_addresses,
                                        persistent=persistent))
    return tuple(out)

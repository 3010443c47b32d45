"""Views over sysfs dumps: per-netdev attributes, per-PCI-function links, per-RDMA-device identity."""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from linkcheck.parsers.sysfs import SysfsDump

NET = "/sys/class/net/"
IB = "/sys/class/infiniband/"
PCI = "/sys/bus/pci/devices/"


def int_or_none(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def net_attrs(dump: SysfsDump) -> dict[str, dict[str, str | None]]:
    """netdev -> {attribute: value} from the sysfs_net dump; the device symlink becomes the PCI BDF."""
    out: dict[str, dict[str, str | None]] = {}
    for entry in dump.under(NET):
        parts = entry.path[len(NET):].split("/")
        if len(parts) != 2:
            continue
        name, attr = parts
        attrs = out.setdefault(name, {})
        attrs[attr] = posixpath.basename(entry.link) if attr == "device" and entry.link else entry.value
    return out


def pci_links(dump: SysfsDump) -> dict[str, dict[str, str | None]]:
    out: dict[str, dict[str, str | None]] = {}
    for entry in dump.under(PCI):
        parts = entry.path[len(PCI):].split("/")
        if len(parts) == 2:
            out.setdefault(parts[0], {})[parts[1]] = entry.value
        elif parts[1:] == ["iommu_group", "type"]:  # the function's IOMMU domain: identity, DMA, DMA-FQ, ...
            out.setdefault(parts[0], {})["iommu_group/type"] = entry.value
    return out


def ib_devices(dump: SysfsDump) -> dict[str, dict[str, str | None]]:
    """rdma device -> {"bdf", "state", "fw_ver", "board_id"} from the sysfs_infiniband dump."""
    out: dict[str, dict[str, str | None]] = {}
    for entry in dump.under(IB):
        if not entry.path.endswith(("/device", "/state", "/fw_ver", "/board_id")):
            continue  # most of the dump is GID table slots, which this view does not need
        parts = entry.path[len(IB):].split("/")
        dev = out.setdefault(parts[0], {})
        if parts[1:] == ["device"] and entry.link:
            dev["bdf"] = posixpath.basename(entry.link)
        elif parts[1:] in (["fw_ver"], ["board_id"]) and entry.value:
            dev[parts[1]] = entry.value
        elif len(parts) == 4 and parts[1] == "ports" and parts[3] == "state" and entry.value:
            dev["state"] = entry.value.split(":", 1)[-1].strip()
    return out

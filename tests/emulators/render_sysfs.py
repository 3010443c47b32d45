"""The node's sysfs, both as our dump format ("<path>\\t<value>") and as a real tree on disk.

One list of entries feeds both, so the rendered dump is what the real spec command prints on the
materialised tree, except for files whose read fails (EINVAL on empty GID attributes, EOPNOTSUPP on
phys_port_name of non-switchdev devices): plain files cannot fail a read, so those are left out of the
tree and only the dump shows them as "<path>\\t!<error>".
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from linkcheck.collect.specs import IB_PORT_FILES, NET_ATTRS
from tests.emulators.derive import GID_TBL_LEN, dev_sort_key, gid_entry, node_guid, port_rate, port_state
from tests.emulators.node import Function, Node

Output = tuple[str, str, int]
MELLANOX = "0x15b3"
CX7_DEVICE = "0x1021"


@dataclass(frozen=True)
class Entry:
    """One sysfs file: a value, a read error (value is the strerror text) or a symlink (value is the target)."""

    path: str
    value: str
    kind: str = "file"  # file | error | link
    style: str = "dump"  # dump: our lc_dump lines; grep: `grep -H . FILES 2>&1` (how GID tables are read)


def _pci_dir(bdf: str) -> str:
    """Where a function lives: below its domain's root port (bus 00) on GB10."""
    domain, bus = bdf.split(":")[:2]
    if bus == "00":
        return f"/sys/devices/pci{domain}:00/{bdf}"
    return f"/sys/devices/pci{domain}:00/{domain}:00:00.0/{bdf}"


def _net_entries(node: Node) -> list[Entry]:
    rows: dict[str, dict[str, Entry]] = {}
    base = "/sys/class/net/lo/"
    rows["lo"] = {
        "address": Entry(base + "address", "00:00:00:00:00:00"), "mtu": Entry(base + "mtu", "65536"),
        "carrier": Entry(base + "carrier", "1"), "carrier_changes": Entry(base + "carrier_changes", "0"),
        "speed": Entry(base + "speed", "Invalid argument", "error"),
        "operstate": Entry(base + "operstate", "unknown"),
        "phys_port_name": Entry(base + "phys_port_name", "Operation not supported", "error"),
    }
    m = node.mgmt
    base = f"/sys/class/net/{m.name}/"
    rows[m.name] = {
        "address": Entry(base + "address", m.mac), "mtu": Entry(base + "mtu", "1500"),
        "carrier": Entry(base + "carrier", "1"), "carrier_changes": Entry(base + "carrier_changes", "2"),
        "speed": Entry(base + "speed", str(m.speed_mbps)), "operstate": Entry(base + "operstate", "up"),
        "phys_port_name": Entry(base + "phys_port_name", "Operation not supported", "error"),
        "device": Entry(base + "device", f"../../../{m.bdf}", "link"),
    }
    for fn in node.functions:
        rows[fn.netdev] = _function_net(fn)
    out: list[Entry] = []
    for name in sorted(rows, key=dev_sort_key):
        out += [rows[name][a] for a in NET_ATTRS.split() if a in rows[name]]
    return out


def _function_net(fn: Function) -> dict[str, Entry]:
    base = f"/sys/class/net/{fn.netdev}/"
    row = {
        "address": Entry(base + "address", fn.mac), "mtu": Entry(base + "mtu", str(fn.mtu)),
        "carrier_changes": Entry(base + "carrier_changes", str(fn.carrier_changes)),
        "operstate": Entry(base + "operstate", fn.operstate),
        "phys_port_name": Entry(base + "phys_port_name", fn.cage),
        "device": Entry(base + "device", f"../../../{fn.bdf}", "link"),
    }
    if fn.admin_up:  # carrier and speed refuse to be read (EINVAL) while the interface is down
        row["carrier"] = Entry(base + "carrier", "1" if fn.carrier else "0")
        row["speed"] = Entry(base + "speed", str(fn.speed_mbps) if fn.carrier else "-1")
    else:
        row["carrier"] = Entry(base + "carrier", "Invalid argument", "error")
        row["speed"] = Entry(base + "speed", "Invalid argument", "error")
    return row


def _port_file(fn: Function, name: str) -> str:
    state, code, phys, phys_code = port_state(fn)
    values = {
        "state": f"{code}: {state}",
        "phys_state": f"{phys_code}: {'LinkUp' if phys_code == 5 else 'Disabled'}",
        "rate": port_rate(fn)[3],
        "link_layer": "Ethernet",
        "counters/port_xmit_data": str(fn.port_xmit_data),
        "counters/port_rcv_data": str(fn.port_rcv_data),
        "counters/link_downed": str(fn.link_downed),
    }
    return values[name]


ZERO_GID = "0000:0000:0000:0000:0000:0000:0000:0000"


def _gid_entries(fn: Function, port: str) -> list[Entry]:
    """The used GID slots as the spec reads them: each slot's GID line, then its type and netdev lines."""
    indices = sorted((str(i) for i in range(GID_TBL_LEN)), key=dev_sort_key)  # glob order: 0 1 10 100 ...
    out: list[Entry] = []
    for i in indices:
        slot = gid_entry(fn, int(i))
        if slot.gid == ZERO_GID:
            continue  # `grep -v` drops empty slots; their attribute files are not read
        out.append(Entry(f"{port}/gids/{i}", slot.gid, style="grep"))
        if slot.type is None:
            out.append(Entry(f"{port}/gid_attrs/types/{i}", "Invalid argument", "error", "grep"))
            out.append(Entry(f"{port}/gid_attrs/ndevs/{i}", "Invalid argument", "error", "grep"))
        else:
            out.append(Entry(f"{port}/gid_attrs/types/{i}", slot.type, style="grep"))
            out.append(Entry(f"{port}/gid_attrs/ndevs/{i}", slot.ndev or "", style="grep"))
    return out


def _empty_gid_files(fn: Function, port: str) -> list[Entry]:
    """Empty slots still exist on disk (zero GID); the tree must have them for the real command to skip."""
    return [Entry(f"{port}/gids/{i}", ZERO_GID) for i in range(GID_TBL_LEN) if gid_entry(fn, i).gid == ZERO_GID]


def _ib_entries(node: Node) -> list[Entry]:
    out: list[Entry] = []
    for fn in sorted(node.functions, key=lambda f: dev_sort_key(f.rdma_dev)):
        base = f"/sys/class/infiniband/{fn.rdma_dev}"
        out += [Entry(base + "/device", f"../../../{fn.bdf}", "link"),
                Entry(base + "/node_guid", node_guid(fn)), Entry(base + "/fw_ver", fn.fw_ver),
                Entry(base + "/board_id", fn.board_id)]
        port = base + "/ports/1"
        out += [Entry(f"{port}/{name}", _port_file(fn, name)) for name in IB_PORT_FILES.split()]
        out += _gid_entries(fn, port)
    return out


def _pci_entries(node: Node) -> list[Entry]:
    out: list[Entry] = []
    for fn in sorted(node.functions, key=lambda f: dev_sort_key(f.bdf)):
        base = f"/sys/bus/pci/devices/{fn.bdf}/"
        out += [
            Entry(base + "vendor", MELLANOX),
            Entry(base + "current_link_speed", f"{fn.pcie_speed_gts:.1f} GT/s PCIe"),
            Entry(base + "current_link_width", str(fn.pcie_width)),
            Entry(base + "max_link_speed", "32.0 GT/s PCIe"),
            Entry(base + "max_link_width", str(fn.pcie_cap_width)),
        ]
        if fn.iommu_type is not None:
            out.append(Entry(base + "iommu_group/type", fn.iommu_type))
    return out


def _dump(entries: list[Entry]) -> str:
    lines = []
    for e in entries:
        if e.style == "grep":
            if e.kind == "error":
                lines.append(f"grep: {e.path}: {e.value}")
            elif e.value:  # grep . prints nothing for an empty file
                lines.append(f"{e.path}:{e.value.splitlines()[0]}")
        elif e.kind == "link":
            lines.append(f"{e.path}\t-> {e.value}")
        elif e.kind == "error":
            lines.append(f"{e.path}\t!{e.value}")
        else:
            lines.append(f"{e.path}\t{e.value.splitlines()[0] if e.value else ''}")
    return "".join(line + "\n" for line in lines)


def render_sysfs_net(node: Node) -> Output:
    return _dump(_net_entries(node)), "", 0


def render_sysfs_infiniband(node: Node) -> Output:
    return _dump(_ib_entries(node)), "", 0


def render_sysfs_pci(node: Node) -> Output:
    return _dump(_pci_entries(node)), "", 0


DMI_DIR = "/sys/class/dmi/id"
BOOT_ID = "/proc/sys/kernel/random/boot_id"
DMI_ORDER = ("sys_vendor", "product_name", "product_version", "board_vendor", "board_name", "bios_vendor",
             "bios_version", "bios_date")


def _dmi_entries(node: Node) -> list[Entry]:
    return [Entry(f"{DMI_DIR}/{name}", node.dmi[name]) for name in DMI_ORDER if name in node.dmi]


def render_sysfs_dmi(node: Node) -> Output:
    """The spec's order: the DMI files that exist, then the boot id."""
    return _dump(_dmi_entries(node) + [Entry(BOOT_ID, node.boot_id)]), "", 0


def render_dmi_serial(node: Node) -> Output:
    path = f"{DMI_DIR}/product_serial"
    if node.product_serial is None:
        return "", f"grep: {path}: No such file or directory\n", 2
    return f"{path}:{node.product_serial}\n" if node.product_serial else "", "", 0 if node.product_serial else 1


# Materialisation ----------------------------------------------------------------------------------

# Non-Mellanox PCI functions a GB10 also has (root ports, the Realtek NIC, the GPU): the sysfs_pci
# dump must skip them by vendor.
_OTHER_PCI = {"0000:00:00.0": "0x10de", "0002:00:00.0": "0x10de", "0007:00:00.0": "0x10de",
              "000f:00:00.0": "0x10de", "000f:01:00.0": "0x10de"}


def _real_path(node: Node, path: str) -> str:
    """Where a /sys/class or /sys/bus path really lives under /sys/devices (class dirs are symlinks)."""
    parts = path.split("/")
    name = parts[4]
    if path.startswith("/sys/class/net/"):
        if name == "lo":
            prefix = "/sys/devices/virtual/net/lo"
        else:
            bdf = node.mgmt.bdf if name == node.mgmt.name else node.function(name).bdf
            prefix = f"{_pci_dir(bdf)}/net/{name}"
    elif path.startswith("/sys/class/infiniband/"):
        prefix = f"{_pci_dir(node.function(name).bdf)}/infiniband/{name}"
    else:
        prefix = _pci_dir(parts[5])
        return "/".join([prefix] + parts[6:])
    return "/".join([prefix] + parts[5:])


def _write(root: Path, path: str, entry: Entry) -> None:
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    if entry.kind == "link":
        if not target.is_symlink():
            os.symlink(entry.value, target)
    else:
        target.write_text(entry.value + "\n", encoding="utf-8")


def _link(root: Path, link: str, real: str) -> None:
    path = root / link.lstrip("/")
    path.parent.mkdir(parents=True, exist_ok=True)
    (root / real.lstrip("/")).mkdir(parents=True, exist_ok=True)
    if not path.is_symlink():
        os.symlink(os.path.relpath(real, os.path.dirname(link)), path)


def materialise_sysfs(node: Node, root_dir: Path) -> None:
    """Write /sys/devices with the real files, and /sys/class/{net,infiniband}, /sys/bus/pci/devices as
    the symlinks the kernel makes, under `root_dir`. Entries whose read fails are not written."""
    root = Path(root_dir)
    empty = [e for fn in node.functions for e in _empty_gid_files(fn, f"/sys/class/infiniband/{fn.rdma_dev}/ports/1")]
    for entry in _net_entries(node) + _ib_entries(node) + _pci_entries(node) + empty:
        if entry.kind != "error":
            _write(root, _real_path(node, entry.path), entry)
    for name in ["lo", node.mgmt.name] + [f.netdev for f in node.functions]:
        _link(root, f"/sys/class/net/{name}", _real_path(node, f"/sys/class/net/{name}/x")[:-2])
    for fn in node.functions:
        real = _real_path(node, f"/sys/class/infiniband/{fn.rdma_dev}/x")[:-2]
        _link(root, f"/sys/class/infiniband/{fn.rdma_dev}", real)
        (root / real.lstrip("/") / "ports" / "1" / "hw_counters").mkdir(parents=True, exist_ok=True)
        _write(root, _pci_dir(fn.bdf) + "/device", Entry("", CX7_DEVICE))
    for bdf, vendor in {**_OTHER_PCI, node.mgmt.bdf: "0x10ec"}.items():
        _write(root, _pci_dir(bdf) + "/vendor", Entry("", vendor))
    # /sys/class/dmi/id is a link to the virtual DMI device; product_serial is root-only (0400).
    for entry in _dmi_entries(node):
        _write(root, entry.path.replace("/sys/class/dmi/id", "/sys/devices/virtual/dmi/id"), entry)
    if node.product_serial is not None:
        serial = root / "sys/devices/virtual/dmi/id/product_serial"
        _write(root, "/sys/devices/virtual/dmi/id/product_serial", Entry("", node.product_serial))
        serial.chmod(0o400)
    _link(root, "/sys/class/dmi/id", "/sys/devices/virtual/dmi/id")
    for bdf in list(_OTHER_PCI) + [node.mgmt.bdf] + [f.bdf for f in node.functions]:
        _link(root, f"/sys/bus/pci/devices/{bdf}", _pci_dir(bdf))

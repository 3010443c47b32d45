"""The node model the emulators print from: one GB10 node's CX-7 functions, cable, config and logs.

Values are what the hardware and the OS hold, not what a tool prints; the render modules turn them into
each tool's exact text. Everything round-trips through JSON (`to_json` / `from_json` / `load`) so a lab
node can read its model from the file named by LINKCHECK_LAB_NODE.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

GID_TYPE_V1 = "IB/RoCE v1"
GID_TYPE_V2 = "RoCE v2"


@dataclass(frozen=True)
class GidSlot:
    """One GID table entry; type and ndev None = an empty slot (zero GID, EINVAL on its attributes)."""

    index: int
    gid: str  # 8 groups of 4 lower-case hex digits, as sysfs prints it
    type: str | None = None
    ndev: str | None = None


@dataclass(frozen=True)
class Function:
    """One ConnectX-7 PCIe function: netdev + RDMA device + PCIe link."""

    bdf: str
    netdev: str
    rdma_dev: str
    cage: str  # phys_port_name: p0 / p1
    mac: str
    mtu: int = 1500
    carrier: bool = False
    admin_up: bool = True
    ipv4: tuple[str, ...] = ()  # CIDRs
    ipv6: tuple[str, ...] = ()  # global IPv6 CIDRs; each adds a v1 and a v2 GID
    speed_mbps: int = 200000  # what ethtool/sysfs report while the link is up
    pcie_speed_gts: float = 32.0
    pcie_width: int = 4
    pcie_cap_width: int = 4
    node_guid: str | None = None  # None: derived from the MAC (03:00 inserted after the OUI)
    gid_slots: tuple[GidSlot, ...] | None = None  # None: derived from MAC and addresses, mlx5 order
    carrier_changes: int = 2
    port_xmit_data: int = 0  # RDMA port counters, units of 4 bytes
    port_rcv_data: int = 0
    link_downed: int = 0
    fw_ver: str = "28.45.4028"
    board_id: str = "NVD0000000087"  # the PSID mlx5 reports (sysfs board_id, `ethtool -i` in parentheses)
    fec_active: str | None = None  # `ethtool --show-fec` Active FEC encoding; None: RS while the link is up, else None
    fec_configured: str = "Auto"  # what mlx5 reports as Supported/Configured on GB10 (a field paste)
    # its IOMMU group's type (sysfs iommu_group/type): NVIDIA's kernels default to passthrough (identity) from 6.11
    # (NVIDIA/NV-Kernels #227, CONFIG_IOMMU_DEFAULT_PASSTHROUGH); DMA or DMA-FQ translate; None: no IOMMU group
    iommu_type: str | None = "identity"

    @property
    def link_up(self) -> bool:
        return self.admin_up and self.carrier

    @property
    def operstate(self) -> str:
        return "up" if self.link_up else "down"

    @property
    def domain(self) -> str:
        return self.bdf.split(":", 1)[0]


@dataclass(frozen=True)
class Cable:
    """The QSFP module's EEPROM identity (what `ethtool -m` decodes)."""

    identifier_code: int = 0x11  # 0x11 SFF-8636 (QSFP28), 0x1e CMIS (QSFP112)
    vendor_name: str = "Amphenol"
    vendor_oui: str = "78:a7:14"
    vendor_pn: str = "NJAAKK-N911"
    vendor_sn: str = "APF25090012345"
    vendor_rev: str = "B"
    length_m: float = 0.4
    date_code: str = "250312"


@dataclass(frozen=True)
class Route:
    """One IPv4 route as `ip -j route show` prints it."""

    dst: str
    dev: str
    protocol: str = "kernel"
    scope: str | None = "link"
    prefsrc: str | None = None
    gateway: str | None = None
    metric: int | None = None
    linkdown: bool = False


@dataclass(frozen=True)
class Neighbour:
    """One neighbour (ARP) entry."""

    dst: str
    dev: str
    lladdr: str
    state: str = "REACHABLE"


@dataclass(frozen=True)
class NetplanFile:
    """A netplan YAML file as written on disk."""

    path: str
    text: str


@dataclass(frozen=True)
class DmesgLine:
    time_s: float
    text: str


@dataclass(frozen=True)
class MgmtNic:
    """The RJ45 management NIC (Realtek on GB10): bootstrap/OOB interface, never the data path."""

    name: str = "enP7s7"
    mac: str = "3c:6d:66:cc:b3:b5"
    ipv4: str = "10.20.0.21/24"
    gateway: str = "10.20.0.1"
    bdf: str = "0007:01:00.0"
    speed_mbps: int = 10000


# DMI of an NVIDIA DGX Spark founder's edition, from the dmi modalias pasted in canonical/secboot#560 (the
# modalias drops blanks: "AmericanMegatrendsInternational,LLC." is sysfs' "American Megatrends International, LLC.").
DGX_SPARK_DMI: dict[str, str] = {
    "sys_vendor": "NVIDIA",
    "product_name": "NVIDIA_DGX_Spark",
    "product_version": "A.7",
    "board_vendor": "NVIDIA",
    "board_name": "P4242",
    "bios_vendor": "American Megatrends International, LLC.",
    "bios_version": "5.36_0ACUM018",
    "bios_date": "08/06/2025",
}

DEFAULT_VERSIONS: dict[str, str] = {
    "ethtool": "6.7",
    "iproute2": "6.1.0",
    "rdma-core": "50.0",
    "perftest": "6.22",
    "nccl": "2.28.9",
    "nccl-tests": "2.17.6",
    "pciutils": "3.10.0",
    "cuda": "13.0",
}

UBUNTU_2404_OS_RELEASE = """PRETTY_NAME="Ubuntu 24.04.3 LTS"
NAME="Ubuntu"
VERSION_ID="24.04"
VERSION="24.04.3 LTS (Noble Numbat)"
VERSION_CODENAME=noble
ID=ubuntu
ID_LIKE=debian
HOME_URL="https://www.ubuntu.com/"
SUPPORT_URL="https://help.ubuntu.com/"
BUG_REPORT_URL="https://bugs.launchpad.net/ubuntu/"
PRIVACY_POLICY_URL="https://www.ubuntu.com/legal/terms-and-policies/privacy-policy"
UBUNTU_CODENAME=noble
LOGO=ubuntu-logo
"""


@dataclass(frozen=True)
class Node:
    """One GB10 node as the emulated tools see it."""

    hostname: str
    functions: tuple[Function, ...]
    cabled_cage: str | None = "p1"
    cable: Cable | None = field(default_factory=Cable)
    # The modules in the node's other cages (cage -> Cable): a ring node has a cable in each of its two cages.
    more_cables: dict[str, Cable] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=lambda: dict(DEFAULT_VERSIONS))
    nccl_env: dict[str, str] = field(default_factory=dict)
    nccl_conf: str | None = None  # /etc/nccl.conf text; None: the file does not exist
    nccl_conf_user: str | None = None  # ~/.nccl.conf text
    netplan_files: tuple[NetplanFile, ...] = ()
    routes: tuple[Route, ...] | None = None  # None: derived (connected + default via the management NIC)
    neighbours: tuple[Neighbour, ...] = ()
    arp_ignore: int = 1  # DGX OS defaults (20-nvidia-defaults.conf)
    arp_announce: int = 2
    dmesg: tuple[DmesgLine, ...] = ()
    dmesg_restrict: bool = True  # Ubuntu: plain `dmesg` fails for a user, `sudo -n dmesg` is needed
    uptime_s: float = 86400.0
    mem_total_kib: int = 128452780
    mem_available_kib: int = 119823544
    missing_tools: frozenset[str] = frozenset()
    sudo_ok: bool = True
    os_release: str = UBUNTU_2404_OS_RELEASE
    kernel_release: str = "6.17.0-1008-nvidia"
    cmdline_iommu: tuple[str, ...] = ()  # the IOMMU words of /proc/cmdline (DGX OS sets none)
    dmi: dict[str, str] = field(default_factory=lambda: dict(DGX_SPARK_DMI))  # /sys/class/dmi/id, world-readable
    product_serial: str | None = "1581925012345"  # root-only; None: the file is absent (a VM)
    boot_id: str = "5d0c1f0e-7f1a-4c2b-9e5d-3a8b6c4d2e10"
    nm_connections: tuple[NetplanFile, ...] = ()  # NetworkManager keyfiles (path under /etc or /run, text)
    nccl_files: tuple[str, ...] = ()  # libnccl.so* paths; () : derived from versions["nccl"] (the .deb layout)
    user: str = "nvidia"
    mgmt: MgmtNic = field(default_factory=MgmtNic)
    perftest_gbps: float = 109.0  # what an emulated ib_write_bw reports on one path (lab CLI)
    perftest_concurrent_gbps: float = 98.0  # per flow while another flow between the same nodes runs (lab)
    perftest_rates: dict[str, tuple[float, float]] = field(default_factory=dict)  # rdma_dev -> (alone, both)
    # rdma_dev -> Gb/s that no flow through the device exceeds, sent or received: a NIC in the hot-plug state is
    # slow both ways, so its cap also limits the client at the other end (the lab's cluster scenarios).
    perftest_caps: dict[str, float] = field(default_factory=dict)
    nccl_busbw_gbs: float | None = None  # all_gather_perf's peak busbw in the lab (None: from the links up)
    nccl_transport: str | None = None  # "IB" | "Socket" in the lab (None: IB unless NCCL_IB_DISABLE=1)
    ip_forward: bool = False  # /proc/sys/net/ipv4/ip_forward (offline; in the lab the namespace's own)
    iptables: dict[str, str] | None = None  # chain -> what `iptables -S CHAIN` prints; None: iptables not installed
    # ib_write_lat in the lab: a fixed cost plus the bytes at an effective rate, per RDMA device (base us, Gb/s).
    # 1.47 us at 2 B and 8.80 at 48 KiB on a healthy pair (spark-link s.5, s.10).
    latency_base_us: float = 1.47
    latency_gbps: float = 53.64
    latency_rates: dict[str, tuple[float, float]] = field(default_factory=dict)
    allreduce_slowdown: float = 1.0  # the small all_reduce against the healthy 30 us + bytes at ~1.7 GB/s

    def cable_in(self, cage: str | None) -> Cable | None:
        """The module in `cage`: the cabled cage's, or one of `more_cables`; None for an empty cage."""
        if cage is not None and cage in self.more_cables:
            return self.more_cables[cage]
        return self.cable if cage == self.cabled_cage else None

    def function(self, name: str) -> Function:
        """The function whose netdev, RDMA device or BDF is `name`; KeyError if none."""
        for f in self.functions:
            if name in (f.netdev, f.rdma_dev, f.bdf):
                return f
        raise KeyError(name)

    def perftest_rate(self, rdma_dev: str, concurrent: bool) -> float:
        """Gb/s an ib_write_bw client on `rdma_dev` of this node measures, alone or beside another flow."""
        alone, both = self.perftest_rates.get(rdma_dev, (self.perftest_gbps, self.perftest_concurrent_gbps))
        return both if concurrent else alone

    def write_latency_us(self, rdma_dev: str, size_bytes: int) -> float:
        """The typical (median) half round trip ib_write_lat reports for `size_bytes` from `rdma_dev`."""
        base, gbps = self.latency_rates.get(rdma_dev, (self.latency_base_us, self.latency_gbps))
        return base + size_bytes * 8 / (gbps * 1e3)

    @property
    def home(self) -> str:
        return "/root" if self.user == "root" else f"/home/{self.user}"

    def version(self, tool: str) -> str:
        return self.versions.get(tool, DEFAULT_VERSIONS.get(tool, ""))

    # JSON ------------------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["missing_tools"] = sorted(self.missing_tools)
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, data: str | dict[str, Any]) -> Node:
        """Build a node from a JSON text or the dict `to_dict` made."""
        raw: dict[str, Any] = json.loads(data) if isinstance(data, str) else dict(data)
        return _node_from_dict(raw)

    @classmethod
    def load(cls, path: str | Path) -> Node:
        return cls.from_json(Path(path).read_text(encoding="utf-8"))


def _function_from_dict(d: dict[str, Any]) -> Function:
    d = dict(d)
    slots = d.get("gid_slots")
    d["gid_slots"] = None if slots is None else tuple(GidSlot(**s) for s in slots)
    d["ipv4"] = tuple(d.get("ipv4", ()))
    d["ipv6"] = tuple(d.get("ipv6", ()))
    return Function(**d)


def _node_from_dict(d: dict[str, Any]) -> Node:
    d = dict(d)
    d["functions"] = tuple(_function_from_dict(f) for f in d["functions"])
    d["cable"] = None if d.get("cable") is None else Cable(**d["cable"])
    d["more_cables"] = {str(k): Cable(**v) for k, v in d.get("more_cables", {}).items()}
    d["netplan_files"] = tuple(NetplanFile(**f) for f in d.get("netplan_files", ()))
    d["nm_connections"] = tuple(NetplanFile(**f) for f in d.get("nm_connections", ()))
    d["nccl_files"] = tuple(d.get("nccl_files", ()))
    d["cmdline_iommu"] = tuple(d.get("cmdline_iommu", ()))
    routes = d.get("routes")
    d["routes"] = None if routes is None else tuple(Route(**r) for r in routes)
    d["neighbours"] = tuple(Neighbour(**n) for n in d.get("neighbours", ()))
    d["dmesg"] = tuple(DmesgLine(**m) for m in d.get("dmesg", ()))
    d["missing_tools"] = frozenset(d.get("missing_tools", ()))
    if "mgmt" in d:
        d["mgmt"] = MgmtNic(**d["mgmt"])
    rates = d.get("perftest_rates", {})
    d["perftest_rates"] = {str(k): (float(v[0]), float(v[1])) for k, v in rates.items()}
    d["perftest_caps"] = {str(k): float(v) for k, v in d.get("perftest_caps", {}).items()}
    lat = d.get("latency_rates", {})
    d["latency_rates"] = {str(k): (float(v[0]), float(v[1])) for k, v in lat.items()}
    return Node(**d)


def materialise_sysfs(node: Node, root_dir: str | Path) -> None:
    """Write the node's sysfs trees under `root_dir` (see render_sysfs.materialise_sysfs)."""
    from tests.emulators.render_sysfs import materialise_sysfs as _materialise

    _materialise(node, Path(root_dir))

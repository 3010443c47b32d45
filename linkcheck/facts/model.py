"""The twin-aware topology: functions (twins) per node, the pair, the data paths, traffic results.

Rules read these typed facts, never raw text. A fact group that could not be gathered is listed in
`NodeFacts.unavailable` with the reason, so rules that need it skip instead of passing.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Mapping
from decimal import Decimal
from typing import TYPE_CHECKING

import msgspec

from linkcheck.parsers.nccl_probe import GpuReading, NcclLibFile
from linkcheck.values import byte_size

if TYPE_CHECKING:
    from linkcheck.facts.snapshot_model import BaselineFacts


def _exact_sum(rates: list[float | None]) -> float | None:
    """The sum of rates as their decimal text says (no binary float noise); None when one has no number."""
    if any(r is None for r in rates):
        return None
    numbers = [r for r in rates if r is not None]
    if not all(math.isfinite(r) for r in numbers):
        return sum(numbers)
    return float(sum((Decimal(repr(r)) for r in numbers), Decimal(0)))


# Fact groups gathered per node; a node lists those it could not gather in NodeFacts.unavailable.
NODE_GROUPS = frozenset({"netdevs", "addresses", "rdma", "gids", "pcie", "cable", "nccl_settings", "dmesg", "fec",
                         "netplan", "nm_profiles"})


class CableInfo(msgspec.Struct, frozen=True):
    """The cable's identity from the module EEPROM (`ethtool -m`)."""

    vendor_name: str | None
    vendor_pn: str | None
    vendor_sn: str | None
    identifier: str | None
    memory_map: str
    length_m: float | None
    vendor_oui: str | None = None
    vendor_rev: str | None = None
    date_code: str | None = None


class Function(msgspec.Struct, frozen=True):
    """One ConnectX-7 PCIe function: a netdev and its RDMA device. Two of them (twins) serve a cage."""

    node: str
    netdev: str
    bdf: str | None = None
    cage: str | None = None  # phys_port_name: p0 (left cage) or p1 (right cage)
    rdma_dev: str | None = None
    mac: str | None = None
    mtu: int | None = None
    carrier: bool | None = None
    operstate: str | None = None
    ipv4: tuple[str, ...] = ()  # CIDR, e.g. 192.168.100.10/24
    speed_mbps: int | None = None
    pcie_speed_gts: float | None = None
    pcie_width: int | None = None
    pcie_cap_width: int | None = None
    rdma_state: str | None = None
    gid_index: int | None = None  # resolved RoCE v2 IPv4 GID index of the first IPv4
    gid_holes: tuple[int, ...] = ()
    carrier_changes: int | None = None
    cable: CableInfo | None = None
    fec_active: tuple[str, ...] | None = None  # `ethtool --show-fec` Active FEC encoding, e.g. ("RS",); None: unknown
    fec_configured: tuple[str, ...] | None = None  # its Supported/Configured FEC encodings, e.g. ("Auto",)
    firmware: str | None = None  # CX-7 firmware (ethtool -i), e.g. 28.45.4028
    psid: str | None = None  # the board's PSID that mlx5 appends to the firmware version
    driver: str | None = None  # driver and its version, e.g. "mlx5_core 6.17.0-1008-nvidia"
    iommu_type: str | None = None  # its IOMMU group's type: identity (passthrough), DMA or DMA-FQ (translated)

    @property
    def domain(self) -> str | None:
        """PCI domain: 0000 and 0002 are the two independent PCIe Gen5 x4 links of the CX-7."""
        return self.bdf.split(":", 1)[0] if self.bdf and ":" in self.bdf else None

    @property
    def subnets(self) -> tuple[str, ...]:
        return tuple(str(ipaddress.ip_interface(c).network) for c in self.ipv4)

    @property
    def ip(self) -> str | None:
        return self.ipv4[0].split("/", 1)[0] if self.ipv4 else None

    @property
    def label(self) -> str:
        return f"{self.node}:{self.netdev}"


class Neighbour(msgspec.Struct, frozen=True):
    """A resolved peer address: which MAC the kernel will send to for an IP, and out of which netdev."""

    ip: str
    dev: str | None
    mac: str | None


class DmesgHint(msgspec.Struct, frozen=True):
    """A kernel event that matters for a diagnosis (hot-plug, link up/down)."""

    kind: str
    time_s: float | None
    text: str


class NetplanIntent(msgspec.Struct, frozen=True):
    """What the netplan files say about one CX-7 netdev (matched by name, glob or MAC), to compare with it live."""

    netdev: str
    netdef_id: str
    addresses: tuple[str, ...]  # IPv4 CIDRs the files assign
    mtu: int | None
    dhcp4: bool | None
    link_local: tuple[str, ...] | None  # None: not set (netplan's default is [ipv6])
    renderer: str | None
    source: str | None  # the file that defines it, when the dump names files


class NodeIdentity(msgspec.Struct, frozen=True):
    """Who the node is and what software it runs: evidence for an acceptance record and the node comparison.

    None where the node could not tell (no DMI in a VM, a root-only serial without sudo, a tool not installed).
    """

    vendor: str | None = None  # DMI sys_vendor, e.g. NVIDIA, Dell Inc., ASUSTeK COMPUTER INC.
    product: str | None = None  # DMI product_name
    product_version: str | None = None
    board_vendor: str | None = None
    board_name: str | None = None
    serial: str | None = None  # DMI product_serial (root-only); never compared between the nodes
    bios_vendor: str | None = None
    bios_version: str | None = None
    bios_date: str | None = None
    boot_id: str | None = None  # /proc/sys/kernel/random/boot_id: changes at every boot
    perftest_version: str | None = None  # `ib_write_bw -V`
    nccl_version: str | None = None  # from libnccl.so.X.Y.Z, else the version a traffic test's NCCL printed
    nccl_library: str | None = None  # the libnccl.so file it was read from
    nccl_tests_binary: str | None = None  # the all_gather_perf found (PATH, then ~/nccl-tests/build); its version
    # is printed only by a run (rank 0's "# nccl-tests version ..."): acceptance.json's evidence.traffic_versions


class NmRuntimeProfile(msgspec.Struct, frozen=True):
    """A NetworkManager profile kept only under /run (lost at reboot) that configures a CX-7 netdev."""

    netdev: str
    profile_id: str | None
    path: str
    method: str | None  # ipv4.method
    addresses: tuple[str, ...]  # what the profile assigns
    persistent: bool  # an /etc keyfile or a netplan definition also configures the netdev


class NcclView(msgspec.Struct, frozen=True):
    """The NCCL one place would load: the node itself (`container` None) or one container on it, read through the
    node's docker or podman. `state` is `read`, or why the container was not: `not running`, `not found`, `no engine`,
    `unreadable` (the probe failed; `note` says how)."""

    container: str | None = None
    engine: str | None = None
    state: str = "read"
    note: str | None = None
    library: NcclLibFile | None = None  # the libnccl a job started here would load
    chosen_by: str | None = None  # why that one: mapped by a running process, LD_PRELOAD, LD_LIBRARY_PATH, ...
    libraries: tuple[NcclLibFile, ...] = ()  # every libnccl and net plugin file found
    ldconfig: tuple[str, ...] = ()  # the loader cache's libnccl entries, `name => path`
    ld_library_path: str | None = None
    settings: Mapping[str, str] = {}  # NCCL_* as NCCL would see them: environment, then the conf files in order
    setting_sources: Mapping[str, str] = {}
    conf_files: tuple[str, ...] = ()  # the nccl.conf files NCCL reads, in its order
    net_plugin: str | None = None  # the net plugin NCCL would load, or why none
    mapped: tuple[str, ...] = ()  # libnccl files some process here has mapped now

    @property
    def where(self) -> str:
        return "host" if self.container is None else f"container {self.container}"


class NodeFacts(msgspec.Struct, frozen=True):
    """Everything learned about one node."""

    name: str
    hostname: str | None = None
    functions: tuple[Function, ...] = ()
    nccl: Mapping[str, str] = {}  # effective NCCL_* settings (the {} defaults are shared: read-only)
    nccl_sources: Mapping[str, str] = {}  # key -> where it was set
    uptime_s: float | None = None
    mem_available_kib: int | None = None
    dmesg: tuple[DmesgHint, ...] = ()
    neighbours: tuple[Neighbour, ...] = ()
    routes: tuple[tuple[str, str | None], ...] = ()  # (destination CIDR, device)
    arp_ignore: str | None = None
    kernel_release: str | None = None
    os_name: str | None = None  # PRETTY_NAME of /etc/os-release
    netplan: tuple[NetplanIntent, ...] = ()
    identity: NodeIdentity = NodeIdentity()
    nm_runtime: tuple[NmRuntimeProfile, ...] = ()
    iommu_cmdline: tuple[str, ...] | None = None  # the IOMMU words of /proc/cmdline; None: not read
    nccl_views: tuple[NcclView, ...] = ()  # the host's own NCCL (when read), then each container's asked for
    gpus: tuple[GpuReading, ...] | None = None  # utilisation and power per GPU at the inspection; None: not read
    unavailable: Mapping[str, str] = {}  # fact group -> why it is missing

    @property
    def host_nccl(self) -> NcclView | None:
        return next((v for v in self.nccl_views if v.container is None), None)

    @property
    def containers(self) -> tuple[NcclView, ...]:
        return tuple(v for v in self.nccl_views if v.container is not None)

    def function(self, netdev: str) -> Function | None:
        return next((f for f in self.functions if f.netdev == netdev), None)

    @property
    def cabled_cages(self) -> tuple[str, ...]:
        """Cages with at least one twin reporting carrier (or addressed, when carrier is unknown)."""
        cages = {f.cage for f in self.functions if f.cage and f.carrier}
        return tuple(sorted(cages))

    @property
    def used_functions(self) -> tuple[Function, ...]:
        """The twins meant to carry traffic: those with an IPv4 address."""
        return tuple(f for f in self.functions if f.ipv4)


class DataPath(msgspec.Struct, frozen=True):
    """A twin on node a facing its twin on node b (same subnet): one data path."""

    a: Function
    b: Function
    subnet: str

    @property
    def key(self) -> str:
        return f"{self.a.netdev}<->{self.b.netdev}"


class RdmaRun(msgspec.Struct, frozen=True):
    """One ib_write_bw client result for one path, mode and direction."""

    path_key: str
    mode: str  # alone | concurrent
    direction: str  # a->b | b->a
    gbps: float | None
    client_node: str
    device: str | None
    problem: str | None = None  # why no number (client failed, no result row, ...)
    round_id: str = ""  # the bundle's round, when it records one


class NotRun(msgspec.Struct, frozen=True):
    """An ib_write_bw run the plan left out (the quick tier's alone rounds on a path that was not low), and why:
    never a result, never a pass."""

    path_key: str
    mode: str
    direction: str
    reason: str
    round_id: str = ""


class RdmaCounters(msgspec.Struct, frozen=True):
    """Per-HCA port_xmit_data / port_rcv_data deltas (bytes) over a traffic run."""

    node: str
    rdma_dev: str
    xmit_bytes: int
    rcv_bytes: int
    round_id: str = ""


class NcclRun(msgspec.Struct, frozen=True):
    """The nccl-tests result and what the NCCL log says about the transport."""

    busbw_gbs: float | None  # large-message bus bandwidth (max over rows)
    avg_busbw_gbs: float | None
    wrong: int
    network: str | None
    ib_devices: tuple[str, ...]
    channel_net_devs: tuple[int, ...]
    uses_socket: bool
    problem: str | None = None
    largest_bytes: int | None = None  # the largest message size of the sweep
    # Per NCCL log host (hostname cut at the first '.'), the IB devices its "NET/IB : Using" line named, in order
    ib_devices_by_host: tuple[tuple[str, tuple[str, ...]], ...] = ()
    transport_only: bool = False  # a short sweep run to prove the transport (quick tier): bandwidth not judged
    # NVIDIA's statistic: the mean of out-of-place and in-place busbw at 16 GiB (`# Avg bus bandwidth` of NVIDIA's
    # 16 GiB-only run), else at the largest size >= 1 GiB; and that size
    nvidia_busbw_gbs: float | None = None
    nvidia_size_bytes: int | None = None


class LatencyRun(msgspec.Struct, frozen=True):
    """One ib_write_lat client result for one path and message size; times in microseconds (half a round trip)."""

    path_key: str
    size_bytes: int
    typical_us: float | None  # t_typical (the median), else t_avg in duration mode
    client_node: str
    device: str | None
    p99_us: float | None = None
    max_us: float | None = None
    problem: str | None = None  # why no number (client failed, no result row, ...)


class AllReduceRow(msgspec.Struct, frozen=True):
    """One size of the small-message all_reduce sweep: its out-of-place time in microseconds."""

    size_bytes: int
    time_us: float


class AllReduceRun(msgspec.Struct, frozen=True):
    """The small-message all_reduce across the nodes (the decode regime), and the transport its NCCL log names."""

    rows: tuple[AllReduceRow, ...] = ()
    wrong: int = 0
    network: str | None = None
    uses_socket: bool = False
    problem: str | None = None

    @property
    def largest(self) -> AllReduceRow | None:
        return max(self.rows, key=lambda r: r.size_bytes) if self.rows else None

    def time_at(self, size_bytes: int) -> tuple[float, str] | None:
        """The time of one all_reduce of `size_bytes`, and how it was had: a measured row of that size, else a
        straight line between the two measured sizes around it (None outside the measured range)."""
        rows = sorted(self.rows, key=lambda r: r.size_bytes)
        exact = next((r for r in rows if r.size_bytes == size_bytes), None)
        if exact is not None:
            return exact.time_us, f"measured at {byte_size(size_bytes)}"
        for low, high in zip(rows, rows[1:], strict=False):
            if low.size_bytes < size_bytes < high.size_bytes:
                share = (size_bytes - low.size_bytes) / (high.size_bytes - low.size_bytes)
                return (low.time_us + share * (high.time_us - low.time_us),
                        f"interpolated between the measured {low.size_bytes} B ({low.time_us:g} us) and "
                        f"{high.size_bytes} B ({high.time_us:g} us)")
        return None


class BenchFacts(msgspec.Struct, frozen=True):
    """Traffic-test results, when the bundle has them."""

    rdma: tuple[RdmaRun, ...] = ()
    counters: tuple[RdmaCounters, ...] = ()
    nccl: NcclRun | None = None
    flapped: tuple[str, ...] = ()  # subjects whose carrier or GID table changed during the run
    not_run: tuple[NotRun, ...] = ()  # runs the plan left out on purpose (quick tier)
    latency: tuple[LatencyRun, ...] = ()  # ib_write_lat per path and message size (`kind: latency` captures)
    allreduce: AllReduceRun | None = None  # the small-message all_reduce (`kind: latency` captures)

    def totals(self, mode: str = "concurrent") -> dict[str, float | None]:
        """Per direction, the sum of the paths' Gb/s in `mode`; None where a run of it has no number.

        With repetitions of a round the total is per round, and the lowest round total is given: an
        acceptance judges the minimum. The sum is of the rates as written (13.23 + 13.33 = 26.56, not
        26.560000000000002).
        """
        out: dict[str, float | None] = {}
        for direction, sums in self.round_totals(mode).items():
            out[direction] = None if None in sums else min(s for s in sums if s is not None)
        return out

    def round_totals(self, mode: str = "concurrent") -> dict[str, list[float | None]]:
        """Per direction, each round's sum of the paths' Gb/s in `mode` (None: a run of the round has no number)."""
        rounds: dict[str, dict[str, list[float | None]]] = {}
        for run in self.rdma:
            if run.mode == mode:
                rounds.setdefault(run.direction, {}).setdefault(run.round_id, []).append(run.gbps)
        return {direction: [_exact_sum(rates) for rates in by_round.values()]
                for direction, by_round in sorted(rounds.items())}


class ExpectedPath(msgspec.Struct, frozen=True):
    """One path as `linkcheck init` recorded it: the twin on a, the twin on b, their subnet."""

    a: str
    b: str
    subnet: str | None = None


class ExpectedLink(msgspec.Struct, frozen=True):
    """The link as linkcheck.yaml's `link:` section describes it, to compare the live link with."""

    cage: str | None
    paths: tuple[ExpectedPath, ...]
    source: str


class LinkFacts(msgspec.Struct, frozen=True):
    """The pair: both nodes, the data paths between them, and the traffic results."""

    a: NodeFacts
    b: NodeFacts
    paths: tuple[DataPath, ...] = ()
    bench: BenchFacts = BenchFacts()
    bench_present: frozenset[str] = frozenset()  # "rdma", "nccl", "latency" when the bundle holds those tests
    expected: ExpectedLink | None = None  # linkcheck.yaml's `link:` section, when a config is in use
    baseline: BaselineFacts | None = None  # the saved known-good state to compare with (`--baseline`)

    def node(self, name: str) -> NodeFacts:
        """The node of that name (a cluster's pair view keeps the cluster's names), else a for "a" and b."""
        if name in (self.a.name, self.b.name):
            return self.a if name == self.a.name else self.b
        return self.a if name == "a" else self.b

    def ends(self, direction: str) -> tuple[NodeFacts, NodeFacts]:
        """The sending and the receiving node of a run's direction, which names the pair view's ends (`a->b`)."""
        return (self.a, self.b) if direction == "a->b" else (self.b, self.a)

    def named(self, direction: str) -> str:
        """A run's direction by the nodes' own names: a pair's `a->b`, a cluster test's `b->c`."""
        src, dst = self.ends(direction)
        return f"{src.name}->{dst.name}"

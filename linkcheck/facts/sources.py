"""Turn a node's captures into parsed records, remembering why any record is unavailable."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Literal, TypeVar, cast

from linkcheck.errors import ParseError
from linkcheck.model import Capture
from linkcheck.parsers import PARSERS, get_parser
from linkcheck.parsers.ethtool import parse_ethtool, parse_ethtool_fec, parse_ethtool_i, parse_ethtool_m
from linkcheck.parsers.gids import parse_show_gids
from linkcheck.parsers.ibverbs import parse_ibv_devinfo
from linkcheck.parsers.identity import parse_dmi_serial, parse_nccl_install, parse_perftest_version
from linkcheck.parsers.iproute import parse_ip_addr, parse_ip_link, parse_ip_neigh, parse_ip_route
from linkcheck.parsers.kernel import parse_dmesg, parse_meminfo, parse_os_release, parse_sysctl, parse_uptime
from linkcheck.parsers.nccl_conf import parse_nccl_conf, parse_nccl_env
from linkcheck.parsers.nccl_probe import parse_gpu_query, parse_nccl_probe
from linkcheck.parsers.netfilter import parse_ip_forward, parse_iptables_s
from linkcheck.parsers.netplan import parse_netplan
from linkcheck.parsers.networkmanager import parse_nm_connections
from linkcheck.parsers.pcie import parse_lspci
from linkcheck.parsers.rdma import parse_ibdev2netdev, parse_rdma_link
from linkcheck.parsers.sysfs import parse_sysfs_dump

if TYPE_CHECKING:
    from linkcheck.parsers.ethtool import EthtoolDriver, EthtoolFec, EthtoolSettings, ModuleEeprom
    from linkcheck.parsers.gids import GidEntry
    from linkcheck.parsers.ibverbs import IbvDevice
    from linkcheck.parsers.identity import DmiSerial, NcclInstall, PerftestVersion
    from linkcheck.parsers.iproute import IpInterface, IpNeighbour, IpRoute
    from linkcheck.parsers.kernel import DmesgLog, MemInfo, OsRelease, SysctlValues, Uptime
    from linkcheck.parsers.nccl_conf import NcclSettings
    from linkcheck.parsers.nccl_probe import GpuReading, NcclProbe
    from linkcheck.parsers.netfilter import IptablesChains
    from linkcheck.parsers.netplan import NetplanConfig
    from linkcheck.parsers.networkmanager import NmProfiles
    from linkcheck.parsers.pcie import PciLink
    from linkcheck.parsers.rdma import Ibdev2NetdevEntry, RdmaPort
    from linkcheck.parsers.sysfs import SysfsDump

T = TypeVar("T")
SysfsSpec = Literal["sysfs_net", "sysfs_pci", "sysfs_infiniband", "sysfs_dmi"]
NcclSpec = Literal["nccl_env", "nccl_conf", "nccl_conf_user", "nccl_conf_file"]

# Specs whose failure means "nothing configured", not "could not measure".
ABSENT_MEANS_EMPTY = {"nccl_conf", "nccl_conf_user", "nccl_conf_file"}
# The parser kind of each spec whose id is not itself a kind.
PARSER_KIND = {"sysfs_net": "sysfs", "sysfs_infiniband": "sysfs", "sysfs_pci": "sysfs", "sysfs_dmi": "sysfs",
               "nccl_conf_user": "nccl_conf", "nccl_conf_file": "nccl_conf", "netplan_files": "netplan",
               "nccl_libs": "nccl_probe", "container_nccl": "nccl_probe"}
# Exit statuses that still carry the tool's answer: perftest's -V returns FAILURE (1) after printing it.
EXIT_OK = {"perftest_version": frozenset({0, 1})}


def preload_parsers(spec_ids: Iterable[str]) -> None:
    """Import the parsers these specs' captures will need before the captures arrive.

    A live run calls this while the nodes are still answering: the imports (a dozen parser modules) then
    cost no wall time, instead of delaying the diagnosis once the last answer is in.
    """
    for spec in spec_ids:
        kind = PARSER_KIND.get(spec, spec)
        if kind in PARSERS:
            get_parser(kind)


class NodeSources:
    """Parsed records of one node, parsed once each, with the reason for every one that is missing.

    One typed accessor per spec: the fact builders read typed records, never `Any`.
    """

    def __init__(self, node: str, captures: list[Capture]) -> None:
        self.node = node
        self._captures = {(c.spec, c.arg): c for c in captures if not c.meta}
        self._cache: dict[tuple[str, str | None], object] = {}
        self.problems: dict[str, str] = {}

    def args(self, spec: str) -> list[str]:
        """The interface names a per-netdev spec was run for."""
        return sorted(arg for (s, arg) in self._captures if s == spec and arg is not None)

    def capture(self, spec: str, arg: str | None = None) -> Capture | None:
        return self._captures.get((spec, arg))

    def reason(self, spec: str, arg: str | None = None) -> str:
        label = f"{spec}[{arg}]" if arg else spec
        return self.problems.get(label, f"{label}: not collected")

    # -- typed accessors, one per spec --------------------------------------------------------------
    def sysfs(self, spec: SysfsSpec) -> SysfsDump | None:
        return self._parsed(spec, None, parse_sysfs_dump)

    def ip_interfaces(self, spec: Literal["ip_addr", "ip_link"]) -> tuple[IpInterface, ...] | None:
        return self._parsed(spec, None, parse_ip_addr if spec == "ip_addr" else parse_ip_link)

    def ip_route(self) -> tuple[IpRoute, ...] | None:
        return self._parsed("ip_route", None, parse_ip_route)

    def ip_neigh(self) -> tuple[IpNeighbour, ...] | None:
        return self._parsed("ip_neigh", None, parse_ip_neigh)

    def lspci(self) -> tuple[PciLink, ...] | None:
        return self._parsed("lspci", None, parse_lspci)

    def ethtool(self, netdev: str) -> EthtoolSettings | None:
        return self._parsed("ethtool", netdev, parse_ethtool)

    def ethtool_fec(self, netdev: str) -> EthtoolFec | None:
        return self._parsed("ethtool_fec", netdev, parse_ethtool_fec)

    def ethtool_i(self, netdev: str) -> EthtoolDriver | None:
        return self._parsed("ethtool_i", netdev, parse_ethtool_i)

    def os_release(self) -> OsRelease | None:
        return self._parsed("os_release", None, parse_os_release)

    def netplan(self) -> NetplanConfig | None:
        return self._parsed("netplan_files", None, parse_netplan)

    def ethtool_m(self, netdev: str) -> ModuleEeprom | None:
        return self._parsed("ethtool_m", netdev, parse_ethtool_m)

    def rdma_link(self) -> tuple[RdmaPort, ...] | None:
        return self._parsed("rdma_link", None, parse_rdma_link)

    def ibdev2netdev(self) -> tuple[Ibdev2NetdevEntry, ...] | None:
        return self._parsed("ibdev2netdev", None, parse_ibdev2netdev)

    def show_gids(self) -> tuple[GidEntry, ...] | None:
        return self._parsed("show_gids", None, parse_show_gids)

    def ibv_devinfo(self) -> tuple[IbvDevice, ...] | None:
        return self._parsed("ibv_devinfo", None, parse_ibv_devinfo)

    def nccl_settings(self, spec: NcclSpec) -> NcclSettings | None:
        return self._parsed(spec, None, parse_nccl_env if spec == "nccl_env" else parse_nccl_conf)

    def uptime(self) -> Uptime | None:
        return self._parsed("uptime", None, parse_uptime)

    def meminfo(self) -> MemInfo | None:
        return self._parsed("meminfo", None, parse_meminfo)

    def dmesg(self) -> DmesgLog | None:
        return self._parsed("dmesg", None, parse_dmesg)

    def sysctl(self) -> SysctlValues | None:
        return self._parsed("sysctl", None, parse_sysctl)

    def dmi_serial(self) -> DmiSerial | None:
        return self._parsed("dmi_serial", None, parse_dmi_serial)

    def nccl_install(self) -> NcclInstall | None:
        return self._parsed("nccl_install", None, parse_nccl_install)

    def perftest_version(self) -> PerftestVersion | None:
        return self._parsed("perftest_version", None, parse_perftest_version)

    def nm_connections(self) -> NmProfiles | None:
        return self._parsed("nm_connections", None, parse_nm_connections)

    def nccl_probe(self, spec: Literal["nccl_libs", "container_nccl"], arg: str | None = None) -> NcclProbe | None:
        return self._parsed(spec, arg, parse_nccl_probe)

    def gpu_state(self) -> tuple[GpuReading, ...] | None:
        return self._parsed("gpu_state", None, parse_gpu_query)

    def ip_forward(self) -> bool | None:
        return self._parsed("ip_forward", None, parse_ip_forward)

    def iptables(self, spec: Literal["iptables_forward", "iptables_docker_user"]) -> IptablesChains | None:
        return self._parsed(spec, None, parse_iptables_s)

    # -- parsing ------------------------------------------------------------------------------------
    def _parsed(self, spec: str, arg: str | None, parser: Callable[[str], T]) -> T | None:
        """The record `parser` makes of the capture, parsed once; None with the reason kept in `problems`."""
        key = (spec, arg)
        if key not in self._cache:
            self._cache[key] = self._parse(spec, arg, parser)
        return cast("T | None", self._cache[key])

    def _parse(self, spec: str, arg: str | None, parser: Callable[[str], T]) -> T | None:
        label = f"{spec}[{arg}]" if arg else spec
        cap = self._captures.get((spec, arg))
        if cap is None:
            self.problems[label] = f"{label}: not collected"
            return None
        if cap.skipped:
            self.problems[label] = f"{label}: {cap.skipped}"
            return None
        if cap.exit_status not in EXIT_OK.get(spec, (0,)):
            if spec in ABSENT_MEANS_EMPTY:
                return parser("")
            # The first line that is not a `#` comment: iptables-nft writes "# Warning: iptables-legacy tables
            # present ..." to stderr ahead of its error.
            first = next((ln.strip() for ln in cap.stderr.splitlines() if ln.strip() and not ln.startswith("#")),
                         "no error text")
            self.problems[label] = f"{label}: exit {cap.exit_status}: {first[:160]}"
            return None
        try:
            return parser(cap.stdout)
        except ParseError as exc:
            self.problems[label] = f"{label}: {exc.reason}" + (f" (line {exc.line_no})" if exc.line_no else "")
            return None

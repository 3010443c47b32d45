"""Parsers: pure functions from one tool's raw text to a frozen record.

Each `parse_<spec>(text) -> record` handles every version quirk in the tool-formats brief, returns
`None` for absent values, and raises `linkcheck.errors.ParseError` for output it recognises as
broken. Nothing else escapes. `PARSERS` maps the user-facing kind (also the bundle spec id) to its parser.
"""

from __future__ import annotations

from collections.abc import Callable

from linkcheck.parsers.ethtool import (
    parse_ethtool,
    parse_ethtool_fec,
    parse_ethtool_i,
    parse_ethtool_m,
    parse_ethtool_s,
)
from linkcheck.parsers.gids import parse_gid_sysfs, parse_show_gids
from linkcheck.parsers.ibverbs import parse_ibstat, parse_ibv_devinfo
from linkcheck.parsers.identity import parse_dmi_serial, parse_nccl_install, parse_perftest_version
from linkcheck.parsers.iproute import parse_ip_addr, parse_ip_link, parse_ip_neigh, parse_ip_route
from linkcheck.parsers.kernel import parse_dmesg, parse_meminfo, parse_os_release, parse_sysctl, parse_uptime
from linkcheck.parsers.nccl_conf import parse_nccl_conf, parse_nccl_env
from linkcheck.parsers.nccl_log import parse_nccl_log
from linkcheck.parsers.nccl_tests import parse_nccl_tests
from linkcheck.parsers.netplan import parse_netplan
from linkcheck.parsers.networkmanager import parse_nm_connections
from linkcheck.parsers.pcie import parse_lspci
from linkcheck.parsers.perftest import parse_perftest
from linkcheck.parsers.rdma import parse_ibdev2netdev, parse_rdma_link
from linkcheck.parsers.sysfs import parse_sysfs_dump

PARSERS: dict[str, tuple[Callable[[str], object], str]] = {
    # kind: (parser, one-line description)
    "ip_link": (parse_ip_link, "ip -d -j link show"),
    "ip_addr": (parse_ip_addr, "ip -j addr show"),
    "ip_route": (parse_ip_route, "ip -j route show"),
    "ip_neigh": (parse_ip_neigh, "ip -j neigh show"),
    "sysfs": (parse_sysfs_dump, "sysfs dump: '<path>\\t<value>' lines or grep -H output"),
    "gid_sysfs": (parse_gid_sysfs, "sysfs dump of gids/, gid_attrs/types/, gid_attrs/ndevs/"),
    "show_gids": (parse_show_gids, "show_gids (mlnx-tools)"),
    "rdma_link": (parse_rdma_link, "rdma link show, text or -j"),
    "ibdev2netdev": (parse_ibdev2netdev, "ibdev2netdev [-v]"),
    "ibv_devinfo": (parse_ibv_devinfo, "ibv_devinfo [-v]"),
    "ibstat": (parse_ibstat, "ibstat"),
    "ethtool": (parse_ethtool, "ethtool IFACE"),
    "ethtool_i": (parse_ethtool_i, "ethtool -i IFACE"),
    "ethtool_s": (parse_ethtool_s, "ethtool -S IFACE"),
    "ethtool_m": (parse_ethtool_m, "ethtool -m IFACE (SFF-8636, CMIS, hex dump)"),
    "ethtool_fec": (parse_ethtool_fec, "ethtool [-I] [--json] --show-fec IFACE"),
    "lspci": (parse_lspci, "lspci -vv (LnkCap/LnkSta)"),
    "netplan": (parse_netplan, "netplan get, or netplan YAML files"),
    "nccl_env": (parse_nccl_env, "environment (env output), NCCL_* variables"),
    "nccl_conf": (parse_nccl_conf, "/etc/nccl.conf or ~/.nccl.conf"),
    "dmesg": (parse_dmesg, "dmesg (CX-7 hot-plug and mlx5 link events)"),
    "uptime": (parse_uptime, "/proc/uptime"),
    "os_release": (parse_os_release, "/etc/os-release"),
    "sysctl": (parse_sysctl, "sysctl output (arp_ignore, arp_announce, ...)"),
    "meminfo": (parse_meminfo, "/proc/meminfo"),
    "ib_write_bw": (parse_perftest, "perftest BW test output, client or server, text or JSON"),
    "perftest_version": (parse_perftest_version, "ib_write_bw -V"),
    "dmi_serial": (parse_dmi_serial, "grep -H . /sys/class/dmi/id/product_serial (or its value)"),
    "nccl_install": (parse_nccl_install, "libnccl.so* and all_gather_perf found ('lib PATH', 'tests PATH')"),
    "nm_connections": (parse_nm_connections, "NetworkManager keyfiles, tail -v -n +1 dump"),
    "all_gather_perf": (parse_nccl_tests, "nccl-tests all_gather_perf, text or -J JSON"),
    "all_reduce_perf": (parse_nccl_tests, "nccl-tests all_reduce_perf, text or -J JSON"),
    "nccl_log": (parse_nccl_log, "NCCL_DEBUG=INFO log"),
}


def get_parser(kind: str) -> Callable[[str], object]:
    """The parser for `kind`; KeyError when the kind is unknown."""
    return PARSERS[kind][0]

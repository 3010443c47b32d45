"""Parsers: pure functions from one tool's raw text to a frozen record.

Each `parse_<spec>(text) -> record` handles every version quirk in the tool-formats brief, returns
`None` for absent values, and raises `linkcheck.errors.ParseError` for output it recognises as
broken. Nothing else escapes. `PARSERS` maps the user-facing kind (also the bundle spec id) to
"module:function" so the CLI can list them without importing any parser module.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

PARSERS: dict[str, tuple[str, str]] = {
    # kind: (module:function, one-line description)
    "ip_link": ("iproute:parse_ip_link", "ip -d -j link show"),
    "ip_addr": ("iproute:parse_ip_addr", "ip -j addr show"),
    "ip_route": ("iproute:parse_ip_route", "ip -j route show"),
    "ip_neigh": ("iproute:parse_ip_neigh", "ip -j neigh show"),
    "sysfs": ("sysfs:parse_sysfs_dump", "sysfs dump: '<path>\\t<value>' lines or grep -H output"),
    "gid_sysfs": ("gids:parse_gid_sysfs", "sysfs dump of gids/, gid_attrs/types/, gid_attrs/ndevs/"),
    "show_gids": ("gids:parse_show_gids", "show_gids (mlnx-tools)"),
    "rdma_link": ("rdma:parse_rdma_link", "rdma link show, text or -j"),
    "ibdev2netdev": ("rdma:parse_ibdev2netdev", "ibdev2netdev [-v]"),
    "ibv_devinfo": ("ibverbs:parse_ibv_devinfo", "ibv_devinfo [-v]"),
    "ibstat": ("ibverbs:parse_ibstat", "ibstat"),
    "ethtool": ("ethtool:parse_ethtool", "ethtool IFACE"),
    "ethtool_i": ("ethtool:parse_ethtool_i", "ethtool -i IFACE"),
    "ethtool_s": ("ethtool:parse_ethtool_s", "ethtool -S IFACE"),
    "ethtool_m": ("ethtool:parse_ethtool_m", "ethtool -m IFACE (SFF-8636, CMIS, hex dump)"),
    "ethtool_fec": ("ethtool:parse_ethtool_fec", "ethtool [-I] [--json] --show-fec IFACE"),
    "lspci": ("pcie:parse_lspci", "lspci -vv (LnkCap/LnkSta)"),
    "netplan": ("netplan:parse_netplan", "netplan get, or netplan YAML files"),
    "nccl_env": ("nccl_conf:parse_nccl_env", "environment (env output), NCCL_* variables"),
    "nccl_conf": ("nccl_conf:parse_nccl_conf", "/etc/nccl.conf or ~/.nccl.conf"),
    "dmesg": ("kernel:parse_dmesg", "dmesg (CX-7 hot-plug and mlx5 link events)"),
    "uptime": ("kernel:parse_uptime", "/proc/uptime"),
    "os_release": ("kernel:parse_os_release", "/etc/os-release"),
    "sysctl": ("kernel:parse_sysctl", "sysctl output (arp_ignore, arp_announce, ...)"),
    "meminfo": ("kernel:parse_meminfo", "/proc/meminfo"),
    "ib_write_bw": ("perftest:parse_perftest", "perftest BW test output, client or server, text or JSON"),
    "ib_write_lat": ("perftest_lat:parse_perftest_lat",
                     "perftest latency test output (ib_write_lat, ib_read_lat, ib_send_lat), client or server"),
    "perftest_version": ("identity:parse_perftest_version", "ib_write_bw -V"),
    "dmi_serial": ("identity:parse_dmi_serial", "grep -H . /sys/class/dmi/id/product_serial (or its value)"),
    "nccl_install": ("identity:parse_nccl_install", "libnccl.so* and all_gather_perf found ('lib PATH', 'tests PATH')"),
    "nm_connections": ("networkmanager:parse_nm_connections", "NetworkManager keyfiles, tail -v -n +1 dump"),
    "all_gather_perf": ("nccl_tests:parse_nccl_tests", "nccl-tests all_gather_perf, text or -J JSON"),
    "all_reduce_perf": ("nccl_tests:parse_nccl_tests", "nccl-tests all_reduce_perf, text or -J JSON"),
    "nccl_log": ("nccl_log:parse_nccl_log", "NCCL_DEBUG=INFO log"),
    "nccl_probe": ("nccl_probe:parse_nccl_probe",
                   "what NCCL a process would load, on a node or in a container (linkcheck's nccl_probe.sh lines)"),
    "ldconfig": ("nccl_probe:parse_ldconfig_p", "ldconfig -p: the loader cache's entries"),
    "gpu_state": ("nccl_probe:parse_gpu_query", "nvidia-smi --query-gpu=utilization.gpu,power.draw --format=csv"),
    "lldp": ("lldp:parse_lldpctl_json", "lldpctl -f json (or -f json0): each netdev's LLDP neighbours"),
}


def get_parser(kind: str) -> Callable[[str], object]:
    """Import and return the parser for `kind`; KeyError when the kind is unknown."""
    target, _ = PARSERS[kind]
    module_name, func_name = target.split(":")
    module = importlib.import_module(f"linkcheck.parsers.{module_name}")
    func: Callable[[str], object] = getattr(module, func_name)
    return func

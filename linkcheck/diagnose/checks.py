"""The registry of named checks that playbooks may reference by name."""

from __future__ import annotations

from linkcheck.diagnose import checks_bench, checks_gid, checks_link, checks_path
from linkcheck.diagnose.observation import CheckDef


def _p(*names: str) -> frozenset[str]:
    return frozenset(names)


CHECKS: dict[str, CheckDef] = {
    "gid_index_stale": CheckDef(checks_gid.gid_index_stale,
                                _p("node", "hca", "netdev", "ip", "pinned", "resolved", "source", "remove_pin")),
    "gid_index_empty_pin": CheckDef(checks_gid.gid_index_empty_pin, _p("node", "source", "remove_pin")),
    "gid_index_differs": CheckDef(checks_gid.gid_index_differs, _p("indices", "distinct")),
    "link_down": CheckDef(checks_link.link_down, _p("node", "netdev", "what")),
    "link_changed": CheckDef(checks_link.link_changed, _p("what", "config")),
    "twins_same_subnet": CheckDef(checks_link.twins_same_subnet, _p("node", "subnet", "netdevs", "second")),
    "cable_not_approved": CheckDef(checks_link.cable_not_approved, _p("node", "pn", "vendor", "sn", "note",
                                                                      "approved"),
                                   _p("approved_part_numbers")),
    "single_pcie_path": CheckDef(checks_path.single_pcie_path, _p("what", "node", "remedy"),
                                 _p("single_path_total_min_gbps", "single_path_total_max_gbps",
                                    "idle_path_max_gbps", "idle_counter_share")),
    "hotplug_degraded": CheckDef(checks_bench.hotplug_degraded, _p("path", "gbps", "host_a", "host_b"),
                                 _p("degraded_min_gbps", "degraded_max_gbps", "late_plug_after_boot_s")),
    "below_nominal": CheckDef(checks_bench.below_nominal, _p("path", "gbps", "pct"),
                              _p("degraded_min_gbps", "degraded_max_gbps", "nominal_min_gbps")),
    "nccl_socket_fallback": CheckDef(checks_bench.nccl_socket_fallback, _p("network")),
    "nccl_busbw_low": CheckDef(checks_bench.nccl_busbw_low, _p("busbw", "wrong", "band"),
                               _p("min_busbw_gbs", "fail_below_busbw_gbs")),
}

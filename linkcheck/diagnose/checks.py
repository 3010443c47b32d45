"""The registry of named checks that playbooks may reference by name."""

from __future__ import annotations

from linkcheck.diagnose import (
    checks_bench,
    checks_drift,
    checks_fec,
    checks_gid,
    checks_link,
    checks_nccl_hca,
    checks_netplan,
    checks_nodes,
    checks_path,
)
from linkcheck.diagnose.observation import CheckDef


def _t(*names: str) -> frozenset[str]:
    return frozenset(names)


CHECKS: dict[str, CheckDef] = {
    "gid_index_stale": CheckDef(checks_gid.gid_index_stale, checks_gid.StalePinValues),
    "gid_index_empty_pin": CheckDef(checks_gid.gid_index_empty_pin, checks_gid.EmptyPinValues),
    "gid_index_differs": CheckDef(checks_gid.gid_index_differs, checks_gid.IndexSpreadValues),
    "link_down": CheckDef(checks_link.link_down, checks_link.LinkDownValues),
    "link_changed": CheckDef(checks_link.link_changed, checks_link.LinkChangedValues),
    "twins_same_subnet": CheckDef(checks_link.twins_same_subnet, checks_link.SharedSubnetValues),
    "cable_not_approved": CheckDef(checks_link.cable_not_approved, checks_link.CableValues,
                                   _t("approved_part_numbers")),
    "single_pcie_path": CheckDef(checks_path.single_pcie_path, checks_path.SinglePathValues,
                                 _t("single_path_total_min_gbps", "single_path_total_max_gbps",
                                    "idle_path_max_gbps", "idle_counter_share")),
    "hotplug_degraded": CheckDef(checks_bench.hotplug_degraded, checks_bench.HotplugValues,
                                 _t("degraded_min_gbps", "degraded_max_gbps", "late_plug_after_boot_s")),
    "below_nominal": CheckDef(checks_bench.below_nominal, checks_bench.BelowNominalValues,
                              _t("degraded_min_gbps", "degraded_max_gbps", "nominal_min_gbps")),
    "replugged_since_boot": CheckDef(checks_bench.replugged_since_boot, checks_bench.ReplugValues,
                                     _t("late_plug_after_boot_s")),
    "nccl_hca_pairing": CheckDef(checks_nccl_hca.nccl_hca_pairing, checks_nccl_hca.HcaPairingValues),
    "nccl_hca_uncabled": CheckDef(checks_nccl_hca.nccl_hca_uncabled, checks_nccl_hca.HcaUncabledValues),
    "netplan_not_applied": CheckDef(checks_netplan.netplan_not_applied, checks_netplan.NetplanValues),
    "nm_profile_runtime_only": CheckDef(checks_netplan.nm_profile_runtime_only, checks_netplan.RuntimeProfileValues),
    "nodes_differ": CheckDef(checks_nodes.nodes_differ, checks_nodes.NodesDifferValues),
    "fec_not_rs": CheckDef(checks_fec.fec_not_rs, checks_fec.FecValues),
    "nccl_socket_fallback": CheckDef(checks_bench.nccl_socket_fallback, checks_bench.SocketFallbackValues),
    "nccl_busbw_low": CheckDef(checks_bench.nccl_busbw_low, checks_bench.BusbwValues,
                               _t("min_busbw_gbs", "fail_below_busbw_gbs")),
    "drift_identity": CheckDef(checks_drift.drift_identity, checks_drift.ChangeValues),
    "drift_config": CheckDef(checks_drift.drift_config, checks_drift.ChangeValues),
    "drift_gid_index": CheckDef(checks_drift.drift_gid_index, checks_drift.GidMoveValues),
    "drift_throughput": CheckDef(checks_drift.drift_throughput, checks_drift.ThroughputValues,
                                 _t("warn_below_ratio", "fail_below_ratio")),
}

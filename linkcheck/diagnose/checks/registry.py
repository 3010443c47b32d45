"""The registry of named checks that playbooks may reference by name."""

from __future__ import annotations

from linkcheck.diagnose.checks import (
    bench,
    cluster,
    cluster_drift,
    drift,
    fec,
    gid,
    link,
    nccl_hca,
    netplan,
    nodes,
    path,
)
from linkcheck.diagnose.observation import CheckDef, ClusterCheckDef


def _t(*names: str) -> frozenset[str]:
    return frozenset(names)


CHECKS: dict[str, CheckDef] = {
    "gid_index_stale": CheckDef(gid.gid_index_stale, gid.StalePinValues),
    "link_down": CheckDef(link.link_down, link.LinkDownValues),
    "link_changed": CheckDef(link.link_changed, link.LinkChangedValues),
    "cable_not_approved": CheckDef(link.cable_not_approved, link.CableValues,
                                   _t("approved_part_numbers")),
    "single_pcie_path": CheckDef(path.single_pcie_path, path.SinglePathValues,
                                 _t("single_path_total_min_gbps", "single_path_total_max_gbps",
                                    "idle_path_max_gbps", "idle_counter_share")),
    "hotplug_degraded": CheckDef(bench.hotplug_degraded, bench.HotplugValues,
                                 _t("degraded_min_gbps", "degraded_max_gbps", "late_plug_after_boot_s")),
    "below_nominal": CheckDef(bench.below_nominal, bench.BelowNominalValues,
                              _t("degraded_min_gbps", "degraded_max_gbps", "nominal_min_gbps")),
    "replugged_since_boot": CheckDef(bench.replugged_since_boot, bench.ReplugValues,
                                     _t("late_plug_after_boot_s")),
    "nccl_hca_pairing": CheckDef(nccl_hca.nccl_hca_pairing, nccl_hca.HcaPairingValues),
    "netplan_not_applied": CheckDef(netplan.netplan_not_applied, netplan.NetplanValues),
    "nm_profile_runtime_only": CheckDef(netplan.nm_profile_runtime_only, netplan.RuntimeProfileValues),
    "nodes_differ": CheckDef(nodes.nodes_differ, nodes.NodesDifferValues),
    "fec_not_rs": CheckDef(fec.fec_not_rs, fec.FecValues),
    "nccl_busbw_low": CheckDef(bench.nccl_busbw_low, bench.BusbwValues,
                               _t("min_busbw_gbs", "fail_below_busbw_gbs")),
    "drift_throughput": CheckDef(drift.drift_throughput, drift.ThroughputValues,
                                 _t("warn_below_ratio", "fail_below_ratio")),
}

# Checks over a cluster's facts (linkcheck.cluster.facts.ClusterFacts), for rules of a cluster's scopes.
CLUSTER_CHECKS: dict[str, ClusterCheckDef] = {
    "cluster_nodes_differ": ClusterCheckDef(cluster.cluster_nodes_differ, cluster.ClusterNodesDifferValues),
    "cluster_drift_node": ClusterCheckDef(cluster_drift.cluster_drift_node, cluster_drift.NodeDriftValues),
    "cluster_drift_node_settings": ClusterCheckDef(cluster_drift.cluster_drift_node_settings,
                                                   cluster_drift.NodeSettingsValues),
    "cluster_drift_cabling": ClusterCheckDef(cluster_drift.cluster_drift_cabling, cluster_drift.CablingValues),
}

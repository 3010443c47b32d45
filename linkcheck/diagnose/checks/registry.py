"""The registry of named checks that playbooks may reference by name."""

from __future__ import annotations

from linkcheck.diagnose.checks import (
    bench,
    containers,
    drift,
    fec,
    gid,
    link,
    nccl_hca,
    netplan,
    nodes,
    path,
)
from linkcheck.diagnose.observation import CheckDef


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
    "nccl_build_differs": CheckDef(containers.nccl_build_differs, containers.BuildDiffersValues),
    "container_settings_contradict": CheckDef(containers.container_settings_contradict,
                                              containers.ContradictValues),
    "container_not_read": CheckDef(containers.container_not_read, containers.NotReadValues),
    "nccl_known_bad": CheckDef(containers.nccl_known_bad, containers.KnownBadValues),
    "gpu_waiting_in_collective": CheckDef(containers.gpu_waiting_in_collective, containers.WaitingValues,
                                          _t("min_utilization_pct", "max_power_w")),
    # Checks over a cluster's facts (linkcheck.cluster.facts.ClusterFacts), for rules of a cluster's scopes.
    "cluster_nodes_differ": CheckDef(nodes.cluster_nodes_differ, nodes.ClusterNodesDifferValues, cluster=True),
    "cluster_drift_node": CheckDef(drift.cluster_drift_node, drift.NodeDriftValues, cluster=True),
    "cluster_drift_node_settings": CheckDef(drift.cluster_drift_node_settings,
                                            drift.NodeSettingsValues, cluster=True),
    "cluster_drift_cabling": CheckDef(drift.cluster_drift_cabling, drift.CablingValues, cluster=True),
    "cluster_nccl_build_differs": CheckDef(containers.cluster_nccl_build_differs,
                                           containers.BuildDiffersValues, cluster=True),
    "cluster_container_settings_contradict": CheckDef(containers.cluster_container_settings_contradict,
                                                      containers.ContradictValues, cluster=True),
    "cluster_container_not_read": CheckDef(containers.cluster_container_not_read, containers.NotReadValues,
                                           cluster=True),
    "cluster_nccl_known_bad": CheckDef(containers.cluster_nccl_known_bad, containers.KnownBadValues, cluster=True),
    "cluster_gpu_waiting_in_collective": CheckDef(containers.cluster_gpu_waiting_in_collective,
                                                  containers.WaitingValues,
                                                  _t("min_utilization_pct", "max_power_w"), cluster=True),
    "cluster_container_subnet_routing": CheckDef(containers.cluster_container_subnet_routing,
                                                 containers.SubnetRoutingValues, cluster=True),
}

# Named checks that judge the known-bad list: the loader hands them every playbook's `known_bad:` entries.
KNOWN_BAD_CHECKS = frozenset({"nccl_known_bad", "cluster_nccl_known_bad"})

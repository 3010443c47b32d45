"""The scopes of a cluster's rules and the facts each one has, with what kind of value each fact holds.

A cluster's rules are judged over every inspected node and the topology inferred from them
(linkcheck.cluster.facts.ClusterFacts), never over a pair's facts: a rule of one of these scopes is left out of a
pair's diagnosis, and a pair's rule out of a cluster's.
"""

from __future__ import annotations

# fact -> number | bool | text | other, per scope
CLUSTER_FACTS: dict[str, dict[str, str]] = {
    # One subject, `cluster`: the layout and whether NVIDIA documents it.
    "cluster": {"layout": "text", "supported": "bool", "node_count": "number", "nodes": "text",
                "unsupported_reason": "text", "ring": "bool", "uninspected": "text",
                # Against the cabling `linkcheck init` recorded (linkcheck.yaml `cluster:`), when there is one.
                "recorded": "bool", "config": "text", "cabling_changed": "bool", "cables_gone": "text",
                "cables_new": "text", "switch_gone": "text", "switch_new": "text",
                # The NCCL run across every node (linkcheck.bench.nccl): its result, and the nodes whose own
                # rank fell back to sockets.
                "nccl_run": "bool", "nccl_busbw_gbs": "number", "nccl_nvidia_busbw_gbs": "number",
                "nccl_avg_busbw_gbs": "number",
                "nccl_wrong": "number", "nccl_largest_bytes": "number", "nccl_problem": "text",
                "nccl_transport_only": "bool", "nccl_ranks": "number", "nccl_fallback_nodes": "text",
                "nccl_fallback_count": "number", "nccl_proven": "bool"},
    # One subject per node: whether it must carry traffic between two others and whether it can; also its NCCL
    # settings as nccl.VAR and nccl_source.VAR, as a pair's node has them.
    "cluster_node": {"name": "text", "hostname": "text", "ip_forward": "bool", "transit": "bool",
                     "transit_for": "text", "unreached": "text", "unreached_count": "number", "route_add": "text",
                     "forward_policy": "text", "forward_accepted": "bool", "forward_decided_by": "text",
                     "docker_user": "bool", "sockets_on_fabric": "bool", "sockets_off_fabric": "bool",
                     "forward_rules": "text",
                     # NCCL on a ring: its library version, whether that is older than 2.30.7 (no subnet-aware
                     # routing), NCCL_IB_HCA against the node's own cabled HCAs and the other nodes', and whether
                     # NCCL_ALGO leaves only Ring.
                     "ring": "bool", "ring_size": "number", "nccl_version": "text", "nccl_too_old": "bool",
                     "hca_copied": "bool", "hca_foreign": "text", "hca_own": "text", "hca_fits": "text",
                     "nccl_algo_ring": "bool", "runtime_connect_off": "bool", "runtime_connect_setting": "text",
                     "ring_settings_lacking": "text", "ring_settings_lacking_count": "number",
                     # The traffic tests (check --quick/--bench over a cluster): the partners whose test with this
                     # node measured, those that were slow, and whether it is slow with every partner while other
                     # nodes pass with each other.
                     "traffic": "bool", "partners_tested": "number", "partners_slow": "number",
                     "slow_with": "text", "slow_everywhere": "bool",
                     # Its rank in the NCCL run across every node, from the lines its host printed: the NCCL_IB_HCA
                     # it was given and its own cabled HCAs, whether its NCCL fell back to sockets, whether every
                     # channel ran over NET/IB, and the devices and channels behind that.
                     "nccl_run": "bool", "nccl_rank_seen": "bool", "nccl_host": "text", "nccl_given_hca": "text",
                     "nccl_own_hcas": "text", "nccl_problem": "text", "nccl_fallback_nodes": "text",
                     "nccl_fallback_count": "number", "nccl_fell_back": "bool", "nccl_ib_proven": "bool",
                     "nccl_network": "text", "nccl_ib_devices": "text", "nccl_no_ib_device": "bool",
                     "nccl_socket_devices": "text", "nccl_channels": "number", "nccl_socket_channels": "number",
                     "nccl_foreign": "text"},
    # One subject per CX-7 function that is addressed and on a cable or a switch segment (a hop), `a:netdev`; the
    # function's own facts come from the `function` scope.
    "port": {"switched": "bool", "hop": "text", "cluster_mtu": "number", "mtu_uniform": "bool",
             "speed_gbps": "number"},
    # One subject per cable, `cable a:p0<->b:p1`.
    "cable": {"key": "text", "a": "text", "a_cage": "text", "b": "text", "b_cage": "text", "ring": "bool",
              "same_port": "bool", "recable": "bool", "recable_p0": "text", "recable_p1": "text",
              "path_count": "number", "confirmed": "bool",
              # Its traffic test: measured, slow, the lowest rate, the pair rules that fired on it, whether a named
              # trap explains it, whether both its nodes pass elsewhere, and a passing cable to swap it with.
              "tested": "bool", "slow": "bool", "lowest_gbps": "number", "traps": "text", "trap_named": "bool",
              "ends_pass_elsewhere": "bool", "swap_with": "text"},
    # One subject per fault the topology flags (dangling, unaddressed, isolated, link_down, ...), `kind subject`.
    "flag": {"kind": "text", "about": "text", "message": "text"},
}
CLUSTER_SCOPES = tuple(CLUSTER_FACTS)

"""`ethtool IFACE`, `ethtool -i`, `ethtool -S` for mlx5 CX-7 functions, run as a normal user.

Netlink path of ethtool 6.x (netlink/settings.c): link modes, link info, then WOL (refused for a
non-root user: "netlink error: Operation not permitted" on stderr), message level, link state.
"""

from __future__ import annotations

from tests.emulators.node import Function, Node

Output = tuple[str, str, int]

# mlx5 on GB10 lists modes up to 100G CR4 although the port runs 200G (Jiangw, spark-link.md §1.4).
_MODES = ("1000baseKX/Full", "10000baseKR/Full", "40000baseKR4/Full", "40000baseCR4/Full", "40000baseSR4/Full",
          "40000baseLR4/Full", "25000baseCR/Full", "25000baseKR/Full", "25000baseSR/Full", "50000baseCR2/Full",
          "50000baseKR2/Full", "100000baseKR4/Full", "100000baseSR4/Full", "100000baseCR4/Full")


def _modes(label: str) -> str:
    head = f"{label}:"
    head = head + " " * max(1, 24 - len(head))
    pad = "\n\t" + " " * len(head)
    return "\t" + head + pad.join(_MODES) + "\n"


def _newer(version: str, major: int, minor: int) -> bool:
    try:
        parts = [int(x) for x in version.split(".")[:2]]
    except ValueError:
        return True
    return (parts + [0])[:2] >= [major, minor]


def _no_device(name: str) -> Output:
    err = "netlink error: no device matches name (offset 24)\nnetlink error: No such device\n" * 5
    return "No data available\n", err, 75


def render_ethtool(node: Node, netdev: str, root: bool = False) -> Output:
    """As a user (the spec) the WOL query is refused; as root the Wake-on lines appear instead."""
    try:
        fn = node.function(netdev)
    except KeyError:
        return _no_device(netdev)
    cabled = node.cable_in(fn.cage) is not None
    text = f"Settings for {fn.netdev}:\n\tSupported ports: [ Backplane ]\n"
    text += _modes("Supported link modes")
    text += "\tSupported pause frame use: Symmetric\n\tSupports auto-negotiation: Yes\n"
    text += "\tSupported FEC modes: None\t RS\t BASER\n"
    text += _modes("Advertised link modes")
    text += "\tAdvertised pause frame use: Symmetric\n\tAdvertised auto-negotiation: Yes\n"
    text += "\tAdvertised FEC modes: None\t RS\t BASER\n"
    text += ("\tLink partner advertised link modes:  Not reported\n"
             "\tLink partner advertised pause frame use: No\n"
             "\tLink partner advertised auto-negotiation: Yes\n"
             "\tLink partner advertised FEC modes: Not reported\n")
    if fn.link_up:
        text += f"\tSpeed: {fn.speed_mbps}Mb/s\n\tLanes: 2\n\tDuplex: Full\n"
    else:
        text += "\tSpeed: Unknown!\n\tDuplex: Unknown! (255)\n"
    text += "\tAuto-negotiation: on\n"
    text += f"\tPort: {'Direct Attach Copper' if cabled else 'Other'}\n"
    text += "\tPHYAD: 0\n\tTransceiver: internal\n"
    if root:
        text += "\tSupports Wake-on: d\n\tWake-on: d\n"
    text += "\tCurrent message level: 0x00000004 (4)\n\t\t\t       link\n"
    if fn.link_up:
        text += "\tLink detected: yes\n"
    else:
        text += "\tLink detected: no\n" if cabled else "\tLink detected: no (No cable)\n"
    if _newer(node.version("ethtool"), 6, 6):
        text += f"\tLink Down Events: {fn.link_downed}\n"
    return text, "" if root else "netlink error: Operation not permitted\n", 0


def fec_active(fn: Function) -> str:
    """mlx5 runs RS(544,514) on a 200G PAM4 link that is up; with no link there is no active FEC ("None")."""
    if fn.fec_active is not None:
        return fn.fec_active
    return "RS" if fn.link_up else "None"


def render_ethtool_fec(node: Node, netdev: str, as_json: bool = False, statistics: bool = False) -> Output:
    """`ethtool [--json] [-I] --show-fec IFACE` on the netlink path (netlink/fec.c): before ethtool 5.18 the
    prompt read "Configured FEC encodings:". mlx5 gives RS block counts and no statistics while FEC is off."""
    try:
        fn = node.function(netdev)
    except KeyError:
        return "", "netlink error: no device matches name (offset 24)\nnetlink error: No such device\n", 1
    active = fec_active(fn)
    stats = [("corrected_blocks", 0), ("uncorrectable_blocks", 0)] if statistics and active == "RS" else []
    if as_json:
        config = ", ".join(f'"{m}"' for m in fn.fec_configured.split())
        text = (f'[ {{\n        "ifname": "{fn.netdev}",\n        "config": [ {config} ],\n'
                f'        "active": [ "{active}" ]')
        if stats:
            items = [f'            "{k}": {{\n                "total": {v}\n            }}' for k, v in stats]
            text += ',\n        "statistics": {\n' + ",\n".join(items) + "\n        }"
        return text + "\n    } ]\n", "", 0
    prompt = "Supported/Configured" if _newer(node.version("ethtool"), 5, 18) else "Configured"
    text = (f"FEC parameters for {fn.netdev}:\n{prompt} FEC encodings: {fn.fec_configured}\n"
            f"Active FEC encoding: {active}\n")
    if stats:
        text += "Statistics:\n" + "".join(f"  {k}: {v}\n" for k, v in stats)
    return text, "", 0


def render_ethtool_i(node: Node, netdev: str) -> Output:
    try:
        fn = node.function(netdev)
    except KeyError:
        return "", "Cannot get driver information: No such device\n", 71
    text = (
        "driver: mlx5_core\n"
        f"version: {node.kernel_release}\n"
        f"firmware-version: {fn.fw_ver} (NVD0000000087)\n"
        "expansion-rom-version: \n"
        f"bus-info: {fn.bdf}\n"
        "supports-statistics: yes\n"
        "supports-test: yes\n"
        "supports-eeprom-access: no\n"
        "supports-register-dump: no\n"
        "supports-priv-flags: yes\n"
    )
    return text, "", 0


def _stats(fn: Function) -> list[tuple[str, int]]:
    tx_bytes, rx_bytes = fn.port_xmit_data * 4, fn.port_rcv_data * 4
    tx_pkts, rx_pkts = tx_bytes // 4096 + 1234, rx_bytes // 4096 + 1187
    return [
        ("rx_packets", 1187), ("rx_bytes", 151_936), ("tx_packets", 1234), ("tx_bytes", 160_420),
        ("tx_tso_packets", 0), ("tx_tso_bytes", 0), ("rx_lro_packets", 0), ("rx_lro_bytes", 0),
        ("rx_csum_unnecessary", 1102), ("rx_csum_none", 85), ("rx_xdp_drop", 0), ("tx_csum_partial", 12),
        ("tx_queue_stopped", 0), ("tx_queue_dropped", 0), ("tx_xmit_more", 0), ("tx_recover", 0),
        ("rx_wqe_err", 0), ("rx_buff_alloc_err", 0), ("rx_out_of_buffer", 0), ("rx_if_down_packets", 0),
        ("rx_steer_missed_packets", 0), ("rx_vport_unicast_packets", rx_pkts),
        ("rx_vport_unicast_bytes", rx_bytes), ("tx_vport_unicast_packets", tx_pkts),
        ("tx_vport_unicast_bytes", tx_bytes), ("rx_vport_rdma_unicast_packets", rx_bytes // 4096),
        ("rx_vport_rdma_unicast_bytes", rx_bytes), ("tx_vport_rdma_unicast_packets", tx_bytes // 4096),
        ("tx_vport_rdma_unicast_bytes", tx_bytes), ("tx_packets_phy", tx_pkts), ("rx_packets_phy", rx_pkts),
        ("rx_crc_errors_phy", 0), ("tx_bytes_phy", tx_bytes), ("rx_bytes_phy", rx_bytes),
        ("tx_multicast_phy", 40), ("tx_broadcast_phy", 6), ("rx_multicast_phy", 38), ("rx_broadcast_phy", 7),
        ("rx_in_range_len_errors_phy", 0), ("rx_out_of_range_len_phy", 0), ("rx_oversize_pkts_phy", 0),
        ("rx_symbol_err_phy", 0), ("tx_mac_control_phy", 0), ("rx_mac_control_phy", 0),
        ("rx_unsupported_op_phy", 0), ("rx_pause_ctrl_phy", 0), ("tx_pause_ctrl_phy", 0),
        ("rx_discards_phy", 0), ("tx_discards_phy", 0), ("tx_errors_phy", 0), ("rx_undersize_pkts_phy", 0),
        ("rx_fragments_phy", 0), ("rx_jabbers_phy", 0), ("rx_64_bytes_phy", 12),
        ("rx_pcs_symbol_err_phy", 0), ("rx_corrected_bits_phy", 0), ("link_down_events_phy", fn.link_downed),
        ("rx_prio0_bytes", rx_bytes), ("rx_prio0_packets", rx_pkts), ("rx_prio0_discards", 0),
        ("tx_prio0_bytes", tx_bytes), ("tx_prio0_packets", tx_pkts), ("rx_prio3_pause", 0),
        ("rx_prio3_pause_duration", 0), ("tx_prio3_pause", 0), ("tx_prio3_pause_duration", 0),
        ("rx_prio3_pause_transition", 0), ("rx_prio3_discards", 0), ("tx_pause_storm_warning_events", 0),
        ("tx_pause_storm_error_events", 0), ("module_unplug", 0), ("module_bus_stuck", 0),
        ("module_high_temp", 0), ("module_bad_shorted", 0),
    ]


def render_ethtool_s(node: Node, netdev: str) -> Output:
    try:
        fn = node.function(netdev)
    except KeyError:
        return "", "Cannot get stats strings information: No such device\n", 94
    return "NIC statistics:\n" + "".join(f"     {k}: {v}\n" for k, v in _stats(fn)), "", 0

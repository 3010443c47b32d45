"""The device-capability block `ibv_devinfo -v` prints for a ConnectX-7 (mlx5) function, rdma-core 50.

Flag names and their order come from devinfo.c (print_device_cap_flags and friends); the values are
those of a CX-7 PF. Nothing here varies per node, but keeping the block makes the output full length.
"""

from __future__ import annotations

# enum ibv_device_cap_flags, in devinfo.c's print order
_CAP_FLAGS: tuple[tuple[int, str], ...] = (
    (1 << 0, "RESIZE_MAX_WR"), (1 << 1, "BAD_PKEY_CNTR"), (1 << 2, "BAD_QKEY_CNTR"), (1 << 3, "RAW_MULTI"),
    (1 << 4, "AUTO_PATH_MIG"), (1 << 5, "CHANGE_PHY_PORT"), (1 << 6, "UD_AV_PORT_ENFORCE"),
    (1 << 7, "CURR_QP_STATE_MOD"), (1 << 8, "SHUTDOWN_PORT"), (1 << 9, "INIT_TYPE"),
    (1 << 10, "PORT_ACTIVE_EVENT"), (1 << 11, "SYS_IMAGE_GUID"), (1 << 12, "RC_RNR_NAK_GEN"),
    (1 << 13, "SRQ_RESIZE"), (1 << 14, "N_NOTIFY_CQ"), (1 << 17, "MEM_WINDOW"), (1 << 18, "UD_IP_CSUM"),
    (1 << 20, "XRC"), (1 << 21, "MEM_MGT_EXTENSIONS"), (1 << 23, "MEM_WINDOW_TYPE_2A"),
    (1 << 24, "MEM_WINDOW_TYPE_2B"), (1 << 25, "RC_IP_CSUM"), (1 << 26, "RAW_IP_CSUM"),
    (1 << 29, "MANAGED_FLOW_STEERING"),
)
DEVICE_CAP_FLAGS = 0x25D72C36
DEVICE_CAP_FLAGS_EX = (1 << 34) | (1 << 36) | DEVICE_CAP_FLAGS  # RAW_SCATTER_FCS | PCI_WRITE_END_PADDING
_FLAG = "\t\t\t\t\t"


def _cap_flags(value: int) -> str:
    known = 0
    out = ""
    for bit, name in _CAP_FLAGS:
        known |= bit
        if value & bit:
            out += f"{_FLAG}{name}\n"
    if value & ~known & 0xFFFFFFFF:
        out += f"{_FLAG}Unknown flags: 0x{value & ~known & 0xFFFFFFFF:X}\n"
    return out


def _odp(*names: str) -> str:
    return "".join(f"{_FLAG}{n}\n" for n in names) if names else f"{_FLAG}NO SUPPORT\n"


def device_caps_text() -> str:
    """The lines between `phys_port_cnt:` and the first `port:` block."""
    rows = [
        ("max_mr_size:\t\t\t", "0xffffffffffffffff"), ("page_size_cap:\t\t\t", "0xfffffffffffff000"),
        ("max_qp:\t\t\t\t", "131072"), ("max_qp_wr:\t\t\t", "32768"),
    ]
    text = "".join(f"\t{k}{v}\n" for k, v in rows)
    text += f"\tdevice_cap_flags:\t\t0x{DEVICE_CAP_FLAGS:08x}\n" + _cap_flags(DEVICE_CAP_FLAGS)
    rows = [
        ("max_sge:\t\t\t", "30"), ("max_sge_rd:\t\t\t", "30"), ("max_cq:\t\t\t\t", "16777216"),
        ("max_cqe:\t\t\t", "4194303"), ("max_mr:\t\t\t\t", "16777216"), ("max_pd:\t\t\t\t", "8388608"),
        ("max_qp_rd_atom:\t\t\t", "16"), ("max_ee_rd_atom:\t\t\t", "0"), ("max_res_rd_atom:\t\t", "2097152"),
        ("max_qp_init_rd_atom:\t\t", "16"), ("max_ee_init_rd_atom:\t\t", "0"),
        ("atomic_cap:\t\t\t", "ATOMIC_HCA (1)"), ("max_ee:\t\t\t\t", "0"), ("max_rdd:\t\t\t", "0"),
        ("max_mw:\t\t\t\t", "16777216"), ("max_raw_ipv6_qp:\t\t", "0"), ("max_raw_ethy_qp:\t\t", "0"),
        ("max_mcast_grp:\t\t\t", "2097152"), ("max_mcast_qp_attach:\t\t", "240"),
        ("max_total_mcast_qp_attach:\t", "503316480"), ("max_ah:\t\t\t\t", "2147483647"),
        ("max_fmr:\t\t\t", "0"), ("max_srq:\t\t\t", "8388608"), ("max_srq_wr:\t\t\t", "32767"),
        ("max_srq_sge:\t\t\t", "31"), ("max_pkeys:\t\t\t", "128"), ("local_ca_ack_delay:\t\t", "16"),
    ]
    text += "".join(f"\t{k}{v}\n" for k, v in rows)
    text += "\tgeneral_odp_caps:\n" + _odp("ODP_SUPPORT", "ODP_SUPPORT_IMPLICIT")
    text += "\trc_odp_caps:\n" + _odp("SUPPORT_SEND", "SUPPORT_RECV", "SUPPORT_WRITE", "SUPPORT_READ",
                                      "SUPPORT_ATOMIC", "SUPPORT_SRQ")
    text += "\tuc_odp_caps:\n" + _odp()
    text += "\tud_odp_caps:\n" + _odp("SUPPORT_SEND")
    text += "\txrc_odp_caps:\n" + _odp("SUPPORT_SEND", "SUPPORT_WRITE", "SUPPORT_READ", "SUPPORT_ATOMIC",
                                       "SUPPORT_SRQ")
    text += "\tcompletion timestamp_mask:\t\t\t0x7fffffffffffffff\n"
    text += "\thca_core_clock:\t\t\t156250kHZ\n"
    text += "\traw packet caps:\n" + _odp("C-VLAN stripping offload", "Scatter FCS offload", "IP csum offload",
                                         "Delay drop")
    text += f"\tdevice_cap_flags_ex:\t\t0x{DEVICE_CAP_FLAGS_EX:X}\n"
    text += f"{_FLAG}RAW_SCATTER_FCS\n{_FLAG}PCI_WRITE_END_PADDING\n"
    text += "\ttso_caps:\n\t\tmax_tso:\t\t\t262144\n\t\tsupported_qp:\n" + _odp("SUPPORT_RAW_PACKET")
    text += (
        "\trss_caps:\n"
        "\t\tmax_rwq_indirection_tables:\t\t\t1048576\n"
        "\t\tmax_rwq_indirection_table_size:\t\t\t2048\n"
        "\t\trx_hash_function:\t\t\t\t0x1\n"
        "\t\trx_hash_fields_mask:\t\t\t\t0x800000FF\n"
        "\t\tsupported_qp:\n" + _odp("SUPPORT_RAW_PACKET")
    )
    text += "\tmax_wq_type_rq:\t\t\t8388608\n"
    text += (
        "\tpacket_pacing_caps:\n\t\tqp_rate_limit_min:\t1kbps\n\t\tqp_rate_limit_max:\t200000000kbps\n"
        "\t\tsupported_qp:\n" + _odp("SUPPORT_RAW_PACKET")
    )
    text += "\ttag matching not supported\n"
    text += "\n\tcq moderation caps:\n\t\tmax_cq_count:\t65535\n\t\tmax_cq_period:\t4095 us\n\n"
    text += "\tmaximum available device memory:\t131072Bytes\n\n"
    text += "\tnum_comp_vectors:\t\t20\n"
    return text

"""RDMA views: `rdma -j link show`, `ibv_devinfo -v` (rdma-core 50), `ibstat`, `ibdev2netdev`, `show_gids`.

Formats from rdma-core libibverbs/examples/devinfo.c (v50.0), infiniband-diags ibstat.c, mlnx-tools
sbin/show_gids and the ofed-scripts ibdev2netdev; device order as each tool enumerates (verbs by device
index; ibstat, ibdev2netdev and show_gids by `ls`/scandir name order).
"""

from __future__ import annotations

import json

from tests.emulators.derive import (
    GID_TBL_LEN,
    dev_sort_key,
    eui64,
    gid_bytes,
    gid_entry,
    gid_slots,
    guid_hex,
    ifindex_map,
    inet_ntop6,
    node_guid,
    port_rate,
    port_state,
    rdma_index_map,
    roce_mtu,
    sys_image_guid,
)
from tests.emulators.node import GID_TYPE_V2, Function, Node
from tests.emulators.render_rdma_caps import device_caps_text

Output = tuple[str, str, int]


def _by_index(node: Node) -> list[Function]:
    order = rdma_index_map(node)
    return sorted(node.functions, key=lambda f: order[f.rdma_dev])


def _by_name(node: Node) -> list[Function]:
    return sorted(node.functions, key=lambda f: dev_sort_key(f.rdma_dev))


def render_rdma_link(node: Node) -> Output:
    out = []
    idx, ifidx = rdma_index_map(node), ifindex_map(node)
    for fn in _by_index(node):
        state, _, phys, _ = port_state(fn)
        out.append({"ifindex": idx[fn.rdma_dev], "ifname": fn.rdma_dev, "port": 1, "state": state,
                    "physical_state": phys, "netdev": fn.netdev, "netdev_index": ifidx[fn.netdev]})
    return json.dumps(out, separators=(",", ":")) + "\n", "", 0


def _long_gid(gid: str) -> str:
    raw = gid_bytes(gid)
    return ":".join(f"{raw[i]:02x}{raw[i + 1]:02x}" for i in range(0, 16, 2))


def _gid_lines(fn: Function, rdma_core: str) -> str:
    """GID[%3d] lines for non-null GIDs: v1 long form, v2 via inet_ntop (>= v30); long, no suffix (v28)."""
    legacy = _major(rdma_core) < 30
    lines = []
    table = gid_slots(fn)  # once: gid_entry() per index would rebuild the table 255 times
    for i in sorted(table):
        slot = table[i]
        if i >= GID_TBL_LEN or slot.type is None:
            continue  # an absent or emptied slot reads as the zero GID, which devinfo skips
        if all(b == 0 for b in gid_bytes(slot.gid)[8:]):
            continue  # devinfo's null_gid() looks at the interface id only
        if legacy:
            lines.append(f"\t\t\tGID[{i:3d}]:\t\t{_long_gid(slot.gid)}\n")
        elif slot.type == GID_TYPE_V2:
            lines.append(f"\t\t\tGID[{i:3d}]:\t\t{inet_ntop6(slot.gid)}, RoCE v2\n")
        else:
            lines.append(f"\t\t\tGID[{i:3d}]:\t\t{_long_gid(slot.gid)}, RoCE v1\n")
    return "".join(lines)


def _major(version: str) -> int:
    try:
        return int(version.split(".")[0])
    except ValueError:
        return 0


def _port_block(fn: Function, rdma_core: str, verbose: bool = True) -> str:
    state, code, _, _ = port_state(fn)
    mtu, mtu_enum = roce_mtu(fn.mtu)
    return (
        "\t\tport:\t1\n"
        f"\t\t\tstate:\t\t\tPORT_{state} ({code})\n"
        "\t\t\tmax_mtu:\t\t4096 (5)\n"
        f"\t\t\tactive_mtu:\t\t{mtu} ({mtu_enum})\n"
        "\t\t\tsm_lid:\t\t\t0\n"
        "\t\t\tport_lid:\t\t0\n"
        "\t\t\tport_lmc:\t\t0x00\n"
        "\t\t\tlink_layer:\t\tEthernet\n"
        + (_port_verbose(fn, rdma_core) if verbose else "")
        + "\n"
    )


def _port_verbose(fn: Function, rdma_core: str) -> str:
    _, _, _, phys_code = port_state(fn)
    _, width, speed, _ = port_rate(fn)
    width_txt = {1: "1", 2: "4", 4: "8", 8: "12", 16: "2"}[width]
    speed_txt = {8: "10.0 Gbps", 128: "100.0 Gbps"}[speed]
    phys_txt = {5: "LINK_UP", 3: "DISABLED"}[phys_code]
    return (
        "\t\t\tmax_msg_sz:\t\t0x40000000\n"
        "\t\t\tport_cap_flags:\t\t0x04010000\n"
        "\t\t\tport_cap_flags2:\t0x0000\n"
        "\t\t\tmax_vl_num:\t\t8 (4)\n"
        "\t\t\tbad_pkey_cntr:\t\t0x0\n"
        "\t\t\tqkey_viol_cntr:\t\t0x0\n"
        "\t\t\tsm_sl:\t\t\t0\n"
        "\t\t\tpkey_tbl_len:\t\t1\n"
        f"\t\t\tgid_tbl_len:\t\t{GID_TBL_LEN}\n"
        "\t\t\tsubnet_timeout:\t\t0\n"
        "\t\t\tinit_type_reply:\t0\n"
        f"\t\t\tactive_width:\t\t{width_txt}X ({width})\n"
        f"\t\t\tactive_speed:\t\t{speed_txt} ({speed})\n"
        f"\t\t\tphys_state:\t\t{phys_txt} ({phys_code})\n"
        + _gid_lines(fn, rdma_core)
    )


def render_ibv_devinfo(node: Node, verbose: bool = True, device: str | None = None) -> Output:
    """`ibv_devinfo [-v] [-d dev]` (the spec runs -v on all devices)."""
    if not node.functions:
        return "", "No IB devices found\n", 255
    fns = _by_index(node)
    if device is not None:
        fns = [f for f in fns if f.rdma_dev == device]
        if not fns:
            return "", f"IB device '{device}' wasn't found\n", 255
    rdma_core = node.version("rdma-core")
    text = ""
    for fn in fns:
        text += (
            f"hca_id:\t{fn.rdma_dev}\n"
            "\ttransport:\t\t\tInfiniBand (0)\n"
            f"\tfw_ver:\t\t\t\t{fn.fw_ver}\n"
            f"\tnode_guid:\t\t\t{node_guid(fn)}\n"
            f"\tsys_image_guid:\t\t\t{sys_image_guid(node)}\n"
            "\tvendor_id:\t\t\t0x02c9\n"
            "\tvendor_part_id:\t\t\t4129\n"
            "\thw_ver:\t\t\t\t0x0\n"
            "\tboard_id:\t\t\tNVD0000000087\n"
            "\tphys_port_cnt:\t\t\t1\n"
            + (device_caps_text() if verbose else "")
            + _port_block(fn, rdma_core, verbose)
        )
    return text, "", 0


def render_ibstat(node: Node) -> Output:
    text = ""
    for fn in _by_name(node):
        state, _, _, phys_code = port_state(fn)
        rate = port_rate(fn)[0]
        port_guid = "".join(f"{b:02x}" for b in eui64(fn.mac))
        text += (
            f"CA '{fn.rdma_dev}'\n"
            "\tCA type: MT4129\n"
            "\tNumber of ports: 1\n"
            f"\tFirmware version: {fn.fw_ver}\n"
            "\tHardware version: 0\n"
            f"\tNode GUID: 0x{guid_hex(node_guid(fn))}\n"
            f"\tSystem image GUID: 0x{guid_hex(sys_image_guid(node))}\n"
            "\tPort 1:\n"
            f"\t\tState: {state.capitalize()}\n"
            f"\t\tPhysical state: {'LinkUp' if phys_code == 5 else 'Disabled'}\n"
            f"\t\tRate: {rate}\n"
            "\t\tBase lid: 0\n"
            "\t\tLMC: 0\n"
            "\t\tSM lid: 0\n"
            "\t\tCapability mask: 0x00010000\n"
            f"\t\tPort GUID: 0x{port_guid}\n"
            "\t\tLink layer: Ethernet\n"
        )
    return text, "", 0


def render_ibdev2netdev(node: Node) -> Output:
    lines = []
    for fn in _by_name(node):
        slot0 = gid_slots(fn).get(0)
        eth = slot0.ndev if slot0 is not None and slot0.ndev else ""
        state = "Up" if fn.link_up else "Down"
        lines.append(f"{fn.rdma_dev} port 1 ==> {eth} ({state})\n")
    return "".join(lines), "", 0


def render_show_gids(node: Node) -> Output:
    text = "DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV\n"
    text += "---\t----\t-----\t---\t\t\t\t\t------------  \t---\t---\n"
    count = 0
    for fn in _by_name(node):
        for g in sorted((str(i) for i in range(GID_TBL_LEN)), key=dev_sort_key):
            slot = gid_entry(fn, int(g))
            gid = slot.gid
            if gid in ("0000:0000:0000:0000:0000:0000:0000:0000", "fe80:0000:0000:0000:0000:0000:0000:0000"):
                continue
            ver = "" if slot.type is None else slot.type[slot.type.lower().index("v"):]
            ndev = slot.ndev or ""
            if gid.startswith("0000"):
                ipv4 = ".".join(str(int(x, 16)) for x in (gid[30:32], gid[32:34], gid[35:37], gid[37:39]))
                text += f"{fn.rdma_dev}\t1\t{g}\t{gid}\t{ipv4}  \t{ver}\t{ndev}\n"
            else:
                text += f"{fn.rdma_dev}\t1\t{g}\t{gid}\t\t\t{ver}\t{ndev}\n"
            count += 1
    return text + f"n_gids_found={count}\n", "", 0

"""Parser speed: seconds per MB for every kind in `linkcheck.parsers.PARSERS`, at 1, 2 and 4 MB of input.

Each kind is fed realistic repeated content (rows, device blocks, log lines, interface definitions),
made unique where the parser refuses duplicates, so the whole input is read. A parser whose time per MB
grows with the input size is superlinear: the `x4/x1` column is the ratio of seconds per MB at 4 MB to
that at 1 MB (about 1.0 when linear). A parser that stops early with a ParseError is timed all the same.

    .venv/bin/python benchmarks/parser_speed.py [--sizes 1,2,4] [--kind netplan ...]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from linkcheck.errors import ParseError  # noqa: E402
from linkcheck.parsers import PARSERS, get_parser  # noqa: E402

MB = 1_000_000

# kind -> (head, unit(i), tail): the input is head + unit(0) + unit(1) + ... + tail.
Unit = Callable[[int], str]


def _json_array(item: Callable[[int], dict[str, object]]) -> tuple[str, Unit, str]:
    return "[", lambda i: ("," if i else "") + json.dumps(item(i)), "]"


def _lines(line: Unit, head: str = "", tail: str = "") -> tuple[str, Unit, str]:
    return head, line, tail


def _ip(i: int) -> str:
    return f"10.{(i >> 16) & 255}.{(i >> 8) & 255}.{i & 255}"


GID_P = "/sys/class/infiniband/rocep1s0f1/ports/1"

INPUTS: dict[str, tuple[str, Unit, str]] = {
    "ip_link": _json_array(lambda i: {
        "ifindex": i, "ifname": f"enp{i}s0f1np1", "flags": ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"],
        "mtu": 9000, "operstate": "UP", "address": "3c:6d:66:cc:b3:b7", "link_type": "ether",
        "phys_port_name": "p1", "parentbus": "pci", "parentdev": "0000:01:00.1", "altnames": ["x"]}),
    "ip_addr": _json_array(lambda i: {
        "ifindex": i, "ifname": f"enp{i}s0f1np1", "flags": ["UP"], "mtu": 9000, "operstate": "UP",
        "addr_info": [{"family": "inet", "local": _ip(i), "prefixlen": 24, "scope": "global"},
                      {"family": "inet6", "local": "fe80::3e6d:66ff:fecc:b3b7", "prefixlen": 64,
                       "scope": "link"}]}),
    "ip_route": _json_array(lambda i: {
        "dst": f"{_ip(i)}/32", "dev": "enp1s0f1np1", "protocol": "kernel", "scope": "link",
        "prefsrc": "192.168.100.10", "flags": []}),
    "ip_neigh": _json_array(lambda i: {
        "dst": _ip(i), "dev": "enp1s0f1np1", "lladdr": "3c:6d:66:cc:b4:01", "state": ["REACHABLE"]}),
    "sysfs": _lines(lambda i: f"/sys/class/net/enp{i}s0f1np1/mtu\t9000\n"
                              f"/sys/bus/pci/devices/0000:01:00.1/current_link_speed:32.0 GT/s PCIe\n"),
    "gid_sysfs": _lines(lambda i: f"{GID_P}/gids/{i}\t0000:0000:0000:0000:0000:ffff:c0a8:640a\n"
                                  f"{GID_P}/gid_attrs/types/{i}\tRoCE v2\n"
                                  f"{GID_P}/gid_attrs/ndevs/{i}\tenp1s0f1np1\n"),
    "show_gids": _lines(
        lambda i: f"rocep1s0f1\t1\t{i}\t0000:0000:0000:0000:0000:ffff:c0a8:640a\t192.168.100.10  \tv2\t"
                  "enp1s0f1np1\n",
        "DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV\n---\t----\t-----\t---\t\t\t\t\t------------  \t---\t---\n"),
    "rdma_link": _lines(lambda i: f"link rocep{i}s0f1/1 state ACTIVE physical_state LINK_UP netdev enp{i}s0f1np1 \n"),
    "ibdev2netdev": _lines(lambda i: f"rocep{i}s0f1 port 1 ==> enp{i}s0f1np1 (Up)\n"),
    "ibv_devinfo": _lines(lambda i: (
        f"hca_id:\trocep{i}s0f1\n\ttransport:\t\t\tInfiniBand (0)\n\tfw_ver:\t\t\t\t28.45.4028\n"
        "\tnode_guid:\t\t\tfc4c:ea03:00f9:4231\n\tvendor_part_id:\t\t\t4129\n\tphys_port_cnt:\t\t\t1\n"
        "\t\tport:\t1\n\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n\t\t\tmax_mtu:\t\t4096 (5)\n"
        "\t\t\tactive_mtu:\t\t4096 (5)\n\t\t\tlink_layer:\t\tEthernet\n\t\t\tactive_width:\t\t2X (16)\n"
        "\t\t\tactive_speed:\t\t100.0 Gbps (128)\n\t\t\tphys_state:\t\tLINK_UP (5)\n"
        "\t\t\tGID[  3]:\t\t::ffff:192.168.100.10, RoCE v2\n\n")),
    "ibstat": _lines(lambda i: (
        f"CA 'rocep{i}s0f1'\n\tCA type: MT4129\n\tNumber of ports: 1\n\tFirmware version: 28.45.4028\n"
        "\tPort 1:\n\t\tState: Active\n\t\tPhysical state: LinkUp\n\t\tRate: 200\n\t\tLink layer: Ethernet\n")),
    "ethtool": _lines(lambda i: f"\t                        {100000 + i}baseCR4/Full\n",
                      "Settings for enp1s0f1np1:\n\tSupported link modes:   100000baseCR4/Full\n",
                      "\tSpeed: 200000Mb/s\n\tLanes: 4\n\tDuplex: Full\n\tLink detected: yes\n"),
    "ethtool_i": _lines(lambda i: "supports-statistics: yes\n", "driver: mlx5_core\nversion: 6.17.0\n"),
    "ethtool_s": _lines(lambda i: f"     rx_prio{i}_pause: {i}\n", "NIC statistics:\n"),
    "ethtool_m": _lines(lambda i: f"\tVendor field {i:<29} : value {i}\n",
                        "\tIdentifier                                : 0x11 (QSFP28)\n",
                        "\tVendor PN                                 : MCP1600-C002E30N\n"),
    "lspci": _lines(lambda i: (
        f"{i >> 16:04x}:{(i >> 8) & 255:02x}:{(i >> 3) & 31:02x}.{i & 7} Ethernet controller: Mellanox "
        "Technologies MT2910 Family [ConnectX-7]\n\tCapabilities: [60] Express (v2) Endpoint, MSI 00\n"
        "\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x4, ASPM not supported\n"
        "\t\t\tClockPM- Surprise- LLActRep- BwNot- ASPMOptComp+\n"
        "\t\tLnkSta:\tSpeed 32GT/s, Width x4\n\t\t\tTrErr- Train- SlotClk+ DLActive- BWMgmt- ABWMgmt-\n\n")),
    "netplan": _lines(lambda i: (  # `tail -n +1 /etc/netplan/*.yaml`, as the inspection reads it
        f"==> /etc/netplan/{i:07d}-cx7.yaml <==\nnetwork:\n  version: 2\n  ethernets:\n    enp{i}s0f1np1:\n"
        f"      match:\n        macaddress: \"3c:6d:66:cc:b3:b7\"\n      set-name: enp{i}s0f1np1\n"
        f"      addresses: [{_ip(i)}/24]\n      mtu: 9000\n      dhcp4: false\n\n")),
    "nccl_env": _lines(lambda i: f"NCCL_X_{i}=1\nPATH=/usr/bin\n"),
    "nccl_conf": _lines(lambda i: f"# pinned\nNCCL_X_{i}=3\n"),
    "dmesg": _lines(lambda i: f"[{i}.000001] mlx5_core 0000:01:00.1 enp1s0f1np1: Link up\n"
                              f"[{i}.000002] usb 1-1: new high-speed USB device number {i}\n"),
    "uptime": _lines(lambda i: "506.63 929.77\n"),
    "sysctl": _lines(lambda i: f"net.ipv4.conf.enp{i}s0f1np1.arp_ignore = 1\n"),
    "meminfo": _lines(lambda i: f"Field{i}:       24684092 kB\n", "MemTotal:       24684092 kB\n"),
    "ib_write_bw": _lines(
        lambda i: " 65536      4399488          0.00               384.43 \t\t     0.733248\n",
        " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"),
    "perftest_version": _lines(lambda i: "Version: 6.29\n"),
    "all_gather_perf": _lines(
        lambda i: f"  {1048576 * (i + 1):>10}    {262144 * (i + 1):>10}     float    none      -1    52.31   "
                  "20.05   10.02       0    51.88   20.21   10.11       0\n",
        "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 1073741824 step: 2(factor) warmup iters: 1 iters: 20\n"
        "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   "
        "algbw   busbw  #wrong\n",
        "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 21.4702 \n"),
    "nccl_log": _lines(lambda i: (
        f"spark-a:{i}:{i} [0] NCCL INFO NET/IB : Using [0]rocep1s0f1:1/RoCE [1]roceP2p1s0f1:1/RoCE [RO]; "
        "OOB enp1s0f1np1:192.168.100.15<0>\n"
        f"spark-a:{i}:{i} [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [receive] via NET/IB/0\n"
        f"spark-a:{i}:{i} [0] NCCL INFO NET/IB: NCCL Dev 0 IbDev 0 Port 1 qpn {i} mtu 5 GID 3 "
        "(0/F64A8C0FFFF0000) fifoRkey=0x1b9e9c fifoLkey=0x1b9e9c\n")),
}
INPUTS["all_reduce_perf"] = INPUTS["all_gather_perf"]


def build(kind: str, size_bytes: int) -> str:
    """`size_bytes` (or a little more) of the kind's repeated content."""
    head, unit, tail = INPUTS[kind]
    parts, total, i = [head], len(head) + len(tail), 0
    while total < size_bytes:
        chunk = unit(i)
        parts.append(chunk)
        total += len(chunk)
        i += 1
    parts.append(tail)
    return "".join(parts)


def seconds(kind: str, text: str) -> tuple[float, str]:
    parse = get_parser(kind)
    start = time.perf_counter()
    try:
        parse(text)
        outcome = "record"
    except ParseError as exc:
        outcome = f"ParseError ({exc})"[:60]
    return time.perf_counter() - start, outcome


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,2,4", help="input sizes in MB (default 1,2,4)")
    parser.add_argument("--kind", action="append", help="only these kinds (repeatable)")
    args = parser.parse_args(argv)
    sizes = [float(s) for s in args.sizes.split(",")]
    kinds = args.kind or sorted(PARSERS)
    missing = [k for k in kinds if k not in INPUTS]
    if missing:
        parser.error(f"no benchmark input for {', '.join(missing)}")
    print(f"{'kind':<18}" + "".join(f"{f's/MB @{s:g}MB':>13}" for s in sizes) + f"{'x4/x1':>8}  outcome")
    for kind in kinds:
        per_mb, outcome = [], ""
        for size in sizes:
            text = build(kind, int(size * MB))
            elapsed, outcome = seconds(kind, text)
            per_mb.append(elapsed / (len(text) / MB))
        ratio = per_mb[-1] / per_mb[0] if per_mb[0] > 0 else float("nan")
        print(f"{kind:<18}" + "".join(f"{v:13.3f}" for v in per_mb) + f"{ratio:8.2f}  {outcome}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

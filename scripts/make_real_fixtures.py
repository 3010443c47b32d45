# ruff: noqa: E501  (provenance tables are markdown rows)
"""Regenerate fixtures/real-<scenario>/ bundles from public GB10 outputs (see each folder's PROVENANCE.md).

The captures that users published (perftest rows and whole client outputs, ibdev2netdev, netplan files,
lspci LnkSta lines, dmesg lines, NCCL log lines, nccl-tests tables) are written as published. The captures
nobody publishes (linkcheck's own sysfs dumps, `ip -j` JSON, ethtool, ...) are reconstructed with the
emulator from the facts the source states (cage, addresses, MTU, PCIe width, versions), and PROVENANCE.md
says which is which. expected.yaml states what is true of the published scenario (spark-link.md), not what
linkcheck reports today. Run from the repository root:
    python scripts/make_real_fixtures.py [SCENARIO ...]
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from linkcheck.bundle.format import Bundle, write_bundle  # noqa: E402
from linkcheck.model import Capture  # noqa: E402
from tests.emulators.bench import BenchArtifact, rdma_artifacts  # noqa: E402
from tests.emulators.build import boot_dmesg, gb10_node, hotplug_dmesg, paired, with_function  # noqa: E402
from tests.emulators.captures import node_captures  # noqa: E402
from tests.emulators.derive import fe80_gid, ipv4_gid  # noqa: E402
from tests.emulators.node import GID_TYPE_V1, GID_TYPE_V2, GidSlot, Node  # noqa: E402

CREATED = "2026-12-02T12:00:00+00:00"  # fixed so regenerating gives identical manifests
P0, P0_2, P1, P1_2 = "enp1s0f0np0", "enP2p1s0f0np0", "enp1s0f1np1", "enP2p1s0f1np1"


@dataclass
class Real:
    """One real scenario: its two nodes' captures and what must be true of it."""

    name: str
    description: str
    verdict: str
    findings: dict[str, str]
    subjects: dict[str, list[str]]
    skips: list[str]
    provenance: str
    a: Node
    b: Node
    bench: list[Capture] = field(default_factory=list)
    overrides: list[tuple[str, str, str | None, str]] = field(default_factory=list)  # node, spec, arg, stdout
    figures: dict[str, object] | None = None


# ---------------------------------------------------------------------------------------------------------
# helpers

def bench_capture(art: BenchArtifact, command: str | None = None, stdout: str | None = None) -> Capture:
    duration = float(art.meta.get("duration_s") or 0) + 3.2 if art.spec == "ib_write_bw" else 41.7
    return Capture(node=art.node, spec=art.spec, command=command or art.command,
                   stdout=art.stdout if stdout is None else stdout, stderr=art.stderr,
                   exit_status=art.exit_status, duration_s=duration, arg=art.arg, meta=dict(art.meta))


def with_rows(stdout: str, rows: list[str]) -> str:
    """A reconstructed perftest output whose result rows are replaced by the published rows."""
    lines = stdout.splitlines(keepends=True)
    head = next(i for i, ln in enumerate(lines) if "#bytes" in ln)
    tail = next(i for i in range(head + 1, len(lines)) if lines[i].startswith("----"))
    return "".join(lines[:head + 1]) + "".join(r + "\n" for r in rows) + "".join(lines[tail:])


def rdma(a: Node, b: Node, pairs: list[tuple[str, str, float, float]], mode: str,
         rows: dict[tuple[str, str], list[str]] | None = None, directions: tuple[str, ...] = ("a->b", "b->a"),
         clients_only: bool = False) -> list[Capture]:
    """Reconstructed ib_write_bw captures; rows[(direction, client netdev)] puts the published rows in."""
    out = []
    for art in rdma_artifacts(a, b, pairs, mode):
        m = art.meta
        if m["direction"] not in directions or (clients_only and m["role"] != "client"):
            continue
        key = (m["direction"], m["local_netdev"] if m["role"] == "client" else m["peer_netdev"])
        stdout = art.stdout
        if rows and key in rows:
            stdout = with_rows(stdout, rows[key])
        out.append(bench_capture(art, stdout=stdout))
    return out


def link_local_scope(text: str) -> str:
    """`ip -j addr`: 169.254/16 addresses carry scope link (as in NVIDIA's `ip addr show` sample)."""
    data = json.loads(text)
    for link in data:
        for addr in link.get("addr_info", []):
            if addr.get("local", "").startswith("169.254."):
                addr["scope"] = "link"
                addr["noprefixroute"] = True
    return json.dumps(data) + "\n"


def nccl_tests_16g(host_a: str, host_b: str, time_us: str, algbw: str, busbw: str, avg: str) -> str:
    """nccl-tests 2.17.6 all_gather_perf -b 16G -e 16G, the layout NVIDIA/dgx-spark-playbooks#25 pasted."""
    return (
        "# nccl-tests version 2.17.6 nccl-headers=22809 nccl-library=22809\n"
        "# Collective test starting: all_gather_perf\n"
        "# nThread 1 nGpus 1 minBytes 17179869184 maxBytes 17179869184 step: 2(factor) warmup iters: 1 iters: 20 "
        "agg iters: 1 validation: 1 graph: 0\n"
        "#\n"
        "# Using devices\n"
        f"#  Rank  0 Group  0 Pid 1935208 on {host_a:>10} device  0 [000f:01:00] NVIDIA GB10\n"
        f"#  Rank  1 Group  0 Pid 1278829 on {host_b:>10} device  0 [000f:01:00] NVIDIA GB10\n"
        "#\n"
        "#                                                              out-of-place                       in-place"
        "          \n"
        "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   "
        "busbw  #wrong \n"
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  "
        "(GB/s)         \n"
        f" 17179869184    2147483648     float    none      -1 {time_us:>7}   {algbw}   {busbw}       0 "
        f"{time_us:>7}   {algbw}   {busbw}       0\n"
        "# Out of bounds values : 0 OK\n"
        f"# Avg bus bandwidth    : {avg} \n"
        "#\n"
        "# Collective test concluded: all_gather_perf\n"
        "#\n"
    )


def nccl_meta(a_hcas: list[tuple[str, str]], b_hcas: list[tuple[str, str]]) -> dict[str, str]:
    return {"kind": "nccl", "mode": "concurrent", "direction": "a->b", "role": "client",
            "local_netdev": ",".join(n for n, _ in a_hcas), "local_rdma_dev": ",".join(d for _, d in a_hcas),
            "peer_netdev": ",".join(n for n, _ in b_hcas), "peer_rdma_dev": ",".join(d for _, d in b_hcas),
            "gid_index": ",".join("3" for _ in a_hcas), "report_gbits": "false", "duration_s": ""}


def _pair(a: Node, b: Node, env_a: dict[str, str] | None = None, env_b: dict[str, str] | None = None
          ) -> tuple[Node, Node]:
    a, b = paired(a, b)
    return replace(a, nccl_env=dict(env_a or {})), replace(b, nccl_env=dict(env_b or {}))


# ---------------------------------------------------------------------------------------------------------
# real-healthy-gx10: spark-link.md s.8, the published healthy GX10 pair

GX10_NCCL_LOG = """\
{a}:2301:2301 [0] NCCL INFO Bootstrap : Using enP7s7:192.168.1.70<0>
NCCL version 2.28.9+cuda13.0
{a}:2301:2340 [0] NCCL INFO NET/IB: [0] rocep1s0f0:uverbs0:1/RoCE provider=Mlx5 speed=200000
{a}:2301:2340 [0] NCCL INFO NET/IB: [2] roceP2p1s0f0:uverbs2:1/RoCE provider=Mlx5 speed=200000
{a}:2301:2340 [0] NCCL INFO NET/IB : Using [0]rocep1s0f0:1/RoCE [1]roceP2p1s0f0:1/RoCE [RO]; OOB enP7s7:192.168.1.70<0>
{a}:2301:2340 [0] NCCL INFO Using network IB
{b}:1877:1877 [0] NCCL INFO Bootstrap : Using enP7s7:192.168.1.71<0>
{b}:1877:1912 [0] NCCL INFO NET/IB: [0] rocep1s0f0:uverbs0:1/RoCE provider=Mlx5 speed=200000
{b}:1877:1912 [0] NCCL INFO NET/IB: [2] roceP2p1s0f0:uverbs2:1/RoCE provider=Mlx5 speed=200000
{b}:1877:1912 [0] NCCL INFO NET/IB : Using [0]rocep1s0f0:1/RoCE [1]roceP2p1s0f0:1/RoCE [RO]; OOB enP7s7:192.168.1.71<0>
{b}:1877:1912 [0] NCCL INFO Using network IB
{a}:2301:2340 [0] NCCL INFO GPU Direct RDMA Disabled for HCA 0 'rocep1s0f0'
{a}:2301:2340 [0] NCCL INFO GPU Direct RDMA Disabled for HCA 1 'roceP2p1s0f0'
{a}:2301:2340 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0
{a}:2301:2340 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[0] [send] via NET/IB/1
{b}:1877:1912 [0] NCCL INFO Channel 00/0 : 1[0] -> 0[0] [send] via NET/IB/0
{b}:1877:1912 [0] NCCL INFO Channel 01/0 : 1[0] -> 0[0] [send] via NET/IB/1
"""

HCA_P0 = {"NCCL_IB_HCA": "rocep1s0f0,roceP2p1s0f0", "NCCL_SOCKET_IFNAME": "enP7s7"}


def healthy_gx10() -> Real:
    addrs_a = {P0: ("192.168.177.11/24",), P0_2: ("192.168.178.11/24",)}
    addrs_b = {P0: ("192.168.177.12/24",), P0_2: ("192.168.178.12/24",)}
    mtu = {P0: 9000, P0_2: 9000}
    a = gb10_node("gx10-a", "fc:4c:ea:10:00:10", addrs=addrs_a, mtu=mtu, cabled_cage="p0", mgmt_ip="192.168.1.70/24")
    b = gb10_node("gx10-b", "fc:4c:ea:20:00:20", addrs=addrs_b, mtu=mtu, cabled_cage="p0", mgmt_ip="192.168.1.71/24")
    a, b = _pair(a, b, HCA_P0, HCA_P0)
    row = " 1048576    35286            0.00               98.01  \t\t   0.011685"
    bench = rdma(a, b, [(P0, P0, 98.01, 98.01), (P0_2, P0_2, 98.01, 98.01)], "concurrent",
                 rows={("a->b", P0): [row], ("a->b", P0_2): [row]}, directions=("a->b",))
    cmd = ("mpirun -np 2 -H gx10-a:1,gx10-b:1 -x NCCL_IB_HCA=rocep1s0f0,roceP2p1s0f0 -x NCCL_SOCKET_IFNAME=enP7s7 "
           "-x NCCL_DEBUG=INFO $HOME/nccl-tests/build/all_gather_perf -b 16G -e 16G -f 2")
    meta = nccl_meta([(P0, "rocep1s0f0"), (P0_2, "roceP2p1s0f0")], [(P0, "rocep1s0f0"), (P0_2, "roceP2p1s0f0")])
    table = nccl_tests_16g("gx10-a", "gx10-b", "394396", "43.56", "21.78", "21.78")
    bench += [Capture(node="a", spec="all_gather_perf", command=cmd, stdout=table, duration_s=41.7,
                      arg="concurrent.a2b.rocep1s0f0+roceP2p1s0f0.client", meta=meta),
              Capture(node="a", spec="nccl_log", command=cmd, stdout=GX10_NCCL_LOG.format(a="gx10-a", b="gx10-b"),
                      duration_s=41.7, arg="concurrent.a2b.rocep1s0f0+roceP2p1s0f0.client", meta=dict(meta))]
    return Real(
        "real-healthy-gx10",
        "The published healthy ASUS Ascent GX10 pair (spark-link.md s.8): one QSFP cable, both twins of the cage at "
        "once 98.01 + 98.01 = 196.02 Gb/s, all_gather_perf at 16 GiB 21.78 GB/s busbw with zero #wrong. NCCL "
        "on both twins over NET/IB/0 and NET/IB/1. An accepted pair: it must pass.",
        "pass", {}, {},
        [],
        PROV_HEALTHY_GX10, a, b, bench,
        figures={"rdma_concurrent_total_gbps": {"a->b": 196.02}, "rdma_runs": 2, "nccl_busbw_gbs": 21.78},
    )


PROV_HEALTHY_GX10 = """\
# real-healthy-gx10: provenance

Scenario: spark-link.md section 8, "A GX10 pair, a month of testing" (Spanish-language lab report): after
rebooting both nodes, one QSFP cable exposed as two logical paths gave RDMA on both paths at once
98.01 + 98.01 = 196.02 Gb/s and NCCL all_gather with a 16 GiB buffer at 21.78 GB/s bus bandwidth, zero errors.
The report gives these as prose figures; no tool output of it is published.

| capture | source | real or reconstructed |
| --- | --- | --- |
| a/bench ib_write_bw (concurrent, a->b, both twins) | the 98.01 per path of s.8 | reconstructed: perftest 1 MiB text output rendered by the emulator, result row written with the published 98.01 |
| a/bench all_gather_perf | the 16 GiB / 21.78 GB/s / 0 #wrong of s.8 | reconstructed in the nccl-tests 2.17.6 layout that NVIDIA/dgx-spark-playbooks#25 pasted (same header lines, same single 16 GiB row form); algbw 43.56 = 2 x busbw at 2 ranks, time = 16 GiB / algbw |
| a/bench nccl_log | epappas/gx10-cluster `docs/runbooks/diagnose-interconnect.md` (GX10, port 0 twins, OOB enP7s7:192.168.1.70), quoted in spark-link.md 1.6 | the NET/IB, `Using network IB` and `via NET/IB/0` / `via NET/IB/1` lines are the published ones; the `host:pid:tid [0] NCCL INFO` prefixes, rank 1's lines and the `NCCL version` line (NCCL v2.28.9-1, the release NVIDIA's nccl playbook builds) are reconstructed |
| everything else (sysfs dumps, ip -j, ethtool, ibv_devinfo, lspci, netplan, dmesg, ...) | DGX OS defaults of spark-link.md 1.x; cage p0 (as in the epappas log), twins on 192.168.177/24 and 192.168.178/24 with MTU 9000 (eugr/spark-vllm-docker `docs/NETWORKING.md` netplan) | reconstructed by the emulator. Hostnames gx10-a / gx10-b and the MAC bases are made up for this fixture (not anyone's serials) |
"""


# ---------------------------------------------------------------------------------------------------------
# real-nvidia-perf-guide: NVIDIA's own two-rail measurement, whole client outputs as published

PERF_CLIENT_1 = """\
  WARNING: BW peak won't be measured in this run.
---------------------------------------------------------------------------------------
                    RDMA_Write BW Test
 Dual-port       : OFF            Device         : rocep1s0f0
 Number of qps   : 1              Transport type : IB
 Connection type : RC             Using SRQ      : OFF
 PCIe relax order: ON
 ibv_wr* API     : ON
 TX depth        : 128
 CQ Moderation   : 1
 Mtu             : 1024[B]
 Link type       : Ethernet
 GID index       : 3
 Max inline data : 0[B]
 rdma_cm QPs     : OFF
 Data ex. method : Ethernet
---------------------------------------------------------------------------------------
 local address:  LID 0000 QPN 0x0129 PSN 0x57279d RKey 0x184300 VAddr 0x00ec99bedad000
 GID:            00:00:00:00:00:00:00:00:00:00:255:255:192:168:200:13
 remote address: LID 0000 QPN 0x0129 PSN 0x531b7  RKey 0x184300 VAddr 0x00ffeec955d000
 GID:            00:00:00:00:00:00:00:00:00:00:255:255:192:168:200:12
---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]    MsgRate[Mpps]
 65536      882805           0.00               92.57                0.176554
 65536      882802           0.00               92.57                0.176554
 65536      882791           0.00               92.57                0.176554
 65536      882791           0.00               92.56                0.176552
 65536      882821           0.00               92.57                0.176555
"""

PERF_CLIENT_2 = """\
 WARNING: BW peak won't be measured in this run.
---------------------------------------------------------------------------------------
                    RDMA_Write BW Test
 Dual-port       : OFF            Device         : roceP2p1s0f0
 Number of qps   : 1              Transport type : IB
 Connection type : RC             Using SRQ      : OFF
 PCIe relax order: ON
 ibv_wr* API     : ON
 TX depth        : 128
 CQ Moderation   : 1
 Mtu             : 1024[B]
 Link type       : Ethernet
 GID index       : 3
 Max inline data : 0[B]
 rdma_cm QPs     : OFF
 Data ex. method : Ethernet
---------------------------------------------------------------------------------------
 local address:  LID 0000 QPN 0x01a9 PSN 0x5e41f9 RKey 0x1a03ed VAddr 0x00f374277dd000
 GID:            00:00:00:00:00:00:00:00:00:00:255:255:192:168:201:13
 remote address: LID 0000 QPN 0x01a9 PSN 0x8ab8e7  RKey 0x1a0300 VAddr 0x00f285f5f1d000
 GID:            00:00:00:00:00:00:00:00:00:00:255:255:192:168:201:12
---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]    MsgRate[Mpps]
 65536      927940           0.00               97.28                0.185548
 65536      927790           0.00               97.28                0.185549
 65536      927766           0.00               97.28                0.185550
 65536      927754           0.00               97.28                0.185545
 65536      927804           0.00               97.29                0.185557
 65536      927807           0.00               97.28                0.185554
"""

PERF_IBDEV2NETDEV = """\
rocep1s0f0 port 1 ==> enp1s0f0np0 (Up)
rocep1s0f1 port 1 ==> enp1s0f1np1 (Down)
roceP2p1s0f0 port 1 ==> enP2p1s0f0np0 (Up)
roceP2p1s0f1 port 1 ==> enP2p1s0f1np1 (Down)
"""

PERF_NETPLAN = """\
network:
  version: 2
  renderer: NetworkManager
  ethernets:
    enp1s0f0np0:
      addresses:
        - 192.168.200.{n}/24
      dhcp4: no
    enP2p1s0f0np0:
      addresses:
        - 192.168.201.{n}/24
      dhcp4: no
"""


def nvidia_perf_guide() -> Real:
    a = gb10_node("spark-5c2d", "4c:bb:47:5c:2d:00", addrs={P0: ("192.168.200.12/24",), P0_2: ("192.168.201.12/24",)},
                  cabled_cage="p0")
    b = gb10_node("spark-bd26", "4c:bb:47:bd:26:00", addrs={P0: ("192.168.200.13/24",), P0_2: ("192.168.201.13/24",)},
                  cabled_cage="p0", mgmt_ip="10.20.0.22/24")
    a, b = _pair(a, b)
    bench = []
    for dev, netdev, port, ip, text in (("rocep1s0f0", P0, 12000, "192.168.200.12", PERF_CLIENT_1),
                                        ("roceP2p1s0f0", P0_2, 12001, "192.168.201.12", PERF_CLIENT_2)):
        meta = {"kind": "rdma", "mode": "concurrent", "direction": "b->a", "role": "client", "local_netdev": netdev,
                "local_rdma_dev": dev, "peer_netdev": netdev, "peer_rdma_dev": dev, "gid_index": "3",
                "report_gbits": "true", "duration_s": ""}
        bench.append(Capture(node="b", spec="ib_write_bw", arg=f"concurrent.b2a.{dev}.client", meta=meta,
                             command=f"ib_write_bw -d {dev} -i 1 -p {port} -F --report_gbits {ip} --run_infinitely",
                             stdout=text, duration_s=30.0))
    overrides = [(n, "ibdev2netdev", None, PERF_IBDEV2NETDEV) for n in ("a", "b")]
    overrides += [("a", "netplan_files", None, PERF_NETPLAN.format(n=12)),
                  ("b", "netplan_files", None, PERF_NETPLAN.format(n=13))]
    return Real(
        "real-nvidia-perf-guide",
        "NVIDIA's own two-rail ib_write_bw measurement (connect-two-sparks performance guide): one cable in cage p0, "
        "twins on 192.168.200/24 and 192.168.201/24 (NetworkManager renderer, MTU 1500 -> RoCE MTU 1024), 64 KiB, "
        "both twins at once from spark-bd26: 92.57 + 97.28 = 189.85 Gb/s. NVIDIA presents it as the healthy "
        "reference: it must pass.",
        "pass", {}, {}, ["NCCL_BUSBW_LOW", "NCCL_SOCKET_FALLBACK"],
        PROV_PERF_GUIDE, a, b, bench, overrides,
        figures={"rdma_concurrent_total_gbps": {"b->a": 189.85}, "rdma_runs": 2},
    )


PROV_PERF_GUIDE = """\
# real-nvidia-perf-guide: provenance

Source: NVIDIA/dgx-spark-playbooks `nvidia/connect-two-sparks/assets/performance_benchmarking_guide.md`
(section "Measure BW between Dual Sparks", stored version 998f217), https://github.com/NVIDIA/dgx-spark-playbooks.
Spark-1 = `spark-5c2d` (host, node a), Spark-2 = `spark-bd26` (client, node b).

| capture | source | real or reconstructed |
| --- | --- | --- |
| b/bench ib_write_bw rocep1s0f0 client | "Client-1 Output" | real, verbatim (the prompt line left out); `--run_infinitely`, five rows |
| b/bench ib_write_bw roceP2p1s0f0 client | "Client-2 Output" | real, verbatim (the prompt line left out); six rows |
| a, b ibdev2netdev | "Example output (from Spark-1)" / "(from Spark-2)" | real, verbatim (identical on both) |
| a, b netplan_files | Step 2 heredocs for /etc/netplan/40-cx7.yaml (.12 / .13) | real, verbatim (one file, so `tail -n +1` prints no header) |
| server outputs | not published | left out: the bundle holds the two client outputs only; meta `duration_s` is empty (run_infinitely) |
| everything else (sysfs dumps, ip -j, ethtool, ibv_devinfo, lspci, dmesg, ...) | the guide's facts: cage p0 Up, the addresses above, default MTU 1500 (`Mtu : 1024[B]`), GID index 3 | reconstructed by the emulator; MAC bases made up for this fixture |
"""


# ---------------------------------------------------------------------------------------------------------
# real-hotplug-13g: Jiangw2718i/ai-infra-notes, 13 Gb/s per rail after hot-plugging the cable

def hotplug_13g() -> Real:
    addrs_a = {P0: ("192.168.100.10/24",), P0_2: ("192.168.101.10/24",)}
    addrs_b = {P0: ("192.168.100.11/24",), P0_2: ("192.168.101.11/24",)}
    mtu = {P0: 9000, P0_2: 9000}
    nodes = []
    for host, mac, addrs, mgmt in (("spark-a", "4c:bb:47:e8:9f:38", addrs_a, "10.20.0.21/24"),
                                   ("spark-b", "4c:bb:47:e8:a1:50", addrs_b, "10.20.0.22/24")):
        n = gb10_node(host, mac, addrs=addrs, mtu=mtu, cabled_cage="p0", mgmt_ip=mgmt)
        log = (*boot_dmesg(n.functions, None), *hotplug_dmesg(n.functions, "p0", 2417.36))
        n = replace(n, dmesg=tuple(log), uptime_s=5120.88, kernel_release="6.17.0-1032-nvidia")
        n = with_function(with_function(n, P0, carrier_changes=4), P0_2, carrier_changes=4)
        nodes.append(n)
    a, b = _pair(nodes[0], nodes[1])
    rows = {("a->b", P0): [" 1048576    9534             0.00               13.33  \t\t   0.001589"],
            ("a->b", P0_2): [" 1048576    9465             0.00               13.23  \t\t   0.001578"]}
    bench = rdma(a, b, [(P0, P0, 13.33, 13.33), (P0_2, P0_2, 13.23, 13.23)], "concurrent", rows=rows,
                 directions=("a->b",))
    return Real(
        "real-hotplug-13g",
        "Jiangw2718i/ai-infra-notes: two DGX Sparks, cable plugged into cage p0 while both ran (cx7-pcie-hotplug "
        "Cable plugin long after boot). Link PORT_ACTIVE 2X 100 Gbps, PCIe 32GT/s x4, yet both rails at once run "
        "13.33 + 13.23 Gb/s. The hot-plug state: reboot both nodes with the cable attached.",
        "fail", {"LINK_HOTPLUG_DEGRADED": "fail"},
        {"LINK_HOTPLUG_DEGRADED": [f"{P0}<->{P0}", f"{P0_2}<->{P0_2}"]},
        ["NCCL_BUSBW_LOW", "NCCL_SOCKET_FALLBACK"],
        PROV_HOTPLUG, a, b, bench,
        figures={"rdma_concurrent_total_gbps": {"a->b": 26.56}, "rdma_runs": 2},
    )


PROV_HOTPLUG = """\
# real-hotplug-13g: provenance

Source: Jiangw2718i/ai-infra-notes `dgx-spark/qsfp-link-13gbps-until-reboot.md` (stored version 319fc47),
https://github.com/Jiangw2718i/ai-infra-notes. 2x DGX Spark, BIOS 5.36_0ACUM027, kernel 6.17.0-1032-nvidia,
CX-7 firmware 28.45.4028, one passive QSFP DAC in port 0 on both machines, perftest `ib_write_bw` 1 MiB, both
rails at once, September 2026.

| capture | source | real or reconstructed |
| --- | --- | --- |
| a/bench ib_write_bw rocep1s0f0 / roceP2p1s0f0 clients (and their servers) | the "Symptom" block: rows `1048576 9534 0.00 13.33 0.001589` and `1048576 9465 0.00 13.23 0.001578` | result rows real, verbatim; the rest of each perftest output (header, GIDs) reconstructed by the emulator. The note does not say which rail printed which row: the first is taken as rocep1s0f0 |
| a, b dmesg | the "Cause" block: `cx7-pcie-hotplug MTKP0001:00: Cable plugin`, `mlx5_core 0000:01:00.0: Port module event: module 0, Cable plugged`, `mlx5_core 0000:01:00.0 enp1s0f0np0: Link up` | these lines as published; their timestamps, the boot without the cable before them, the other functions' lines and node b's copy (the note says the cable went in while both Sparks ran and the state is per machine) reconstructed |
| a, b ibv_devinfo | the `ibv_devinfo -d rocep1s0f0 -v` excerpt (PORT_ACTIVE (4), LINK_UP (5), 2X (16), 100.0 Gbps (128)) | reconstructed whole output with these port fields |
| a, b lspci / sysfs_pci | "`LnkSta: Speed 32GT/s, Width x4` on both controllers, matching `LnkCap`" | reconstructed |
| a, b kernel_release | 6.17.0-1032-nvidia | reconstructed from the note |
| everything else | cage p0, MTU 9000 (the note's NetworkManager profiles), fabric addresses 192.168.100.10 (the show_gids sample) / .11 and 192.168.101.x on the twin | reconstructed by the emulator; hostnames spark-a / spark-b and MACs made up (the MAC base follows the fe80 GID 4ebb:47ff:fee8:9f39 of the note's show_gids line) |
"""


# ---------------------------------------------------------------------------------------------------------
# real-oct2025-linklocal: NVIDIA's Oct-2025 netplan (link-local on the two domain-0 netdevs)

OCT_NETPLAN = """\
network:
  version: 2
  ethernets:
    enp1s0f0np0:
      link-local: [ ipv4 ]
    enp1s0f1np1:
      link-local: [ ipv4 ]
"""

S2_IBDEV2NETDEV = """\
roceP2p1s0f0 port 1 ==> enP2p1s0f0np0 (Down)
roceP2p1s0f1 port 1 ==> enP2p1s0f1np1 (Up)
rocep1s0f0 port 1 ==> enp1s0f0np0 (Down)
rocep1s0f1 port 1 ==> enp1s0f1np1 (Up)
"""


def oct2025_linklocal() -> Real:
    a = gb10_node("dgx-spark-1", "3c:6d:66:cc:b3:b6", addrs={P1: ("169.254.35.62/16",)})
    b = gb10_node("dgx-spark-2", "3c:6d:66:cc:c1:0e", addrs={P1: ("169.254.35.63/16",)}, mgmt_ip="10.20.0.22/24")
    a, b = _pair(a, b)
    overrides: list[tuple[str, str, str | None, str]] = []
    for n in ("a", "b"):
        overrides += [(n, "netplan_files", None, OCT_NETPLAN), (n, "ibdev2netdev", None, S2_IBDEV2NETDEV)]
    return Real(
        "real-oct2025-linklocal",
        "NVIDIA's Oct-2025 connect-two-sparks layout: netplan link-local IPv4 on enp1s0f0np0 and enp1s0f1np1 only "
        "(\"disregard enP2p...\"), one cable in cage p1. Only one twin of the cabled cage is addressed "
        "(169.254.35.62/16 and .63/16); enP2p1s0f1np1 is up but unaddressed on both nodes, so all traffic rides one "
        "PCIe x4 link (~100 Gb/s of 200). Must fail SINGLE_PCIE_PATH.",
        "fail", {"SINGLE_PCIE_PATH": "fail"}, {"SINGLE_PCIE_PATH": [f"a:{P1_2}", f"b:{P1_2}"]},
        ["LINK_BELOW_NOMINAL", "LINK_HOTPLUG_DEGRADED", "NCCL_BUSBW_LOW", "NCCL_SOCKET_FALLBACK"],
        PROV_OCT, a, b, [], overrides,
    )


PROV_OCT = """\
# real-oct2025-linklocal: provenance

Source: NVIDIA/dgx-spark-playbooks, `nvidia/connect-two-sparks/README.md` at commit 99425a7 (2025-10-13),
https://github.com/NVIDIA/dgx-spark-playbooks/blob/99425a7/nvidia/connect-two-sparks/README.md
("Option 1: Automatic IP Assignment (Recommended)"; also `assets/cx7-netplan.yaml`).

| capture | source | real or reconstructed |
| --- | --- | --- |
| a, b netplan_files | the Option 1 heredoc for /etc/netplan/40-cx7.yaml | real, verbatim |
| a, b ibdev2netdev | the Option 2 "Example output" (cable in the right cage, Port 1) | real, verbatim (the same sample on both nodes) |
| a ip_addr | `nvidia@dgx-spark-1:~$ ip addr show enp1s0f1np1`: MAC 3c:6d:66:cc:b3:b7, `inet 169.254.35.62/16 ... scope link noprefixroute`, mtu 1500 | reconstructed as `ip -j addr show` JSON with these values (the source prints the text form) |
| b ip_addr | discover-sparks sample `Found: 169.254.35.63 (dgx-spark-2.local)` | reconstructed with that address; node b's MAC made up |
| everything else (sysfs dumps with enP2p1s0f1np1 up and no IPv4, GID tables, ethtool, ...) | the layout's consequence: carrier on both twins of cage p1, only the domain-0 twin addressed | reconstructed by the emulator; no NCCL settings (the Oct-2025 nccl playbook sets no NCCL_IB_HCA) and no traffic test |
"""


# ---------------------------------------------------------------------------------------------------------
# real-dec2025-same-subnet: NVIDIA's Dec-2025 netplan (twins of a cage on one /24), two-rail test passed

DEC_NETPLAN = """\
network:
  version: 2
  ethernets:
    enp1s0f0np0:
      addresses:
        - 192.168.100.{a}/24
      dhcp4: no
    enp1s0f1np1:
      addresses:
        - 192.168.200.{b}/24
      dhcp4: no
    enP2p1s0f0np0:
      addresses:
        - 192.168.100.{c}/24
      dhcp4: no
    enP2p1s0f1np1:
      addresses:
        - 192.168.200.{d}/24
      dhcp4: no
"""

HCA_P1 = {"NCCL_IB_HCA": "rocep1s0f1,roceP2p1s0f1"}


def dec2025_same_subnet() -> Real:
    a = gb10_node("dgx-spark-1", "3c:6d:66:cc:b3:b6", addrs={P1: ("192.168.200.12/24",), P1_2: ("192.168.200.16/24",)})
    b = gb10_node("dgx-spark-2", "3c:6d:66:cc:c1:0e", addrs={P1: ("192.168.200.13/24",), P1_2: ("192.168.200.17/24",)},
                  mgmt_ip="10.20.0.22/24")
    a, b = _pair(a, b, HCA_P1, HCA_P1)
    bench = rdma(a, b, [(P1, P1, 109.29, 109.1), (P1_2, P1_2, 108.87, 109.05)], "alone")
    bench += rdma(a, b, [(P1, P1, 98.03, 98.04), (P1_2, P1_2, 98.03, 98.04)], "concurrent")
    overrides = [("a", "netplan_files", None, DEC_NETPLAN.format(a=10, b=12, c=14, d=16)),
                 ("b", "netplan_files", None, DEC_NETPLAN.format(a=11, b=13, c=15, d=17))]
    overrides += [(n, "ibdev2netdev", None, S2_IBDEV2NETDEV) for n in ("a", "b")]
    return Real(
        "real-dec2025-same-subnet",
        "NVIDIA's Dec-2025 connect-two-sparks Option 2: all four netdevs addressed, the twins of each cage on one "
        "/24 (cage p1 cabled: 192.168.200.12 + .16 on node 1, .13 + .17 on node 2). The two-rail RDMA test "
        "measured 98.03 + 98.03 Gb/s at once (196 Gb/s), so the layout warning stands alone: TWINS_SAME_SUBNET "
        "warns, no SINGLE_PCIE_PATH.",
        "warn", {"TWINS_SAME_SUBNET": "warn"}, {"TWINS_SAME_SUBNET": ["node a", "node b"]},
        ["NCCL_BUSBW_LOW", "NCCL_SOCKET_FALLBACK"],
        PROV_DEC, a, b, bench, overrides,
        figures={"rdma_concurrent_total_gbps": {"a->b": 196.06, "b->a": 196.08}, "rdma_runs": 8},
    )


PROV_DEC = """\
# real-dec2025-same-subnet: provenance

Source: NVIDIA/dgx-spark-playbooks, `nvidia/connect-two-sparks/README.md` at commit 49bdd1d (2025-12-11),
"Option 2: Manual IP Assignment with the netplan configure file",
https://github.com/NVIDIA/dgx-spark-playbooks/blob/49bdd1d/nvidia/connect-two-sparks/README.md.

| capture | source | real or reconstructed |
| --- | --- | --- |
| a, b netplan_files | the node 1 / node 2 heredocs (.10/.12/.14/.16 and .11/.13/.15/.17) | real, verbatim |
| a, b ibdev2netdev | the same README's "Example output" (cable in Port 1) | real, verbatim |
| a, b ip_addr / sysfs | the file above applied with one cable in cage p1: networkd configures only the twins with carrier, so 192.168.200.x on enp1s0f1np1 and enP2p1s0f1np1; the p0 netdevs have no carrier and no address | reconstructed by the emulator |
| bench ib_write_bw (alone and concurrent, both directions) | the 196 Gb/s two-rail result this layout gives when RoCE resolves each peer twin on its own netdev: 98.03 + 98.03 (Jiangw2718i/ai-infra-notes after reboot), single rail ~109 Gb/s (spark-link.md 5) | reconstructed by the emulator with these numbers |
| NCCL_IB_HCA on both twins | eugr/spark-vllm-docker docs/NETWORKING.md | reconstructed env; no NCCL test in the bundle |
"""


# ---------------------------------------------------------------------------------------------------------
# real-cross-cage: head p1 <-> worker p0, full traffic

S2B_IBDEV2NETDEV = """\
rocep1s0f0 port 1 ==> enp1s0f0np0 (Up)
rocep1s0f1 port 1 ==> enp1s0f1np1 (Down)
roceP2p1s0f0 port 1 ==> enP2p1s0f0np0 (Up)
roceP2p1s0f1 port 1 ==> enP2p1s0f1np1 (Down)
"""


def cross_cage() -> Real:
    a = gb10_node("dxg-spark-1", "3c:6d:66:cc:b3:b6", addrs={P1: ("192.168.100.10/24",), P1_2: ("192.168.101.10/24",)},
                  mtu={P1: 9000, P1_2: 9000}, cabled_cage="p1")
    b = gb10_node("spark-5c2d", "4c:bb:47:5c:2d:00", addrs={P0: ("192.168.100.11/24",), P0_2: ("192.168.101.11/24",)},
                  mtu={P0: 9000, P0_2: 9000}, cabled_cage="p0", mgmt_ip="10.20.0.22/24")
    a, b = _pair(a, b, HCA_P1, HCA_P0)
    bench = rdma(a, b, [(P1, P0, 109.29, 109.12)], "alone") + rdma(a, b, [(P1_2, P0_2, 108.94, 109.33)], "alone")
    bench += rdma(a, b, [(P1, P0, 98.04, 98.01), (P1_2, P0_2, 98.04, 97.95)], "concurrent")
    overrides = [("a", "ibdev2netdev", None, S2_IBDEV2NETDEV), ("b", "ibdev2netdev", None, S2B_IBDEV2NETDEV)]
    return Real(
        "real-cross-cage",
        "A cross-cage pair: node a's cable in cage p1 (enp1s0f1np1 + enP2p1s0f1np1), node b's in cage p0 "
        "(enp1s0f0np0 + enP2p1s0f0np0), same-domain twins paired, one /24 per twin, MTU 9000. Each twin ~109 "
        "Gb/s alone and 98 + 98 at once. Works (community-reported head p1 <-> worker p0): must pass, no LINK_DOWN.",
        "pass", {}, {}, ["NCCL_BUSBW_LOW", "NCCL_SOCKET_FALLBACK"],
        PROV_CROSS, a, b, bench, overrides,
        figures={"rdma_concurrent_total_gbps": {"a->b": 196.08, "b->a": 195.96}, "rdma_runs": 8},
    )


PROV_CROSS = """\
# real-cross-cage: provenance

Scenario: spark-link.md 2.1, "a cross-cage pairing (head p1 <-> worker p0) also works (MiaAI-Lab topology, as
reported in [S26])"; NVIDIA's cluster script demands the same cage on both nodes, which is a setup rule, not a
link fault.

| capture | source | real or reconstructed |
| --- | --- | --- |
| a ibdev2netdev | NVIDIA/dgx-spark-playbooks `nvidia/connect-two-sparks/README.md` (`nvidia@dxg-spark-1:~$ ibdev2netdev`, cable in Port 1) | real, verbatim |
| b ibdev2netdev | same repo, `assets/performance_benchmarking_guide.md` (`nvidia@spark-5c2d:~$ ibdev2netdev`, cable in Port 0) | real, verbatim |
| hostnames dxg-spark-1 / spark-5c2d | the two prompts above | real (two different published machines, combined here as one cross-cabled pair) |
| bench ib_write_bw | single twin ~109 Gb/s, both twins 98.04 + 98.04 (spark-link.md 5, [S27]) | reconstructed by the emulator with these numbers |
| everything else | the pairing above, twins on 192.168.100/24 and 192.168.101/24, MTU 9000 | reconstructed by the emulator; MACs made up except node a's base (3c:6d:66:cc:b3:b6, from NVIDIA's `ip addr show` sample) |
"""


# ---------------------------------------------------------------------------------------------------------
# real-gid-drift: tonyd2wild/...-2x-DGX-Spark#38, RoCE v2 GID 3 -> 4 on roceP2p1s0f1 with a pin of 3

def gid_drift() -> Real:
    env = {"NCCL_IB_HCA": "rocep1s0f1,roceP2p1s0f1", "NCCL_IB_GID_INDEX": "3", "NCCL_SOCKET_IFNAME": "enP7s7"}
    mtu = {P1: 9000, P1_2: 9000}
    a = gb10_node("atom-1", "10:ff:e0:aa:10:00", addrs={P1: ("192.168.100.10/24",), P1_2: ("192.168.101.10/24",)},
                  mtu=mtu)
    b = gb10_node("atom-2", "10:ff:e0:bb:20:00", addrs={P1: ("192.168.100.11/24",), P1_2: ("192.168.101.11/24",)},
                  mtu=mtu, mgmt_ip="10.20.0.22/24")
    fn = b.function(P1_2)
    v4 = ipv4_gid("192.168.101.11")
    slots = (GidSlot(0, fe80_gid(fn.mac), GID_TYPE_V1, P1_2), GidSlot(1, fe80_gid(fn.mac), GID_TYPE_V2, P1_2),
             GidSlot(2, v4, GID_TYPE_V1, P1_2), GidSlot(4, v4, GID_TYPE_V2, P1_2))
    b = replace(with_function(b, P1_2, gid_slots=slots), uptime_s=1843.27)
    a, b = _pair(a, b, env, env)
    return Real(
        "real-gid-drift",
        "tonyd2wild/DeepSeek-v4-Flash-Vision-Exp-DSpark-1M-NVFP4-KV-2x-DGX-Spark#38: a GIGABYTE AI TOP ATOM pair "
        "with both HCAs up; within 30 min the RoCE v2 IPv4 GID of roceP2p1s0f1 moved from index 3 to 4 (3 a "
        "hole) while NCCL_IB_GID_INDEX=3 stayed pinned, so only the second HCA fails (ibv_modify_qp 61).",
        "fail", {"GID_INDEX_STALE": "fail", "GID_INDEX_DIFFERS": "warn"},
        {"GID_INDEX_STALE": ["b:roceP2p1s0f1"], "GID_INDEX_DIFFERS": ["pair"]},
        ["LINK_BELOW_NOMINAL", "LINK_HOTPLUG_DEGRADED", "NCCL_BUSBW_LOW", "NCCL_SOCKET_FALLBACK"],
        PROV_GID, a, b,
    )


PROV_GID = """\
# real-gid-drift: provenance

Source: tonyd2wild/DeepSeek-v4-Flash-Vision-Exp-DSpark-1M-NVFP4-KV-2x-DGX-Spark#38 (Lollorosso2, 2026-08-21),
https://github.com/tonyd2wild/DeepSeek-v4-Flash-Vision-Exp-DSpark-1M-NVFP4-KV-2x-DGX-Spark/issues/38, and PR #40
(the doc correction). The report is prose: "the RoCEv2/IPv4 GID moved from index 3 to index 4 on roceP2p1s0f1
within 30 minutes (... index 3 became a hole). A pinned NCCL_IB_GID_INDEX=3 then fails only on the second HCA".

| capture | source | real or reconstructed |
| --- | --- | --- |
| b sysfs_infiniband / show_gids (roceP2p1s0f1: v1/v2 fe80 at 0/1, IPv4 v1 at 2, hole at 3, IPv4 v2 at 4) | the issue's prose | reconstructed by the emulator |
| a, b nccl_env `NCCL_IB_GID_INDEX=3` | the pin "per the doc" (the repo's `.env.dspark`, PR #40) | reconstructed: the pin is placed in the environment capture; NCCL_IB_HCA on both twins (the dual-HCA doc, PR #35) |
| which node drifted | not stated | reconstructed: node b (uptime 31 min) |
| everything else | GIGABYTE AI TOP ATOM = GB10 board, DGX OS, one direct QSFP pair, MTU 9000 (the report's netplan drop-in) | reconstructed by the emulator; hostnames atom-1 / atom-2 and MACs made up |
"""


# ---------------------------------------------------------------------------------------------------------
# real-gx10-pcie-x2: forum 367853, ASUS GX10 0002: functions at Gen5 x2

GX10_LNK = """\
0000:01:00.0  LnkCap: Speed 32GT/s, Width x4    LnkSta: Speed 32GT/s, Width x4
0000:01:00.1  LnkCap: Speed 32GT/s, Width x4    LnkSta: Speed 32GT/s, Width x4
0002:01:00.0  LnkCap: Speed 32GT/s, Width x4    LnkSta: Speed 32GT/s, Width x2 (downgraded)
0002:01:00.1  LnkCap: Speed 32GT/s, Width x4    LnkSta: Speed 32GT/s, Width x2 (downgraded)
"""


def gx10_pcie_x2() -> Real:
    mtu = {P1: 9000, P1_2: 9000}
    a = gb10_node("gx10-a", "fc:4c:ea:10:00:10", addrs={P1: ("192.168.100.10/24",), P1_2: ("192.168.101.10/24",)},
                  mtu=mtu)
    for netdev in (P0_2, P1_2):
        a = with_function(a, netdev, pcie_width=2)
    b = gb10_node("spark-fe", "3c:6d:66:cc:c1:0e", addrs={P1: ("192.168.100.11/24",), P1_2: ("192.168.101.11/24",)},
                  mtu=mtu, mgmt_ip="10.20.0.22/24")
    a, b = _pair(a, b, HCA_P1, HCA_P1)
    return Real(
        "real-gx10-pcie-x2",
        "NVIDIA developer forum 367853: an ASUS Ascent GX10 (BIOS GX10DGX.0103, 2026-01-29) whose 0002:01:00.x "
        "functions train PCIe Gen5 x2 (downgraded; LnkCap x4), cabled to a DGX Spark FE whose four functions run "
        "x4. The used twin enP2p1s0f1np1 on node a is below Gen5 x4: PCIE_LINK_DEGRADED.",
        "fail", {"PCIE_LINK_DEGRADED": "fail"}, {"PCIE_LINK_DEGRADED": [f"a:{P1_2}"]},
        ["LINK_BELOW_NOMINAL", "LINK_HOTPLUG_DEGRADED", "NCCL_BUSBW_LOW", "NCCL_SOCKET_FALLBACK"],
        PROV_GX10_X2, a, b,
    )


PROV_GX10_X2 = f"""\
# real-gx10-pcie-x2: provenance

Source: NVIDIA developer forum, "ASUS Ascent GX10 - Second ConnectX-7 PCIe slot wired at Gen5 x2 instead of x4
(50% bandwidth loss vs DGX Spark FE)",
https://forums.developer.nvidia.com/t/asus-ascent-gx10-second-connectx-7-pcie-slot-wired-at-gen5-x2-instead-of-x4-50-bandwidth-loss-vs-dgx-spark-fe/367853
(ASUSTeK GX10, system version 5.36_GX10DGX, BIOS AMI GX10DGX.0103.2026.0129.1152, DGX OS). Published per function:

```
{GX10_LNK}```

| capture | source | real or reconstructed |
| --- | --- | --- |
| a lspci, a sysfs_pci | the "Observed on ASUS GX10" lines above | reconstructed: full `lspci -vv -d 15b3:` (pciutils >= 3.8 form, whose ` (downgraded)` suffix the post shows) and the sysfs dump with these LnkCap/LnkSta values |
| b lspci, b sysfs_pci | the "Reference: NVIDIA DGX Spark FE" lines (all x4) | reconstructed likewise |
| cabling | the post's cluster is a 3-node ring (2 FE + 1 GX10); this fixture takes one GX10 <-> FE link in cage p1 | reconstructed |
| everything else | DGX OS defaults, twins on two /24s, MTU 9000 (the post's iperf3 runs used MTU 9000) | reconstructed by the emulator; hostnames and MACs made up; no traffic test (the post measured iperf3 only) |
"""


REALS: dict[str, Callable[[], Real]] = {
    "real-healthy-gx10": healthy_gx10, "real-nvidia-perf-guide": nvidia_perf_guide, "real-hotplug-13g": hotplug_13g,
    "real-oct2025-linklocal": oct2025_linklocal, "real-dec2025-same-subnet": dec2025_same_subnet,
    "real-cross-cage": cross_cage, "real-gid-drift": gid_drift, "real-gx10-pcie-x2": gx10_pcie_x2,
}


def _captures(real: Real) -> list[Capture]:
    caps = node_captures("a", real.a) + node_captures("b", real.b)
    out = []
    for cap in caps:
        for node, spec, arg, stdout in real.overrides:
            if (cap.node, cap.spec, cap.arg) == (node, spec, arg):
                cap = replace(cap, stdout=stdout, stderr="", exit_status=0)
        if cap.spec == "ip_addr" and "169.254." in cap.stdout:
            cap = replace(cap, stdout=link_local_scope(cap.stdout))
        out.append(cap)
    return out + real.bench


def write_fixture(name: str) -> Path:
    real = REALS[name]()
    target = ROOT / "fixtures" / name
    if target.exists():
        shutil.rmtree(target)
    nodes = {"a": {"target": real.a.hostname, "hostname": real.a.hostname},
             "b": {"target": real.b.hostname, "hostname": real.b.hostname}}
    write_bundle(Bundle(captures=_captures(real), nodes=nodes, created=CREATED), target)
    expected: dict[str, object] = {
        "scenario": name, "origin": "real", "description": real.description, "verdict": real.verdict,
        "findings": dict(sorted(real.findings.items())),
        "subjects": {k: sorted(v) for k, v in sorted(real.subjects.items())},
        "skips": sorted(real.skips),
    }
    if real.figures:
        expected["figures"] = real.figures
    (target / "expected.yaml").write_text(yaml.safe_dump(expected, sort_keys=False, width=100))
    (target / "PROVENANCE.md").write_text(real.provenance)
    return target


def main(names: list[str]) -> None:
    for name in names or sorted(REALS):
        print(f"wrote {write_fixture(name).relative_to(ROOT)}")


if __name__ == "__main__":
    main(sys.argv[1:])


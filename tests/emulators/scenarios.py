"""Named two-node scenarios: a healthy GB10 pair and one per trap, with the findings each must raise.

Numbers are the published GB10 ones (spark-link.md §5): ~98 + ~98 Gb/s for both twins at once, ~109 Gb/s
for one twin alone, busbw ~23.7 GB/s; 13.3 Gb/s per path after a hot-plug; ~48 Gb/s per flow when both
flows share one PCIe x4 link. `scenario_captures` / `scenario_bench_captures` turn them into Captures.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from tests.emulators.bench import (
    BenchArtifact,
    allreduce_artifacts,
    latency_artifacts,
    nccl_artifacts,
    rdma_artifacts,
)
from tests.emulators.build import (
    NETPLAN_PATH,
    NM_ALL_PATH,
    NM_ALL_TEXT,
    Addrs,
    boot_dmesg,
    gb10_node,
    hotplug_dmesg,
    netplan_yaml,
    paired,
    with_function,
)
from tests.emulators.captures import scenario_bench_captures, scenario_captures
from tests.emulators.derive import fe80_gid, ipv4_gid
from tests.emulators.node import GID_TYPE_V1, GID_TYPE_V2, UBUNTU_2404_OS_RELEASE, Cable, GidSlot, NetplanFile, Node

__all__ = ["SCENARIOS", "Scenario", "scenario_captures", "scenario_bench_captures"]

P1, P1_2 = "enp1s0f1np1", "enP2p1s0f1np1"
MAC_A, MAC_B = "3c:6d:66:cc:b3:b6", "3c:6d:66:cc:c1:0e"
HCA_ENV = {"NCCL_IB_HCA": "rocep1s0f1,roceP2p1s0f1", "NCCL_SOCKET_IFNAME": "enP7s7"}
JUMBO = {P1: 9000, P1_2: 9000}


@dataclass(frozen=True)
class Scenario:
    """Two nodes, their benchmark outputs and the rule ids that must warn or fail (nothing else may).

    `subjects` names, per rule in `expected_findings`, every subject that warns or fails; `skips` the rule ids
    that must skip somewhere (the traffic-test rules skip when the bundle holds no such test); `figures` the
    measured numbers the diagnosis must read (see tests/scenarios/test_scenarios.py).
    """

    name: str
    description: str
    node_a: Node
    node_b: Node
    bench: tuple[BenchArtifact, ...]
    expected_findings: dict[str, str]
    subjects: dict[str, tuple[str, ...]] = field(default_factory=dict)
    skips: tuple[str, ...] = ()
    figures: dict[str, object] = field(default_factory=dict)


NO_NCCL = ("NCCL_BUSBW_LOW", "NCCL_SOCKET_FALLBACK")
NO_BENCH = (*NO_NCCL, "LINK_BELOW_NOMINAL", "LINK_HOTPLUG_DEGRADED")
PATH_1, PATH_2 = f"{P1}<->{P1}", f"{P1_2}<->{P1_2}"


def _pair(addr_a: Addrs, addr_b: Addrs, *,
          mtu_b: dict[str, int] | None = None, netplan_mtu_b: dict[str, int] | None = None,
          cable: Cable | None = None, extra_netplan: tuple[NetplanFile, ...] = ()) -> tuple[Node, Node]:
    a = gb10_node("dgx-spark-1", MAC_A, addrs=addr_a, mtu=JUMBO, cable=cable, extra_netplan=extra_netplan)
    b = gb10_node("dgx-spark-2", MAC_B, addrs=addr_b, mtu=mtu_b or JUMBO, cable=cable, mgmt_ip="10.20.0.22/24",
                  netplan_mtu=netplan_mtu_b, extra_netplan=extra_netplan)
    return paired(replace(a, nccl_env=dict(HCA_ENV)), replace(b, nccl_env=dict(HCA_ENV)))


def _two_subnets() -> tuple[Node, Node]:
    """NVIDIA's current layout: one cable in cage p1, one /24 per twin."""
    return _pair({P1: ("192.168.100.10/24",), P1_2: ("192.168.101.10/24",)},
                 {P1: ("192.168.100.11/24",), P1_2: ("192.168.101.11/24",)})


def with_rates(a: Node, b: Node, alone: tuple[float, float], concurrent: tuple[float, float],
               busbw_gbs: float | None = None, transport: str | None = None) -> tuple[Node, Node]:
    """The lab's emulated rates per RDMA device (client side), the numbers `_rdma` renders, and busbw."""
    def rates(node: Node, jitter: tuple[float, float, float, float]) -> Node:
        devs = (node.function(P1).rdma_dev, node.function(P1_2).rdma_dev)
        table = {devs[i]: (round(alone[i] + jitter[i], 2), round(concurrent[i] + jitter[2 + i], 2)) for i in (0, 1)}
        return replace(node, perftest_rates=table, nccl_busbw_gbs=busbw_gbs, nccl_transport=transport)

    return rates(a, (0.0, 0.0, 0.0, 0.0)), rates(b, (-0.21, 0.17, 0.03, -0.05))


def _rdma(a: Node, b: Node, alone: tuple[float, float], concurrent: tuple[float, float], *,
          report_gbits: bool = True) -> list[BenchArtifact]:
    """Each twin path alone, then both at once; both directions (a little jitter between directions)."""
    out = rdma_artifacts(a, b, [(P1, P1, alone[0], round(alone[0] - 0.21, 2))], "alone", report_gbits=report_gbits)
    out += rdma_artifacts(a, b, [(P1_2, P1_2, alone[1], round(alone[1] + 0.17, 2))], "alone",
                          report_gbits=report_gbits)
    out += rdma_artifacts(a, b, [(P1, P1, concurrent[0], round(concurrent[0] + 0.03, 2)),
                                 (P1_2, P1_2, concurrent[1], round(concurrent[1] - 0.05, 2))], "concurrent",
                          report_gbits=report_gbits)
    return out


def healthy() -> Scenario:
    a, b = with_rates(*_two_subnets(), (109.29, 108.94), (98.03, 98.04), 23.74)
    bench = _rdma(a, b, (109.29, 108.94), (98.03, 98.04)) + nccl_artifacts(a, b, 23.74)
    return Scenario("healthy", "One Amphenol NJAAKK-N911 in cage p1 of both nodes, twins on 192.168.100/24 and "
                    "192.168.101/24, MTU 9000, GID index 3 everywhere, NCCL_IB_HCA on both twins, no GID pin.",
                    a, b, tuple(bench), {},
                    figures={"rdma_concurrent_total_gbps": {"a->b": 196.07, "b->a": 196.05}, "rdma_runs": 8,
                             "nccl_busbw_gbs": 23.79})


def gid_stale() -> Scenario:
    a, b = _two_subnets()
    fn = b.function(P1_2)
    v4 = ipv4_gid("192.168.101.11")
    slots = (GidSlot(0, fe80_gid(fn.mac), GID_TYPE_V1, P1_2), GidSlot(1, fe80_gid(fn.mac), GID_TYPE_V2, P1_2),
             GidSlot(2, v4, GID_TYPE_V1, P1_2), GidSlot(4, v4, GID_TYPE_V2, P1_2))
    b = with_function(b, P1_2, gid_slots=slots)
    conf = "NCCL_IB_GID_INDEX=3\n"
    a, b = replace(a, nccl_conf=conf), replace(b, nccl_conf=conf, uptime_s=1843.27)
    return Scenario("gid-stale", "After a reboot node b's roceP2p1s0f1 holds its IPv4 RoCE v2 GID at index 4 "
                    "(index 3 is a hole) while /etc/nccl.conf pins NCCL_IB_GID_INDEX=3 on both nodes.",
                    a, b, (), {"GID_INDEX_STALE": "fail", "GID_INDEX_DIFFERS": "warn"},
                    {"GID_INDEX_STALE": ("b:roceP2p1s0f1",), "GID_INDEX_DIFFERS": ("pair",)}, NO_BENCH)


def hotplug_degraded() -> Scenario:
    a, b = _two_subnets()
    fns = a.functions
    log = (*boot_dmesg(fns, None), *hotplug_dmesg(fns, "p1", 3600.41))
    a = replace(a, dmesg=tuple(log), uptime_s=7212.55)
    a = with_function(with_function(a, P1, carrier_changes=4), P1_2, carrier_changes=4)
    a, b = with_rates(a, b, (13.31, 13.27), (13.33, 13.23), 3.02)  # collective ~24 Gb/s (spark-link 3d)
    a, b = (_hotplug_latency(n) for n in (a, b))
    bench = _rdma(a, b, (13.31, 13.27), (13.33, 13.23))
    return Scenario("hotplug-degraded", "Node a booted without the cable; it was plugged in ~1 h later "
                    "(cx7-pcie-hotplug). Everything reads healthy but each path runs ~13 Gb/s.",
                    a, b, tuple(bench), {"LINK_HOTPLUG_DEGRADED": "fail"},
                    {"LINK_HOTPLUG_DEGRADED": (PATH_1, PATH_2)}, NO_NCCL)


def _hotplug_latency(node: Node) -> Node:
    """The lab's latency in the hot-plug state, as hotplug-latency's fixture: 48 KiB in ~31 us per path (~13.4
    Gb/s on the wire after the fixed cost), the small all_reduce 1.9 times slower."""
    rates = {node.function(P1).rdma_dev: (1.52, 13.38), node.function(P1_2).rdma_dev: (1.53, 13.25)}
    return replace(node, latency_rates=rates, allreduce_slowdown=1.9)


def single_pcie_path() -> Scenario:
    a, b = _two_subnets()
    wrong_mac = a.function(P1).mac
    neigh = tuple(replace(n, lladdr=wrong_mac) if n.dst == "192.168.101.10" else n for n in b.neighbours)
    b = replace(b, neighbours=neigh)
    a, b = (replace(n, versions={**n.versions, "perftest": "6.06"}) for n in (a, b))
    a, b = with_rates(a, b, (98.02, 97.96), (48.1, 47.2), 11.9)  # both flows on one x4 link
    bench = _rdma(a, b, (98.02, 97.96), (48.1, 47.2), report_gbits=False)
    return Scenario("single-pcie-path", "Config correct at the IP level, but node b resolved node a's "
                    "192.168.101.10 to the MAC of a's enp1s0f1np1 (the other twin): both flows land on one x4 "
                    "link. perftest 6.06 (MB/sec units, no --report_gbits).",
                    a, b, tuple(bench), {"SINGLE_PCIE_PATH": "fail"},
                    {"SINGLE_PCIE_PATH": (f"b:{P1_2}", "rdma a->b concurrent", "rdma b->a concurrent")}, NO_NCCL)


def twins_same_subnet() -> Scenario:
    nm = (NetplanFile(NM_ALL_PATH, NM_ALL_TEXT),)
    a, b = _pair({P1: ("192.168.100.10/24",), P1_2: ("192.168.100.14/24",)},
                 {P1: ("192.168.100.11/24",), P1_2: ("192.168.100.15/24",)}, extra_netplan=nm)
    a, b = with_rates(a, b, (108.87, 109.05), (97.12, 96.41))
    bench = _rdma(a, b, (108.87, 109.05), (97.12, 96.41))
    return Scenario("twins-same-subnet", "NVIDIA's Dec-2025 layout: both twins of cage p1 in one /24 (two "
                    "connected routes for the subnet). RoCE resolved each peer twin on its own netdev and the "
                    "two-rail test passed, so only the layout warning remains.",
                    a, b, tuple(bench), {"TWINS_SAME_SUBNET": "warn"},
                    {"TWINS_SAME_SUBNET": ("node a", "node b")}, NO_NCCL)


def mtu_mismatch() -> Scenario:
    addr_a = {P1: ("192.168.100.10/24",), P1_2: ("192.168.101.10/24",)}
    addr_b = {P1: ("192.168.100.11/24",), P1_2: ("192.168.101.11/24",)}
    a, b = _pair(addr_a, addr_b, mtu_b={P1: 9000, P1_2: 1500}, netplan_mtu_b={P1: 9000})
    b = replace(b, uptime_s=962.4)
    return Scenario("mtu-mismatch", "After a firmware-update reboot node b's enP2p1s0f1np1 is back at MTU 1500 "
                    "(its 9000 was only ever set live; the netplan file sets it on enp1s0f1np1 only) while node "
                    "a's twin runs 9000.", a, b, (), {"MTU_MISMATCH": "fail"},
                    {"MTU_MISMATCH": (PATH_2,)}, NO_BENCH)


def nccl_socket_fallback() -> Scenario:
    a, b = with_rates(*_two_subnets(), (109.12, 109.33), (98.01, 97.95), 2.04, "Socket")
    bench = _rdma(a, b, (109.12, 109.33), (98.01, 97.95)) + nccl_artifacts(a, b, 2.04, transport="Socket")
    return Scenario("nccl-socket-fallback", "RDMA is healthy, but NCCL ran without the IB transport (e.g. a "
                    "container without /dev/infiniband): NET/IB found no device and NCCL used sockets on enP7s7.",
                    a, b, tuple(bench), {"NCCL_SOCKET_FALLBACK": "fail", "NCCL_BUSBW_LOW": "fail"},
                    {"NCCL_SOCKET_FALLBACK": ("nccl",), "NCCL_BUSBW_LOW": ("nccl",)})


def unapproved_cable() -> Scenario:
    cable = Cable(identifier_code=0x11, vendor_name="FS", vendor_oui="64:9d:99", vendor_pn="QSFP-100G-CU1M",
                  vendor_sn="F2240812345", vendor_rev="A", length_m=1.0, date_code="240815")
    a, b = _pair({P1: ("192.168.100.10/24",), P1_2: ("192.168.101.10/24",)},
                 {P1: ("192.168.100.11/24",), P1_2: ("192.168.101.11/24",)}, cable=cable)
    return Scenario("unapproved-cable", "A generic 100G DAC (SFF-8636, Vendor PN QSFP-100G-CU1M) that is not on "
                    "NVIDIA's list, although the link came up at 200000 Mb/s.",
                    a, b, (), {"CABLE_NOT_APPROVED": "warn"},
                    {"CABLE_NOT_APPROVED": ("node a", "node b")}, NO_BENCH)


def degraded_collection() -> Scenario:
    a, b = _two_subnets()
    missing = frozenset({"ibv_devinfo", "ibstat", "show_gids", "ibdev2netdev", "rdma"})
    b = replace(b, sudo_ok=False, missing_tools=missing)
    return Scenario("degraded-collection", "Node b refuses sudo without a password (lspci, ethtool -m, netplan "
                    "files and dmesg fail) and has no rdma-core/MLNX tools; node a is healthy. The verdict must "
                    "be inconclusive.", a, b, (), {}, {},
                    ("CABLE_NOT_APPROVED", "NETPLAN_NOT_APPLIED", "NM_PROFILE_RUNTIME_ONLY", *NO_BENCH))


def link_down() -> Scenario:
    a, b = _two_subnets()
    b = with_function(b, P1_2, admin_up=False)
    return Scenario("link-down", "Node b's enP2p1s0f1np1, a twin of the cabled cage p1, was left administratively "
                    "down (`ip link set enP2p1s0f1np1 down`) while its twin and node a are up: that twin has no "
                    "carrier and its RoCE device is DOWN.",
                    a, b, (), {"LINK_DOWN": "fail", "NCCL_HCA_UNCABLED": "warn"},
                    {"LINK_DOWN": (f"b:{P1_2}",), "NCCL_HCA_UNCABLED": ("b:roceP2p1s0f1",)}, NO_BENCH)


def link_below_nominal() -> Scenario:
    a, b = with_rates(*_two_subnets(), (71.42, 70.88), (70.21, 69.84))
    bench = _rdma(a, b, (71.42, 70.88), (70.21, 69.84))
    return Scenario("link-below-nominal", "Every path runs ~70 Gb/s, alone and with its twin (140 Gb/s total): well "
                    "below ~92-98 Gb/s, yet not the 8-25 Gb/s hot-plug state and not one shared x4 link (~85-120 "
                    "total). A signature no named rule explains.",
                    a, b, tuple(bench), {"LINK_BELOW_NOMINAL": "fail"}, {"LINK_BELOW_NOMINAL": (PATH_1, PATH_2)},
                    NO_NCCL, {"rdma_concurrent_total_gbps": {"a->b": 140.05, "b->a": 140.03}, "rdma_runs": 8})


def gid_empty_pin() -> Scenario:
    a, b = _two_subnets()
    env = {**HCA_ENV, "NCCL_IB_GID_INDEX": ""}
    a, b = replace(a, nccl_env=dict(env)), replace(b, nccl_env=dict(env))
    return Scenario("gid-empty-pin", "A compose file maps NCCL_IB_GID_INDEX to the empty string on both nodes "
                    "(tonyd2wild/...-2x-DGX-Spark PR #40). NCCL reads an empty value as unset (ncclLoadParam, "
                    "src/misc/param.cc): NCCL 2.28.9 picks the RoCE v2 GID itself, so this is only a note.",
                    a, b, (), {}, {},
                    NO_BENCH)


def nccl_hca_reversed() -> Scenario:
    a, b = _two_subnets()
    b = replace(b, nccl_env={**HCA_ENV, "NCCL_IB_HCA": "roceP2p1s0f1,rocep1s0f1"})
    return Scenario("nccl-hca-reversed", "Node b lists the same two twins as node a in the other order. NCCL_IB_HCA is "
                    "a filter, not an order (ncclIbInit keeps enumeration order), so both ranks use rocep1s0f1 then "
                    "roceP2p1s0f1 and device i faces device i: a healthy pair.",
                    a, b, (), {}, {}, NO_BENCH)


def nccl_hca_pairing() -> Scenario:
    a, b = _pair({P1: ("192.168.100.10/24",), P1_2: ("192.168.101.10/24",)},
                 {P1: ("192.168.101.11/24",), P1_2: ("192.168.100.11/24",)})
    return Scenario("nccl-hca-pairing", "Node b's twins are addressed crosswise (its domain-0 twin on node a's "
                    "domain-2 subnet and the other way round). NCCL uses each node's devices in enumeration order "
                    "and connects device i to device i, so both connections cross subnets.",
                    a, b, (), {"NCCL_HCA_PAIRING": "fail"}, {"NCCL_HCA_PAIRING": ("pair",)}, NO_BENCH)


def nccl_hca_uncabled() -> Scenario:
    a, b = _two_subnets()
    env = {**HCA_ENV, "NCCL_IB_HCA": "rocep1s0f0,rocep1s0f1,roceP2p1s0f1"}
    a, b = replace(a, nccl_env=dict(env)), replace(b, nccl_env=dict(env))
    return Scenario("nccl-hca-uncabled", "Both nodes list rocep1s0f0, a twin of the empty cage p0, besides the two "
                    "twins of the cabled cage p1.",
                    a, b, (), {"NCCL_HCA_UNCABLED": "warn"},
                    {"NCCL_HCA_UNCABLED": ("a:rocep1s0f0", "b:rocep1s0f0")}, NO_BENCH)


def replugged_since_boot() -> Scenario:
    a, b = _two_subnets()
    log = (*boot_dmesg(a.functions, None), *hotplug_dmesg(a.functions, "p1", 3600.41))
    a = replace(a, dmesg=tuple(log), uptime_s=7212.55)
    return Scenario("replugged-since-boot", "Inspection only, after a reboot of node b: node a booted without the "
                    "cable and it was plugged in an hour later (cx7-pcie-hotplug). No traffic test was run, so the "
                    "slow state cannot be measured; the plug-in time is named.",
                    a, b, (), {"LINK_REPLUGGED_SINCE_BOOT": "warn"}, {"LINK_REPLUGGED_SINCE_BOOT": ("node a",)},
                    NO_BENCH)


def nodes_differ() -> Scenario:
    a, b = _two_subnets()
    newer = UBUNTU_2404_OS_RELEASE.replace("24.04.3", "24.04.4")
    b = replace(b, kernel_release="7.0.0-1019-nvidia", os_release=newer,
                functions=tuple(replace(f, fw_ver="28.47.1026") for f in b.functions),
                versions={**b.versions, "perftest": "6.29", "nccl": "2.29.2"},
                dmi={**b.dmi, "bios_version": "5.36_0ACUM021", "bios_date": "09/26/2025"})
    return Scenario("nodes-differ", "Node b was updated and node a was not: kernel 7.0.0-1019-nvidia against "
                    "6.17.0-1008-nvidia, Ubuntu 24.04.4 against 24.04.3, CX-7 firmware 28.47.1026 against 28.45.4028, "
                    "BIOS 5.36_0ACUM021 against 5.36_0ACUM018, perftest 6.29 against 6.22, NCCL 2.29.2 against "
                    "2.28.9 (a mixed pair: 'every failure has a second candidate cause'; the DMI serials and boot ids "
                    "differ too, and are never reported).",
                    a, b, (), {"NODES_DIFFER": "warn"}, {"NODES_DIFFER": ("pair",)}, NO_BENCH)


def netplan_not_applied() -> Scenario:
    a, b = _two_subnets()
    edited = {P1: ("192.168.100.11/24",), P1_2: ("192.168.102.11/24",)}
    b = replace(b, netplan_files=(NetplanFile(NETPLAN_PATH, netplan_yaml(edited, JUMBO)),))
    return Scenario("netplan-not-applied", "On node b /etc/netplan/40-cx7.yaml was edited to move enP2p1s0f1np1 to "
                    "192.168.102.11/24, but `netplan apply` never ran: the live twin still has 192.168.101.11/24, so "
                    "the pair works today and loses that path at the next reboot.",
                    a, b, (), {"NETPLAN_NOT_APPLIED": "warn"}, {"NETPLAN_NOT_APPLIED": (f"b:{P1_2}",)}, NO_BENCH)


NM_DIR = "/run/NetworkManager/system-connections"


def nm_keyfile(name: str, netdev: str, cidr: str, mac: str | None = None) -> str:
    """A keyfile as `nmcli connection add type ethernet ifname X ipv4.method manual ipv4.addresses Y` writes it."""
    eth = f"\n[ethernet]\nmac-address={mac.upper()}\n" if mac else "\n[ethernet]\n"
    return (f"[connection]\nid={name}\nuuid=7f3c2a5e-1b6d-4e8f-9a0b-2c4d6e8f0a1b\ntype=ethernet\n"
            f"interface-name={netdev}\n{eth}\n[ipv4]\naddress1={cidr}\nmethod=manual\n\n"
            "[ipv6]\naddr-gen-mode=default\nmethod=disabled\n\n[proxy]\n")


def netplan_nm_keyfile(netdev: str, cidr: str) -> str:
    """What netplan's NetworkManager renderer writes for an ethernet with one address (src/nm.c)."""
    return (f"[connection]\nid=netplan-{netdev}\ntype=ethernet\ninterface-name={netdev}\n\n[ethernet]\n"
            f"wake-on-lan=0\n\n[ipv4]\nmethod=manual\naddress1={cidr}\n\n[ipv6]\nmethod=ignore\n")


def nm_profile_runtime_only() -> Scenario:
    a, b = _two_subnets()
    # Node a: the netplan file names only the first twin; the second got its address from an in-memory profile.
    only_p1 = netplan_yaml({P1: ("192.168.100.10/24",)}, {})
    a = replace(a, netplan_files=(NetplanFile(NETPLAN_PATH, only_p1),), nm_connections=(
        NetplanFile(f"{NM_DIR}/cx7-p1-2.nmconnection", nm_keyfile("cx7-p1-2", P1_2, "192.168.101.10/24")),))
    # Node b: netplan with the NetworkManager renderer; its generated profiles under /run are not flagged.
    b = replace(b, netplan_files=(NetplanFile(NM_ALL_PATH, NM_ALL_TEXT), *b.netplan_files), nm_connections=(
        NetplanFile(f"{NM_DIR}/netplan-{P1}.nmconnection", netplan_nm_keyfile(P1, "192.168.100.11/24")),
        NetplanFile(f"{NM_DIR}/netplan-{P1_2}.nmconnection", netplan_nm_keyfile(P1_2, "192.168.101.11/24"))))
    return Scenario("nm-profile-runtime-only", "On node a the second twin's address comes from a NetworkManager "
                    "profile made with `nmcli connection add ... save no`: it lives in /run and is gone at the next "
                    "boot, and no netplan file names the twin. Node b's profiles under /run are netplan's own "
                    "(renderer NetworkManager), regenerated at every boot.",
                    a, b, (), {"NM_PROFILE_RUNTIME_ONLY": "warn"}, {"NM_PROFILE_RUNTIME_ONLY": (f"a:{P1_2}",)},
                    NO_BENCH)


def fec_off() -> Scenario:
    a, b = _two_subnets()
    b = replace(b, functions=tuple(replace(f, fec_active="None") if f.cage == "p1" else f for f in b.functions))
    return Scenario("fec-off", "Node b's twins run 200G with no FEC (`Active FEC encoding: None`, as a GB10 field "
                    "paste showed after a cable move) while node a's run RS; everything else is healthy. "
                    "Inspection only: a warning, since the throughput that would show its cost was not measured.",
                    a, b, (), {"FEC_NOT_RS": "warn"}, {"FEC_NOT_RS": (PATH_1, PATH_2)}, NO_BENCH)


# ib_write_lat per path (us): 2 B as published for a GB10 pair (1.47, spark-link s.5), 48 KiB as the 8.8 us of
# local-inference-lab/b12x#295 (spark-link s.10); the second twin a hair slower.
HEALTHY_LATENCY = {2: 1.47, 49152: 8.8}
HEALTHY_LATENCY_2 = {2: 1.49, 49152: 8.84}


def _latency(a: Node, b: Node, per_path: tuple[dict[int, float], dict[int, float]],
             slowdown: float = 1.0) -> list[BenchArtifact]:
    return (latency_artifacts(a, b, [(P1, P1, per_path[0]), (P1_2, P1_2, per_path[1])])
            + allreduce_artifacts(a, b, slowdown=slowdown))


def healthy_latency() -> Scenario:
    base = healthy()
    bench = (*base.bench, *_latency(base.node_a, base.node_b, (HEALTHY_LATENCY, HEALTHY_LATENCY_2)))
    return Scenario("healthy-latency", base.description + " With the latency test (`linkcheck bench latency`): "
                    "ib_write_lat 1.47/1.49 us at 2 B and 8.80/8.84 us at 48 KiB per path, all_reduce 16-64 KiB in "
                    "39.5-68 us.", base.node_a, base.node_b, bench, {},
                    figures={**base.figures, "latency_runs": 4, "allreduce_64k_us": 68.0})


def hotplug_latency() -> Scenario:
    base = hotplug_degraded()
    # 48 KiB at ~13.3 Gb/s is 29.6 us on the wire alone; the small all_reduce pays the slow link on every step.
    slow = {2: 1.52, 49152: 30.9}
    bench = (*base.bench, *_latency(base.node_a, base.node_b, (slow, {2: 1.53, 49152: 31.2}), slowdown=1.9))
    return Scenario("hotplug-latency", base.description + " The latency test too: 48 KiB writes take ~31 us per "
                    "path (8.8 when healthy) and the 64 KiB all_reduce ~129 us (68 when healthy).",
                    base.node_a, base.node_b, bench,
                    {**base.expected_findings, "RDMA_LATENCY_HIGH": "fail", "NCCL_ALLREDUCE_LATENCY_HIGH": "warn"},
                    {**base.subjects, "RDMA_LATENCY_HIGH": (f"{PATH_1} ib_write_lat 48 KiB",
                                                            f"{PATH_2} ib_write_lat 48 KiB"),
                     "NCCL_ALLREDUCE_LATENCY_HIGH": ("all_reduce small messages",)}, base.skips)


SCENARIOS: dict[str, Scenario] = {
    s.name: s for s in (healthy(), gid_stale(), hotplug_degraded(), single_pcie_path(), twins_same_subnet(),
                        mtu_mismatch(), nccl_socket_fallback(), unapproved_cable(), degraded_collection(),
                        link_down(), link_below_nominal(), gid_empty_pin(), nccl_hca_reversed(), nccl_hca_pairing(),
                        nccl_hca_uncabled(),
                        replugged_since_boot(), nodes_differ(), fec_off(),
                        netplan_not_applied(), nm_profile_runtime_only(), healthy_latency(), hotplug_latency())
}

"""The GB10 tool emulators print the exact formats of tools-formats.md and agree with real commands."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from linkcheck.collect.specs import SPECS, SPECS_BY_ID
from tests.emulators import render_netplan
from tests.emulators.bench_nccl import NcclTestsRun, Row, header, render_all_gather_perf, row_text
from tests.emulators.bench_nccl_log import gid_le_pair
from tests.emulators.bench_perftest import PerftestRun, render_ib_write_bw, render_ib_write_bw_json
from tests.emulators.build import with_function
from tests.emulators.node import Cable, Node, materialise_sysfs
from tests.emulators.render import cx7_netdevs, render
from tests.emulators.render_eeprom import cmis_text, render_ethtool_m, sff8636_text
from tests.emulators.scenarios import SCENARIOS, scenario_bench_captures, scenario_captures

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "tests" / "samples" / "iproute"
HEALTHY = SCENARIOS["healthy"]
ALL_NODES = [(f"{name}:{side}", node) for name, s in SCENARIOS.items()
             for side, node in (("a", s.node_a), ("b", s.node_b))]

# tool-formats.md 1.12: the row regex that works for every perftest BW test and version.
PERFTEST_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)(\s+[\d.]+)?\s*$")


@pytest.mark.parametrize(("label", "node"), ALL_NODES, ids=[label for label, _ in ALL_NODES])
def test_node_model_round_trips_through_json(label: str, node: Node, tmp_path: Path) -> None:
    text = node.to_json()
    assert Node.from_json(text) == node
    assert Node.from_json(json.loads(text)) == node
    (tmp_path / "node.json").write_text(text, encoding="utf-8")
    assert Node.load(tmp_path / "node.json") == node


def test_every_spec_renders_on_every_node() -> None:
    for _, node in ALL_NODES:
        for spec in (s for s in SPECS if not s.per_container):
            for arg in cx7_netdevs(node) if spec.per_netdev else [None]:
                out, err, rc = render(node, spec.id, arg)
                assert isinstance(out, str) and isinstance(err, str) and isinstance(rc, int)
                # No NetworkManager keyfile at all (a networkd node) is an empty answer, as on a real node; so is a
                # kernel command line without an IOMMU word, and a node without libnccl.
                assert rc != 0 or out or (spec.id == "nm_connections" and not node.nm_connections) or (
                    spec.id == "cmdline_iommu" and not node.cmdline_iommu) or (
                    spec.id == "nccl_conf_file" and "NCCL_CONF_FILE" not in node.nccl_env) or (
                    spec.id == "nccl_libs" and not render(node, "nccl_install")[0]), (spec.id, arg)


def test_show_gids_matches_the_script_layout() -> None:
    out = render(HEALTHY.node_a, "show_gids")[0].splitlines()
    assert out[0] == "DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV"
    assert out[1] == "---\t----\t-----\t---\t\t\t\t\t------------  \t---\t---"
    assert "rocep1s0f1\t1\t3\t0000:0000:0000:0000:0000:ffff:c0a8:640a\t192.168.100.10  \tv2\tenp1s0f1np1" in out
    assert "rocep1s0f1\t1\t0\tfe80:0000:0000:0000:3e6d:66ff:fecc:b3b7\t\t\tv1\tenp1s0f1np1" in out
    assert out[-1] == f"n_gids_found={len(out) - 3}"


def test_show_gids_and_devinfo_skip_the_hole_of_a_stale_table() -> None:
    node = SCENARIOS["gid-stale"].node_b
    rows = [r.split("\t") for r in render(node, "show_gids")[0].splitlines() if r.startswith("roceP2p1s0f1")]
    assert [r[2] for r in rows] == ["0", "1", "2", "4"]
    devinfo = render(node, "ibv_devinfo")[0]
    assert "\t\t\tGID[  4]:\t\t::ffff:192.168.101.11, RoCE v2\n" in devinfo
    assert "\t\t\tGID[  2]:\t\t0000:0000:0000:0000:0000:ffff:c0a8:650b, RoCE v1\n" in devinfo
    sysfs = render(node, "sysfs_infiniband")[0]
    port = "/sys/class/infiniband/roceP2p1s0f1/ports/1"
    assert f"{port}/gids/3:" not in sysfs and f"{port}/gid_attrs/types/3" not in sysfs  # the hole: no used slot
    assert f"{port}/gids/4:0000:0000:0000:0000:0000:ffff:c0a8:650b\n{port}/gid_attrs/types/4:RoCE v2\n" in sysfs


def test_ibv_devinfo_gid_forms_by_rdma_core_version() -> None:
    node = HEALTHY.node_a
    modern = render(node, "ibv_devinfo")[0]
    assert "\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n" in modern and "\t\t\tactive_width:\t\t2X (16)\n" in modern
    assert "\t\t\tGID[  1]:\t\tfe80::3e6d:66ff:fecc:b3b7, RoCE v2\n" in modern
    legacy = render(Node.from_json({**node.to_dict(), "versions": {"rdma-core": "28.0"}}), "ibv_devinfo")[0]
    assert "\t\t\tGID[  3]:\t\t0000:0000:0000:0000:0000:ffff:c0a8:640a\n" in legacy
    assert ", RoCE v" not in legacy


def test_rdma_and_ibstat_report_down_twins_like_gb10() -> None:
    links = json.loads(render(HEALTHY.node_a, "rdma_link")[0])
    states = {link["ifname"]: (link["state"], link["physical_state"]) for link in links}
    assert states == {"rocep1s0f0": ("DOWN", "DISABLED"), "rocep1s0f1": ("ACTIVE", "LINK_UP"),
                      "roceP2p1s0f0": ("DOWN", "DISABLED"), "roceP2p1s0f1": ("ACTIVE", "LINK_UP")}
    ibstat = render(HEALTHY.node_a, "ibstat")[0]
    assert ibstat.startswith("CA 'roceP2p1s0f0'\n\tCA type: MT4129\n")
    assert ibstat.count("\t\tRate: 200\n") == 2 and ibstat.count("\t\tRate: 40\n") == 2


def test_ip_json_matches_the_captured_iproute2_shape() -> None:
    captured = json.loads((SAMPLES / "ip_link_d.json").read_text())[0]
    mine = json.loads(render(HEALTHY.node_a, "ip_link")[0])
    assert list(mine[0].items()) == list(captured.items())  # lo: same keys, same order, same values
    cx7 = next(i for i in mine if i["ifname"] == "enP2p1s0f1np1")
    assert (cx7["phys_port_name"], cx7["parentbus"], cx7["parentdev"]) == ("p1", "pci", "0002:01:00.1")
    assert list(cx7)[-1] == "altnames"
    addr = json.loads(render(HEALTHY.node_a, "ip_addr")[0])
    assert all("linkmode" not in i for i in addr)
    assert render(HEALTHY.node_a, "ip_link")[0].endswith("]\n")


def test_sysfs_dump_equals_the_real_spec_command_on_the_materialised_tree(tmp_path: Path) -> None:
    if shutil.which("bash") is None:
        pytest.skip("bash is needed to run the spec command")
    down = with_function(SCENARIOS["gid-stale"].node_b, "enp1s0f0np0", admin_up=False)
    for i, node in enumerate((down,)):  # holes, EINVAL entries and an admin-down netdev in one node
        root = tmp_path / str(i)
        materialise_sysfs(node, root)
        for spec_id in ("sysfs_net", "sysfs_infiniband", "sysfs_pci"):
            cmd = SPECS_BY_ID[spec_id].command.replace("/sys/", f"{root}/sys/")
            real = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, check=True,
                                  env={"LC_ALL": "C", "PATH": os.environ.get("PATH", "/usr/bin:/bin")})
            rendered = render(node, spec_id)[0]
            # Plain files cannot fail a read: the EINVAL/EOPNOTSUPP lines exist only in the rendering.
            readable = "".join(line + "\n" for line in rendered.splitlines()
                               if "\t!" not in line and not line.startswith("grep: "))
            assert real.stdout.replace(str(root), "") == readable, spec_id
    assert "/sys/class/net/enp1s0f0np0/carrier\t!Invalid argument\n" in render(down, "sysfs_net")[0]


def test_lspci_link_status_forms() -> None:
    sta = re.compile(r"LnkSta:\s+Speed ([\d.]+GT/s|unknown)(?: \((\w+)\))?, Width x(\d+)")
    out = render(HEALTHY.node_a, "lspci")[0]
    assert [m.groups() for m in sta.finditer(out)] == [("32GT/s", None, "4")] * 4
    assert "\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x4, ASPM not supported\n" in out
    x2 = with_function(HEALTHY.node_a, "enP2p1s0f1np1", pcie_width=2)
    assert "\t\tLnkSta:\tSpeed 32GT/s, Width x2 (downgraded)\n" in render(x2, "lspci")[0]
    old = Node.from_json({**HEALTHY.node_a.to_dict(), "versions": {"pciutils": "3.7.0"}})
    assert "\t\tLnkSta:\tSpeed 32GT/s (ok), Width x4 (ok)\n" in render(old, "lspci")[0]


def test_ethtool_module_eeprom_forms() -> None:
    nvidia = Cable(0x1E, "NVIDIA", "48:b0:2d", "MCP4Y10-N001", "MT2412VS01234", "A2", 1.0, "240318")
    assert cmis_text(nvidia).splitlines()[0] == (
        "\tIdentifier                                : 0x1e (QSFP+ or later with Common Management Interface "
        "Specification (CMIS))")
    assert "\tCable assembly length                     : 1.00m\n" in cmis_text(nvidia)
    sff = sff8636_text(Cable())
    for line in ("\tIdentifier                                : 0x11 (QSFP28)",
                 "\tConnector                                 : 0x23 (No separable connector)",
                 "\tTransmitter technology                    : 0xa0 (Copper cable unequalized)",
                 "\tVendor PN                                 : NJAAKK-N911",
                 "\tLength (Copper or Active cable)           : 1m"):
        assert line + "\n" in sff
    cmis_node = Node.from_json({**HEALTHY.node_a.to_dict(), "cable": {**Cable().__dict__, "identifier_code": 0x1E},
                                "versions": {"ethtool": "6.1"}})
    dump = render_ethtool_m(cmis_node, "enp1s0f1np1")[0].splitlines()
    first_row = "0x0000:\t\t1e 50 80 06 00 00 00 00 00 00 00 00 00 00 1a 80 "
    assert dump[:3] == ["Offset\t\tValues", "------\t\t------", first_row]
    assert len(dump) == 2 + 8 and "NJAAKK" not in "\n".join(dump)
    assert render_ethtool_m(HEALTHY.node_a, "enP2p1s0f0np0") == ("", "netlink error: Operation not supported\n", 1)
    down_twin = with_function(HEALTHY.node_a, "enp1s0f1np1", carrier=False)
    assert render_ethtool_m(down_twin, "enp1s0f1np1")[2] == 0  # the module is read whatever the link does


def test_ethtool_link_lines() -> None:
    up, err, rc = render(HEALTHY.node_a, "ethtool", "enp1s0f1np1")
    assert (err, rc) == ("netlink error: Operation not permitted\n", 0)
    assert "\tSpeed: 200000Mb/s\n" in up and "\tLink detected: yes\n" in up
    assert "\tSupported link modes:   1000baseKX/Full\n\t                        10000baseKR/Full\n" in up
    down = render(HEALTHY.node_a, "ethtool", "enp1s0f0np0")[0]
    assert "\tSpeed: Unknown!\n\tDuplex: Unknown! (255)\n" in down and "Link detected: no (No cable)" in down
    assert render(HEALTHY.node_a, "ethtool_i", "enp1s0f1np1")[0].splitlines()[3] == "expansion-rom-version: "


def _rows(text: str) -> list[tuple[str | None, ...]]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if re.search(r"#bytes\s+#iterations", line))
    return [m.groups() for line in lines[start + 1:] if (m := PERFTEST_ROW.match(line))]


def test_perftest_rows_match_the_doc_samples_exactly() -> None:
    new = PerftestRun("client", "mlx5_0", 3, "::ffff:192.168.100.2", "::ffff:192.168.100.1", 384.12,
                      size_bytes=65536, duration_s=None, version="6.29", peak_gbps=384.33, msg_rate_mpps=0.732647)
    out = render_ib_write_bw(new)[0]
    assert " 65536      5000             384.33             384.12 \t\t     0.732647\n" in out
    assert " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n" in out
    assert " GID: 00:00:00:00:00:00:00:00:00:00:255:255:192:168:100:01\n" in out
    mb = 8 * 1048576 / 1e9
    old = PerftestRun("client", "mlx5_0", 0, "::1", "::1", 23540.87 * mb, size_bytes=65536, duration_s=None,
                      version="6.06", report_gbits=False, peak_gbps=23543.10 * mb, msg_rate_mpps=0.376654)
    text = render_ib_write_bw(old)[0]
    assert " 65536      5000             23543.10            23540.87\t\t   0.376654\n" in text
    assert _rows(text) == [("65536", "5000", "23543.10", "23540.87", "0.376654", None)]


def test_perftest_duration_mode_server_and_units() -> None:
    run = PerftestRun("server", "rocep1s0f1", 3, "::ffff:192.168.100.11", "::ffff:192.168.100.10", 98.03)
    out, err, rc = render_ib_write_bw(run)
    lines = out.splitlines()
    assert (lines[0], lines[2], err, rc) == (" WARNING: BW peak won't be measured in this run.",
                                             "************************************", "", 0)
    assert " TX depth" not in out and " rdma_cm QPs\t : OFF\n" in out
    size, iters, pk, avg, _, _ = _rows(out)[0]
    assert (size, pk, avg) == ("1048576", "0.00", "98.03") and int(iters or 0) == int(98.03e9 / 8 * 6 / 1048576)
    mib = render_ib_write_bw(PerftestRun("client", "d", 3, "::1", "::1", 98.03, report_gbits=False))[0]
    assert "BW average[MiB/sec]" in mib and _rows(mib)[0][3] == f"{98.03e9 / 8 / 1048576:.2f}"
    doc = json.loads(render_ib_write_bw_json(run))
    assert doc["results"]["BW_average"] == 98.03 and "TX_depth" not in doc["test_info"]


NCCL_DOC = """\
# nccl-tests version 2.19.6 nccl-headers=22905 nccl-library=22905
# Collective test starting: all_gather_perf
# nThread 1 nGpus 1 minBytes 1048576 maxBytes 1073741824 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0
#
# Using devices
#  Rank  0 Group  0 Pid 412345 on      gpu-a device  0 [0000:18:00] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid 398211 on      gpu-b device  0 [0000:18:00] NVIDIA H100 80GB HBM3
#
#                                                              out-of-place                       in-place          
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong 
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         
     1048576        131072     float    none      -1    52.31   20.05   10.02       0    51.88   20.21   10.11       0
  1073741824     134217728     float    none      -1  22456.3   47.81   23.91       0  22401.9   47.93   23.97       0
"""  # noqa: E501,W291 (the doc's fixture, trailing spaces included)


def test_nccl_tests_header_and_rows_match_the_doc_fixture() -> None:
    doc = NCCL_DOC.splitlines()
    run = NcclTestsRun(("gpu-a.lab", "gpu-b"), ((1048576, 10.0), (1073741824, 23.9)), version="2.17.6",
                       nccl_version="2.29.5", gpu_bus="0000:18:00", gpu_name="NVIDIA H100 80GB HBM3")
    mine = header(run).splitlines()
    assert mine[0] == "# nccl-tests version 2.17.6 nccl-headers=22905 nccl-library=22905"
    assert mine[1] == doc[1] and mine[2] + " unalign: 0" == doc[2]  # unalign arrives in v2.19.0
    assert mine[3:] == doc[3:11]
    rows = [Row(1048576, (52.31, 51.88), (20.05, 20.21), (10.02, 10.11), (0, 0)),
            Row(1073741824, (22456.3, 22401.9), (47.81, 47.93), (23.91, 23.97), (0, 0))]
    assert [row_text(run, r) for r in rows] == [line + "\n" for line in doc[11:13]]


def test_nccl_tests_footer_exit_status_and_busbw() -> None:
    run = NcclTestsRun(("a", "b"), ((1 << 30, 23.7), (1 << 34, 23.74)), wrong=1024)
    out, _, rc = render_all_gather_perf(run)
    assert rc == 7 and "# Out of bounds values : 1024 FAILED\n" in out
    avg = float(re.search(r"# Avg bus bandwidth    : (\S+) \n", out).group(1))  # type: ignore[union-attr]
    busbw = [float(line.split()[7]) for line in out.splitlines() if line.strip()[:1].isdigit()]
    assert busbw == [23.7, 23.74] and 23.7 <= avg <= 23.8
    assert render_all_gather_perf(NcclTestsRun(("a", "b"), ((1 << 30, 23.7),)))[2] == 0


def test_nccl_log_transport_lines() -> None:
    assert gid_le_pair("::ffff:192.168.100.1") == "0/164A8C0FFFF0000"
    healthy = next(b for b in HEALTHY.bench if b.spec == "nccl_log").stdout
    using = "NCCL INFO NET/IB : Using [0]rocep1s0f1:1/RoCE [1]roceP2p1s0f1:1/RoCE [RO]; OOB enP7s7:10.20.0.21<0>\n"
    assert using in healthy
    assert "via NET/IB/0\n" in healthy and "via NET/IB/1\n" in healthy and "Using network IB\n" in healthy
    assert re.search(r"^dgx-spark-1:412345:\d+ \[0\] NCCL INFO NET/IB: NCCL Dev 0 IbDev 0 Port 1 qpn \d+ mtu 5 GID 3 "
                     r"\(0/A64A8C0FFFF0000\)", healthy, re.M)
    fallback = next(b for b in SCENARIOS["nccl-socket-fallback"].bench if b.spec == "nccl_log").stdout
    assert "NET/IB : No device found.\n" in fallback and "Using network Socket\n" in fallback
    assert "NET/IB/" not in fallback


def test_netplan_get_style_and_tail_headers() -> None:
    node = SCENARIOS["twins-same-subnet"].node_a
    get = render_netplan.render_netplan_get(node)[0]  # the emulated `netplan get` (not inspected by default)
    assert '      addresses:\n      - "192.168.100.10/24"\n      mtu: 9000\n' in get
    assert "  renderer: NetworkManager\n" in get and "dhcp4" not in get
    assert yaml.safe_load(get)["network"]["ethernets"]["enP2p1s0f1np1"]["addresses"] == ["192.168.100.14/24"]
    tail = render(node, "netplan_files")[0]
    assert tail.startswith("==> /etc/netplan/01-network-manager-all.yaml <==\n")
    assert "\n\n==> /etc/netplan/40-cx7.yaml <==\nnetwork:\n" in tail
    assert not render(HEALTHY.node_a, "netplan_files")[0].startswith("==>")


def test_degraded_node_fails_like_bash_and_sudo() -> None:
    node = SCENARIOS["degraded-collection"].node_b
    assert render(node, "ibv_devinfo") == ("", "bash: line 1: ibv_devinfo: command not found\n", 127)
    assert render(node, "rdma_link") == ("", "bash: line 1: rdma: command not found\n", 127)
    for spec_id, arg in (("lspci", None), ("netplan_files", None), ("dmesg", None), ("ethtool_m", "enp1s0f1np1")):
        assert render(node, spec_id, arg) == ("", "sudo: a password is required\n", 1)
    assert render(node, "ethtool", "enp1s0f1np1")[2] == 0


def test_dmesg_and_proc_formats() -> None:
    log = render(SCENARIOS["hotplug-degraded"].node_a, "dmesg")[0]
    assert re.search(r"^\[ 3600\.410000\] cx7-pcie-hotplug MTKP0001:00: Cable plugin$", log, re.M)
    assert all(re.match(r"^\[[ \d]{5}\.\d{6}\] ", line) for line in log.splitlines())
    assert render(HEALTHY.node_a, "meminfo")[0].startswith("MemTotal:       128452780 kB\nMemFree:  ")
    assert render(HEALTHY.node_a, "nccl_conf") == ("", "cat: /etc/nccl.conf: No such file or directory\n", 1)


EXPECTED = {
    "healthy": {}, "gid-stale": {"GID_INDEX_STALE": "fail", "GID_INDEX_DIFFERS": "warn"},
    "hotplug-degraded": {"LINK_HOTPLUG_DEGRADED": "fail"}, "single-pcie-path": {"SINGLE_PCIE_PATH": "fail"},
    "twins-same-subnet": {"TWINS_SAME_SUBNET": "warn"}, "mtu-mismatch": {"MTU_MISMATCH": "fail"},
    "nccl-socket-fallback": {"NCCL_SOCKET_FALLBACK": "fail", "NCCL_BUSBW_LOW": "fail"},
    "unapproved-cable": {"CABLE_NOT_APPROVED": "warn"}, "degraded-collection": {},
    "link-down": {"LINK_DOWN": "fail", "NCCL_HCA_UNCABLED": "warn"},
    "link-below-nominal": {"LINK_BELOW_NOMINAL": "fail"},
    "gid-empty-pin": {}, "nccl-hca-reversed": {},
    "nccl-hca-pairing": {"NCCL_HCA_PAIRING": "fail"},
    "nccl-hca-uncabled": {"NCCL_HCA_UNCABLED": "warn"}, "replugged-since-boot": {"LINK_REPLUGGED_SINCE_BOOT": "warn"},
    "nodes-differ": {"NODES_DIFFER": "warn"}, "netplan-not-applied": {"NETPLAN_NOT_APPLIED": "warn"},
    "fec-off": {"FEC_NOT_RS": "warn"}, "nm-profile-runtime-only": {"NM_PROFILE_RUNTIME_ONLY": "warn"},
    "healthy-latency": {}, "hotplug-latency": {"LINK_HOTPLUG_DEGRADED": "fail", "RDMA_LATENCY_HIGH": "fail",
                                               "NCCL_ALLREDUCE_LATENCY_HIGH": "warn"},
}
META_KEYS = {"kind", "mode", "direction", "role", "local_netdev", "local_rdma_dev", "peer_netdev", "peer_rdma_dev",
             "gid_index", "report_gbits", "duration_s"}
# The latency test's captures: ib_write_lat per path and size (one round each), all_reduce_perf once.
LATENCY_META_KEYS = {"ib_write_lat": {"kind", "tool", "round", "role", "path", "direction", "local_netdev",
                                      "local_rdma_dev", "peer_netdev", "peer_rdma_dev", "gid_index", "size_bytes",
                                      "format"},
                     "all_reduce_perf": {"kind", "tool", "max_bytes", "format", "local_rdma_dev", "role", "mode"}}


def test_scenarios_and_their_captures() -> None:
    assert {n: s.expected_findings for n, s in SCENARIOS.items()} == EXPECTED
    for name, s in SCENARIOS.items():
        caps = scenario_captures(s) + scenario_bench_captures(s)
        assert len({c.key for c in caps}) == len(caps), name
        for c in scenario_captures(s):
            assert c.command == SPECS_BY_ID[c.spec].render(c.arg) and c.node in ("a", "b")
        for c in scenario_bench_captures(s):
            if c.meta["kind"] == "latency":
                assert set(c.meta) == LATENCY_META_KEYS[c.spec], name
                continue
            assert set(c.meta) == META_KEYS and c.meta["direction"] in ("a->b", "b->a"), name


def test_scenario_numbers_tell_their_story() -> None:
    def concurrent(name: str) -> list[float]:
        return [float(_rows(b.stdout)[0][3] or "nan") for b in SCENARIOS[name].bench if b.spec == "ib_write_bw"
                and b.meta["mode"] == "concurrent" and b.meta["role"] == "client" and b.meta["direction"] == "a->b"]

    assert 195 < sum(concurrent("healthy")) < 197 and 26 < sum(concurrent("hotplug-degraded")) < 27
    mb = sum(concurrent("single-pcie-path")) * 1048576 * 8 / 1e9  # perftest 6.06 prints MB/sec
    assert 94 < mb < 96
    b = SCENARIOS["single-pcie-path"].node_b
    wrong = next(n for n in b.neighbours if n.dst == "192.168.101.10")
    assert wrong.lladdr == SCENARIOS["single-pcie-path"].node_a.function("enp1s0f1np1").mac
    mtu = render(SCENARIOS["mtu-mismatch"].node_b, "sysfs_net")[0]
    assert "/sys/class/net/enP2p1s0f1np1/mtu\t1500\n" in mtu


def _cli(args: list[str], node: Node, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "node.json"
    path.write_text(node.to_json(), encoding="utf-8")
    full_env = {**os.environ, "LINKCHECK_LAB_NODE": str(path), "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "tests.emulators.cli", *args], capture_output=True, text=True,
                          env=full_env, cwd=tmp_path, check=False)


def test_cli_behaves_like_the_tools(tmp_path: Path) -> None:
    node = HEALTHY.node_a
    r = _cli(["ethtool", "nosuchdev0"], node, tmp_path)
    assert (r.returncode, r.stdout) == (75, "No data available\n") and "No such device" in r.stderr
    r = _cli(["ip", "-d", "-j", "link", "show"], node, tmp_path)
    assert (r.returncode, r.stdout) == (0, render(node, "ip_link")[0])
    r = _cli(["ibv_devinfo", "-d", "mlx5_9"], node, tmp_path)
    assert (r.returncode, r.stderr) == (255, "IB device 'mlx5_9' wasn't found\n")
    r = _cli(["ib_write_bw", "-V"], node, tmp_path)
    assert (r.returncode, r.stdout) == (1, "Version: 6.22\n")
    r = _cli(["ib_write_bw", "-d", "rocep1s0f1", "-x", "3", "-F", "--report_gbits", "-D", "10", "-s", "1M",
              "--out_json", "--out_json_file=out.json", "192.168.100.11"], node, tmp_path)
    assert r.returncode == 0 and _rows(r.stdout)[0][3] == "109.00"
    assert json.loads((tmp_path / "out.json").read_text())["test_info"]["GID_index"] == 3
    r = _cli(["ib_write_bw", "-d", "rocep1s0f0"], node, tmp_path)
    assert (r.returncode, r.stderr) == (1, " Port number 1 state is Down\n Couldn't get context for the device\n")
    r = _cli(["all_gather_perf", "-b", "1G", "-e", "16G", "-f", "2", "-g", "1"], node, tmp_path)
    assert r.returncode == 0 and r.stdout.startswith("# nccl-tests version 2.17.6 ")
    missing = Node.from_json({**node.to_dict(), "missing_tools": ["ibstat"]})
    r = _cli(["ibstat"], missing, tmp_path)
    assert (r.returncode, r.stderr) == (127, "bash: line 1: ibstat: command not found\n")


def test_rendered_outputs_parse_with_the_registered_parsers() -> None:
    """Cross-check with linkcheck's parsers (skipped while a parser module does not exist yet)."""
    from linkcheck.parsers import PARSERS, get_parser

    kinds = {"sysfs_net": "sysfs", "sysfs_pci": "sysfs", "sysfs_infiniband": "sysfs", "netplan_files": "netplan",
             "nccl_conf_user": "nccl_conf"}
    checked = 0
    for s in SCENARIOS.values():
        for c in scenario_captures(s) + scenario_bench_captures(s):
            kind = kinds.get(c.spec, c.spec)
            if not c.ok or kind not in PARSERS:
                continue
            try:
                parser = get_parser(kind)
            except (ImportError, AttributeError):
                continue
            parser(c.stdout)
            checked += 1
    if checked == 0:
        pytest.skip("no parser modules yet")


def test_cli_lists_every_bench_tool_lazily() -> None:
    from tests.emulators import cli, cli_bench

    assert set(cli.BENCH_TOOLS) == set(cli_bench.TOOLS)
    probe = ("import sys; import tests.emulators.cli as c; "
             "print('tests.emulators.cli_bench' in sys.modules, 'yaml' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.split() == ["False", "False"]

"""`render(node, spec_id, arg)`: what each inspection spec of linkcheck/collect/specs.py prints on a node.

Returns (stdout, stderr, exit_status) as the spec's shell command would leave them, including the
failures of a degraded node: a missing tool ("bash: line 1: X: command not found", 127) and a sudo
that wants a password ("sudo: a password is required", 1) for every `sudo -n` spec.
"""

from __future__ import annotations

from collections.abc import Callable

from linkcheck.collect.specs import CLUSTER_SPECS_BY_ID, SPECS_BY_ID
from tests.emulators import (
    render_eeprom,
    render_ethtool,
    render_ip,
    render_netplan,
    render_pci,
    render_rdma,
    render_sys,
    render_sysfs,
)
from tests.emulators.node import Node
from tests.emulators.render_netfilter import render_iptables

Output = tuple[str, str, int]

NODE_RENDERERS: dict[str, Callable[[Node], Output]] = {
    "hostname": render_sys.render_hostname,
    "uptime": render_sys.render_uptime,
    "meminfo": render_sys.render_meminfo,
    "os_release": render_sys.render_os_release,
    "kernel_release": render_sys.render_kernel_release,
    "cmdline_iommu": render_sys.render_cmdline_iommu,
    "ip_link": render_ip.render_ip_link,
    "ip_addr": render_ip.render_ip_addr,
    "ip_route": render_ip.render_ip_route,
    "ip_neigh": render_ip.render_ip_neigh,
    "sysctl": render_sys.render_sysctl,
    "sysfs_net": render_sysfs.render_sysfs_net,
    "sysfs_infiniband": render_sysfs.render_sysfs_infiniband,
    "sysfs_pci": render_sysfs.render_sysfs_pci,
    "sysfs_dmi": render_sysfs.render_sysfs_dmi,
    "dmi_serial": render_sysfs.render_dmi_serial,
    "rdma_link": render_rdma.render_rdma_link,
    "ibv_devinfo": render_rdma.render_ibv_devinfo,
    "ibstat": render_rdma.render_ibstat,
    "ibdev2netdev": render_rdma.render_ibdev2netdev,
    "show_gids": render_rdma.render_show_gids,
    "lspci": render_pci.render_lspci,
    "netplan_files": render_netplan.render_netplan_files,
    "nm_connections": render_sys.render_nm_connections,
    "perftest_version": render_sys.render_perftest_version,
    "nccl_install": render_sys.render_nccl_install,
    "nccl_env": render_sys.render_nccl_env,
    "nccl_conf": render_sys.render_nccl_conf,
    "nccl_conf_user": render_sys.render_nccl_conf_user,
    "nccl_conf_file": render_sys.render_nccl_conf_file,
    "dmesg": render_sys.render_dmesg,
}

NETDEV_RENDERERS: dict[str, Callable[[Node, str], Output]] = {
    "ethtool": render_ethtool.render_ethtool,
    "ethtool_i": render_ethtool.render_ethtool_i,
    "ethtool_s": render_ethtool.render_ethtool_s,
    "ethtool_fec": render_ethtool.render_ethtool_fec,
    "ethtool_m": render_eeprom.render_ethtool_m,
}

# The binary each spec depends on (for missing_tools); shell builtins and coreutils are always there.
SPEC_TOOL: dict[str, str] = {
    "hostname": "hostname", "ip_link": "ip", "ip_addr": "ip", "ip_route": "ip", "ip_neigh": "ip",
    "sysctl": "sysctl", "rdma_link": "rdma", "ibv_devinfo": "ibv_devinfo", "ibstat": "ibstat",
    "ibdev2netdev": "ibdev2netdev", "show_gids": "show_gids", "lspci": "lspci",
    "dmesg": "dmesg", "ethtool": "ethtool", "ethtool_i": "ethtool", "ethtool_s": "ethtool",
    "ethtool_m": "ethtool", "ethtool_fec": "ethtool", "perftest_version": "ib_write_bw",
}
SUDO_SPECS = frozenset({"lspci", "netplan_files", "ethtool_m", "dmi_serial", "nm_connections", "iptables_forward",
                        "iptables_docker_user"})
SUDO_REFUSED: Output = ("", "sudo: a password is required\n", 1)


def not_found(tool: str, via_sudo: bool = False) -> Output:
    if via_sudo:
        return "", f"sudo: {tool}: command not found\n", 1
    return "", f"bash: line 1: {tool}: command not found\n", 127


def render(node: Node, spec_id: str, arg: str | None = None) -> Output:
    """Render one spec; `arg` is the netdev of per-interface specs. KeyError for an unknown spec."""
    spec = SPECS_BY_ID.get(spec_id) or CLUSTER_SPECS_BY_ID[spec_id]
    if spec.per_netdev and arg is None:
        raise ValueError(f"spec {spec_id} needs a netdev argument")
    if spec_id in SUDO_SPECS and not node.sudo_ok:
        return SUDO_REFUSED
    tool = SPEC_TOOL.get(spec_id)
    if tool is not None and tool in node.missing_tools:
        if spec_id == "dmesg":  # the first try's error goes to /dev/null; sudo reports the second
            return SUDO_REFUSED if not node.sudo_ok else not_found(tool, via_sudo=True)
        return not_found(tool, via_sudo=spec_id in SUDO_SPECS)
    if spec.per_netdev:
        assert arg is not None
        return NETDEV_RENDERERS[spec_id](node, arg)
    return NODE_RENDERERS[spec_id](node)


NODE_RENDERERS.update({
    "ip_forward": lambda node: ("1\n" if node.ip_forward else "0\n", "", 0),
    "iptables_forward": lambda node: render_iptables(node, "FORWARD"),
    "iptables_docker_user": lambda node: render_iptables(node, "DOCKER-USER"),
    # The probe's lines for the node's libnccl files; an emulated node knows no file size or build ID.
    "nccl_libs": lambda node: ("".join(f"lib\t{p}\t{p}\t\n" for p in render_sys.nccl_files(node)), "", 0),
    # An emulated node has no GPU to query: nvidia-smi's absence, as the script reports it.
    "gpu_state": lambda node: ("", "nvidia-smi: not found\n", 127),
    # DGX OS ships no lldpd: the spec's own missing-tool answer (linkcheck/collect/specs.py, LLDPCTL)
    "lldp": lambda node: ("", "lldpctl: not found\n", 127),
    # The node model knows no netplan package version nor unit files: dpkg-query's answer for a package it does
    # not know, and no masked networkd (the unit links are read from the files, as on a node).
    "netplan_version": lambda node: ("", "dpkg-query: no packages found matching netplan.io\n", 1),
    "networkd_masked": lambda node: ("not-masked\n", "", 0),
})


def cx7_netdevs(node: Node) -> list[str]:
    """The per-netdev spec arguments, as the collector enumerates them (PCI vendor 0x15b3), PCI order."""
    return [f.netdev for f in sorted(node.functions, key=lambda f: f.bdf)]

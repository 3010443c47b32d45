"""The inspection commands, declared as data.

Each spec id is the command in snake_case and doubles as the parser kind and the bundle's capture
name. Per-interface specs (`per_netdev`) run once for every ConnectX-7 netdev (PCI vendor 0x15b3)
and carry the interface name as the capture's `arg`. Commands are fixed strings; the only variable
part, the interface name, is validated by `validate_name` and quoted before it reaches a shell.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import msgspec

NAME_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
# A container's name or ID as docker and podman accept it ([a-zA-Z0-9][a-zA-Z0-9_.-]+ in both engines' name check).
CONTAINER_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")

# One sysfs dump line per file: "<path>\t<value>", "<path>\t!<error>" or "<path>\t-> <symlink target>";
# GID tables come as `grep -H` lines ("<path>:<value>", "grep: <path>: <error>"), which parse the same.
# Reading each file separately keeps EINVAL on empty GID entries from hiding the rest. The first line
# comes from the `read` builtin (no process per file: a GB10 has hundreds); only an empty or unreadable
# file costs a `cat`, which names the error.
SYSFS_DUMP_FN = r"""lc_dump() { for f in "$@"; do
  if [ -L "$f" ]; then printf '%s\t-> %s\n' "$f" "$(readlink "$f")"; continue; fi
  [ -f "$f" ] || continue
  v=; if IFS= read -r v 2>/dev/null <"$f" || [ -n "$v" ]; then printf '%s\t%s\n' "$f" "$v"; continue; fi
  if v=$(cat "$f" 2>&1); then printf '%s\t%s\n' "$f" "$(printf '%s' "$v" | head -n 1)";
  else printf '%s\t!%s\n' "$f" "${v##*: }"; fi
done; }"""

# The node's identity: DMI (world-readable files; product_serial is root-only, see dmi_serial) and the boot id,
# which tells one boot from the next. machine-id is not read: it is a stable secret-ish identifier.
DMI_FILES = " ".join(f"/sys/class/dmi/id/{n}" for n in (
    "sys_vendor", "product_name", "product_version", "board_vendor", "board_name", "bios_vendor", "bios_version",
    "bios_date"))
BOOT_ID = "/proc/sys/kernel/random/boot_id"
# Where NCCL and nccl-tests live on a GB10: Debian/NVIDIA packages under the multiarch lib directory, CUDA's
# tree, /usr/local, and the source builds NVIDIA's DGX Spark playbooks make ($HOME/nccl/build,
# $HOME/nccl-tests/build, which is also where `bench nccl` looks). Globs and `[` only: no process but the sh.
NCCL_LIB_GLOBS = ("/usr/lib/*-linux-gnu/libnccl.so* /usr/lib64/libnccl.so* /usr/local/lib/libnccl.so*"
                  " /usr/local/cuda*/lib*/libnccl.so* /usr/local/cuda*/targets/*/lib/libnccl.so*"
                  ' "$HOME"/nccl/build/lib/libnccl.so*')
NCCL_INSTALL = (
    f"for f in {NCCL_LIB_GLOBS}; do [ -e \"$f\" ] && printf 'lib %s\\n' \"$f\"; done;"
    ' IFS=:; for d in $PATH; do [ -x "$d/all_gather_perf" ] && printf \'tests %s\\n\' "$d/all_gather_perf"; done;'
    ' f="$HOME/nccl-tests/build/all_gather_perf"; [ -x "$f" ] && printf \'tests %s\\n\' "$f"; true'
)
# NetworkManager keyfiles: /etc holds the persistent profiles, /run the in-memory ones (lost at reboot) and
# the ones netplan generates there (netplan-<id>.nmconnection, regenerated at boot). Root-only (0600).
# The netplan files, with the value of every key that names a secret (password, psk, private keys) replaced on
# the node: Ubuntu's NetworkManager writes its Wi-Fi profiles, passwords included, to /etc/netplan/90-NM-*.yaml.
# redact_netplan.awk (POSIX awk: mawk on Ubuntu) replaces, for a key in block style, a quoted value closed on its
# line, else the rest of the line and every line that continues the value (blank, indented deeper than the key,
# or a `- ` item at its column: a block scalar, a multi-line value, a list); in flow style ({a: b, psk: c}), a
# "double" (with \ escapes), 'single' (with '' escapes) or plain value. Keys may be quoted. Besides the names
# holding password/psk/private, netplan's own examples put a WireGuard private key under `key:`, its preshared
# key under `keys: shared:` and a SIM PIN under `pin:` (tests/samples/system/real). Without awk the
# command fails (127) and nothing is collected. The glob expands as the user (the folder is world-readable);
# tail's status is kept (no file: exit 1).
NETWORKD_MASKED = ("for d in /etc/systemd/system /run/systemd/system; do f=$d/systemd-networkd.service; "
                   '[ -L "$f" ] && [ "$(readlink "$f")" = /dev/null ] && { echo masked; exit 0; }; done; '
                   "echo not-masked")
NETPLAN_REDACT_AWK = (Path(__file__).parent / "redact_netplan.awk").read_text(encoding="utf-8")
NETPLAN_REDACTED = '"(not collected)"'
NETPLAN_FILES = ("lc_np=$(sudo -n tail -n +1 /etc/netplan/*.yaml) || exit; printf '%s\\n' \"$lc_np\" |"
                 f" awk {shlex.quote(NETPLAN_REDACT_AWK)}")
# Only what the diagnosis reads leaves the node: the file headers, the section names and these keys. A keyfile
# also holds secrets (Wi-Fi psk=, 802-1x and VPN password=), which must never reach a bundle.
NM_KEYS = ("id", "uuid", "type", "interface-name", "mac-address", "mtu", "method", "address(es)?[0-9]*")
NM_KEEP = "^(==> |\\[|(" + "|".join(NM_KEYS) + ")=)"
NM_KEYFILES = ("sudo -n sh -c 'tail -v -n +1 /etc/NetworkManager/system-connections/*"
               f" /run/NetworkManager/system-connections/* 2>/dev/null | grep -E \"{NM_KEEP}\"; true'")

# The NCCL a process would load, here and inside a container: nccl_probe.sh, with the install places above plus the pip
# wheels' (nvidia-nccl-cu12/cu13 put libnccl.so.2 under site-packages/nvidia/nccl/lib).
NCCL_WHEEL_GLOBS = ("/usr/lib/python3*/*-packages/nvidia/nccl/lib/libnccl.so*"
                    " /usr/local/lib/python3*/*-packages/nvidia/nccl/lib/libnccl.so*"
                    ' "$HOME"/.local/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so*')
NCCL_PROBE = ("lp_globs() { for f in " + NCCL_LIB_GLOBS + " " + NCCL_WHEEL_GLOBS
              + "; do [ -e \"$f\" ] && printf '%s\\n' \"$f\"; done; }\n"
              + (Path(__file__).parent / "nccl_probe.sh").read_text(encoding="utf-8"))
# Inside a container, through the node's own engine: docker, then podman (each as the user, and through `sudo -n` only
# when the engine's socket refused the user). A container that is not running, not there, or a node without either
# engine answers one `state` line and exit 0: a note, never a failed inspection. A docker CLI whose daemon is not
# running ("Cannot connect to the Docker daemon") is no engine. `exec` runs the probe in the running
# container and ends with it. The container's name is the command's $1, validated (CONTAINER_RE) and quoted.
CONTAINER_NCCL = (
    "lc_c=$1; lc_p=" + shlex.quote(NCCL_PROBE) + "; lc_engines=; lc_why=\n"
    'lc_try() { lc_out=$("$@" 2>&1); lc_rc=$?; lc_sudo=;'
    ' case $lc_rc:$lc_out in 0:*) ;; *[Pp]"ermission denied"*)'
    ' lc_out=$(sudo -n "$@" 2>&1); lc_rc=$?; lc_sudo="sudo -n";; esac; }\n'
    "for lc_e in docker podman; do\n"
    '  command -v "$lc_e" >/dev/null 2>&1 || continue\n'
    "  lc_try \"$lc_e\" inspect --type container --format '{{.State.Running}}' \"$lc_c\"\n"
    '  lc_msg=$(printf \'%s\\n\' "$lc_out" | sed -n \'/[^[:space:]]/{p;q;}\')\n'
    '  case $lc_rc:$lc_msg in 0:*) ;;\n'
    '    *"Cannot connect to the Docker daemon"*) lc_why="$lc_e: $lc_msg"; continue;; esac\n'
    '  lc_engines="$lc_engines $lc_e"\n'
    '  if [ "$lc_rc" != 0 ]; then lc_why="$lc_e: $lc_msg"; continue; fi\n'
    "  printf 'engine\\t%s\\n' \"$lc_e\"\n"
    "  if [ \"$lc_out\" != true ]; then printf 'state\\tnot running\\n'; exit 0; fi\n"
    "  printf 'state\\trunning\\n'\n"
    '  $lc_sudo "$lc_e" exec "$lc_c" sh -c "$lc_p" sh container; exit\n'
    "done\n"
    "if [ -z \"$lc_engines\" ]; then printf 'state\\tno engine\\n'\n"
    "  [ -z \"$lc_why\" ] || printf 'why\\t%s\\n' \"$lc_why\"; exit 0; fi\n"
    "printf 'state\\tnot found\\nwhy\\t%s\\n' \"$lc_why\""
)

NET_ATTRS = "address mtu carrier carrier_changes speed operstate phys_port_name device"
IB_PORT_FILES = (
    "state phys_state rate link_layer counters/port_xmit_data counters/port_rcv_data counters/link_downed"
)


class Spec(msgspec.Struct, frozen=True):
    """One inspection command."""

    id: str
    command: str
    needs_root: bool = False
    per_netdev: bool = False
    optional_tool: bool = False  # absent on many systems (MLNX_OFED-only tools); missing is not a fault
    per_container: bool = False  # runs once per container named (--container), which the command gets as "$1"
    description: str = ""

    def render(self, netdev: str | None = None) -> str:
        """The shell command for this spec, with the validated interface name substituted."""
        if self.per_container:
            if netdev is None:
                raise ValueError(f"spec {self.id} needs a container name")
            return f"sh -c {shlex.quote(self.command)} sh {shlex.quote(validate_container(netdev))}"
        if not self.per_netdev:
            return self.command
        if netdev is None:
            raise ValueError(f"spec {self.id} needs an interface name")
        return self.command.format(netdev=shlex.quote(validate_name(netdev)))


def validate_name(name: str) -> str:
    """Interface and device names reach command lines only if they match [A-Za-z0-9_.:-]+."""
    if not NAME_RE.match(name):
        raise ValueError(f"refusing unsafe interface or device name {name!r}")
    return name


def validate_container(name: str) -> str:
    """A container's name reaches a command line only if docker and podman could have given it."""
    if not CONTAINER_RE.match(name):
        raise ValueError(f"refusing container name {name!r}: a name or ID is [A-Za-z0-9][A-Za-z0-9_.-]*, up to 128")
    return name


SPECS: tuple[Spec, ...] = (
    Spec("hostname", "hostname"),
    Spec("uptime", "cat /proc/uptime"),
    Spec("meminfo", "cat /proc/meminfo"),
    Spec("os_release", "cat /etc/os-release"),
    Spec("kernel_release", "uname -r"),
    # Only the IOMMU words of the kernel command line leave the node (the rest may name disks or carry secrets).
    Spec("cmdline_iommu", "tr ' ' '\\n' </proc/cmdline | grep -E 'iommu|smmu' || true",
         description="the IOMMU settings of the kernel command line (/proc/cmdline), nothing else of it"),
    Spec("ip_link", "ip -d -j link show"),
    Spec("ip_addr", "ip -j addr show"),
    Spec("ip_route", "ip -j route show"),
    Spec("ip_neigh", "ip -j neigh show"),
    Spec("sysctl", "sysctl net.ipv4.conf.all.arp_ignore net.ipv4.conf.all.arp_announce"),
    Spec(
        "sysfs_net",
        SYSFS_DUMP_FN + "\nfor d in /sys/class/net/*; do for a in " + NET_ATTRS + '; do lc_dump "$d/$a"; done; done',
        description="netdev attributes: MAC, MTU, carrier, carrier_changes, speed, cage, PCI device",
    ),
    Spec(
        "sysfs_infiniband",
        SYSFS_DUMP_FN
        + "\nfor d in /sys/class/infiniband/*; do lc_dump \"$d/device\" \"$d/node_guid\" \"$d/fw_ver\" \"$d/board_id\";"
        + " for p in \"$d\"/ports/*; do for a in " + IB_PORT_FILES + '; do lc_dump "$p/$a"; done;'
        # A port has 255 GID slots and most are empty (all-zero GID, EINVAL on their attributes). Dump
        # the used slots with their type and netdev (read errors kept via 2>&1); an absent index
        # below the highest used one is an empty slot, which is how holes are seen.
        + ' grep -H -v "^0000:0000:0000:0000:0000:0000:0000:0000$" "$p"/gids/* | while IFS= read -r l; do'
        # Their attributes print as `grep -H` would, read by the builtin; only a failing read runs grep.
        + ' echo "$l"; f=${l%%:*}; i=${f##*/}; for g in "$p/gid_attrs/types/$i" "$p/gid_attrs/ndevs/$i"; do'
        + ' v=; if IFS= read -r v 2>/dev/null <"$g" || [ -n "$v" ]; then printf "%s:%s\\n" "$g" "$v";'
        + ' else grep -H . "$g" 2>&1; fi; done; done; done; done; true',
        description="RDMA devices (firmware, board PSID), port state and counters, RoCE GID tables",
    ),
    Spec(
        "sysfs_pci",
        SYSFS_DUMP_FN
        + "\nfor d in /sys/bus/pci/devices/*; do v=; read -r v 2>/dev/null <\"$d/vendor\";"
        + ' [ "$v" = 0x15b3 ] || continue;'
        + ' lc_dump "$d/vendor" "$d/current_link_speed" "$d/current_link_width"'
        + ' "$d/max_link_speed" "$d/max_link_width" "$d/iommu_group/type"; done',
        description="PCIe link speed and width of the ConnectX-7 functions, and the type of their IOMMU group",
    ),
    Spec("sysfs_dmi", SYSFS_DUMP_FN + f"\nlc_dump {DMI_FILES} {BOOT_ID}",
         description="node identity: DMI vendor, product, board, BIOS; the boot id"),
    Spec("dmi_serial", "sudo -n grep -H . /sys/class/dmi/id/product_serial", needs_root=True,
         description="the DMI product serial (root-only file)"),
    Spec("rdma_link", "rdma -j link show"),
    Spec("ibv_devinfo", "ibv_devinfo -v"),
    Spec("ibstat", "ibstat", optional_tool=True),
    Spec("ibdev2netdev", "ibdev2netdev", optional_tool=True),
    Spec("show_gids", "show_gids", optional_tool=True),
    Spec("lspci", "sudo -n lspci -vv -d 15b3:", needs_root=True),
    Spec("netplan_files", NETPLAN_FILES, needs_root=True,
         description="the netplan YAML files, their secret values replaced on the node"),
    Spec("nm_connections", NM_KEYFILES, needs_root=True,
         description="NetworkManager keyfiles under /etc and /run (which CX-7 addressing survives a reboot)"),
    # netplan prints no version of its own (no --version; `netplan info` prints its feature flags only): its
    # package's. A repair relies on neither netplan try's own revert before 1.2 nor a masked networkd's.
    Spec("netplan_version", "dpkg-query -W -f='${Version}\\n' netplan.io", optional_tool=True,
         description="netplan's version (its package's): which `netplan try` revert a repair must not rely on"),
    # `systemctl mask` links the unit file to /dev/null in /etc (or /run with --runtime), systemctl(1): read from
    # the files, not asked of systemctl (a node without systemd as PID 1 answers the same).
    Spec("networkd_masked", NETWORKD_MASKED,
         description="whether systemd-networkd is masked (netplan renders an MTU through it even for NetworkManager)"),
    Spec("perftest_version", "ib_write_bw -V", optional_tool=True, description="perftest's version (exit 1 is normal)"),
    Spec("nccl_install", NCCL_INSTALL, description="NCCL libraries (their file names carry the version), nccl-tests"),
    Spec("nccl_env", "env | grep '^NCCL_' || true", description="NCCL_* variables only; never the whole env"),
    Spec("nccl_conf", "cat /etc/nccl.conf"),
    Spec("nccl_conf_user", 'cat "$HOME/.nccl.conf"'),
    # NCCL >= 2.23 reads the file NCCL_CONF_FILE names instead of ~/.nccl.conf (src/misc/param.cc initEnvFunc); unset
    # or empty, nothing to read (empty answer, exit 0).
    Spec("nccl_conf_file", '[ -n "${NCCL_CONF_FILE:-}" ] || exit 0; cat -- "$NCCL_CONF_FILE"',
         description="the file NCCL_CONF_FILE names, which NCCL reads instead of ~/.nccl.conf"),
    Spec("nccl_libs", NCCL_PROBE, description="the libnccl files a job here would load: version, size, ELF build ID, "
         "where from; the loader's cache; what is mapped"),
    Spec("container_nccl", CONTAINER_NCCL, per_container=True,
         description="the same inside each container named with --container, through the node's docker or podman"),
    Spec("gpu_state", "nvidia-smi --query-gpu=utilization.gpu,power.draw --format=csv", optional_tool=True,
         description="the GPU's utilisation and power now (a rank spinning in a collective: busy at idle power)"),
    Spec("dmesg", "dmesg 2>/dev/null || sudo -n dmesg", needs_root=True),
    Spec("ethtool", "ethtool {netdev}", per_netdev=True),
    Spec("ethtool_i", "ethtool -i {netdev}", per_netdev=True),
    Spec("ethtool_s", "ethtool -S {netdev}", per_netdev=True),
    Spec("ethtool_fec", "ethtool --show-fec {netdev}", per_netdev=True, description="active and configured FEC"),
    Spec("ethtool_m", "sudo -n ethtool -m {netdev}", per_netdev=True, needs_root=True),
)

SPECS_BY_ID: dict[str, Spec] = {s.id: s for s in SPECS}

# What a cluster's inspection adds to the pair's (the pair's own inspection is unchanged): whether a node routes
# between its cables, and whether its firewall lets forwarded traffic through. A node in a ring of four or more
# carries traffic between two neighbours that share no cable; Docker sets the FORWARD policy to DROP and leaves
# DOCKER-USER as the place for an accept. iptables needs root to read the tables; without sudo the capture fails
# with sudo's own words, which become the reason the rules skip. A chain that does not exist (no Docker) prints
# "No chain/target/match by that name" (exit 1), which is an answer, not a failure.
CLUSTER_SPECS: tuple[Spec, ...] = (
    Spec("ip_forward", "cat /proc/sys/net/ipv4/ip_forward", description="whether the node routes (IPv4 forwarding)"),
    Spec("iptables_forward", "sudo -n iptables -S FORWARD", needs_root=True,
         description="the FORWARD chain's policy and rules"),
    Spec("iptables_docker_user", "sudo -n iptables -S DOCKER-USER", needs_root=True,
         description="Docker's DOCKER-USER chain, where an accept for forwarded traffic belongs"),
)
# LLDP: each netdev's neighbour as lldpd saw it (another node confirms a cable, a switch shows the port is switched).
# lldpd's control socket is root:_lldpd mode 0770 (lldpd.c chmods it after the chown to its privilege-separation
# user; its README: run lldpcli as root or setgid _lldpd), so a user outside the _lldpd group is refused with
# "Permission denied". lldpctl runs plain first (a user in _lldpd needs no sudo) and through `sudo -n` only after that
# refusal, so a node where lldpd is not running keeps lldpd's own words ("unable to connect to socket ...: No such
# file or directory", exit 1) rather than sudo's. A node without lldpctl gives 127 (tool missing): LLDP is optional.
LLDPCTL = ("command -v lldpctl >/dev/null 2>&1 || { echo 'lldpctl: not found' >&2; exit 127; };"
           ' { lc_e=$(lldpctl -f json 2>&1 >&3); lc_rc=$?; } 3>&1;'
           ' case $lc_rc:$lc_e in 0:*) ;; *"Permission denied"*) exec sudo -n lldpctl -f json;; esac;'
           ' [ -z "$lc_e" ] || printf "%s\\n" "$lc_e" >&2; exit "$lc_rc"')
CLUSTER_SPECS += (
    Spec("lldp", LLDPCTL, optional_tool=True,
         description="LLDP neighbours per netdev (lldpctl -f json; sudo -n only when lldpd's socket refuses the user)"),
)
CLUSTER_SPECS_BY_ID: dict[str, Spec] = {s.id: s for s in CLUSTER_SPECS}

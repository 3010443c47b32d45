"""The inspection commands, declared as data.

Each spec id is the command in snake_case and doubles as the parser kind and the bundle's capture
name. Per-interface specs (`per_netdev`) run once for every ConnectX-7 netdev (PCI vendor 0x15b3)
and carry the interface name as the capture's `arg`. Commands are fixed strings; the only variable
part, the interface name, is validated by `validate_name` and quoted before it reaches a shell.

Specs that only read small local files (/proc, /etc, the home directory) have a `builtin`: shell code
that the inspection script's own shell runs, giving the same output as `command` without starting a
process. In the lab each process (with its `timeout`) cost ~2 ms of CPU, and these reads were a third of
the script's processes. The bundle records `command`, which reproduces the capture.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

NAME_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")

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

# Helpers for the builtins, defined once in the inspection script. They run in the script's own shell,
# so they use builtins only and never read the script's stdin. A file that cannot be read gives
# "<path>: <why>" on stderr and status 1, as `cat` would.
BUILTIN_FUNCTIONS = r"""lc_cat() {  # cat FILE...
  lc_r=0
  for lc_f in "$@"; do
    if [ ! -e "$lc_f" ]; then echo "$lc_f: No such file or directory" >&2; lc_r=1; continue; fi
    if [ -d "$lc_f" ]; then echo "$lc_f: Is a directory" >&2; lc_r=1; continue; fi
    if [ ! -r "$lc_f" ]; then echo "$lc_f: Permission denied" >&2; lc_r=1; continue; fi
    while IFS= read -r lc_l || [ -n "$lc_l" ]; do printf '%s\n' "$lc_l"; done <"$lc_f" || lc_r=1
  done
  return $lc_r
}
lc_sysctl() {  # sysctl KEY...: "key = value" from /proc/sys/<key with dots as slashes>
  lc_r=0
  for lc_k in "$@"; do
    lc_f=/proc/sys/ lc_p=$lc_k
    while :; do case $lc_p in *.*) lc_f=$lc_f${lc_p%%.*}/ lc_p=${lc_p#*.};; *) lc_f=$lc_f$lc_p; break;; esac; done
    lc_s=
    if [ -r "$lc_f" ] && { IFS= read -r lc_s <"$lc_f" || [ -n "$lc_s" ]; }; then printf '%s = %s\n' "$lc_k" "$lc_s"
    else echo "$lc_f: cannot read $lc_k" >&2; lc_r=1; fi
  done
  return $lc_r
}
lc_nccl_env() {  # env | grep '^NCCL_': the names from `export -p`, the values as the shell holds them
  export -p | while IFS= read -r lc_l; do
    lc_l=${lc_l#export }; lc_l=${lc_l#declare -x }; lc_k=${lc_l%%=*}
    case $lc_k in NCCL_*) ;; *) continue;; esac
    case $lc_k in *[!A-Za-z0-9_]*) continue;; esac  # a name only: it is eval'ed below
    eval "[ -z \"\${$lc_k+set}\" ] || printf '%s=%s\\n' \"\$lc_k\" \"\$$lc_k\""
  done
}"""

NET_ATTRS = "address mtu carrier carrier_changes speed operstate phys_port_name device"
IB_PORT_FILES = (
    "state phys_state rate link_layer counters/port_xmit_data counters/port_rcv_data counters/link_downed"
)


@dataclass(frozen=True)
class Spec:
    """One inspection command."""

    id: str
    command: str
    needs_root: bool = False
    per_netdev: bool = False
    optional_tool: bool = False  # absent on many systems (MLNX_OFED-only tools); missing is not a fault
    description: str = ""
    builtin: str = ""  # shell code with the same output as `command`, run by the script's shell (see above)

    def render(self, netdev: str | None = None) -> str:
        """The shell command for this spec, with the validated interface name substituted."""
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


SPECS: tuple[Spec, ...] = (
    Spec("hostname", "hostname", builtin="lc_cat /proc/sys/kernel/hostname"),
    Spec("uptime", "cat /proc/uptime", builtin="lc_cat /proc/uptime"),
    Spec("meminfo", "cat /proc/meminfo", builtin="lc_cat /proc/meminfo"),
    Spec("os_release", "cat /etc/os-release", builtin="lc_cat /etc/os-release"),
    Spec("kernel_release", "uname -r", builtin="lc_cat /proc/sys/kernel/osrelease"),
    Spec("ip_link", "ip -d -j link show"),
    Spec("ip_addr", "ip -j addr show"),
    Spec("ip_route", "ip -j route show"),
    Spec("ip_neigh", "ip -j neigh show"),
    Spec("sysctl", "sysctl net.ipv4.conf.all.arp_ignore net.ipv4.conf.all.arp_announce",
         builtin="lc_sysctl net.ipv4.conf.all.arp_ignore net.ipv4.conf.all.arp_announce"),
    Spec(
        "sysfs_net",
        SYSFS_DUMP_FN + "\nfor d in /sys/class/net/*; do for a in " + NET_ATTRS + '; do lc_dump "$d/$a"; done; done',
        description="netdev attributes: MAC, MTU, carrier, carrier_changes, speed, cage, PCI device",
    ),
    Spec(
        "sysfs_infiniband",
        SYSFS_DUMP_FN
        + "\nfor d in /sys/class/infiniband/*; do lc_dump \"$d/device\" \"$d/node_guid\" \"$d/fw_ver\";"
        + " for p in \"$d\"/ports/*; do for a in " + IB_PORT_FILES + '; do lc_dump "$p/$a"; done;'
        # A port has 255 GID slots and most are empty (all-zero GID, EINVAL on their attributes). Dump
        # the used slots with their type and netdev (read errors kept via 2>&1); an absent index
        # below the highest used one is an empty slot, which is how holes are seen.
        + ' grep -H -v "^0000:0000:0000:0000:0000:0000:0000:0000$" "$p"/gids/* | while IFS= read -r l; do'
        # Their attributes print as `grep -H` would, read by the builtin; only a failing read runs grep.
        + ' echo "$l"; f=${l%%:*}; i=${f##*/}; for g in "$p/gid_attrs/types/$i" "$p/gid_attrs/ndevs/$i"; do'
        + ' v=; if IFS= read -r v 2>/dev/null <"$g" || [ -n "$v" ]; then printf "%s:%s\\n" "$g" "$v";'
        + ' else grep -H . "$g" 2>&1; fi; done; done; done; done; true',
        description="RDMA devices, port state and counters, RoCE GID tables",
    ),
    Spec(
        "sysfs_pci",
        SYSFS_DUMP_FN
        + "\nfor d in /sys/bus/pci/devices/*; do v=; read -r v 2>/dev/null <\"$d/vendor\";"
        + ' [ "$v" = 0x15b3 ] || continue;'
        + ' lc_dump "$d/vendor" "$d/current_link_speed" "$d/current_link_width"'
        + ' "$d/max_link_speed" "$d/max_link_width"; done',
        description="PCIe link speed and width of the ConnectX-7 functions",
    ),
    Spec("rdma_link", "rdma -j link show"),
    Spec("ibv_devinfo", "ibv_devinfo -v"),
    Spec("ibstat", "ibstat", optional_tool=True),
    Spec("ibdev2netdev", "ibdev2netdev", optional_tool=True),
    Spec("show_gids", "show_gids", optional_tool=True),
    Spec("lspci", "sudo -n lspci -vv -d 15b3:", needs_root=True),
    Spec("netplan_files", "sudo -n sh -c 'tail -n +1 /etc/netplan/*.yaml'", needs_root=True),
    Spec("nccl_env", "env | grep '^NCCL_' || true", builtin="lc_nccl_env",
         description="NCCL_* variables only; never the whole env"),
    Spec("nccl_conf", "cat /etc/nccl.conf", builtin="lc_cat /etc/nccl.conf"),
    Spec("nccl_conf_user", 'cat "$HOME/.nccl.conf"', builtin='lc_cat "$HOME/.nccl.conf"'),
    Spec("dmesg", "dmesg 2>/dev/null || sudo -n dmesg", needs_root=True),
    Spec("ethtool", "ethtool {netdev}", per_netdev=True),
    Spec("ethtool_i", "ethtool -i {netdev}", per_netdev=True),
    Spec("ethtool_s", "ethtool -S {netdev}", per_netdev=True),
    Spec("ethtool_m", "sudo -n ethtool -m {netdev}", per_netdev=True, needs_root=True),
)

SPECS_BY_ID: dict[str, Spec] = {s.id: s for s in SPECS}
